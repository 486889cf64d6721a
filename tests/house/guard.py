"""What every house guard shares: its command line and how it reports (tests/house/*.py)."""
import os


def write_files(root, files):
    """Writes each {relative path: text} of a self-test below root."""
    for path, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), "w", encoding="utf-8") as f:
            f.write(text)


def clean_once_removed(root, files, keep, problems, what):
    """Removes every self-test file but those in `keep`: an error, as a list, unless the tree of
    `what` is left is clean."""
    for path in files:
        if path not in keep:
            os.remove(os.path.join(root, path))
    left = problems(root)
    return [f"a tree with only {what} is not clean: {left!r}"] if left else []


def self_test_result(errors):
    """Prints the self-test's errors; its exit status."""
    for e in errors:
        print("self-test: " + e)
    return 1 if errors else 0


def main(argv, usage, problems, self_test, counted):
    """`GUARD SOURCE_DIR` prints each problem and exits 1 if any (`counted(n)` ends the list);
    `GUARD --self-test` runs self_test(); anything else prints usage and exits 2."""
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(usage)
        return 2
    found = problems(argv[1])
    for p in found:
        print(p)
    if found:
        print(counted(len(found)))
    return 1 if found else 0
