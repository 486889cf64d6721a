#!/usr/bin/env python3
"""Isolation benchmark of docs/decisions.md#benchmarks / issue 8 against the real binary (echo provider,
temporary store).

One server process, one stdio connection, four kinds of session on it:
  A, B   prompts that mention a different 200 MB stored source session each (reference preparation
         reads the whole source log); repeated back to back in fresh sessions while D is measured
  C      session/load of a 100 MB log (replay), repeated back to back while D is measured
  D      small echo prompts, one at a time: the figure
The client has one reader thread on the server's stdout. In the loaded run it reads at 10 MB/s overall
(token bucket, 16 KiB reads), so every session's frames wait behind C's replay frames in the server.

Prints, per store encoding (raw JSONL, and zstd when libzstd is loadable), with what it includes:
  idle round trip     D's session/prompt, request written -> response read (every session/update of
                      the turn read first), full-speed reader, nothing else running; median and p90
  loaded round trip   the same while A, B and C run and the reader is throttled (target median <= 20 ms)
  what ran meanwhile  reference prompts finished by A/B, replay MB delivered to C, bytes read overall
Then two figures of one connection without bulk reads:
  lock waits          D's round trip while another process holds the write locks of 12 sessions whose
                      prompts wait for them (up to 2 s each: more waits than the store pool has threads)
  parallel streams    two sessions streaming at once at --echo-delay-ms 40: the time of both over the
                      time one stream of the same length takes alone (1.0 = fully parallel, 2.0 = serial)
The source logs are written directly in the harness format (header + turns of user/message,
assistant/chunk text deltas, assistant/message); zstd logs hold one frame per turn.
Bounded: each encoding's loaded run stops after 20 samples of D or 30 s (a prompt unanswered then counts as
the time it had waited, and the median becomes a lower bound); temp files are removed and the
server is killed if it does not exit 5 s after stdin EOF.
Usage: isolation_bench.py DSH_ACP_BIN [none,zstd]   (sizes: ISOLATION_SOURCE_MB, ISOLATION_REPLAY_MB;
       parts: ISOLATION_PARTS, default sources,waits,streams)
"""
import base64
import hashlib
import json
import os
import queue
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from bench_common import Lines, Zstd, encode, fs_type, request, result, spawn
from acp_client import blocked_flocks, response  # noqa: E402

SERVER = sys.argv[1] if len(sys.argv) > 1 else "build/dsh-acp"
ENCODINGS = (sys.argv[2] if len(sys.argv) > 2 else "none,zstd").split(",")
SOURCE_BYTES = int(os.environ.get("ISOLATION_SOURCE_MB", "200")) * 1_000_000  # smaller for a quick try
REPLAY_BYTES = int(os.environ.get("ISOLATION_REPLAY_MB", "100")) * 1_000_000
SLOW_RATE = 10_000_000  # bytes/s the slow client reads
SAMPLES = 20
LOADED_CAP_S = 30.0
CALL_TIMEOUT_S = 60.0
SRC_CWD = "/bench/isolation/sources"
PARTS = os.environ.get("ISOLATION_PARTS", "sources,waits,streams").split(",")
WAITERS = 12
WAIT_CYCLES = 5
IDS = {"a": "iso-source-a", "b": "iso-source-b", "c": "iso-replay-c"}


# ---- source logs ------------------------------------------------------------------------------------

def body_turns(target_bytes):
    """Yields (text of one turn, its seq count) in the harness format until about target_bytes."""
    rnd = random.Random(8)
    vocab = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9))) for _ in range(500)]
    pool = [" ".join(rnd.choice(vocab) for _ in range(rnd.randint(4, 9))) + " " for _ in range(256)]
    t0 = 1_700_000_000_000
    seq, turn, size = 0, 0, 0
    while size < target_bytes:
        turn += 1
        s = seq
        lines = ['{"type":"turn/start","seq":%d,"time":%d,"data":{"turn":%d,"trigger":{"kind":"message","source":{"kind":"user"}}}}' % (s, t0 + s, turn),
                 '{"type":"user/message","seq":%d,"time":%d,"data":{"content":[{"type":"text","text":"question %d: %s"}],"source":{"kind":"user"}},"surfaceOp":"append"}'
                 % (s + 1, t0 + s + 1, turn, "".join(pool[(turn * 7 + k) % 256] for k in range(4))),
                 '{"type":"step/start","seq":%d,"time":%d,"data":{"turn":%d,"step":1}}' % (s + 2, t0 + s + 2, turn),
                 '{"type":"assistant/chunk","seq":%d,"time":%d,"data":{"turn":%d,"step":1,"chunk":{"type":"block-start","index":0,"blockType":"text"}}}' % (s + 3, t0 + s + 3, turn)]
        parts = [pool[(turn * 13 + k * 5) % 256] for k in range(40)]
        for k, p in enumerate(parts):
            q = s + 4 + k
            lines.append('{"type":"assistant/chunk","seq":%d,"time":%d,"data":{"turn":%d,"step":1,"chunk":{"type":"text-delta","index":0,"text":"%s"}}}' % (q, t0 + q, turn, p))
        text = "".join(parts)
        q = s + 44
        lines.append('{"type":"assistant/chunk","seq":%d,"time":%d,"data":{"turn":%d,"step":1,"chunk":{"type":"block-end","index":0,"block":{"type":"text","text":"%s"}}}}' % (q, t0 + q, turn, text))
        lines.append('{"type":"assistant/message","seq":%d,"time":%d,"data":{"turn":%d,"step":1,"content":[{"type":"text","text":"%s"}],"provenance":{"provider":"echo","model":"echo"}},"sourceEventSeqs":[%s],"surfaceOp":"append"}'
                     % (q + 1, t0 + q + 1, turn, text, ",".join(map(str, range(s + 3, q + 1)))))
        lines.append('{"type":"step/end","seq":%d,"time":%d,"data":{"turn":%d,"step":1}}' % (q + 2, t0 + q + 2, turn))
        lines.append('{"type":"turn/end","seq":%d,"time":%d,"data":{"turn":%d,"reason":{"kind":"completed"}}}' % (q + 3, t0 + q + 3, turn))
        seq = q + 4
        chunk = "\n".join(lines) + "\n"
        size += len(chunk)
        yield chunk.encode()


class Bodies:
    """The event lines of a ~200 MB log, generated once and written in every encoding asked for (one
    zstd frame per turn); each log is a header plus a prefix of a body: sources A and B the whole body,
    the replay log C up to the first turn boundary past 100 MB."""

    def __init__(self, base, encodings):
        self.path = {e: os.path.join(base, f"body.{e}") for e in encodings}
        self.zstd = Zstd() if "zstd" in encodings else None
        self.size = {e: 0 for e in encodings}
        self.cut = None  # (plain bytes, {encoding: bytes}, turns) of C's prefix
        self.plain = self.turns = 0
        files = {e: open(p, "wb") for e, p in self.path.items()}
        try:
            for turn_text in body_turns(SOURCE_BYTES):
                for e, f in files.items():
                    data = self.zstd.frame(turn_text) if e == "zstd" else turn_text
                    f.write(data)
                    self.size[e] += len(data)
                self.plain += len(turn_text)
                self.turns += 1
                if self.cut is None and self.plain >= REPLAY_BYTES:
                    self.cut = (self.plain, dict(self.size), self.turns)
        finally:
            for f in files.values():
                f.close()

    def write_logs(self, store, encoding):
        """The three logs in store; returns {key: (plain bytes, bytes on disk, turns)}. Drops the body."""
        bucket = os.path.join(store, "cwd-" + hashlib.sha256(SRC_CWD.encode()).hexdigest()[:12])
        os.makedirs(bucket, mode=0o700)
        sizes = {}
        for key, sid in IDS.items():
            header = (json.dumps({"type": "session", "version": 0, "id": sid, "createdAt": 1_700_000_000_000, "cwd": SRC_CWD,
                                  "delegationDepth": 0}, separators=(",", ":")) + "\n").encode()
            plain, length, turns = (self.plain, self.size[encoding], self.turns) if key != "c" else \
                (self.cut[0], self.cut[1][encoding], self.cut[2])
            path = os.path.join(bucket, sid + (".jsonl.zstd" if encoding == "zstd" else ".jsonl"))
            with open(self.path[encoding], "rb") as src, open(path, "wb") as dst:
                dst.write(self.zstd.frame(header) if encoding == "zstd" else header)
                dst.flush()
                left = length
                while left:
                    left -= os.sendfile(dst.fileno(), src.fileno(), None, left)
            os.chmod(path, 0o600)
            sizes[key] = (len(header) + plain, os.path.getsize(path), turns)
        os.unlink(self.path[encoding])
        return sizes

    def close(self):
        if self.zstd:
            self.zstd.close()


def uri_of(sid):
    return "dsh-session:" + base64.urlsafe_b64encode(json.dumps(sid).encode()).decode().rstrip("=")


# ---- the client --------------------------------------------------------------------------------------

class Connection:
    """One server process. A reader thread splits stdout into frames (optionally at a throttled rate),
    records per-session notification bytes and hands responses to waiters or callbacks; a writer
    thread writes requests, so the reader never blocks on stdin."""

    NOTIFY = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"'

    def __init__(self, home, extra):
        self.proc = spawn(SERVER, ["--provider", "echo", *extra], dict(os.environ, DSH_ACP_HOME=home), stderr=None)
        self.cv = threading.Condition()
        self.next_id = 0
        self.responses = {}   # id -> (frame, time read) for call()/wait()
        self.callbacks = {}   # id -> fn(frame, time read), run on the reader thread
        self.session_bytes = {}
        self.reference_cards = 0  # tool_call updates with a "dsh-ref-" id: proof that a mention was prepared
        self.bytes_read = 0
        self.rate = None
        self.watch = None  # (session id bytes, Event set when its first notification arrives)
        self.closed = False
        self.failure = None
        self.outq = queue.Queue()
        self.reader = threading.Thread(target=self._read, name="reader")
        self.writer = threading.Thread(target=self._write, name="writer")
        self.reader.start()
        self.writer.start()

    def throttle(self, rate):
        with self.cv:
            self.rate = rate

    def send(self, method, params, callback=None):
        with self.cv:
            self.next_id += 1
            rid = self.next_id
            if callback:
                self.callbacks[rid] = callback
        self.outq.put(encode(request(rid, method, params)))
        return rid

    def wait(self, rid, timeout=CALL_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        with self.cv:
            while rid not in self.responses:
                left = deadline - time.monotonic()
                if self.closed:
                    raise SystemExit(f"bench: no response to request {rid}: server closed stdout")
                if left <= 0:
                    raise TimeoutError(f"bench: no response to request {rid} within {timeout:.0f} s")
                self.cv.wait(left)
            frame, at = self.responses.pop(rid)
        if "error" in frame:
            raise SystemExit(f"bench: request {rid} failed: {frame['error']}")
        return frame["result"], at

    def call(self, method, params):
        return self.wait(self.send(method, params))[0]

    def _write(self):
        while True:
            data = self.outq.get()
            if data is None:
                break
            try:
                self.proc.stdin.write(data)
            except (BrokenPipeError, ValueError):
                break
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass

    def _read(self):
        fd = self.proc.stdout.fileno()
        lines = Lines()
        next_t = 0.0
        while True:
            chunk = os.read(fd, 16384 if self.rate else 1 << 20)
            if not chunk:
                break
            now = time.perf_counter()
            self.bytes_read += len(chunk)
            lines.feed(chunk)
            while (line := lines.next()) is not None:
                self._frame(line, now)
            rate = self.rate
            if rate:  # token bucket: no credit saved up while the server sends nothing
                next_t = max(next_t, now) + len(chunk) / rate
                pause = next_t - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
        with self.cv:
            self.closed = True
            self.cv.notify_all()

    def _frame(self, line, now):
        if line.startswith(self.NOTIFY):
            at = len(self.NOTIFY)
            sid = line[at:line.find(b'"', at)]
            self.session_bytes[sid] = self.session_bytes.get(sid, 0) + len(line) + 1
            if line.find(b'"toolCallId":"dsh-ref-', at) >= 0:
                self.reference_cards += 1
            if self.watch and self.watch[0] == sid:
                self.watch[1].set()
            return
        frame = json.loads(line)
        if "method" in frame:
            if "id" in frame:  # a request to the client: the echo provider should make none
                self.outq.put(encode(response(frame["id"], error={"code": -32601, "message": "not supported by the bench"})))
            return
        with self.cv:
            fn = self.callbacks.pop(frame.get("id"), None)
            if fn is None:
                self.responses[frame.get("id")] = (frame, now)
                self.cv.notify_all()
        if fn:
            try:
                fn(frame, now)
            except Exception as e:  # noqa: BLE001 - reported by the main thread
                self.failure = self.failure or repr(e)

    def shutdown(self, grace_s=5.0):
        """stdin EOF, full-speed reading; kill if the server has not exited after grace_s. Returns the exit status or None."""
        self.throttle(None)
        self.outq.put(None)
        try:
            status = self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            status = None
            self.proc.kill()
            self.proc.wait()
        self.writer.join()
        self.reader.join()
        return status

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.outq.put(None)
        for t in (self.writer, self.reader):
            if t.is_alive():
                t.join(timeout=5)

    def cpu_s(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---- the run -------------------------------------------------------------------------------------------

def text(s):
    return [{"type": "text", "text": s}]


def round_trips(conn, sid, n, until=None, probe=None):
    """n sequential echo prompts in session sid; returns the round trips in ms, probe() around each
    sample, and the time a prompt still unanswered at `until` had waited (None if none)."""
    out, probes = [], []
    for i in range(n):
        if until and time.monotonic() >= until:
            break
        t0 = time.perf_counter()
        busy = probe() if probe else None
        rid = conn.send("session/prompt", {"sessionId": sid, "prompt": text(f"ping {i}")})
        if until:
            try:
                result, at = conn.wait(rid, timeout=until - time.monotonic())
            except TimeoutError:
                return out, probes, (time.perf_counter() - t0) * 1000
        else:
            result, at = conn.wait(rid)
        if result.get("stopReason") != "end_turn":
            raise SystemExit(f"bench: D's prompt ended {result}")
        out.append((at - t0) * 1000)
        probes.append(busy and probe())
    return out, probes, None


def pct(values, p):
    s = sorted(values)
    return s[max(0, -(-len(s) * p // 100) - 1)]


class Background:
    """A and B: a fresh session, then a prompt mentioning its source, again and again; C: session/load
    of the replay log again and again. Driven from the reader thread by response callbacks."""

    def __init__(self, conn, cwd):
        self.conn, self.cwd = conn, cwd
        self.stop = False
        self.in_flight = {"a": False, "b": False, "c": False}
        self.done = {"a": [], "b": [], "c": []}  # seconds per finished operation
        self.errors = []

    def start(self):
        for key in ("a", "b"):
            self._new_session(key)
        self._load()

    def all_busy(self):
        return all(self.in_flight.values())

    def _check(self, key, frame):
        if "error" in frame:
            self.errors.append(f"{key}: {frame['error']}")
            self.in_flight[key] = False
            return False
        return True

    def _new_session(self, key):
        self.in_flight[key] = True
        self.conn.send("session/new", {"cwd": self.cwd, "mcpServers": []}, lambda f, at: self._prompt(key, f))

    def _prompt(self, key, frame):
        if not self._check(key, frame):
            return
        sid = frame["result"]["sessionId"]
        t0 = time.perf_counter()
        mention = f"summarise @[Source {key.upper()}]({uri_of(IDS[key])}) please"
        self.conn.send("session/prompt", {"sessionId": sid, "prompt": text(mention)},
                       lambda f, at: self._prompted(key, f, at - t0))

    def _prompted(self, key, frame, seconds):
        if not self._check(key, frame):
            return
        if frame["result"].get("stopReason") != "end_turn":
            self.errors.append(f"{key}: prompt ended {frame['result']}")
        self.done[key].append(seconds)
        self.in_flight[key] = False
        if not self.stop:
            self._new_session(key)

    def _load(self):
        self.in_flight["c"] = True
        t0 = time.perf_counter()
        self.conn.send("session/load", {"sessionId": IDS["c"], "cwd": SRC_CWD, "mcpServers": []},
                       lambda f, at: self._loaded(f, at - t0))

    def _loaded(self, frame, seconds):
        if not self._check("c", frame):
            return
        self.done["c"].append(seconds)
        self.in_flight["c"] = False
        if not self.stop:
            self._load()



def run(base, bodies, encoding):
    home = os.path.join(base, encoding)
    store = os.path.join(home, "sessions")
    os.makedirs(store)
    sizes = bodies.write_logs(store, encoding)
    conn = Connection(home, ["--store-compression", encoding])
    try:
        conn.call("initialize", {"protocolVersion": 1})
        sids = [conn.call("session/new", {"cwd": home, "mcpServers": []})["sessionId"] for _ in range(2)]
        for sid in sids:  # the first turn creates the log file (fsyncs): not part of either figure
            conn.call("session/prompt", {"sessionId": sid, "prompt": text("warm up")})
        idle, _, _ = round_trips(conn, sids[0], SAMPLES)

        bg = Background(conn, home)
        conn.throttle(SLOW_RATE)
        read0, cpu0, t0 = conn.bytes_read, conn.cpu_s(), time.perf_counter()
        c_sid = IDS["c"].encode()
        c0 = conn.session_bytes.get(c_sid, 0)
        replaying = threading.Event()
        conn.watch = (c_sid, replaying)
        bg.start()
        if not replaying.wait(15):
            raise SystemExit("bench: C's replay frames did not arrive within 15 s")
        time.sleep(0.2)  # A and B are reading their sources by now
        loaded, busy, pending = round_trips(conn, sids[1], SAMPLES, until=time.monotonic() + LOADED_CAP_S, probe=bg.all_busy)
        elapsed = time.perf_counter() - t0
        read, cpu = conn.bytes_read - read0, conn.cpu_s() - cpu0
        c_bytes = conn.session_bytes.get(c_sid, 0) - c0
        bg.stop = True
        if bg.errors or conn.failure:
            raise SystemExit(f"bench: background work failed: {bg.errors or conn.failure}")
        done = {k: list(v) for k, v in bg.done.items()}
        if conn.reference_cards < len(done["a"]) + len(done["b"]):
            raise SystemExit(f"bench: {len(done['a']) + len(done['b'])} mention prompts answered but only "
                             f"{conn.reference_cards} reference cards seen: the mentions were not prepared")
        t_exit = time.perf_counter()
        status = conn.shutdown()
        t_exit = time.perf_counter() - t_exit
    finally:
        conn.kill()
    shutil.rmtree(home, ignore_errors=True)

    kind = "raw JSONL" if encoding == "none" else "zstd, one frame per turn"
    a, c = sizes["a"], sizes["c"]
    print(f"  [{kind}] sources: A and B {a[0] / 1e6:.0f} MB each ({a[2]} turns; {a[1] / 1e6:.0f} MB on disk), "
          f"C {c[0] / 1e6:.0f} MB ({c[2]} turns; {c[1] / 1e6:.0f} MB on disk)")
    print(f"  [{kind}] idle server: median {statistics.median(idle):.2f} ms, p90 {pct(idle, 90):.2f} ms "
          f"({len(idle)} sequential prompts, full-speed reader)")
    samples = loaded + ([pending] if pending is not None else [])
    bound = ">= " if pending is not None else ""
    unanswered = f"; one more unanswered after {pending:.0f} ms when the run stopped" if pending is not None else ""
    print(f"  [{kind}] under load: median {bound}{statistics.median(samples):.1f} ms, p90 {bound}{pct(samples, 90):.1f} ms, "
          f"max {bound}{max(samples):.1f} ms ({len(loaded)} sequential prompts answered in {elapsed:.1f} s{unanswered}; "
          f"A, B and C all running at the send and at the answer of {sum(1 for x in busy if x)} of them) "
          "(target median <= 20 ms)")
    result(f"isolation_{'raw' if encoding == 'none' else 'zstd'}_median_ms", statistics.median(samples), "ms",
           lower_bound=pending is not None, note=f"idle median {statistics.median(idle):.2f} ms; {a[0] / 1e6:.0f} MB sources")

    def secs(v):
        return f"{len(v)} finished" + (f", median {statistics.median(v):.2f} s each" if v else "")
    print(f"  [{kind}] meanwhile: A reference prompts {secs(done['a'])}; B {secs(done['b'])}; C loads {secs(done['c'])}, "
          f"{c_bytes / 1e6:.1f} MB of C's frames read; client read {read / 1e6:.1f} MB in {elapsed:.1f} s "
          f"({read / 1e6 / elapsed:.1f} MB/s); server CPU {cpu:.1f} s")
    exit_note = f"exited {status}" if status is not None else "still running, killed"
    print(f"  [{kind}] stdin EOF afterwards (reader at full speed again): {exit_note} after {t_exit:.2f} s")


# The second process of the lock-wait figure (shared with tests/crash/lock_waits_test.py).
HOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "tools", "hold_locks.py")


def lock_file(store, sid):
    """The write lock of a session's log (SessionStore::lock_path_of), in either layout."""
    for d, _dirs, files in os.walk(store):
        for f in files:
            if f.startswith("session.jsonl") and os.path.basename(d) == sid:
                return os.path.join(d, "dsh-acp.lock")
            if f.startswith(sid + ".jsonl"):
                return os.path.join(d, sid + ".lock")
    raise SystemExit(f"bench: no log for {sid}")


def lock_waits(base):
    """D's round trip while 12 sessions wait for locks another process holds (WAIT_CYCLES rounds)."""
    home = os.path.join(base, "waits")
    os.makedirs(home)
    conn = Connection(home, ["--store-compression", "none"])
    holder = None
    try:
        conn.call("initialize", {"protocolVersion": 1})
        sids = [conn.call("session/new", {"cwd": home, "mcpServers": []})["sessionId"] for _ in range(WAITERS + 1)]
        d = sids[-1]
        conn.call("session/prompt", {"sessionId": d, "prompt": text("warm up")})
        idle, _, _ = round_trips(conn, d, SAMPLES)
        holder = subprocess.Popen([sys.executable, HOLDER, *[lock_file(os.path.join(home, "sessions"), s) for s in sids[:-1]]],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if holder.stdout.readline().strip() != b"held":
            raise SystemExit("bench: the lock holder did not take its locks")
        loaded, busy_first = [], 0
        for cycle in range(WAIT_CYCLES):
            waiting = [conn.send("session/prompt", {"sessionId": s, "prompt": text(f"wait {cycle}")}) for s in sids[:-1]]
            until = time.monotonic() + 5
            while blocked_flocks(conn.proc.pid) < 4 and time.monotonic() < until:
                time.sleep(0.001)  # a bench may poll: it measures, it does not assert
            samples, _, _ = round_trips(conn, d, 1)
            loaded += samples
            with conn.cv:
                busy_first += sum(1 for w in waiting if w in conn.responses)
            for w in waiting:
                try:
                    conn.wait(w)
                except SystemExit as e:  # SESSION_BUSY is the expected answer of a waiter
                    if "SESSION_BUSY" not in str(e):
                        raise
        conn.shutdown()
    finally:
        if holder:
            holder.stdin.close()
            holder.wait()
        conn.kill()
        shutil.rmtree(home, ignore_errors=True)
    print(f"  [lock waits] idle: median {statistics.median(idle):.2f} ms; with {WAITERS} sessions waiting for locks "
          f"another process holds: median {statistics.median(loaded):.2f} ms, max {max(loaded):.2f} ms "
          f"({len(loaded)} prompts; {busy_first} waiter(s) had given up first)")
    result("isolation_lock_waits_median_ms", statistics.median(loaded), "ms",
           note=f"{WAITERS} lock waits in flight; idle median {statistics.median(idle):.2f} ms")


def parallel_streams(base):
    """Two sessions streaming at once vs one alone, at 40 ms a chunk (the echo model's delay)."""
    home = os.path.join(base, "streams")
    os.makedirs(home)
    conn = Connection(home, ["--store-compression", "none", "--echo-delay-ms", "40"])
    try:
        conn.call("initialize", {"protocolVersion": 1})
        a, b, c = [conn.call("session/new", {"cwd": home, "mcpServers": []})["sessionId"] for _ in range(3)]
        t0 = time.perf_counter()
        conn.call("session/prompt", {"sessionId": c, "prompt": text("first")})
        alone = time.perf_counter() - t0
        t0 = time.perf_counter()
        ra, rb = (conn.send("session/prompt", {"sessionId": s, "prompt": text(w)}) for s, w in ((a, "first"), (b, "first")))
        conn.wait(ra)
        conn.wait(rb)
        both = time.perf_counter() - t0
        conn.shutdown()
    finally:
        conn.kill()
        shutil.rmtree(home, ignore_errors=True)
    print(f"  [parallel streams] one stream alone {alone * 1000:.0f} ms, two at once {both * 1000:.0f} ms: "
          f"ratio {both / alone:.2f} (1.0 = parallel, 2.0 = serial)")
    result("isolation_parallel_streams_ratio", round(both / alone, 2), "x", note="two echo streams at 40 ms a chunk")


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    base = tempfile.mkdtemp(prefix="dsh-bench-isolation-")
    t0 = time.perf_counter()
    try:
        print(f"isolation ({SERVER}, echo provider at 0 ms delay, store under {base} on {fs_type(base)}, fsync on)")
        print("round trip = D's session/prompt request written -> its response read, every session/update of D's turn "
              "read first; D is one session on the same connection, prompts one at a time, conversation of 2..21 prompts")
        if "sources" in PARTS:
            print("under load = meanwhile A and B each prompt, in a fresh session every time, with a mention of its own "
                  f"{SOURCE_BYTES / 1e6:.0f} MB stored session (reference preparation reads the whole log), C repeats "
                  f"session/load of a {REPLAY_BYTES / 1e6:.0f} MB log, and the client reads the single stdout pipe at "
                  f"{SLOW_RATE / 1e6:.0f} MB/s overall, so D's frames queue behind C's replay inside the server")
        if "waits" in PARTS:
            lock_waits(base)
        if "streams" in PARTS:
            parallel_streams(base)
        encodings = [e for e in ENCODINGS if e != "zstd"] if "sources" in PARTS else []
        if "zstd" in ENCODINGS and "sources" in PARTS:
            try:
                Zstd().close()
                encodings.append("zstd")
            except (OSError, AttributeError):
                print("  [zstd] skipped: libzstd not loadable")
        if encodings:
            t_gen = time.perf_counter()
            bodies = Bodies(base, encodings)
            print(f"  (logs generated in {time.perf_counter() - t_gen:.1f} s)")
            try:
                for encoding in encodings:
                    run(base, bodies, encoding)
            finally:
                bodies.close()
        print(f"  (bench took {time.perf_counter() - t0:.0f} s)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
