#!/usr/bin/env python3
"""Transcript runner: drives the real dsh-acp binary with scripted frames and checks its output.

Usage: transcript.py SERVER IN.jsonl OUT.jsonl [-- server args...]

IN.jsonl holds the frames to send, one per line (lines starting with '#' are comments and blank lines
are skipped). A frame may use "{{=name}}" to refer to a value captured from the output: the runner
sends it only once that value has been captured. "#capture NAME ID /json/pointer" captures, from the
response to request ID, the value at that pointer (how a transcript addresses the session id that
session/new returned). "#wait N" waits until N output frames have arrived; "#await ID" until the
response to request ID has arrived; "#turns NAME N" until the log of the session captured as NAME
holds N turn/start events (its Nth prompt is running). Waits block on events (a frame; a change of
the store's files, through inotify) and have no time limit
(a transcript that never gets what it waits for ends at its CTest timeout; a note on stderr every 10 s
names what it waits for). "#args ..." adds server arguments. "#raw TEXT" sends TEXT
as is (for malformed frames); "#rawhex HEX" sends those bytes. Frames between "#batch" and "#end" go
in one write, so the server reads them together (a client that pipelines requests). The server runs
with a fresh temporary DSH_ACP_HOME; a folder NAME.store/ beside the transcript is copied in as its session store, and
"#fixture PATH" (relative to tests/data) places a raw session log into that store where the harness
layout puts it (bucket cwd-<sha256(cwd)[:12]>, segment-encoded file name). Those logs are the 45fc
harness's own files, so a transcript with a seeded store runs with --store-generation 45fc (unless its
#args name a generation): it stays a 45fc test when the suite runs with DSH_ACP_STORE_GENERATION=0.1,
which would otherwise refuse to open a root holding 45fc logs. When the input is exhausted, stdin is
closed (EOF) and the server must exit 0.

With DSH_ACP_TEST_STORE=pg (the `.pg` variants, tests/tools/pg_store.py) the sessions live in a fresh
PostgreSQL database instead: the server runs with `--store URL`, and the seeded store (NAME.store/,
#fixture logs) is copied in with `dsh-acp store copy` first, keeping the logs' own 45fc shapes. The one
difference in the output is what a store with people adds: every session's configOptions hold the
`shared` option (off), and its available_commands_update lists /share and /unshare last; the runner
checks they are there and takes them out before comparing.

OUT.jsonl holds the expected frames, in order, one JSON value per line ('#' comments allowed).
Structural comparison; key order is ignored. Placeholders (JSON strings):
  "{{any}}"  anything        "{{string}}" "{{number}}" "{{uuid}}" "{{timestamp}}"  that kind of value
  "{{?name}}" capture         "{{=name}}"  equals the captured value
  "{{prefix:TEXT}}" a string starting with TEXT   "{{match:REGEX}}" a string REGEX fully matches
  "{{size}}" a non-negative integer
  object key "{{...}}": true  extra keys allowed
Every stdout line must be a JSON-RPC frame. UPDATE_TRANSCRIPTS=1 rewrites OUT.jsonl from the
actual output, keeping existing placeholders where they still match.
"""
import atexit
import hashlib
import json
import os
import re
import select
import shutil
import tempfile
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import store_layout  # noqa: E402
from store_layout import encode_segment  # noqa: E402  (one implementation of the naming rules)
import pg_store  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from acp_client import SLOW_WAIT, Inotify, Lines, Waiting, spawn  # noqa: E402

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")


class Mismatch(Exception):
    pass


def match(expected, actual, captures, pointer):
    if isinstance(expected, str) and expected.startswith("{{") and expected.endswith("}}"):
        tag = expected[2:-2]
        if tag == "any":
            return
        if tag == "string" and isinstance(actual, str):
            return
        if tag == "number" and isinstance(actual, (int, float)) and not isinstance(actual, bool):
            return
        if tag == "size" and isinstance(actual, int) and not isinstance(actual, bool) and actual >= 0:
            return
        if tag == "uuid" and isinstance(actual, str) and UUID_RE.match(actual):
            return
        if tag == "timestamp" and isinstance(actual, str) and TIME_RE.match(actual):
            return
        if tag.startswith("prefix:") and isinstance(actual, str) and actual.startswith(tag[7:]):
            return
        if tag.startswith("match:") and isinstance(actual, str) and re.fullmatch(tag[6:], actual):
            return
        if tag.startswith("?"):
            captures[tag[1:]] = actual
            return
        if tag.startswith("="):
            if tag[1:] in captures and captures[tag[1:]] == actual:
                return
            raise Mismatch(f"{pointer or '/'}: expected captured {tag[1:]}={captures.get(tag[1:])!r}, got {actual!r}")
        raise Mismatch(f"{pointer or '/'}: placeholder {expected} does not match {actual!r}")
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            raise Mismatch(f"{pointer or '/'}: expected an object, got {actual!r}")
        extra_ok = expected.get("{{...}}") is True
        for key, value in expected.items():
            if key == "{{...}}":
                continue
            if key not in actual:
                raise Mismatch(f"{pointer}/{key}: missing")
            match(value, actual[key], captures, f"{pointer}/{key}")
        if not extra_ok:
            for key in actual:
                if key not in expected:
                    raise Mismatch(f"{pointer}/{key}: unexpected key (value {actual[key]!r})")
        return
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            raise Mismatch(f"{pointer or '/'}: expected {expected!r}, got {actual!r}")
        for i, (e, a) in enumerate(zip(expected, actual)):
            match(e, a, captures, f"{pointer}/{i}")
        return
    if expected != actual or type(expected) is not type(actual) and not (isinstance(expected, (int, float)) and isinstance(actual, (int, float))):
        raise Mismatch(f"{pointer or '/'}: expected {expected!r}, got {actual!r}")


SHARED_OPTION = {
    "id": "shared", "name": "Shared",
    "description": "Whether people with access to this store can see and reference this session",
    "type": "select", "currentValue": "off",
    "options": [{"value": "on", "name": "Shared", "description": "Others with access to the store can see it"},
                {"value": "off", "name": "Private", "description": "Only you can see it"}]}


SHARING_COMMANDS = ["share", "unshare"]


def without_shared_option(value, pointer=""):
    """The frame without the `shared` config option of a PostgreSQL store, which every configOptions
    list must hold exactly once (a transcript never switches it), and without the /share and /unshare
    commands every available_commands_update there ends with."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "availableCommands" and isinstance(v, list) and value.get("sessionUpdate") == "available_commands_update":
                names = [c.get("name") for c in v if isinstance(c, dict)]
                if names[-2:] != SHARING_COMMANDS:
                    raise SystemExit(f"FAIL: {pointer}/availableCommands: expected /share and /unshare last, got {names!r}")
                v = v[:-2]
            if k == "configOptions" and isinstance(v, list):
                shared = [o for o in v if isinstance(o, dict) and o.get("id") == "shared"]
                if shared != [SHARED_OPTION]:
                    raise SystemExit(f"FAIL: {pointer}/configOptions: expected the shared option once, got {shared!r}")
                v = [o for o in v if o is not shared[0]]
            out[k] = without_shared_option(v, f"{pointer}/{k}")
        return out
    if isinstance(value, list):
        return [without_shared_option(v, f"{pointer}/{i}") for i, v in enumerate(value)]
    return value


def substitute(text, captures):
    def repl(m):
        name = m.group(1)
        value = captures[name]
        return json.dumps(value)[1:-1] if isinstance(value, str) else json.dumps(value)
    return re.sub(r"\{\{=([A-Za-z0-9_]+)\}\}", repl, text)


def place_fixture(home, relative):
    data_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
    source = os.path.join(data_dir, relative)
    with open(source, encoding="utf-8") as f:
        header = json.loads(f.readline())
    cwd = header.get("cwd")
    bucket = "cwd-" + hashlib.sha256(cwd.encode()).hexdigest()[:12] if cwd is not None else "_no-cwd"
    target_dir = os.path.join(home, "sessions", bucket)
    os.makedirs(target_dir, mode=0o700, exist_ok=True)
    target = os.path.join(target_dir, encode_segment(header["id"]) + ".jsonl")
    shutil.copyfile(source, target)
    os.chmod(target, 0o600)


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def bless(expected_lines, actual):
    """Rewrites expected frames from actual ones, keeping placeholders that still match."""
    captures = {}
    out = []
    exp = [json.loads(l) for l in expected_lines if l.strip() and not l.lstrip().startswith("#")]

    def keep(e, a):
        try:
            match(e, a, dict(captures), "")
        except Mismatch:
            return a
        if isinstance(e, dict) and isinstance(a, dict):
            merged = {k: keep(e[k], a[k]) if k in e else a[k] for k in a}
            if e.get("{{...}}") is True:
                merged["{{...}}"] = True
            return merged
        if isinstance(e, list) and isinstance(a, list) and len(e) == len(a):
            return [keep(x, y) for x, y in zip(e, a)]
        return e

    names = {}

    def name_uuids(v):
        # Fresh ids differ on every run: the first sighting captures, later ones must be equal.
        if isinstance(v, str) and UUID_RE.match(v):
            if v in names:
                return "{{=" + names[v] + "}}"
            names[v] = f"id{len(names) + 1}"
            return "{{?" + names[v] + "}}"
        if isinstance(v, dict):
            return {k: name_uuids(x) for k, x in v.items()}
        if isinstance(v, list):
            return [name_uuids(x) for x in v]
        return v

    for i, a in enumerate(actual):
        a = name_uuids(a)
        e = exp[i] if i < len(exp) else None
        value = keep(e, a) if e is not None else a
        out.append(json.dumps(value, ensure_ascii=False))
    return out


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    server, in_path, out_path = argv
    directives = ("#wait", "#await", "#turns", "#capture", "#raw", "#batch", "#end")
    lines = read_lines(in_path)
    for l in lines:
        if l.startswith("#args "):
            extra += l.split()[1:]
    inputs = [l for l in lines if l.strip() and (not l.lstrip().startswith("#") or l.startswith(directives))]
    wanted = {}  # request id -> [(name, pointer)]
    home = tempfile.mkdtemp(prefix="dsh-transcript-")
    atexit.register(shutil.rmtree, home, True)  # a failing transcript (SystemExit) leaves nothing behind
    store_seed = in_path[: -len(".in.jsonl")] + ".store"
    if os.path.isdir(store_seed):
        shutil.copytree(store_seed, os.path.join(home, "sessions"))
    seeded = os.path.isdir(store_seed)
    for l in lines:
        if l.startswith("#fixture "):
            place_fixture(home, l.split(None, 1)[1].strip())
            seeded = True
    if seeded and not any(a.startswith("--store-generation") for a in extra):
        extra += ["--store-generation", "45fc"]
    pg = None
    if pg_store.enabled():
        pg = pg_store.ScratchStore(server)
        atexit.register(pg.drop)
        pg.seed(os.path.join(home, "sessions"))
        extra = ["--store", pg.url] + extra
    env = dict(os.environ, DSH_ACP_HOME=home)
    for key in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env.pop(key, None)
    proc = spawn(server, extra, env)
    captures = {}
    actual = []
    lines = Lines()
    expected_lines = read_lines(out_path) if os.path.exists(out_path) else []
    expected = [json.loads(l) for l in expected_lines if l.strip() and not l.lstrip().startswith("#")]
    waiting = {"what": None, "note": None}

    def pump(timeout):
        """Reads what arrives within `timeout` s: True, False when nothing did, None at EOF."""
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        if not ready:
            return False
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            return None
        lines.feed(chunk)
        while (line := lines.next()) is not None:
            try:
                frame = json.loads(line)
            except ValueError:
                raise SystemExit(f"FAIL: stdout line is not JSON: {line[:200]!r}")
            if not isinstance(frame, dict) or frame.get("jsonrpc") != "2.0":
                raise SystemExit(f"FAIL: stdout line is not a JSON-RPC frame: {line[:200]!r}")
            actual.append(without_shared_option(frame) if pg_store.enabled() else frame)
            for name, pointer in wanted.get(json.dumps(frame.get("id")), []):
                value = frame
                for token in pointer.split("/")[1:]:
                    token = token.replace("~1", "/").replace("~0", "~")
                    value = value[int(token)] if isinstance(value, list) else value.get(token) if isinstance(value, dict) else None
                captures[name] = value
        return True

    def wait_for(what, watch=None, recheck=None):
        """Blocks until stdout brings something (read, as pump does) or `watch` (an Inotify) has
        events; `recheck` seconds only for a database, which announces nothing. A note on stderr every
        SLOW_WAIT s says `what` is still awaited."""
        if waiting["what"] != what:
            waiting.update(what=what, note=Waiting(what))
        ready, _, _ = select.select([proc.stdout] + ([watch] if watch else []), [], [], recheck or SLOW_WAIT)
        if watch in ready:
            watch.drain()
        got = pump(0) if proc.stdout in ready else False
        waiting["note"].tick()
        return got

    def turn_starts(session_id):
        if pg:
            return pg.turn_starts(session_id)
        path = store_layout.log_path(os.path.join(home, "sessions"), session_id)
        try:
            return sum(1 for e in store_layout.read_log(path)[1:] if e["type"] == "turn/start") if path else 0
        except (ValueError, subprocess.CalledProcessError):
            return 0  # a line being written

    batch = None  # frames held for one write between #batch and #end
    for line in inputs:
        if line == "#batch":
            batch = b""
            continue
        if line == "#end":
            proc.stdin.write(batch)
            proc.stdin.flush()
            batch = None
            continue
        if line.startswith("#capture"):
            _, name, rid, pointer = line.split()
            wanted.setdefault(json.dumps(json.loads(rid)), []).append((name, pointer))
            continue
        if line.startswith("#rawhex "):
            proc.stdin.write(bytes.fromhex(line[8:].replace(" ", "")))
            continue
        if line.startswith("#raw "):
            proc.stdin.write((line[5:] + "\n").encode())
            continue
        if line.startswith("#await "):
            want = json.loads(line.split()[1])
            while not any(f.get("id") == want and "method" not in f for f in actual):
                if wait_for(f"the response to {want}") is None:
                    raise SystemExit(f"FAIL: stdout ended before the response to {want}")
            continue
        if line.startswith("#wait"):
            want = int(line.split()[1])
            while len(actual) < want:
                if wait_for(f"{want} frames") is None:
                    raise SystemExit(f"FAIL: stdout ended after {len(actual)} frames, before {want}")
            continue
        if line.startswith("#turns "):
            _, name, count = line.split()
            watch = None
            if not pg:  # the log is re-read as the store's files change
                watch = Inotify()
                watch.watch_tree(home)
            while turn_starts(captures[name]) < int(count):
                if wait_for(f"{count} turns of {name}", watch, recheck=0.01 if pg else None) is None:
                    raise SystemExit(f"FAIL: stdout ended before {name} had {count} turns")
            if watch:
                watch.close()
            continue
        names = re.findall(r"\{\{=([A-Za-z0-9_]+)\}\}", line)
        while any(n not in captures for n in names):
            if wait_for(f"value(s) {names}") is None:
                raise SystemExit(f"FAIL: value(s) {names} never captured; output so far: {actual}")
        if batch is not None:
            batch += (substitute(line, captures) + "\n").encode()
            continue
        proc.stdin.write((substitute(line, captures) + "\n").encode())
        proc.stdin.flush()
        while pump(0):
            pass
    proc.stdin.close()
    while wait_for("the server to exit after EOF") is not None:
        pass
    code = proc.wait()
    stderr_text = proc.stderr.read().decode(errors="replace")
    shutil.rmtree(home, ignore_errors=True)
    if stderr_text:
        raise SystemExit(f"FAIL: the server wrote to stderr: {stderr_text}")
    if code != 0:
        raise SystemExit(f"FAIL: exit code {code}")

    if os.environ.get("UPDATE_TRANSCRIPTS") == "1":
        header = [l for l in expected_lines if l.lstrip().startswith("#")]
        with open(out_path, "w", encoding="utf-8") as f:
            for l in header + bless(expected_lines, actual):
                f.write(l + "\n")
        print(f"blessed {out_path}: {len(actual)} frames")
        return

    captures = {}
    for i, frame in enumerate(actual):
        if i >= len(expected):
            raise SystemExit(f"FAIL: unexpected extra frame {i}: {json.dumps(frame)}")
        try:
            match(expected[i], frame, captures, "")
        except Mismatch as e:
            print("actual output:")
            for f in actual:
                print("  " + json.dumps(f, ensure_ascii=False))
            raise SystemExit(f"FAIL: frame {i}: {e}")
    if len(actual) < len(expected):
        raise SystemExit(f"FAIL: {len(expected) - len(actual)} expected frame(s) missing; output: {actual}")
    print(f"ok: {len(actual)} frames match")


if __name__ == "__main__":
    main()
