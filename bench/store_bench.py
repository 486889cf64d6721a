#!/usr/bin/env python3
"""Session-store benchmarks of docs/decisions.md#benchmarks against the real binary (echo provider, temporary store).

Prints, each with what it includes:
  prompt round trips (fsync on)  request written -> response read, every session/update of the turn
                                 read by this client, the turn's events appended and fsynced (at
                                 step end and turn end) before the response. The echo answer lists
                                 every message of the conversation, so it grows with the
                                 conversation: figures are given for short conversations (fresh
                                 session every 5 prompts) and for one long conversation.
  session/list                   over 10,000 stored sessions through real processes: no index
                                 cache (rebuild), index file present (cold), same process (warm);
                                 once in one 45fc root, once split over two roots of both
                                 generations (--store A --store B: 45fc raw + 0.1 zstd)
  replay                         session/load of a 100 MB log written by this script (header +
                                 turns of user/message, assistant/chunk text deltas,
                                 assistant/message), raw and zstd, in the 45fc generation and in
                                 0.1 (its layout and 0.1.1 shapes; the zstd log with packed
                                 text-chunks rows), from request to response, the client reading
                                 and splitting every frame (not JSON-parsing it); peak RSS (VmHWM)
                                 of the server afterwards, next to the largest event and a 10 MB
                                 log's figure to show memory does not grow with the log.
Usage: store_bench.py DSH_ACP_BIN [replay MB]
  STORE_BENCH_ONLY=replay|list   only the replays / only the listings
  STORE_BENCH_ONLY=prompt        only the single-session prompt round trips (disk and tmpfs)
  STORE_BENCH_GENERATION=45fc|0.1  with the replays: only that generation's logs
Usage: store_bench.py DSH_ACP_BIN [replay MB]
"""
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bench_common import EchoServer, Zstd, fs_type, result

# The golden-log generator's 0.1.1 helpers (projectKey, encodeSegment, packChunks: docs/store-format.md).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "harness01"))
from generate import encode_segment, pack, project_key  # noqa: E402

SERVER = sys.argv[1] if len(sys.argv) > 1 else "build/dsh-acp"
REPLAY_MB = int(sys.argv[2]) if len(sys.argv) > 2 else 100


class Client(EchoServer):
    def __init__(self, home, extra=()):
        super().__init__(SERVER, home, extra)
        self.early = {}

    def wait(self, rid):
        """The response to `rid`; responses to other requests that arrive first are kept (the server
        may answer concurrent requests out of order)."""
        f = self.early.pop(rid, None)
        if f is None:
            for line in self.lines():
                if not line.startswith(b'{"jsonrpc":"2.0","method":'):
                    g = json.loads(line)
                    if "method" in g or "id" not in g:
                        continue
                    if g["id"] == rid:
                        f = g
                        break
                    self.early[g["id"]] = g
        if f is None:
            raise SystemExit("bench: server closed stdout")
        if "error" in f:
            raise SystemExit(f"bench: request failed: {f}")
        return f

    def call(self, method, params):
        return self.wait(self.send(method, params))

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def round_trips(home, sessions, per_session, seconds=2.0, pool=3000):
    """Keeps one prompt in flight per slot; a slot moves to a fresh session (created up front, no
    log yet) every `per_session` prompts."""
    c = Client(home)
    c.call("initialize", {"protocolVersion": 1})
    ids = [c.send("session/new", {"cwd": home, "mcpServers": []}) for _ in range(pool)]
    fresh = [c.wait(i)["result"]["sessionId"] for i in ids]
    slots = [{"sid": fresh.pop(), "n": 0} for _ in range(sessions)]
    by_id = {}
    done = 0
    frames_at_start = c.frames_read
    cpu0 = c.cpu_s()

    def fire(slot):
        by_id[c.send("session/prompt", {"sessionId": slot["sid"], "prompt": [{"type": "text", "text": "ping"}]})] = slot

    t0 = time.perf_counter()
    for s in slots:
        fire(s)
    for line in c.lines():
        if b'"result"' not in line and b'"error"' not in line:
            continue
        f = json.loads(line)
        slot = by_id.pop(f.get("id"), None)
        if slot is None:
            continue
        if "error" in f:
            raise SystemExit(f"bench: prompt failed: {f}")
        done += 1
        slot["n"] += 1
        if time.perf_counter() - t0 < seconds and fresh:
            if slot["n"] >= per_session:
                slot["sid"], slot["n"] = fresh.pop(), 0
            fire(slot)
        elif not by_id:
            break
    elapsed = time.perf_counter() - t0
    frames = c.frames_read - frames_at_start
    cpu = c.cpu_s() - cpu0
    c.close()
    return done / elapsed, done, frames / max(done, 1), cpu / max(done, 1) * 1000


def long_conversation(home, prompts=300):
    c = Client(home)
    c.call("initialize", {"protocolVersion": 1})
    sid = c.call("session/new", {"cwd": home, "mcpServers": []})["result"]["sessionId"]
    rates = []
    for block in range(prompts // 100):
        t0 = time.perf_counter()
        for _ in range(100):
            c.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "ping"}]})
        rates.append(100 / (time.perf_counter() - t0))
    c.close()
    return rates


# ---- replay ---------------------------------------------------------------------------------------

def log_path(store, session_id, cwd, generation, zstd):
    """Where the log lives: 45fc `<root>/cwd-<sha256(cwd)[:12]>/<id>.jsonl[.zstd]`, 0.1
    `<root>/--<projectKey(cwd)>--/<encodeSegment(id)>/session.jsonl[.zstd]`
    (docs/store-format.md#project-layout-01)."""
    suffix = ".jsonl.zstd" if zstd else ".jsonl"
    if generation == "0.1":
        d = os.path.join(store, "--" + project_key(cwd) + "--", encode_segment(session_id))
        name = "session" + suffix
    else:
        d = os.path.join(store, "cwd-" + hashlib.sha256(cwd.encode()).hexdigest()[:12])
        name = encode_segment(session_id) + suffix
    os.makedirs(d, mode=0o700, exist_ok=True)
    return os.path.join(d, name)


def msg_id(turn, k):
    """A UUID-shaped message id (0.1.1 mints UUIDs), deterministic."""
    return f"{turn:08x}-0000-4000-8000-{k:012x}"


def write_log(store, target_bytes, session_id, cwd, big_event=0, zstd=None, generation="45fc", packed=False):
    """Raw JSONL, or with `zstd` one frame per turn (the header in a frame of its own) as the server appends.
    The same conversation in either generation: 45fc shapes and flat layout, or 0.1.1 shapes
    (docs/store-format.md#release-011-shapes: turn/start {turn}, user/message with role and id,
    assistant/message in its `message` envelope) in the 0.1 layout, with `packed` runs of text deltas
    as one `text-chunks` row (docs/store-format.md#packed-chunk-rows, what 0.1.1 writes by default)."""
    v01 = generation == "0.1"
    path = log_path(store, session_id, cwd, generation, zstd)
    enc = (lambda text: zstd.frame(text.encode())) if zstd else (lambda text: text.encode())
    plain = 0
    t = 1_700_000_000_000
    largest = 0
    events_total = 0
    unpacked = 0  # the same events one per line: what a packed log's plaintext stands for
    with open(path, "wb") as f:
        header = json.dumps({"type": "session", "version": 0, "id": session_id, "createdAt": t, "cwd": cwd,
                             "delegationDepth": 0}, separators=(",", ":")) + "\n"
        f.write(enc(header))
        plain += len(header.encode())
        seq, turn, size = 0, 0, 0
        word = "lorem ipsum dolor sit amet, consectetur adipiscing elit; "
        while size < target_bytes:
            turn += 1
            events = []

            def ev(typ, data, **extra):
                nonlocal seq
                e = {"type": typ, "seq": seq, "time": t + seq, "data": data, **extra}
                seq += 1
                events.append(e)
                return e["seq"]

            big = big_event and size >= target_bytes // 2 and largest < big_event
            question = [{"type": "text", "text": f"question {turn}: " + (word * (big_event // len(word) + 1) if big else word * 4)}]
            if v01:  # docs/store-format.md#release-011-shapes: step/start, then the claimed user/message
                ev("turn/start", {"turn": turn})
                ev("step/start", {"turn": turn, "step": 1})
                ev("user/message", {"content": question, "source": {"kind": "user"}, "role": "user",
                                    "id": msg_id(turn, 0)}, surfaceOp="append")
            else:
                ev("turn/start", {"turn": turn, "trigger": {"kind": "message", "source": {"kind": "user"}}})
                ev("user/message", {"content": question, "source": {"kind": "user"}}, surfaceOp="append")
                ev("step/start", {"turn": turn, "step": 1})
            first = seq
            ev("assistant/chunk", {"turn": turn, "step": 1, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}})
            parts = []
            for k in range(40):
                piece = word[: 20 + (k % 30)]
                parts.append(piece)
                ev("assistant/chunk", {"turn": turn, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": piece}})
            text = "".join(parts)
            ev("assistant/chunk", {"turn": turn, "step": 1, "chunk": {"type": "block-end", "index": 0,
                                                                      "block": {"type": "text", "text": text}}})
            answer = [{"type": "text", "text": text}]
            if v01:
                data = {"turn": turn, "step": 1, "message": {"role": "assistant", "content": answer,
                                                             "source": {"kind": "model", "provider": "echo", "model": "echo"},
                                                             "id": msg_id(turn, 1)}}
            else:
                data = {"turn": turn, "step": 1, "content": answer, "provenance": {"provider": "echo", "model": "echo"}}
            ev("assistant/message", data, sourceEventSeqs=list(range(first, seq)), surfaceOp="append")
            ev("step/end", {"turn": turn, "step": 1})
            ev("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
            events_total += len(events)
            lines = [json.dumps(e, separators=(",", ":"), ensure_ascii=False) for e in (pack(events) if packed else events)]
            chunk = "\n".join(lines) + "\n"
            unpacked += (sum(len(json.dumps(e, separators=(",", ":"), ensure_ascii=False).encode()) + 1 for e in events)
                         if packed else len(chunk.encode()))
            largest = max(largest, max(len(l) for l in lines) + 1)
            f.write(enc(chunk))
            size += len(chunk)
    return plain + size, os.path.getsize(path), largest, turn, events_total, plain + unpacked


def replay(base, mb, big_event=0, zstd=None, generation="45fc", packed=False):
    """Returns plaintext size, file size, largest event, turns, events, unpacked plaintext size, seconds, frames, wire
    bytes, RSS before/after, server CPU s, this client's CPU s."""
    home = os.path.join(base, f"replay-{mb}-{big_event}-{bool(zstd)}-{generation}")
    store = os.path.join(home, "sessions")
    cwd = "/bench/replay"
    size, on_disk, largest, turns, events, unpacked = write_log(store, mb * 1_000_000, "replay-bench", cwd, big_event,
                                                                zstd, generation, packed)
    c = Client(home)  # the root's generation and encoding are detected; no flag, so the store opens on first use
    c.call("initialize", {"protocolVersion": 1})
    rss_before = c.status_mb("VmHWM")
    frames0, bytes0 = c.frames_read, c.bytes_read
    cpu0 = c.cpu_s()
    me0 = time.process_time()
    t0 = time.perf_counter()
    c.call("session/load", {"sessionId": "replay-bench", "cwd": cwd, "mcpServers": []})
    elapsed = time.perf_counter() - t0
    client_cpu = time.process_time() - me0
    frames, wire = c.frames_read - frames0, c.bytes_read - bytes0
    rss = c.status_mb("VmHWM")
    cpu = c.cpu_s() - cpu0
    c.close()
    shutil.rmtree(home)
    return size, on_disk, largest, turns, events, unpacked, elapsed, frames, wire, rss_before, rss, cpu, client_cpu


def fsync_ms(where):
    path = os.path.join(where, "fsync-probe")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    samples = []
    for _ in range(100):
        t0 = time.perf_counter()
        os.write(fd, b"x" * 199 + b"\n")
        os.fsync(fd)
        samples.append((time.perf_counter() - t0) * 1000)
    os.close(fd)
    os.unlink(path)
    samples.sort()
    return samples[len(samples) // 2]


def measure_listing(home, extra, check):
    """session/list of a 10k-session store through real processes: the first without the index cache
    file (rebuild), then 5 new processes with it (cold; their server CPU too), then 20 listings in
    the last one (warm). `check` sees each cold page. Returns (rebuild, cold, warm, cold CPU) in ms."""
    first, cold, warm, cold_cpu = [], [], [], []
    for attempt in range(6):
        c = Client(home, extra)
        c.call("initialize", {"protocolVersion": 1})
        cpu0 = c.cpu_ns()
        t0 = time.perf_counter()
        page = c.call("session/list", {})["result"]
        (first if attempt == 0 else cold).append((time.perf_counter() - t0) * 1000)
        if attempt:
            cold_cpu.append((c.cpu_ns() - cpu0) / 1e6)
        assert len(page["sessions"]) == 100, len(page["sessions"])
        check(page)
        if attempt == 5:
            for _ in range(20):
                t0 = time.perf_counter()
                c.call("session/list", {})
                warm.append((time.perf_counter() - t0) * 1000)
        c.close()
    return first[0], statistics.median(cold), statistics.median(warm), statistics.median(cold_cpu)


def list_through_process(base, n=10_000):
    """session/list over n stored raw sessions through real processes: (no cache, cache present, warm)."""
    home = os.path.join(base, "list")
    store = os.path.join(home, "sessions")
    t = 1_700_000_000_000
    for i in range(n):
        cwd = f"/home/user/project-{i % 20}"
        d = os.path.join(store, "cwd-" + hashlib.sha256(cwd.encode()).hexdigest()[:12])
        if i < 20:
            os.makedirs(d, mode=0o700, exist_ok=True)
        sid = f"list-{i:06d}"
        lines = [
            {"type": "session", "version": 0, "id": sid, "createdAt": t + i, "cwd": cwd, "delegationDepth": 0},
            {"type": "turn/start", "seq": 0, "time": t + i, "data": {"turn": 1, "trigger": {"kind": "message", "source": {"kind": "user"}}}},
            {"type": "user/message", "seq": 1, "time": t + i, "data": {"content": [{"type": "text", "text": f"look at module {i}"}],
                                                                      "source": {"kind": "user"}}, "surfaceOp": "append"},
            {"type": "session/title", "seq": 2, "time": t + i, "data": {"title": f"look at module {i}", "messageSeqs": [1],
                                                                       "source": {"kind": "fallback"}}},
            {"type": "turn/end", "seq": 3, "time": t + i, "data": {"turn": 1, "reason": {"kind": "completed"}}},
        ]
        with open(os.path.join(d, sid + ".jsonl"), "w") as f:
            f.write("".join(json.dumps(l, separators=(",", ":")) + "\n" for l in lines))
    first, cold, warm, cold_cpu = measure_listing(home, (), lambda page: None)
    shutil.rmtree(home)
    return first, cold, warm, cold_cpu



def write_listing_log(store, i, generation, zstd=None):
    """One small finished session (a prompt, its title, turn end) of either generation; createdAt
    grows with i, cwds cycle over 20 projects."""
    t = 1_700_000_000_000
    cwd = f"/home/user/project-{i % 20}"
    sid = f"list-{i:06d}"
    text = f"look at module {i}"
    if generation == "0.1":
        lines = [
            {"type": "session", "version": 0, "id": sid, "createdAt": t + i, "cwd": cwd, "delegationDepth": 0},
            {"type": "turn/start", "seq": 0, "time": t + i, "data": {"turn": 1}},
            {"type": "step/start", "seq": 1, "time": t + i, "data": {"turn": 1, "step": 1}},
            {"type": "user/message", "seq": 2, "time": t + i, "data": {"content": [{"type": "text", "text": text}],
                                                                      "source": {"kind": "user"}, "role": "user",
                                                                      "id": msg_id(i, 0)}, "surfaceOp": "append"},
            {"type": "session/title", "seq": 3, "time": t + i, "data": {"title": text, "messageSeqs": [2],
                                                                       "source": {"kind": "fallback"}}},
            {"type": "step/end", "seq": 4, "time": t + i, "data": {"turn": 1, "step": 1}},
            {"type": "turn/end", "seq": 5, "time": t + i, "data": {"turn": 1, "reason": {"kind": "completed"}}},
        ]
    else:
        lines = [
            {"type": "session", "version": 0, "id": sid, "createdAt": t + i, "cwd": cwd, "delegationDepth": 0},
            {"type": "turn/start", "seq": 0, "time": t + i, "data": {"turn": 1, "trigger": {"kind": "message", "source": {"kind": "user"}}}},
            {"type": "user/message", "seq": 1, "time": t + i, "data": {"content": [{"type": "text", "text": text}],
                                                                      "source": {"kind": "user"}}, "surfaceOp": "append"},
            {"type": "session/title", "seq": 2, "time": t + i, "data": {"title": text, "messageSeqs": [1],
                                                                       "source": {"kind": "fallback"}}},
            {"type": "turn/end", "seq": 3, "time": t + i, "data": {"turn": 1, "reason": {"kind": "completed"}}},
        ]
    header = json.dumps(lines[0], separators=(",", ":")) + "\n"
    body = "".join(json.dumps(l, separators=(",", ":")) + "\n" for l in lines[1:])
    with open(log_path(store, sid, cwd, generation, zstd), "wb") as f:
        f.write(zstd.frame(header.encode()) + zstd.frame(body.encode()) if zstd else (header + body).encode())


def list_two_roots(base, n=10_000):
    """session/list over n stored sessions split over two roots of both generations through real
    processes started with `--store A --store B`: A a 45fc raw root, B a 0.1 zstd root (the
    harness's default encoding), sessions alternating between them so every page mixes both.
    Returns (no cache, cache present, warm) like list_through_process, and the first page's split."""
    home = os.path.join(base, "list2")
    roots = [os.path.join(home, "sessions-45fc"), os.path.join(home, "sessions-01")]
    try:
        zstd = Zstd()
    except (OSError, AttributeError):
        zstd = None  # then B is a raw 0.1 root
    for i in range(n):
        if i % 2 == 0:
            write_listing_log(roots[0], i, "45fc")
        else:
            write_listing_log(roots[1], i, "0.1", zstd)
    if zstd:
        zstd.close()
    extra = ("--store", roots[0], "--store", roots[1])
    split = []

    def check(page):
        ids = [int(x["sessionId"].split("-")[1]) for x in page["sessions"]]
        assert ids == sorted(ids, reverse=True) and ids[0] == n - 1, ids[:5]
        split[:] = [sum(1 for i in ids if i % 2 == 0), sum(1 for i in ids if i % 2 == 1)]

    first, cold, warm, cold_cpu = measure_listing(home, extra, check)
    split = tuple(split)
    shutil.rmtree(home)
    return first, cold, warm, cold_cpu, split, "zstd" if zstd else "raw"


def report_listing(key, what, nocache, cold, warm, cold_cpu):
    """Prints one listing measurement (measure_listing's figures) and its BENCH-RESULT lines."""
    print(what)
    print(f"  new process, no index cache (rebuild): {nocache:.0f} ms (target <= 2000 ms); new process, index present "
          f"(cold, median of 5 processes): {cold:.1f} ms, server CPU {cold_cpu:.1f} ms (target <= 100 ms); same process "
          f"again (warm, median of 20): {warm:.2f} ms (target <= 5 ms)")
    result(f"{key}_rebuild_ms", nocache, "ms")
    result(f"{key}_cold_ms", cold, "ms", note=f"server CPU {cold_cpu:.0f} ms")
    result(f"{key}_warm_ms", warm, "ms")


def main():
    base = tempfile.mkdtemp(prefix="dsh-bench-store-")
    try:
        print(f"store benchmarks ({SERVER}, echo provider at 0 ms delay, store under {base} on {fs_type(base)}, fsync on)")
        print("prompt round trip = request written -> response read; includes every session/update of the turn read by "
              "this client and the turn appended + fsynced (step end, turn end) before the response")
        print(f"  fsync floor of this file system: {fsync_ms(base):.2f} ms per write+fsync of 200 bytes (median of 100); "
              "a turn costs one fsync, a session's first turn three more (file creation)")
        only = os.environ.get("STORE_BENCH_ONLY")  # "replay" or "list": a quick run of those figures alone
        # "quick" (./dev bench --check): the single-session round trips and two replays, no listing.
        quick = only == "quick"
        # "prompt": the single-session round trips of "quick" alone (issue 31's figures).
        only_prompt = only == "prompt"
        only_replay = only in ("replay", "quick")
        places = [(base, fs_type(base))] if not only or quick or only_prompt else []
        if os.path.isdir("/dev/shm") and (not only or quick or only_prompt):
            places.append((tempfile.mkdtemp(prefix="dsh-bench-store-", dir="/dev/shm"), "tmpfs, where fsync costs nothing: the server's own cost"))
        for where, kind in places:
            for sessions in ((1,) if quick or only_prompt else (1, 8)):
                home = os.path.join(where, f"rt-{sessions}")
                os.makedirs(home)
                rate, done, per, cpu_ms = round_trips(home, sessions, per_session=5)
                what = "one session at a time, sequential" if sessions == 1 else "8 sessions in parallel on one connection"
                print(f"  [{kind}] {what}, conversations of <= 5 prompts (answers of 3..11 lines, {per:.0f} frames per "
                      f"round trip on average; sessions created up front): {rate:.0f}/s over {done} prompts, server CPU "
                      f"{cpu_ms:.2f} ms per round trip (target >= 2000/s single session)")
                tag = "tmpfs" if where != base else "disk"
                result(f"rt_{tag}_{'single' if sessions == 1 else 'parallel8'}_per_s", rate, "/s",
                       note=f"{kind}; {per:.0f} frames per round trip")
                result(f"rt_{tag}_{'single' if sessions == 1 else 'parallel8'}_cpu_ms", cpu_ms, "ms")
            if where != base:
                shutil.rmtree(where, ignore_errors=True)
        if only_prompt:
            return
        if only_replay:
            return replay_section(base, quick)
        if not only:
            home = os.path.join(base, "rt-long")
            os.makedirs(home)
            rates = long_conversation(home)
            print("  one long conversation, sequential (the echo answer lists every earlier message: prompt k streams "
                  "~4k+6 chunks): " + ", ".join(f"prompts {100 * i + 1}-{100 * i + 100}: {r:.0f}/s" for i, r in enumerate(rates)))
        report_listing("list", "session/list through the ACP process over 10,000 stored raw sessions in 20 buckets "
                       "(request -> first page of 100 read, after initialize; includes JSON-RPC round trip):",
                       *list_through_process(base))
        nocache, cold, warm, cold_cpu, split, enc = list_two_roots(base)
        report_listing("list2", "session/list through the ACP process over 10,000 sessions split over two roots and both "
                       f"generations (--store A --store B: A 45fc raw, 5,000 in 20 cwd buckets; B 0.1 {enc}, 5,000 in 20 "
                       f"project dirs; first page {split[0]} from A + {split[1]} from B; request -> first page of 100 read):",
                       nocache, cold, warm, cold_cpu)
        if not only:
            replay_section(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def replay_section(base, quick=False):
    print("replay = session/load of a log to this client (request -> response, every frame read and split, not "
          "parsed); server peak RSS = VmHWM after the load. The same conversation in both generations: 45fc "
          "(flat layout, 45fc shapes) and 0.1 (0.1 layout, 0.1.1 shapes; its zstd log packs each turn's 40 text "
          "deltas into one text-chunks row, as 0.1.1 writes by default). MB/s is of log plaintext.")
    try:
        zstd = Zstd()
    except (OSError, AttributeError):
        zstd = None
        print("  (zstd replay skipped: libzstd not loadable)")
    # (MB, big event, zstd, generation, packed)
    runs = [(mb, 0, None, "45fc", False) for mb in sorted({10, REPLAY_MB})] + [(10, 20_000_000, None, "45fc", False)]
    runs.append((REPLAY_MB, 0, None, "0.1", False))
    if zstd:
        runs.append((REPLAY_MB, 0, zstd, "45fc", False))
        runs.append((REPLAY_MB, 0, zstd, "0.1", True))
    only_gen = os.environ.get("STORE_BENCH_GENERATION")  # 45fc or 0.1: a quicker run of one generation
    if quick:  # one raw and one zstd replay of the full size, one per generation
        runs = [r for r in runs if r[0] == REPLAY_MB and not r[1] and (r[2] is None) == (r[3] == "45fc")]
    for mb, big, z, gen, packed in runs:
        if only_gen and gen != only_gen:
            continue
        size, on_disk, largest, turns, events, unpacked, elapsed, frames, wire, rss0, rss, cpu, client_cpu = replay(
            base, mb, big, z, gen, packed)
        kind = ("zstd (one frame per turn" + (", text deltas packed" if packed else "") + ")") if z else "raw"
        # A packed log holds more conversation per MB: also say what the same events one per line weigh.
        same = (f"; the same events one per line: {unpacked / 1e6:.0f} MB, {unpacked / 1e6 / elapsed:.0f} MB/s"
                if packed else "")
        print(f"  {gen} {size / 1e6:.0f} MB {kind} log ({on_disk / 1e6:.0f} MB on disk, {turns} turns, {events} events, "
              f"largest line {largest / 1024:.1f} KiB{' (one big user message)' if big else ''}): "
              f"{size / 1e6 / elapsed:.0f} MB/s of log ({elapsed:.2f} s, {frames} frames, {wire / 1e6:.0f} MB on the "
              f"wire; server CPU {cpu:.2f} s = {size / 1e6 / max(cpu, 1e-3):.0f} MB per CPU second{same}; this client's "
              f"CPU {client_cpu:.2f} s); server peak RSS "
              f"{rss:.1f} MB (after initialize {rss0:.1f} MB) (target >= 150 MB/s; peak <= 2 x largest event + 32 MiB)")
        if mb == REPLAY_MB and not big:
            enc = ("v01_" if gen == "0.1" else "") + ("zstd" if z else "raw")
            result(f"replay_{enc}_mbps", size / 1e6 / elapsed, "MB/s",
                   note=f"{size / 1e6:.0f} MB, {events / 1e6:.2f} M events; server CPU "
                        f"{size / 1e6 / max(cpu, 1e-3):.0f} MB per CPU s, client CPU {client_cpu:.2f} s{same}")
            result(f"replay_{enc}_rss_mb", rss, "MB", limit=2 * largest / 1048576 + 32)
        if big:
            result("replay_big_event_rss_mb", rss, "MB", limit=2 * largest / 1048576 + 32,
                   note=f"{size / 1e6:.0f} MB raw log with one {largest / 1e6:.0f} MB event")
    if zstd:
        zstd.close()


if __name__ == "__main__":
    main()
