#!/usr/bin/env python3
"""JSON text is parsed through support::parse_json (docs/contributing.md#foreign-json).

Every `json::parse(`, `json::parser` and `json::stream_parser` in src/, handlers/ and protocol/ outside
src/support/json_text.cpp (parse_json's own home) fails the test unless one of the three lines above it,
or its own line, holds an exception comment stating the reason:

    // Raw JSON parse: <why this text needs no repair>

parse_json reads escaped unpaired surrogates as U+FFFD and allows deep nesting; a raw parse refuses
both, so the same text would be read one way in one place and refused in another.

Usage: foreign_json.py SOURCE_DIR    prints each raw parse as FILE:LINE: text, exits 1 if any
       foreign_json.py --self-test   checks on generated files that the guard finds what it must
"""
import os
import re
import sys
import tempfile

from guard import clean_once_removed, main as guard_main, self_test_result, write_files

FOLDERS = ("src", "handlers", "protocol")
HOME = "src/support/json_text.cpp"
RAW = re.compile(r"\bjson::(parse\s*\(|parser\b|stream_parser\b)")
MARKER = re.compile(r"//\s*Raw JSON parse:\s*\S")
MARKER_REACH = 3  # lines above the parse that may hold the marker
SUFFIXES = (".cpp", ".hpp", ".h", ".cc")


def code_part(line):
    """The line without a trailing // comment and without the text of string literals."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    cut = line.find("//")
    return line if cut < 0 else line[:cut]


def sources(root, folders):
    """Paths relative to root of every C++ file under folders, sorted."""
    found = []
    for folder in folders:
        for base, _, names in os.walk(os.path.join(root, folder)):
            for name in names:
                if name.endswith(SUFFIXES):
                    found.append(os.path.relpath(os.path.join(base, name), root))
    return sorted(found)


def problems(root, folders=FOLDERS):
    found = []
    for path in sources(root, folders):
        if path == HOME:
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        for i, line in enumerate(lines):
            if not RAW.search(code_part(line)):
                continue
            reach = lines[max(0, i - MARKER_REACH):i + 1]
            if not any(MARKER.search(text) for text in reach):
                found.append(f"{path}:{i + 1}: {line.strip()} (use support::parse_json, or say why above it: "
                             f"// Raw JSON parse: <reason>)")
    return found


SELF_TEST = {
    "src/raw.cpp": 'auto v = json::parse(text, ec);\n',
    "src/qualified.cpp": 'auto v = boost::json::parse(text);\n',
    "handlers/parser.cpp": 'boost::json::parser p;\n',
    "protocol/stream.hpp": 'json::stream_parser p;\n',
    "src/far.cpp": '// Raw JSON parse: too far above.\n\n\n\nauto v = json::parse(text);\n',
    "src/empty_reason.cpp": '// Raw JSON parse:\nauto v = json::parse(text);\n',
    "src/marked.cpp": '// Raw JSON parse: our own literal.\nauto v = json::parse(R"({})");\n',
    "src/same_line.cpp": 'auto v = json::parse(t);  // Raw JSON parse: our own literal.\n',
    "src/in_comment.cpp": '// json::parse(text) would refuse "\\ud800".\nauto v = support::parse_json(text, ec);\n',
    "src/in_string.cpp": 'log("json::parse( refused it");\n',
    "src/support/json_text.cpp": 'return boost::json::parse(text, ec);\n',
    "tests/ignored.cpp": 'auto v = json::parse(text);\n',
}


def self_test():
    """The guard lists exactly the unmarked raw parses, and passes a tree without them."""
    with tempfile.TemporaryDirectory() as root:
        write_files(root, SELF_TEST)
        listed = problems(root)
        places = sorted(p.split(": ")[0] for p in listed)
        expected = sorted(["src/raw.cpp:1", "src/qualified.cpp:1", "handlers/parser.cpp:1", "protocol/stream.hpp:1",
                           "src/far.cpp:5", "src/empty_reason.cpp:2"])
        errors = []
        if places != expected:
            errors.append(f"listed {places}, expected {expected}")
        keep = {"src/marked.cpp", "src/same_line.cpp", "src/in_comment.cpp", "src/in_string.cpp",
                "src/support/json_text.cpp", "tests/ignored.cpp"}
        errors += clean_once_removed(root, SELF_TEST, keep, problems, "marked parses, mentions and parse_json's home")
    return self_test_result(errors)


if __name__ == "__main__":
    sys.exit(guard_main(sys.argv, __doc__, problems, self_test, lambda n: f"{n} raw JSON parses"))
