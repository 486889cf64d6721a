#!/usr/bin/env python3
"""`dsh-acp store index|search` as a script runs them (issue 29), on a 45fc root of plain JSONL
logs written here, with the content index in a private XDG_CACHE_HOME:

index   builds the index (progress on stderr, summary on stdout), a second run indexes nothing;
search  best session first, tab-separated lines or --json objects, --limit; a line another
        process appends to a log is found without `index`; a deleted log is never returned;
usage   missing operands and misplaced options -> 2;
kill    `store index` killed with SIGKILL after its first progress line past a commit: the next
        search still returns every matching session exactly once.

Usage: store_search_test.py DSH_ACP_BIN
"""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

CWD = "/work/project"
BUCKET = "cwd-" + hashlib.sha256(CWD.encode()).hexdigest()[:12]


def run(binary, env, *args, expect=0):
    p = subprocess.run([binary, "store", *args], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == expect, f"dsh-acp store {' '.join(args)}: exit {p.returncode}, expected {expect}\n" \
                                   f"stdout: {p.stdout}\nstderr: {p.stderr}"
    return p


def turn_lines(first_seq, turn, text):
    t = 1783957884000 + first_seq
    return [
        {"type": "turn/start", "seq": first_seq, "time": t,
         "data": {"turn": turn, "trigger": {"kind": "message", "source": {"kind": "user"}}}},
        {"type": "user/message", "seq": first_seq + 1, "time": t,
         "data": {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}}, "surfaceOp": "append"},
        {"type": "turn/end", "seq": first_seq + 2, "time": t, "data": {"turn": turn, "reason": {"kind": "completed"}}},
    ]


def write_log(root, sid, texts):
    os.makedirs(os.path.join(root, BUCKET), mode=0o700, exist_ok=True)
    lines = [{"type": "session", "version": 0, "id": sid, "createdAt": 1783950001000, "cwd": CWD,
              "delegationDepth": 0}]
    for i, text in enumerate(texts):
        lines += turn_lines(3 * i, i + 1, text)
    with open(os.path.join(root, BUCKET, sid + ".jsonl"), "w", encoding="utf-8") as f:
        f.write("".join(json.dumps(l) + "\n" for l in lines))


def append_turn(root, sid, turn, text):
    path = os.path.join(root, BUCKET, sid + ".jsonl")
    with open(path, encoding="utf-8") as f:
        count = len(f.read().splitlines()) - 1
    with open(path, "a", encoding="utf-8") as f:
        f.write("".join(json.dumps(l) + "\n" for l in turn_lines(count, turn, text)))


def hits(p):
    return [line.split("\t") for line in p.stdout.splitlines()]


def main():
    binary = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="store-search-")
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_ACP_")}
        env["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
        env["HOME"] = tmp
        root = os.path.join(tmp, "root")
        write_log(root, "both", ["the kubernetes rollback failed", "kubernetes again"])
        write_log(root, "one", ["a kubernetes question"])
        write_log(root, "none", ["gardening"])

        p = run(binary, env, "index", root)
        assert p.stdout.strip() == f"index {root}: 3 sessions, 3 indexed", p.stdout
        assert "[3/3]" in p.stderr, p.stderr
        assert any(n.startswith("content-") and n.endswith(".sqlite")
                   for n in os.listdir(os.path.join(tmp, "cache", "dsh-acp"))), os.listdir(tmp)
        p = run(binary, env, "index", root)
        assert p.stdout.strip() == f"index {root}: 3 sessions, 0 indexed", p.stdout

        p = run(binary, env, "search", root, "kubernetes", "rollback")
        h = hits(p)
        assert [x[0] for x in h] == ["both", "one"], p.stdout
        assert h[0][1] == "1" and h[0][2] == "user" and h[0][4] == "the kubernetes rollback failed", h
        assert float(h[0][3]) > float(h[1][3]), h
        p = run(binary, env, "search", "--json", "--limit", "1", root, "kubernetes", "rollback")
        objs = [json.loads(l) for l in p.stdout.splitlines()]
        assert len(objs) == 1 and objs[0]["id"] == "both" and set(objs[0]) == {"id", "seq", "kind", "score", "snippet"}, objs
        assert run(binary, env, "search", root, "nothing", "matches").stdout == ""

        # Another process's lines and deletions, seen by the next search.
        append_turn(root, "none", 2, "now a zeppelin")
        assert [x[0] for x in hits(run(binary, env, "search", root, "zeppelin"))] == ["none"]
        os.unlink(os.path.join(root, BUCKET, "one.jsonl"))
        assert [x[0] for x in hits(run(binary, env, "search", root, "kubernetes"))] == ["both"]

        # Usage errors.
        run(binary, env, "search", root, expect=2)
        run(binary, env, "index", expect=2)
        run(binary, env, "verify", "--json", root, expect=2)
        run(binary, env, "index", "--limit", "3", root, expect=2)
        run(binary, env, "search", "--limit", "0", root, "x", expect=2)
        assert "store index STORE" in run(binary, env, "--help").stdout

        # Killed mid-build: what was committed stays, the rest is caught up, nothing twice.
        big = os.path.join(tmp, "big")
        n = 1500
        # ~20 KB of words per session: the build takes long enough to be killed in the middle.
        filler = " ".join(f"filler{k % 211}x{k % 7}" for k in range(1600))
        for i in range(n):
            write_log(big, f"s{i}", [f"common word{i}", filler])
        child = subprocess.Popen([binary, "store", "index", big], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True, env=env)
        try:
            for line in child.stderr:
                done = int(line[1:line.index("/")])
                if done > 0:
                    break
            else:
                raise AssertionError("store index ended without a progress line past a commit")
            child.send_signal(signal.SIGKILL)
        finally:
            child.wait()
            child.stderr.close()
        if child.returncode != -signal.SIGKILL:
            # The build finished first (a very slow reader of its progress): nothing was cut short.
            assert child.returncode == 0, child.returncode
            print("note: store index finished before the kill", file=sys.stderr)
        p = run(binary, env, "search", "--json", "--limit", str(2 * n), big, "common")
        ids = [json.loads(l)["id"] for l in p.stdout.splitlines()]
        assert len(ids) == n and len(set(ids)) == n, (len(ids), len(set(ids)))
        assert [x[0] for x in hits(run(binary, env, "search", big, "word77"))] == ["s77"]
        p = run(binary, env, "index", big)
        assert p.stdout.strip() == f"index {big}: {n} sessions, 0 indexed", p.stdout
        print("ok")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
