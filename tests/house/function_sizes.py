#!/usr/bin/env python3
"""No function of the product is over 80 lines (docs/contributing.md#function-size).

Every function (and lambda) that universal-ctags finds in src/, handlers/ and protocol/ is measured from
the line of its name to the line of its closing brace. One over the limit fails the test unless one of
the three lines above its name is an exception comment stating the reason:

    // Longer than 80 lines: <why splitting it would make it worse>

Usage: function_sizes.py SOURCE_DIR    prints each function over the limit as FILE:LINE: what, exits 1 if any
       function_sizes.py --self-test   checks on generated files that the guard finds what it must
universal-ctags is required (./dev installs it); without it the test fails rather than passing unchecked.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from guard import clean_once_removed, main as guard_main, self_test_result, write_files

LIMIT = 80
FOLDERS = ("src", "handlers", "protocol")
MARKER = re.compile(r"^\s*//\s*Longer than 80 lines:\s*\S")
MARKER_REACH = 3  # lines above the function's name that may hold the marker


def ctags():
    """The universal-ctags executable ($CTAGS or ctags on PATH); exits 1 when there is none."""
    exe = os.environ.get("CTAGS") or shutil.which("ctags")
    version = ""
    if exe:
        try:
            version = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout
        except OSError:
            version = ""
    if "Universal Ctags" not in version:
        sys.exit("function_sizes: universal-ctags is needed (Debian package universal-ctags; ./dev installs it)")
    return exe


def functions(root, folders):
    """(path relative to root, line of the name, lines, name) of every function definition under folders."""
    present = [f for f in folders if os.path.isdir(os.path.join(root, f))]
    if not present:
        return []
    out = subprocess.run(
        [ctags(), "-R", "--languages=C++", "--kinds-C++=f", "--fields=+ne", "-x",
         "--_xformat=%{end}\t%{line}\t%N\t%F"] + present,
        cwd=root, capture_output=True, text=True, check=True).stdout
    found = []
    for row in out.splitlines():
        end, line, name, path = row.split("\t", 3)
        if not end:
            continue  # a declaration ctags could not close: nothing to measure
        found.append((path, int(line), int(end) - int(line) + 1, name))
    return found


def has_marker(lines, line):
    """Whether one of the MARKER_REACH lines above 1-based `line` is an exception comment."""
    return any(MARKER.match(text) for text in lines[max(0, line - 1 - MARKER_REACH):line - 1])


def problems(root, folders=FOLDERS):
    found = []
    texts = {}
    for path, line, length, name in sorted(functions(root, folders)):
        if length <= LIMIT:
            continue
        if path not in texts:
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                texts[path] = f.read().split("\n")
        if not has_marker(texts[path], line):
            found.append(f"{path}:{line}: {name} is {length} lines (at most {LIMIT}; or say why above it: "
                         f"// Longer than 80 lines: <reason>)")
    return found


def body(lines):
    """The body of a generated function `lines` long: all but its first line, its return and its brace."""
    return "".join(f"  int v{i} = {i};\n" for i in range(lines - 3))


SELF_TEST = {
    "src/long.cpp": "int too_long() {\n" + body(LIMIT + 1) + "  return 0;\n}\n",
    "src/limit.cpp": "int at_limit() {\n" + body(LIMIT) + "  return 0;\n}\n",
    "src/marked.cpp": "// Longer than 80 lines: a table.\nint marked() {\n" + body(LIMIT + 5) + "  return 0;\n}\n",
    "src/far.cpp": "// Longer than 80 lines: too far above.\n\n\n\nint far_marker() {\n" + body(LIMIT + 1) +
                   "  return 0;\n}\n",
    "src/empty_reason.cpp": "// Longer than 80 lines:\nint no_reason() {\n" + body(LIMIT + 1) + "  return 0;\n}\n",
    "handlers/member.cpp": "struct S {\n  int f();\n};\nint S::f() {\n" + body(LIMIT + 1) + "  return 0;\n}\n",
    "protocol/lambda.hpp": "inline auto make() {\n  return [] {\n" + body(LIMIT + 1) + "    return 0;\n  };\n}\n",
    "tests/ignored.cpp": "int outside_the_folders() {\n" + body(LIMIT + 10) + "  return 0;\n}\n",
}


def self_test():
    """The guard lists exactly the long functions without a valid marker, and passes a clean tree."""
    with tempfile.TemporaryDirectory() as root:
        write_files(root, SELF_TEST)
        listed = problems(root)
        named = sorted(p.split(": ")[1].split(" is ")[0] for p in listed)
        # The lambda is as long as its enclosing function, so both are named.
        expected = sorted(["too_long", "far_marker", "no_reason", "f", "make"])
        lambda_listed = [n for n in named if n.startswith("__anon")]
        named = [n for n in named if not n.startswith("__anon")]
        errors = []
        if named != expected:
            errors.append(f"listed {named}, expected {expected}")
        if len(lambda_listed) != 1:
            errors.append(f"the long lambda was listed {len(lambda_listed)} times, expected once")
        if not any("src/long.cpp:1: too_long is 81 lines" in p for p in listed):
            errors.append("too_long's place and length are not reported as src/long.cpp:1, 81 lines: " + repr(listed))
        errors += clean_once_removed(root, SELF_TEST, {"src/limit.cpp", "src/marked.cpp"}, problems,
                                     "a function at the limit and a marked one")
    return self_test_result(errors)


if __name__ == "__main__":
    sys.exit(guard_main(sys.argv, __doc__, problems, self_test, lambda n: f"{n} functions over {LIMIT} lines"))
