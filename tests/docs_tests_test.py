#!/usr/bin/env python3
"""Every page of the documentation (README.md, docs/*.md) ends in a `## Tests` section naming the tests that check
its claims (docs/testing.md, "Claims and their tests"), and every name cited there exists: a test a stale name points
at would make the page look checked when nothing checks it.

A cited name is a code span in that section:
  `NAME`        a CTest test of the build under test (`ctest -N`);
  `NAME/CASE`   NAME as above and CASE a test defined under tests/: a Boost.Test case or suite
                (`sub/case` for a nested one), a node:test title, or a Python `test_…` function.

Usage: docs_tests_test.py SOURCE_DIR CTEST BUILD_DIR   check the repository against the build's tests
       docs_tests_test.py --self-test                   show that a stale name and a page without the section fail
Prints each problem as FILE:LINE: what, and exits 1 if any.
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from docs_links_test import prose_lines  # noqa: E402

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"`([^`]+)`")
CTEST_LINE = re.compile(r"^\s*Test\s+#\d+:\s+(\S+)\s*$")
SKIP_PATHS = {os.path.join("tests", "data"), os.path.join("tests", "fuzz", "corpus")}
SOURCE_SUFFIXES = {".cpp", ".hpp", ".mjs", ".js", ".py"}


def pages(root):
    found = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        found += sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))
    return found


def tests_section(path):
    """(line number, text) of each line of the page's last `## Tests` section outside code fences; None if the page
    has none, or if another level-2 heading follows it (the section ends the page)."""
    lines, inside, found = [], False, False
    for number, line in prose_lines(path):
        m = HEADING.match(line)
        if m and len(m.group(1)) <= 2:
            inside = len(m.group(1)) == 2 and m.group(2) == "Tests"
            if inside:
                found, lines = True, []
            continue
        if inside:
            lines.append((number, line))
    return lines if found and inside else None


def ctest_names(ctest, build_dir):
    out = subprocess.run([ctest, "-N"], cwd=build_dir, capture_output=True, text=True, check=True).stdout
    return {m.group(1) for m in map(CTEST_LINE.match, out.splitlines()) if m}


def test_sources(root):
    tests = os.path.join(root, "tests")
    texts = []
    for dirpath, dirnames, filenames in os.walk(tests):
        rel = os.path.relpath(dirpath, root)
        dirnames[:] = [d for d in dirnames
                       if d != "node_modules" and os.path.normpath(os.path.join(rel, d)) not in SKIP_PATHS]
        for name in filenames:
            if os.path.splitext(name)[1] in SOURCE_SUFFIXES and name != os.path.basename(__file__):
                with open(os.path.join(dirpath, name), encoding="utf-8", errors="replace") as f:
                    texts.append(f.read())
    return "\n".join(texts)


def defined(case, sources):
    """Whether tests/ defines a test called CASE; the definition, not a mere mention, so a removed test's name that
    survives in a comment still counts as stale."""
    q = re.escape(case)
    patterns = [
        r"BOOST_\w*TEST_(?:CASE|SUITE)\w*\(\s*" + q + r"\b",   # Boost.Test case or suite
        r"\b(?:test|it|describe)\(\s*([\"'`])" + q + r"\1",     # node:test title
        r"^\s*(?:async\s+)?def\s+" + q + r"\(" if case.startswith("test_") else r"(?!)",  # Python test function
    ]
    return any(re.search(p, sources, re.M) for p in patterns)


def check(root, names, sources):
    problems = []
    for page in pages(root):
        rel = os.path.relpath(page, root)
        section = tests_section(page)
        if section is None:
            problems.append(f"{rel}: no `## Tests` section at the end of the page")
            continue
        cited = 0
        for number, line in section:
            for ref in CODE_SPAN.findall(line):
                cited += 1
                name, slash, case = ref.partition("/")
                if name not in names:
                    problems.append(f"{rel}:{number}: `{ref}`: no CTest test {name}")
                elif slash and not (defined(case, sources)
                                    or ("/" in case and all(defined(p, sources) for p in case.split("/")))):
                    problems.append(f"{rel}:{number}: `{ref}`: no test {case!r} defined under tests/")
        if cited == 0:
            problems.append(f"{rel}: its `## Tests` section names no test")
    return problems


def self_test():
    """A page citing one real and one invented name, and a page without the section: exactly those fail."""
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        os.makedirs(os.path.join(root, "tests"))
        with open(os.path.join(root, "tests", "a_test.cpp"), "w") as f:
            f.write("BOOST_AUTO_TEST_SUITE(framing)\nBOOST_AUTO_TEST_CASE(splits_lines) {}\n"
                    "// gone_case was removed\n")
        with open(os.path.join(root, "tests", "b.test.mjs"), "w") as f:
            f.write("test('loads a session', async () => {});\n")
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("# X\n\nClaim.\n\n## Tests\n\n- `unit.framing`, `unit.framing/splits_lines`, "
                    "`e2e.load/loads a session`\n")
        with open(os.path.join(root, "docs", "a.md"), "w") as f:
            f.write("# A\n\n## Tests\n\n- `unit.framing/gone_case`, `unit.renamed`\n\n"
                    "```\n## Tests\n```\n")
        with open(os.path.join(root, "docs", "b.md"), "w") as f:
            f.write("# B\n\n## Tests\n\n- `unit.framing`\n\n## Later\n")
        names = {"unit.framing", "e2e.load"}
        got = check(root, names, test_sources(root))
        a, b = os.path.join("docs", "a.md"), os.path.join("docs", "b.md")
        want = [f"{a}:5: `unit.framing/gone_case`: no test 'gone_case' defined under tests/",
                f"{a}:5: `unit.renamed`: no CTest test unit.renamed",
                f"{b}: no `## Tests` section at the end of the page"]
        if got != want:
            print("self-test: expected\n  " + "\n  ".join(want) + "\ngot\n  " + "\n  ".join(got))
            return 1
        print("self-test: a stale CTest name, a stale case name and a misplaced section are reported")
        return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    root, ctest, build_dir = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
    names = ctest_names(ctest, build_dir)
    problems = check(root, names, test_sources(root))
    for p in problems:
        print(p)
    print(f"{len(pages(root))} pages checked against {len(names)} CTest tests, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
