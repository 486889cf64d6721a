#!/usr/bin/env python3
"""Crash safety of the session store with real processes (issue 3, docs/decisions.md#session-store).

1. kill -9: RUNS real `dsh-acp --provider echo` processes are killed at a random moment while they
   answer prompts (echo delays and [[echo:sleep=MS]] land the kill mid-turn). Half the runs use a
   zstd store, half `--store-compression none`. Later runs load sessions written by killed ones.
2. Afterwards, through fresh binaries: every log loads (session/load answers, with replay); every
   prompt answered before a kill has its user text in the replay; the committed prefix has no
   duplicated or missing seq. Then one more prompt per session (repair happens under the lock)
   and the whole file must be strictly valid: every zstd frame decompresses (`zstd` CLI), every
   line parses, seqs 0..n-1, turns numbered 1, 2, 3 … each closed by its turn/end.
3. Cut logs: copies of real logs written by the binary (raw and zstd) are cut at random byte
   offsets, placed in fresh stores and checked the same way (prompts whose turn/end lies in the
   committed prefix must be replayed).
4. Kills during compaction (issue 9): a session of three answered prompts gets `/compact` with a
   slow echo summary and the process is killed at a random moment. The committed prefix must fold
   (docs/store-format.md#folding) to the surface before the compaction or to the one after it (a
   checkpoint replacing the oldest nodes, the rest unchanged), never anything between; the log
   then loads, replays every prompt, takes one more prompt and is strictly valid. The same for
   automatic compaction: a session of four long prompts is reopened with a small --context-window
   so that the next prompt compacts before its answer, echo is slowed per word, and the process is
   killed at a random moment (before, inside or after the compaction); the killed turn's own user
   message and answer may follow the surface. One more prompt then leaves a completed compaction.

With DSH_ACP_TEST_STORE=pg (crash.kill.pg) every store is a fresh PostgreSQL database of the suite's
cluster (tests/tools/pg_store.py) and the logs are read from an export: 1, 2 and 4 as above (a kill
leaves whole batches, so the turn a kill interrupted is what a reopened session closes); 3 has no
counterpart (a batch commits whole or not at all) and is left out. Fewer rounds by default (a quarter
of --runs, half the compaction kills): each kill is followed by an export.

Usage: crash_test.py DSH_ACP_BIN [--runs N] [--cuts N] [--compactions N] [--auto-compactions N] [--seed S].
The seed is printed.
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from acp_client import Client  # noqa: E402
import pg_store  # noqa: E402
import store_layout  # noqa: E402

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


# ---- reading logs the way a checker would (independent of the server's code) ---------------------

def zstd_frames(data):
    """Walks zstd frames (docs/store-format.md#encodings-and-zstd-framing): list of (start, end) of
    complete frames, and the start of a torn final frame (or None)."""
    frames, pos = [], 0
    while pos < len(data):
        start = pos
        try:
            if data[pos:pos + 4] != ZSTD_MAGIC:
                if len(data) - pos < 4 and ZSTD_MAGIC.startswith(data[pos:]):
                    raise IndexError  # EOF inside the magic: a torn frame like any other
                raise ValueError(f"bad magic at {pos}")
            fhd = data[pos + 4]
            pos += 5
            single = (fhd >> 5) & 1
            if not single:
                pos += 1
            pos += [0, 1, 2, 4][fhd & 3]
            fcs_flag = fhd >> 6
            pos += [1 if single else 0, 2, 4, 8][fcs_flag]
            while True:
                if pos + 3 > len(data):
                    raise IndexError
                bh = int.from_bytes(data[pos:pos + 3], "little")
                pos += 3
                last, btype, size = bh & 1, (bh >> 1) & 3, bh >> 3
                pos += 1 if btype == 1 else size
                if pos > len(data):
                    raise IndexError
                if last:
                    break
            if (fhd >> 2) & 1:
                pos += 4
            if pos > len(data):
                raise IndexError
        except IndexError:
            return frames, start
        frames.append((start, pos))
    return frames, None


def zstd_decompress(data):
    """(plaintext, ok) through the zstd CLI; a torn input gives what zstd could decode and ok=False."""
    p = subprocess.run(["zstd", "-dcq"], input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.stdout, p.returncode == 0


def plaintext(path):
    """(plaintext, strict_ok) of a log of either encoding."""
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".zstd"):
        return zstd_decompress(data)
    return data, True


def scan(text):
    """Splits a plaintext log: (header, events, fragment). Raises on an unparsable complete line.
    Events are normalised (tests/tools/store_layout.py), so the checks read a log of either layout."""
    parts = text.split(b"\n")
    fragment = parts.pop()
    if not parts:
        raise AssertionError("no complete header line")
    header = json.loads(parts[0])
    events = []
    for i, line in enumerate(parts[1:], start=1):
        try:
            event = json.loads(line)
        except ValueError:
            raise AssertionError(f"line {i + 1} does not parse: {line[:200]!r}")
        events.append(store_layout.normalise_event(event))
    return header, events, fragment


def check_seqs(events, where):
    for i, e in enumerate(events):
        if e.get("seq") != i:
            seqs = [x.get("seq") for x in events]
            raise AssertionError(f"{where}: seq {e.get('seq')} at event {i} (duplicated or missing seq): {seqs[max(0, i - 5):i + 5]}")


def check_turns(events, where):
    open_turn, last_turn = None, 0
    for e in events:
        t = e["type"]
        if t == "turn/start":
            if open_turn is not None:
                raise AssertionError(f"{where}: turn {e['data']['turn']} starts while turn {open_turn} is open")
            if e["data"]["turn"] != last_turn + 1:
                raise AssertionError(f"{where}: turn {e['data']['turn']} follows turn {last_turn}")
            open_turn = last_turn = e["data"]["turn"]
        elif t == "turn/end":
            if e["data"]["turn"] != open_turn:
                raise AssertionError(f"{where}: turn/end {e['data']['turn']} while turn {open_turn} is open")
            open_turn = None
    if open_turn is not None:
        raise AssertionError(f"{where}: turn {open_turn} left open after a write under the lock")
    return last_turn


def user_texts(events):
    out = []
    for e in events:
        if e["type"] == "user/message" and e["data"].get("source", {}).get("kind") == "user":
            out.append("".join(b.get("text", "") for b in e["data"]["content"]))
    return out


def completed_user_texts(events):
    """User texts of turns whose turn/end is among `events`."""
    done, current = [], []
    for e in events:
        if e["type"] == "turn/start":
            current = []
        elif e["type"] == "user/message" and e["data"].get("source", {}).get("kind") == "user":
            current.append("".join(b.get("text", "") for b in e["data"]["content"]))
        elif e["type"] == "turn/end":
            done += current
            current = []
    return done


def strict_check(path):
    text, ok = plaintext(path)
    if not ok:
        raise AssertionError(f"{path}: zstd -d fails after repair")
    header, events, fragment = scan(text)
    if fragment:
        raise AssertionError(f"{path}: torn tail left after a write under the lock: {fragment[:100]!r}")
    check_seqs(events, path)
    turns = check_turns(events, path)
    return header, events, turns


def lenient_check(path):
    """Committed prefix as a reader sees it (no repair yet): complete lines parse, seqs contiguous."""
    text, _ok = plaintext(path)
    header, events, _fragment = scan_prefix(text)
    check_seqs(events, path)
    return header, events


def scan_prefix(text):
    # A torn zstd frame may decode into a partial line; only \n-terminated lines count, and a
    # partially decoded line that happens to end in \n cannot (zstd stops at a block boundary).
    return scan(text)


def log_files(store):
    return store_layout.log_files(store)


def check_modes(store):
    for root, dirs, files in os.walk(store):
        for d in dirs:
            m = os.stat(os.path.join(root, d)).st_mode & 0o777
            assert m == 0o700, f"directory {os.path.join(root, d)} has mode {m:o}"
        for n in files:
            if n.endswith(".jsonl") or n.endswith(".jsonl.zstd"):
                m = os.stat(os.path.join(root, n)).st_mode & 0o777
                assert m == 0o600, f"log {os.path.join(root, n)} has mode {m:o}"


def replayed_user_text(client, sid):
    return "\n".join(u["content"].get("text", "") for u in client.updates(sid, "user_message_chunk"))


# ---- phase 1: kill -9 during prompts -----------------------------------------------------------

class Store:
    """A test's session store: a file root, or with DSH_ACP_TEST_STORE=pg (crash.kill.pg) a fresh
    database of the suite's PostgreSQL (tests/tools/pg_store.py), whose logs are read from an export."""

    def __init__(self, binary, root):
        self.root = root
        self.pg = pg_store.ScratchStore(binary) if pg_store.enabled() else None
        self.arg = self.pg.url if self.pg else root  # the server's --store

    def logs(self):
        """Every log file now (of a database: exported afresh into the root)."""
        if self.pg:
            pg_store.remove(self.root)
            self.pg.export(self.root)
        return log_files(self.root)

    def close(self):
        if self.pg:
            self.pg.drop()


class Home:
    def __init__(self, binary, base, name, compression):
        self.home = os.path.join(base, name)
        os.makedirs(self.home)
        self.files = Store(binary, os.path.join(self.home, "sessions"))
        self.store = self.files.arg
        self.args = ["--store-compression", compression]
        self.compression = compression
        self.sessions = {}  # id -> {"cwd": ..., "answered": [tokens]}


def kill_run(binary, rng, home, cwds, run, stats):
    delay = rng.choice([0, 0, 1, 2])
    c = Client(binary, home.home, home.args + ["--echo-delay-ms", str(delay)], store=home.store)
    active = []
    try:
        c.initialize()
        for _ in range(rng.choice([1, 1, 2])):
            known = [s for s in home.sessions if s not in active]
            if known and (rng.random() < 0.5 or len(home.sessions) >= 6):
                sid = rng.choice(known)
                r = c.call("session/load", {"sessionId": sid, "cwd": home.sessions[sid]["cwd"], "mcpServers": []})
                if "error" in r and r["error"]["code"] == -32002 and not home.sessions[sid]["answered"]:
                    # Killed before its first write: logs are created lazily, so there is nothing to load.
                    del home.sessions[sid]
                    continue
                if "error" in r:
                    raise AssertionError(f"run {run}: session/load of {sid} after a kill failed: {r['error']}")
                replay = replayed_user_text(c, sid)
                for tok in home.sessions[sid]["answered"]:
                    if tok not in replay:
                        raise AssertionError(f"run {run}: answered prompt {tok!r} missing from the replay of {sid}")
                stats["loads"] += 1
            else:
                cwd = rng.choice(cwds)
                sid = c.ok("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
                home.sessions[sid] = {"cwd": cwd, "answered": []}
            active.append(sid)

        def prompt(sid, i):
            tok = f"crash-r{run}-{i}-{sid[:8]}"
            text = tok
            if rng.random() < 0.3:
                text += f" [[echo:sleep={rng.randint(5, 120)}]]"
            rid = c.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})
            return rid, tok

        pending, counter = {}, 0
        for sid in active:
            rid, tok = prompt(sid, counter)
            counter += 1
            pending[rid] = (sid, tok)
        deadline = time.monotonic() + rng.uniform(0.005, 0.5)
        while time.monotonic() < deadline:
            c.pump(deadline - time.monotonic())
            for rid in [r for r in pending if r in c.responses]:
                sid, tok = pending.pop(rid)
                resp = c.responses[rid]
                if "error" in resp:
                    raise AssertionError(f"run {run}: prompt {tok} failed: {resp['error']}")
                home.sessions[sid]["answered"].append(tok)
                stats["answered"] += 1
                rid2, tok2 = prompt(sid, counter)
                counter += 1
                pending[rid2] = (sid, tok2)
        stats["killed_mid_prompt"] += 1 if pending else 0
    finally:
        c.kill9()
    # Right after the kill: the committed prefix of each log this run wrote has contiguous seqs.
    for f in [f for f in home.files.logs() if store_layout.segment_of(f) in active]:
        text, ok = plaintext(f)
        stats["torn_after_kill"] += 1 if (not ok or not text.endswith(b"\n")) else 0
        _h, events = lenient_check(f)
        starts = sum(1 for e in events if e["type"] == "turn/start")
        stats["open_after_kill"] += 1 if starts > sum(1 for e in events if e["type"] == "turn/end") else 0


# ---- phase 2: every log loads, answered prompts present, seqs contiguous; repair; strict -------

def verify_home(binary, home, label):
    files = home.files.logs()
    assert len(files) >= len([s for s in home.sessions.values() if s["answered"]]), \
        f"{label}: fewer logs than sessions with answered prompts"
    # The committed prefix as readers see it, before any repair.
    torn = open_turns = 0
    for f in files:
        text, ok = plaintext(f)
        torn += 1 if (not ok or not text.endswith(b"\n")) else 0
        _h, events = lenient_check(f)
        starts = sum(1 for e in events if e["type"] == "turn/start")
        ends = sum(1 for e in events if e["type"] == "turn/end")
        open_turns += 1 if starts > ends else 0
    home.before_repair = (len(files), torn, open_turns)
    c = Client(binary, home.home, home.args, store=home.store)
    try:
        c.initialize()
        for sid, s in home.sessions.items():
            r = c.call("session/load", {"sessionId": sid, "cwd": s["cwd"], "mcpServers": []})
            if "error" in r:
                if not s["answered"] and r["error"]["code"] == -32002:
                    continue  # created, killed before its first write: no log, nothing promised
                raise AssertionError(f"{label}: session/load {sid} failed: {r['error']}")
            replay = replayed_user_text(c, sid)
            for tok in s["answered"]:
                assert tok in replay, f"{label}: answered prompt {tok!r} not replayed for {sid}"
            # One more prompt: the write takes the lock, repairs a torn tail / open turn first.
            tok = f"final-{sid[:8]}"
            r = c.ok("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": tok}]})
            assert r["stopReason"] == "end_turn", r
            s["answered"].append(tok)
    finally:
        assert c.close() == 0
    checked = 0
    home.interrupted = 0
    for f in home.files.logs():
        header, events, turns = strict_check(f)
        home.interrupted += sum(1 for e in events if e["type"] == "turn/end" and e["data"]["reason"]["kind"] == "interrupted")
        s = home.sessions.get(header["id"])
        if s is None:
            continue
        texts = "\n".join(user_texts(events))
        for tok in s["answered"]:
            assert tok in texts, f"{label}: answered prompt {tok!r} not in {f}"
        checked += 1
    if not home.files.pg:
        check_modes(home.store)
    return checked


# ---- phase 3: logs cut at random byte offsets ----------------------------------------------------

def committed_text(data, cut, zstd):
    """Plaintext of what a reader must keep of data[:cut] (complete frames / complete lines)."""
    if zstd:
        frames, _torn = zstd_frames(data[:cut])
        end = frames[-1][1] if frames else 0
        text, ok = zstd_decompress(data[:end])
        assert ok, "complete frames of a valid log must decompress"
        return text
    return data[:data[:cut].rfind(b"\n") + 1]


def cut_run(binary, rng, base, source, cwd_of, k):
    zstd = source.endswith(".zstd")
    with open(source, "rb") as f:
        data = f.read()
    if zstd:
        frames, torn = zstd_frames(data)
        assert torn is None and frames and frames[-1][1] == len(data), f"{source}: not a clean zstd frame sequence"
        first = frames[0][1]
    else:
        first = data.index(b"\n") + 1
    cut = rng.randint(first, len(data))
    home = os.path.join(base, f"cut-{k}")
    store = os.path.join(home, "sessions")
    # The same place in a fresh store: bucket/<id>.jsonl[.zstd] (45fc) or project/<id>/session.jsonl[.zstd] (0.1).
    rel = os.path.relpath(source, start=store_layout.store_root_of(source))
    target = os.path.join(store, rel)
    os.makedirs(os.path.dirname(target), mode=0o700)
    d = os.path.dirname(target)
    while True:
        os.chmod(d, 0o700)
        if d == store:
            break
        d = os.path.dirname(d)
    with open(target, "wb") as f:
        f.write(data[:cut])
    os.chmod(target, 0o600)

    header, events, _ = scan(committed_text(data, cut, zstd))
    expected = completed_user_texts(events)
    sid = header["id"]
    lenient_check(target)
    args = ["--store-compression", "zstd" if zstd else "none"]
    c = Client(binary, home, args, store=store)
    try:
        c.initialize()
        r = c.call("session/load", {"sessionId": sid, "cwd": cwd_of(header), "mcpServers": []})
        if "error" in r:
            raise AssertionError(f"cut {k} ({'zstd' if zstd else 'raw'} at {cut}/{len(data)}): load failed: {r['error']}")
        replay = replayed_user_text(c, sid)
        for t in expected:
            assert t in replay, f"cut {k}: completed prompt {t!r} not replayed"
        r = c.ok("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": f"after-cut-{k}"}]})
        assert r["stopReason"] == "end_turn"
    finally:
        assert c.close() == 0
    _h, events, _turns = strict_check(target)
    texts = user_texts(events)
    for t in expected + [f"after-cut-{k}"]:
        assert t in texts, f"cut {k}: {t!r} not in the repaired log"


# ---- phase 4: kill -9 during compaction ---------------------------------------------------------

def fold(events, where):
    """The surface fold of docs/store-format.md#folding (seqs in surface order); raises on any violation."""
    nodes = []
    for i, e in enumerate(events):
        assert e["seq"] == i, f"{where}: seq {e['seq']} at {i}"
        op = e.get("surfaceOp")
        if op is None:
            continue
        if op == "append":
            nodes.append(e["seq"])
            continue
        assert isinstance(op, dict) and sorted(op) == ["end", "op", "start"] and op["op"] == "replace", f"{where}: {op}"
        si, ei = nodes.index(op["start"]), nodes.index(op["end"])
        assert si <= ei, f"{where}: replace start after end"
        for n in nodes[si:ei + 1]:
            assert n in e["sourceEventSeqs"], f"{where}: shadowed {n} not in sourceEventSeqs"
        nodes[si:ei + 1] = [e["seq"]]
    return nodes


def compaction_state(before, events, where, new_nodes):
    """Checks that the committed prefix `events` folds to the surface `before` or to it after one
    compaction (a checkpoint replacing its oldest nodes, the rest unchanged), never anything
    between. With `new_nodes`, nodes the killed turn appended after `before` (its user message,
    its answer) may follow. Returns "before" or "after"."""
    after = fold(events, where)
    last = max(before)

    def is_checkpoint(n):
        d = events[n]
        return d["type"] == "user/message" and d["data"].get("source") == {"kind": "plugin", "plugin": "compact"}

    def check_new(nodes):
        assert new_nodes or not nodes, f"{where}: nodes appended to the surface: {before} -> {after}"
        for n in nodes:
            assert n > last and not is_checkpoint(n), f"{where}: the surface is neither before nor after the compaction: {before} -> {after}"

    if after[:len(before)] == before:
        check_new(after[len(before):])
        return "before"
    cp = events[after[0]]
    assert cp["seq"] > last and is_checkpoint(cp["seq"]), \
        f"{where}: the surface is neither before nor after the compaction: {before} -> {after}"
    seqs = cp["sourceEventSeqs"]
    assert events[seqs[0]]["type"] == "compact/start" and events[seqs[1]]["type"] == "compact/summary", f"{where}: {seqs}"
    shadowed = seqs[2:]
    m = len(shadowed)
    assert m >= 1 and before[:m] == shadowed, f"{where}: checkpoint names {seqs}, surface before {before}"
    assert cp["surfaceOp"] == {"op": "replace", "start": shadowed[0], "end": shadowed[-1]}, f"{where}: {cp['surfaceOp']}"
    kept = before[m:]
    assert after[1:1 + len(kept)] == kept, f"{where}: the kept nodes changed: {before} -> {after}"
    check_new(after[1 + len(kept):])
    return "after"


def compact_kill_run(binary, rng, base, k, stats):
    compression = "zstd" if k % 2 == 0 else "none"
    home = os.path.join(base, f"compact-{k}")
    os.makedirs(home)
    files = Store(binary, os.path.join(home, "sessions"))
    store = files.arg
    args = ["--store-compression", compression]
    c = Client(binary, home, args, store=store)
    prompts = [f"compact-r{k}-{i}" for i in range(3)]
    try:
        c.initialize()
        sid = c.ok("session/new", {"cwd": home, "mcpServers": []})["sessionId"]
        for p in prompts:
            assert c.ok("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": p}]})["stopReason"] == "end_turn"
        [path] = files.logs()
        _h, events = lenient_check(path)
        before = fold(events, path)
        sleep_ms = rng.randint(20, 80)
        c.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": f"/compact [[echo:sleep={sleep_ms}]]"}]})
        deadline = time.monotonic() + rng.uniform(0, (sleep_ms + 15) / 1000)
        while time.monotonic() < deadline:
            c.pump(deadline - time.monotonic())
    finally:
        c.kill9()
    [path] = files.logs()
    _h, events = lenient_check(path)
    where = f"compaction kill {k} ({compression})"
    state = compaction_state(before, events, where, new_nodes=False)
    stats[state] += 1
    if state == "before":
        stats["started"] += 1 if any(e["type"] == "compact/start" for e in events) else 0
    # Every log loads, replays every prompt, takes one more prompt and is strictly valid.
    c = Client(binary, home, args, store=store)
    try:
        c.initialize()
        r = c.call("session/load", {"sessionId": sid, "cwd": home, "mcpServers": []})
        assert "error" not in r, f"{where}: session/load failed: {r.get('error')}"
        replay = replayed_user_text(c, sid)
        for p in prompts:
            assert p in replay, f"{where}: prompt {p!r} not replayed"
        r = c.ok("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "after the kill"}]})
        assert r["stopReason"] == "end_turn", r
    finally:
        assert c.close() == 0
    [path] = files.logs()
    _h, events, _turns = strict_check(path)
    fold(events, where)
    files.close()


ECHO_LINE = re.compile(r"^\[\d+\] \w+ (\d+) bytes", re.M)


def tokens(n_bytes):
    """One message's estimate (llm/token_estimate.hpp, docs/models.md, "Token estimate")."""
    return -(-n_bytes // 3) + 4


def auto_compact_kill_run(binary, rng, base, k, stats):
    """A session of four long prompts is reopened with a context window that the fifth prompt's
    request exceeds (above compact-at, below the window), so that prompt compacts automatically
    before its answer; echo is slowed per word and the process killed at a random moment."""
    compression = "zstd" if k % 2 == 0 else "none"
    home = os.path.join(base, f"auto-{k}")
    os.makedirs(home)
    files = Store(binary, os.path.join(home, "sessions"))
    store = files.arg
    args = ["--store-compression", compression]
    prompts = [f"auto-r{k}-{i}: {'words to fill the context ' * 24}" for i in range(4)]
    c = Client(binary, home, args, store=store)
    try:
        c.initialize()
        sid = c.ok("session/new", {"cwd": home, "mcpServers": []})["sessionId"]
        for p in prompts:
            seen = len(c.updates(sid, "agent_message_chunk"))
            assert c.ok("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": p}]})["stopReason"] == "end_turn"
            answer = "".join(u["content"]["text"] for u in c.updates(sid, "agent_message_chunk")[seen:])
    finally:
        assert c.close() == 0
    # The next request: the last one (echo lists its message sizes), the answer, the new prompt.
    last = f"auto-r{k}-4"
    estimate = 3 + sum(tokens(int(b)) for b in ECHO_LINE.findall(answer))
    estimate += tokens(len(answer.encode())) + tokens(len(last.encode()))
    # The threshold is compact-at 0.8 of (window - window/8) = 0.7 window = 0.875 estimate: the
    # request is above it and under the window, and the compacted one fits easily.
    window = estimate * 5 // 4
    [path] = files.logs()
    _h, events = lenient_check(path)
    before = fold(events, path)
    written = len(events)
    delay = rng.choice([1, 2, 3])
    c = Client(binary, home, args + ["--context-window", str(window), "--echo-delay-ms", str(delay)], store=store)
    try:
        c.initialize()
        c.ok("session/load", {"sessionId": sid, "cwd": home, "mcpServers": []})
        c.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": last}]})
        # The summary streams about 80 words, the answer about 130: most kills land in the summary.
        deadline = time.monotonic() + rng.uniform(0, 0.15 * delay)
        while time.monotonic() < deadline:
            c.pump(deadline - time.monotonic())
    finally:
        c.kill9()
    [path] = files.logs()
    _h, events = lenient_check(path)
    where = f"automatic compaction kill {k} ({compression}, window {window})"
    state = compaction_state(before, events, where, new_nodes=True)
    types = [e["type"] for e in events[written:]]
    if state == "after":
        stats["after"] += 1
        stats["answered"] += 1 if "turn/end" in types else 0
    elif "compact/start" in types:
        stats["inside"] += 1
    else:
        stats["before"] += 1
    # Every log loads, replays every prompt, takes one more prompt (compacting if it did not) and is
    # strictly valid; the log then holds a completed automatic compaction.
    c = Client(binary, home, args + ["--context-window", str(window)], store=store)
    try:
        c.initialize()
        r = c.call("session/load", {"sessionId": sid, "cwd": home, "mcpServers": []})
        assert "error" not in r, f"{where}: session/load failed: {r.get('error')}"
        replay = replayed_user_text(c, sid)
        for p in prompts:
            assert p.split(":")[0] in replay, f"{where}: prompt {p[:20]!r} not replayed"
        r = c.ok("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "after the kill"}]})
        assert r["stopReason"] == "end_turn", r
    finally:
        assert c.close() == 0
    [path] = files.logs()
    _h, events, _turns = strict_check(path)
    files.close()
    surface = fold(events, where)
    cp = events[surface[0]]
    assert cp["type"] == "user/message" and cp["data"]["source"] == {"kind": "plugin", "plugin": "compact"}, \
        f"{where}: no automatic compaction after one more prompt: {surface}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--runs", type=int, default=int(os.environ.get("CRASH_RUNS", "60")))
    ap.add_argument("--cuts", type=int, default=int(os.environ.get("CRASH_CUTS", "40")))
    ap.add_argument("--compactions", type=int, default=int(os.environ.get("CRASH_COMPACTIONS", "12")))
    ap.add_argument("--auto-compactions", type=int, default=int(os.environ.get("CRASH_AUTO_COMPACTIONS", "12")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("CRASH_SEED", random.randrange(1 << 32))))
    a = ap.parse_args()
    if pg_store.enabled():
        # Every kill is followed by an export of the database: fewer rounds keep the variant near the
        # file test's time (and scale down with CRASH_RUNS, as the sanitizer build sets it).
        for k, d in (("runs", 4), ("compactions", 2), ("auto_compactions", 2)):
            if f"--{k.replace('_', '-')}" not in sys.argv:
                setattr(a, k, max(4, getattr(a, k) // d))
        a.cuts = 0
    print(f"crash test: seed {a.seed} (rerun with --seed {a.seed}), {a.runs} kill runs, {a.cuts} cut logs", flush=True)
    if not shutil.which("zstd"):
        print("crash test: the zstd CLI is required", file=sys.stderr)
        return 1
    rng = random.Random(a.seed)
    base = tempfile.mkdtemp(prefix="dsh-crash-")
    t0 = time.monotonic()
    passed = failed = 0
    homes = []
    try:
        cwds = [os.path.join(base, "work-a"), os.path.join(base, "work b/ü")]
        for d in cwds:
            os.makedirs(d)
        homes = [Home(a.binary, base, "zstd", "zstd"), Home(a.binary, base, "raw", "none")]
        stats = {"answered": 0, "loads": 0, "killed_mid_prompt": 0, "torn_after_kill": 0, "open_after_kill": 0}
        for run in range(a.runs):
            kill_run(a.binary, rng, homes[run % 2], cwds, run, stats)
        print(f"phase 1: {a.runs} processes killed ({stats['killed_mid_prompt']} with a prompt in flight), "
              f"{stats['answered']} prompts answered before the kills, {stats['loads']} loads after a kill "
              f"({time.monotonic() - t0:.1f} s); after the kills the logs showed {stats['open_after_kill']} open turns and "
              f"{stats['torn_after_kill']} torn tails, and every committed prefix had contiguous seqs", flush=True)
        for h in homes:
            n = verify_home(a.binary, h, h.compression)
            total, torn, open_turns = h.before_repair
            print(f"phase 2 ({h.compression}): {n} logs load and replay every answered prompt ({torn} of {total} had a torn "
                  f"tail, {open_turns} an open turn); one more prompt each leaves them strictly valid "
                  f"({h.interrupted} turns closed 'interrupted' by repair)", flush=True)
        passed += 1

        if pg_store.enabled():
            # Logs cut at byte offsets have no PostgreSQL counterpart (a batch commits whole or not
            # at all): phase 3 is the file store's.
            print("phase 3: file roots only (DSH_ACP_TEST_STORE=pg)", flush=True)
        sources = [] if pg_store.enabled() else [f for h in homes for f in log_files(h.store)]
        cwd_of = lambda header: header["cwd"]  # noqa: E731
        by_kind = {True: [f for f in sources if f.endswith(".zstd")], False: [f for f in sources if not f.endswith(".zstd")]}
        for k in range(a.cuts if sources else 0):
            pool = by_kind[k % 2 == 0] or sources
            cut_run(a.binary, rng, base, rng.choice(pool), cwd_of, k)
        if sources:
            print(f"phase 3: {a.cuts} logs cut at random offsets (half zstd, half raw) load, replay, repair ({time.monotonic() - t0:.1f} s)")
            passed += 1

        cstats = {"before": 0, "after": 0, "started": 0}
        for k in range(a.compactions):
            compact_kill_run(a.binary, rng, base, k, cstats)
        print(f"phase 4: {a.compactions} processes killed during /compact: {cstats['before']} surfaces as before "
              f"({cstats['started']} of them with compact/start written), {cstats['after']} as after, none between; "
              f"every log loads, replays and is strictly valid after one more prompt ({time.monotonic() - t0:.1f} s)", flush=True)
        astats = {"before": 0, "inside": 0, "after": 0, "answered": 0}
        for k in range(a.auto_compactions):
            auto_compact_kill_run(a.binary, rng, base, k, astats)
        print(f"phase 4 (automatic): {a.auto_compactions} processes killed while a prompt compacted automatically: "
              f"{astats['before']} before compact/start, {astats['inside']} inside the compaction (surface as before), "
              f"{astats['after']} after it ({astats['answered']} of them with the turn answered), none between; every log "
              f"loads, replays, compacts and is strictly valid after one more prompt ({time.monotonic() - t0:.1f} s)", flush=True)
        passed += 1
    except AssertionError as e:
        failed += 1
        print(f"FAIL (seed {a.seed}): {e}", file=sys.stderr)
    finally:
        for h in homes:
            h.files.close()
        shutil.rmtree(base, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
