#!/usr/bin/env python3
"""The repository documents itself: every relative link in README.md and docs/*.md names a file of the
repository (and, with #anchor into a Markdown file, one of its headings), every `docs/<name>.md#<anchor>`
cited anywhere in the sources resolves the same way, and no file cites one of the design documents the
project was started from, which are not part of the repository.

Usage: docs_links_test.py SOURCE_DIR. Prints each problem as FILE:LINE: what, and exits 1 if any.
"""
import os
import re
import sys

# Folders that hold no prose of ours: build trees, dependencies, copied logs, fuzzing inputs.
SKIP_DIRS = {".git", "node_modules"}
SKIP_PATHS = {os.path.join("tests", "data", "fixtures"), os.path.join("tests", "fuzz", "corpus")}
SKIP_PREFIXES = ("build",)
TEXT_SUFFIXES = {".md", ".cpp", ".hpp", ".h", ".c", ".py", ".mjs", ".js", ".cmake", ".txt", ".json", ".jsonl", ".sh", ""}

# Names of documents outside the repository, spelt in pieces so this file does not cite them itself.
MISSING_DOCS = re.compile("|".join([
    r"\bcontracts(?:\.md| §)",
    "harness" + r"-compat\b",
    "harness" + r"-0\.1\b(?!\.\d)",
    r"\bstyle" + r"\.md\b",
    r"\bacp-protocol" + r"\.md\b",
    r"\becosystem" + r"\.md\b",
    r"\bsession-reference" + r"\.md\b",
    r"\bnormalised-model" + r"\.md\b",
    r"\.\./" + "shared/",
    r"(?<![\w/.-])" + "design" + r"/(?:contracts|harness|style|acp|ecosystem)",
]))
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CITATION = re.compile(r"\bdocs/([A-Za-z0-9_-]+\.md)(#[A-Za-z0-9_-]+)?")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def slug(heading):
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def prose_lines(path):
    """(line number, line) of a Markdown file's lines outside code fences (``` or ~~~)."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            stripped = line.lstrip()
            if stripped.startswith(("```", "~~~")):
                marker = stripped[:3]
                fence = None if fence == marker else (fence or marker)
                continue
            if not fence:
                yield number, line


def anchors(path, cache={}):
    if path not in cache:
        found, seen = set(), {}
        for _number, line in prose_lines(path):
            m = HEADING.match(line)
            if m:
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
        cache[path] = found
    return cache[path]


def source_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        dirnames[:] = [d for d in dirnames
                       if d not in SKIP_DIRS and not d.startswith(SKIP_PREFIXES)
                       and os.path.normpath(os.path.join(rel, d)) not in SKIP_PATHS]
        for name in filenames:
            if os.path.splitext(name)[1] in TEXT_SUFFIXES:
                yield os.path.join(dirpath, name)


def read_text(path):
    try:
        with open(path, "rb") as f:
            data = f.read(4 << 20)
        return None if b"\0" in data else data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = os.path.abspath(sys.argv[1])
    problems = []

    def check_target(where, target_path, fragment):
        if not os.path.exists(target_path):
            problems.append(f"{where}: {os.path.relpath(target_path, root)} does not exist")
        elif fragment and target_path.endswith(".md") and fragment not in anchors(target_path):
            problems.append(f"{where}: {os.path.relpath(target_path, root)} has no heading for #{fragment}")

    docs_dir = os.path.join(root, "docs")
    pages = [os.path.join(root, "README.md")]
    if os.path.isdir(docs_dir):
        pages += sorted(os.path.join(docs_dir, n) for n in os.listdir(docs_dir) if n.endswith(".md"))
    for page in pages:
        for number, line in prose_lines(page):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # a URL
                where = f"{os.path.relpath(page, root)}:{number}"
                path, _, fragment = target.partition("#")
                resolved = page if not path else os.path.normpath(os.path.join(os.path.dirname(page), path))
                if not resolved.startswith(root + os.sep):
                    problems.append(f"{where}: {target} leaves the repository")
                    continue
                check_target(where, resolved, fragment)

    for path in source_files(root):
        text = read_text(path)
        if text is None:
            continue
        rel = os.path.relpath(path, root)
        for number, line in enumerate(text.splitlines(), 1):
            where = f"{rel}:{number}"
            m = MISSING_DOCS.search(line)
            if m:
                problems.append(f"{where}: cites {m.group(0)!r}, a document the repository lacks")
            for name, fragment in CITATION.findall(line):
                check_target(where, os.path.join(docs_dir, name), fragment[1:])

    problems = list(dict.fromkeys(problems))  # a link's target is also a citation: report it once
    for p in problems:
        print(p)
    print(f"{len(pages)} pages checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
