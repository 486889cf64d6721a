#!/usr/bin/env python3
"""Issue 17 benchmarks: the PostgreSQL store side by side with the file store, same run, same machine.

Drives the real binary over stdio JSON-RPC with the echo provider (no delay). The PostgreSQL store is
a throwaway PostgreSQL 15 cluster started here with tests/pg/pg-cluster (unix socket only), then made
durable (fsync = on, synchronous_commit = on through ALTER SYSTEM: the script's test cluster runs
with fsync off); each database gets `dsh-acp store migrate` as the superuser, and the servers connect
as a login role in dsh_acp_user (so row-level security is in the path). The file store is a JSONL root
on the same file system (the temp dir). Each figure alternates file and PostgreSQL runs and gives the
median of the runs; the machine's load average is printed with each figure.

  prompt round trips   sequential session/prompt requests, one session at a time (a fresh session every
                       5 prompts, as store_bench.py: the echo answer lists the whole conversation, so a
                       longer one measures echo streaming, not the store); request written -> response
                       read, every session/update read; session/new not timed. The answer comes after the
                       turn is durable (fsync of the log; COMMIT with synchronous_commit = on).
  session/list         10,000 sessions (small valid 45fc logs generated here, copied into PostgreSQL with
                       `dsh-acp store copy ROOT URL`); first page, request -> page: cold = a fresh process's
                       first listing (after initialize; one unmeasured process ran first, so the file store
                       has its index cache file and PostgreSQL its buffers), warm = the same process again.
  replay               session/load of a big session (header + turns of user/message, 40 assistant/chunk
                       deltas, assistant/message; default ~100 MB) in a fresh process, request -> response,
                       every frame read; MB of log (JSONL plaintext) per second.
  reference RSS        a fresh process, session/new and one prompt, then a prompt mentioning a ~200 MB session
                       (@-mention of its dsh-session: URI): server VmHWM after minus VmHWM before (/proc).
  visibility           processes A and B on one store: A's session/new, then its first prompt; from A's
                       prompt answer until B's session/list first page (polled back to back by this client)
                       shows the session (also given from A's session/new answer).
  recall by content    bench_pg_search (beside the binary, build/bench/) on a database of its own: 10,000
                       generated sessions (PG_BENCH_SEARCH_SESSIONS) written through PgStore (their texts
                       indexed after each commit by the store's indexer), then search_content p95 over 200
                       questions, the write path's growth with texts, a turn committed -> found by a search,
                       the plain scan beside it, the size of dsh_acp.search, the index_content backfill
                       (docs/recall.md#postgresql-stores).
Usage: pg_bench.py DSH_ACP_BIN [--quick]   (--quick or PG_BENCH_QUICK=1: one run per figure, 20 MB replay,
       50 MB reference; the listing keeps 10,000 sessions). PG_BENCH_REPLAY_MB, PG_BENCH_REF_MB, PG_BENCH_RUNS
       override. Without PostgreSQL 15 or a binary without PostgreSQL support the file figures still print.
       PG_BENCH_ONLY=rt,list,visible,replay,ref,rtwords,search runs only those parts (rt: the prompt round trips;
       rtwords: the same with and without words to index, the recall index's share).
"""
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PG_CLUSTER = os.path.join(REPO, "tests", "pg", "pg-cluster")
PG_BIN = os.environ.get("DSH_PG_BIN", "/usr/lib/postgresql/15/bin")

args = [a for a in sys.argv[1:] if not a.startswith("--")]
SERVER = os.path.abspath(args[0]) if args else os.path.join(REPO, "build", "dsh-acp")
QUICK = "--quick" in sys.argv or os.environ.get("PG_BENCH_QUICK") == "1"
sys.argv[1:] = [SERVER]  # the benches imported below read their own arguments when loaded

from bench_common import EchoServer, fs_type, result  # noqa: E402
from isolation_bench import body_turns, text, uri_of  # noqa: E402
from store_bench import fsync_ms, write_listing_log  # noqa: E402
RUNS = int(os.environ.get("PG_BENCH_RUNS", "1" if QUICK else "3"))
REPLAY_MB = int(os.environ.get("PG_BENCH_REPLAY_MB", "20" if QUICK else "100"))
REF_MB = int(os.environ.get("PG_BENCH_REF_MB", "50" if QUICK else "200"))
LIST_N = 10_000
RT_SECONDS = 1.0 if QUICK else 2.0
VISIBLE_SAMPLES = 5 if QUICK else 10
VISIBLE_GIVE_UP_S = 2.0
CALL_TIMEOUT_S = 300.0
LOAD = os.environ.get("PG_BENCH_LOAD", "")  # "copy" or "sql": how sessions get into PostgreSQL (default: copy, else sql)
CWD = "/bench/pg"          # sessions made by the figures
BIG_CWD = "/bench/pg/big"  # the replay and reference sessions: a bucket of their own
ROLE = "dsh_bench"
ONLY = set(filter(None, os.environ.get("PG_BENCH_ONLY", "").split(",")))
SEARCH_SESSIONS = int(os.environ.get("PG_BENCH_SEARCH_SESSIONS", "10000"))


def want(part):
    return not ONLY or part in ONLY

# (key, label, comparison, target, unit): the targets, which the PostgreSQL column is held to;
# the file column is shown beside it (its own targets are docs/decisions.md#benchmarks's, in store_bench.py).
FIGURES = [
    ("rt", "prompt round trips, 1 session", ">=", 500, "/s"),
    ("list_warm", "session/list 10k, warm", "<=", 10, "ms"),
    ("list_cold", "session/list 10k, cold", "<=", 150, "ms"),
    ("replay", "replay", ">=", 100, "MB/s"),
    ("ref_rss", "reference, server RSS increase", "<=", 64, "MB"),
    ("visible", "visible in another process", "<=", 50, "ms"),
]
UNIT_KEY = {"/s": "per_s", "ms": "ms", "MB/s": "mbps", "MB": "mb"}


class BenchError(Exception):
    pass


def load():
    return "load %.1f %.1f %.1f" % os.getloadavg()


# ---- the client -------------------------------------------------------------------------------------

class Server(EchoServer):
    """bench_common's client with a deadline on every response (a stuck store fails the figure
    instead of hanging the bench); stderr kept in a file for the error message."""

    def __init__(self, home, store_args):
        os.makedirs(home, exist_ok=True)
        self.err_path = os.path.join(home, "stderr-%d.log" % time.monotonic_ns())
        self.err = open(self.err_path, "wb")
        super().__init__(SERVER, home, store_args, stderr=self.err)
        self.ref_cards = 0

    def stderr_tail(self):
        self.err.flush()
        with open(self.err_path, "rb") as f:
            return f.read()[-1500:].decode(errors="replace").strip()

    def send(self, method, params):
        try:
            return super().send(method, params)
        except BrokenPipeError:
            raise BenchError("server exited: " + self.stderr_tail()) from None

    def wait(self, rid, timeout=CALL_TIMEOUT_S):
        try:
            for line in self.lines(time.monotonic() + timeout):
                if line.startswith(b'{"jsonrpc":"2.0","method":"session/update"'):
                    if b'"toolCallId":"dsh-ref-' in line:
                        self.ref_cards += 1
                    continue
                f = json.loads(line)
                if "method" in f:
                    continue
                if f.get("id") == rid:
                    if "error" in f:
                        raise BenchError(f"request failed: {f['error']}")
                    return f["result"]
        except TimeoutError:
            raise BenchError(f"no answer within {timeout:.0f} s") from None
        self.proc.wait()
        raise BenchError(f"server exited ({self.proc.returncode}): " + self.stderr_tail())

    def call(self, method, params):
        return self.wait(self.send(method, params))

    def close(self):
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.err.close()


def started(store):
    s = Server(store.new_home(), store.args)
    try:
        s.call("initialize", {"protocolVersion": 1})
    except BaseException:
        s.close()
        raise
    return s


# ---- the stores --------------------------------------------------------------------------------------

class FileStore:
    name = "file"

    def __init__(self, base, label):
        self.root = os.path.join(base, "file-" + label)
        self.home = os.path.join(base, "file-" + label + "-home")
        self.args = ("--store", self.root)

    def new_home(self):
        return self.home  # one home: later processes find the listing index cache of earlier ones

    def load_root(self, root):
        os.rename(root, self.root)


class PgStore:
    name = "postgresql"

    def __init__(self, cluster, base, db):
        self.cluster, self.db, self.base = cluster, db, base
        self.url = cluster.url(ROLE, db)
        self.args = ("--store", self.url)
        self.homes = 0
        cluster.psql(f"CREATE DATABASE {db}")
        run([SERVER, "store", "migrate", cluster.url("postgres", db)], "dsh-acp store migrate")
        cluster.psql(f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') THEN "
                     f"CREATE ROLE {ROLE} LOGIN IN ROLE dsh_acp_user; END IF; END $$")

    def new_home(self):
        self.homes += 1  # its own home each: nothing shared but the database, as on two machines
        return os.path.join(self.base, f"pg-{self.db}-home-{self.homes}")

    def load_root(self, root):
        """The root's sessions into the database as the bench's role's own: `dsh-acp store copy ROOT URL`,
        or bulk SQL (COPY) when that is unavailable or PG_BENCH_LOAD=sql. Returns (seconds, how)."""
        t0 = time.perf_counter()
        if LOAD != "sql":
            try:
                run([SERVER, "store", "copy", root, self.url], "dsh-acp store copy",
                    env=dict(os.environ, DSH_ACP_HOME=os.path.join(self.base, "copy-home")))
                return time.perf_counter() - t0, "dsh-acp store copy"
            except BenchError as e:
                if LOAD == "copy":
                    raise
                print(f"  {e}; loading with bulk SQL instead")
        ids = sql_load(self.cluster, self.db, root)
        return time.perf_counter() - t0, f"bulk SQL (COPY of {len(ids)} sessions' rows)"


EVENT_HEAD = re.compile(rb'\{"type":"([^"]+)","seq":(\d+),"time":(\d+)')


def sql_load(cluster, db, root):
    """Bulk SQL: the root's 45fc JSONL logs as rows of dsh_acp.sessions and dsh_acp.events, the lines
    verbatim, as the PostgreSQL appender writes them (size = header and event lines with newlines,
    updated_at = the last event's time, title = the latest session/title), owned by the bench's role;
    COPY as the superuser. Sessions of these ids left by a failed copy are deleted first."""
    def esc(b):  # COPY text format; JSON lines hold no raw tab, newline or carriage return
        return b.replace(b"\\", b"\\\\")

    sessions_path, events_path = os.path.join(root, "..", "sessions.copy"), os.path.join(root, "..", "events.copy")
    ids = []
    with open(sessions_path, "wb") as so, open(events_path, "wb") as eo:
        for bucket in sorted(os.listdir(root)):
            for name in sorted(os.listdir(os.path.join(root, bucket))):
                with open(os.path.join(root, bucket, name), "rb") as f:
                    header = f.readline()
                    h = json.loads(header)
                    sid = h["id"].encode()
                    ids.append(h["id"])
                    size, count, updated, title = len(header), 0, h["createdAt"], None
                    for line in f:
                        m = EVENT_HEAD.match(line)
                        typ, seq, t = m.group(1), m.group(2), m.group(3)
                        if typ == b"session/title":
                            title = json.loads(line)["data"]["title"]
                        eo.write(b"\t".join((esc(sid), seq, typ, t, esc(line[:-1]))) + b"\n")
                        size += len(line)
                        count += 1
                        updated = int(t)
                    cwd = h["cwd"].encode()
                    so.write(b"\t".join((esc(sid), ROLE.encode(), b"45fc", esc(header[:-1]), str(h["version"]).encode(),
                                         str(h["createdAt"]).encode(), esc(cwd), esc(cwd), str(h["delegationDepth"]).encode(),
                                         esc(title.encode()) if title is not None else b"\\N", str(updated).encode(),
                                         str(size).encode(), str(count).encode())) + b"\n")
    exe = shutil.which("psql") or os.path.join(PG_BIN, "psql")
    url = cluster.url("postgres", db)
    cluster.psql("DELETE FROM dsh_acp.sessions WHERE id = ANY('{%s}')" % ",".join(ids), db)
    for table, cols, path in (("sessions", "id, owner, generation, header_line, version, created_at, cwd, cwd_key, "
                               "delegation_depth, title, updated_at, size_bytes, event_count", sessions_path),
                              ("events", "session_id, seq, type, time, line", events_path)):
        with open(path, "rb") as data:
            p = subprocess.run([exe, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c",
                                f"COPY dsh_acp.{table} ({cols}) FROM STDIN"], stdin=data, capture_output=True, text=True)
        if p.returncode != 0:
            raise BenchError(f"COPY into dsh_acp.{table} failed: {p.stderr.strip()[-800:]}")
        os.unlink(path)
    cluster.psql("ANALYZE dsh_acp.sessions; ANALYZE dsh_acp.events", db)
    return ids


def run(cmd, what, env=None, timeout=600):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        raise BenchError(f"{what} failed ({p.returncode}): {(p.stderr or p.stdout).strip()[-1500:]}")
    return p.stdout


class Cluster:
    """tests/pg/pg-cluster's throwaway cluster, made durable."""

    def __init__(self):
        # A short path: the socket's must fit a sockaddr_un; under /tmp, where the file store is too.
        self.dir = tempfile.mkdtemp(prefix="dsh-pgb-", dir="/tmp")
        os.rmdir(self.dir)  # pg-cluster makes it (and owns it)
        self.socket = os.path.join(self.dir, "socket")
        self.up = False

    def url(self, user, db):
        return f"postgresql://{user}@/{db}?host={self.socket}"

    def psql(self, sql, db="postgres"):
        exe = shutil.which("psql") or os.path.join(PG_BIN, "psql")
        return run([exe, "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-d", self.url("postgres", db), "-c", sql],
                   "psql " + sql.split()[0]).strip()

    def start(self):
        if not os.access(PG_CLUSTER, os.X_OK):
            raise BenchError(f"{PG_CLUSTER} not found (tests/pg/pg-cluster comes with the PostgreSQL test set-up)")
        self.up = True
        run([PG_CLUSTER, "start", self.dir], "pg-cluster start", timeout=120)
        # The test cluster runs with fsync off; a benchmark of durable commits needs it on. Both are
        # reloadable settings; ALTER SYSTEM keeps pg-cluster untouched.
        self.psql("ALTER SYSTEM SET fsync = on")
        self.psql("ALTER SYSTEM SET synchronous_commit = on")
        self.psql("SELECT pg_reload_conf()")
        deadline = time.monotonic() + 10
        while self.settings() != ("on", "on"):  # the reload is a signal: new sessions see it shortly
            if time.monotonic() > deadline:
                raise BenchError(f"fsync/synchronous_commit still {self.settings()} after reload")
            time.sleep(0.05)
        return self.psql("SHOW server_version")

    def settings(self):
        return tuple(self.psql("SELECT current_setting('fsync') || ' ' || current_setting('synchronous_commit')").split())

    def stop(self):
        if self.up:
            subprocess.run([PG_CLUSTER, "stop", self.dir], capture_output=True, timeout=120)


# ---- data --------------------------------------------------------------------------------------------

def listing_root(base):
    """LIST_N small finished 45fc sessions ("list-000000".., newest = highest), 20 cwd buckets."""
    root = os.path.join(base, "gen-list")
    for i in range(LIST_N):
        write_listing_log(root, i, "45fc")
    return root


def big_root(base):
    """One root holding the replay session (~REPLAY_MB) and the reference source (~REF_MB): the same
    generated turns, the replay log a prefix of the source. Returns (root, its bucket, {sid: plaintext bytes})."""
    root = os.path.join(base, "gen-big")
    name = "cwd-" + hashlib.sha256(BIG_CWD.encode()).hexdigest()[:12]
    bucket = os.path.join(root, name)
    os.makedirs(bucket, mode=0o700)
    sizes = {}
    files = {}
    for sid in ("pgbench-replay", "pgbench-ref"):
        header = (json.dumps({"type": "session", "version": 0, "id": sid, "createdAt": 1_700_000_000_000 + len(files),
                              "cwd": BIG_CWD, "delegationDepth": 0}, separators=(",", ":")) + "\n").encode()
        files[sid] = open(os.path.join(bucket, sid + ".jsonl"), "wb")
        files[sid].write(header)
        sizes[sid] = len(header)
    try:
        for turn in body_turns(max(REF_MB, REPLAY_MB) * 1_000_000):
            for sid, f in files.items():
                if sid == "pgbench-ref" or sizes[sid] < REPLAY_MB * 1_000_000:
                    f.write(turn)
                    sizes[sid] += len(turn)
    finally:
        for f in files.values():
            f.close()
    return root, name, sizes


# ---- the figures -------------------------------------------------------------------------------------

def round_trips(store):
    s = started(store)
    try:
        times = []
        while sum(times) < RT_SECONDS:
            sid = s.call("session/new", {"cwd": CWD, "mcpServers": []})["sessionId"]
            for k in range(5):
                t0 = time.perf_counter()
                s.call("session/prompt", {"sessionId": sid, "prompt": text(f"ping {k}")})
                times.append(time.perf_counter() - t0)
        times.sort()
        return {"rt": (len(times) / sum(times), f"{len(times)} prompts, median {times[len(times) // 2] * 1000:.2f} ms, "
                                                f"p90 {times[len(times) * 9 // 10] * 1000:.2f} ms")}
    finally:
        s.close()


def round_trip_growth(store, rounds=20, per_round=100):
    """Issue 29's "no growth of prompt round trips' cost beyond 5% with indexing on", through the server:
    prompts of words to index against prompts of stop words of the same lengths (the echo answer repeats
    them: nothing to index there either), back to back, the two kinds alternating round by round; the
    figure is the median of the rounds' paired ratios of median round trips. Back to back, the indexer
    of each turn's texts competes with the next prompts for the CPUs: a model's answer would give it
    idle time."""
    import random
    rng = random.Random(29)
    syllables = ["ka", "lo", "mi", "ne", "su", "ta", "ro", "vi", "pe", "du"]
    stop = {3: "the", 5: "there", 7: "because", 9: "ourselves"}
    s = started(store)
    try:
        ratios, medians = [], {True: [], False: []}
        for r in range(rounds):
            took = {}
            for words in (r % 2 == 0, r % 2 != 0):
                times, sid = [], None
                for k in range(per_round):
                    if k % 5 == 0:
                        sid = s.call("session/new", {"cwd": CWD, "mcpServers": []})["sessionId"]
                    said = []
                    for _ in range(24):
                        w = "".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) + "n"
                        said.append(w if words else stop[len(w)])
                    t0 = time.perf_counter()
                    s.call("session/prompt", {"sessionId": sid, "prompt": text(" ".join(said))})
                    times.append(time.perf_counter() - t0)
                took[words] = statistics.median(times)
                medians[words].append(took[words])
            ratios.append(took[True] / took[False])
        growth = 100 * (statistics.median(ratios) - 1)
        print(f"  prompt round trips with words to index {statistics.median(medians[True]) * 1000:.2f} ms, with stop words "
              f"only {statistics.median(medians[False]) * 1000:.2f} ms (medians): {growth:+.1f}% (median of {rounds} "
              f"paired rounds of {per_round}; they ranged {100 * (min(ratios) - 1):+.0f}% to {100 * (max(ratios) - 1):+.0f}%)")
        result("pgfts_rt_growth_pct", growth, "%", note="prompt round trips through the server, words to index vs stop words")
    finally:
        s.close()


def listing(store, warm_repeats=20):
    """Cold ms (a fresh process's first session/list) and warm ms (the median of repeats in it)."""
    s = started(store)
    try:
        t0 = time.perf_counter()
        page = s.call("session/list", {})
        cold = (time.perf_counter() - t0) * 1000
        ids = [x["sessionId"] for x in page["sessions"]]
        if not ids or ids[0] != f"list-{LIST_N - 1:06d}":
            raise BenchError(f"unexpected first page: {ids[:3]} ({len(ids)} sessions)")
        warm = []
        for _ in range(warm_repeats):
            t0 = time.perf_counter()
            s.call("session/list", {})
            warm.append((time.perf_counter() - t0) * 1000)
        return {"list_cold": (cold, f"page of {len(ids)}"),
                "list_warm": (statistics.median(warm) if warm else None, f"median of {warm_repeats} in one process")}
    finally:
        s.close()


def replay(store, sid, size):
    s = started(store)
    try:
        frames0 = s.frames_read
        t0 = time.perf_counter()
        s.call("session/load", {"sessionId": sid, "cwd": BIG_CWD, "mcpServers": []})
        dt = time.perf_counter() - t0
        frames = s.frames_read - frames0
        if frames < size / 10_000:  # ~46 events per ~5 KB turn: far fewer frames means nothing was replayed
            raise BenchError(f"session/load sent only {frames} frames")
        return {"replay": (size / 1e6 / dt, f"{size / 1e6:.0f} MB in {dt:.2f} s, {frames} frames; "
                                            f"peak RSS {s.status_mb('VmHWM'):.1f} MB")}
    finally:
        s.close()


def reference(store, sid, size):
    s = started(store)
    try:
        own = s.call("session/new", {"cwd": CWD, "mcpServers": []})["sessionId"]
        s.call("session/prompt", {"sessionId": own, "prompt": text("warm up")})
        hwm0 = s.status_mb("VmHWM")
        t0 = time.perf_counter()
        s.call("session/prompt", {"sessionId": own, "prompt": text(f"summarise @[Source]({uri_of(sid)}) please")})
        dt = time.perf_counter() - t0
        if not s.ref_cards:
            raise BenchError("the mention was not prepared as a reference (no dsh-ref- tool call)")
        hwm1 = s.status_mb("VmHWM")
        return {"ref_rss": (hwm1 - hwm0, f"{size / 1e6:.0f} MB source, VmHWM {hwm0:.1f} -> {hwm1:.1f} MB, "
                                         f"prompt {dt:.2f} s ({size / 1e6 / dt:.0f} MB/s)")}
    finally:
        s.close()


def visibility(store):
    """Median ms from A's prompt answer to B's listing showing the session; None samples = never seen."""
    b = started(store)
    a = None
    try:
        a = started(store)
        b.call("session/list", {})
        from_prompt, from_new, polls = [], [], []
        for k in range(VISIBLE_SAMPLES):
            sid = a.call("session/new", {"cwd": CWD, "mcpServers": []})["sessionId"]
            t_new = time.perf_counter()
            a.call("session/prompt", {"sessionId": sid, "prompt": text(f"visible {k}")})
            t_prompt = time.perf_counter()
            n = 0
            while True:
                page = b.call("session/list", {})
                n += 1
                now = time.perf_counter()
                if any(x["sessionId"] == sid for x in page["sessions"]):
                    break
                if now - t_prompt > VISIBLE_GIVE_UP_S:
                    now = None
                    break
            from_prompt.append(None if now is None else (now - t_prompt) * 1000)
            from_new.append(None if now is None else (now - t_new) * 1000)
            polls.append(n)
        seen = [v for v in from_prompt if v is not None]
        if not seen:
            raise BenchError(f"B never listed A's sessions within {VISIBLE_GIVE_UP_S:.0f} s")
        missed = len(from_prompt) - len(seen)
        med = statistics.median(seen)
        return {"visible": (med, f"median of {len(seen)}, max {max(seen):.1f} ms, {statistics.median([v for v in from_new if v]):.1f} ms "
                     f"from session/new's answer, {statistics.median(polls):.0f} listings polled"
                     + (f"; {missed} never seen within {VISIBLE_GIVE_UP_S:.0f} s" if missed else ""))}
    finally:
        b.close()
        if a:
            a.close()


def recall(cluster, base):
    """bench_pg_search on a database of its own: its lines (and BENCH-RESULT lines) passed through."""
    exe = os.path.join(os.path.dirname(SERVER), "bench", "bench_pg_search")
    if not os.access(exe, os.X_OK):
        print(f"  not measured: {exe} not built")
        return
    store = PgStore(cluster, base, "bench_search")
    p = subprocess.run([exe, store.url, str(SEARCH_SESSIONS)], capture_output=True, text=True, timeout=3600)
    sys.stdout.write(p.stdout)
    if p.returncode != 0:
        print(f"  bench_pg_search failed ({p.returncode}): {p.stderr.strip()[-800:]}")


# ---- the run -----------------------------------------------------------------------------------------

class Table:
    def __init__(self):
        self.cells = {}  # (figure key, store name) -> (value, note) or (None, reason)

    def measure(self, keys, stores, fn, *fn_args):
        """RUNS rounds of fn on each store in turn (interleaved, so load hits both alike); fn returns
        {figure key: (value, note)}; each figure's median is kept. A failure is kept as the store's
        reason and the other store goes on."""
        values = {}
        failed = set()
        for _ in range(RUNS):
            for store in stores:
                if store.name in failed:
                    continue
                try:
                    out = fn(store, *fn_args)
                except Exception as e:  # noqa: BLE001 - one store's failure (any shape) must not cost the other's figures
                    failed.add(store.name)
                    reason = (str(e) or repr(e)).splitlines()[0][:300]
                    for key in keys:
                        self.cells[key, store.name] = (None, reason)
                    print(f"  [{store.name}] not measured: {e}")
                    continue
                for key, (v, note) in out.items():
                    values.setdefault((key, store.name), []).append((v, note))
        for (key, name), runs in sorted(values.items()):
            if name in failed:
                continue
            vs = [v for v, _ in runs]
            med = statistics.median(vs)
            note = min(runs, key=lambda r: abs(r[0] - med))[1]
            self.cells[key, name] = (med, note)
            print(f"  [{name}] {key}: {med:.4g} (runs: {', '.join(f'{v:.4g}' for v in vs)}; {note})")

    def put(self, key, store_name, value, note):
        self.cells[key, store_name] = (value, note)

    def emit(self):
        print()
        print(f"issue 17, side by side ({load()} at the end):")
        w = max(len(f[1]) for f in FIGURES)
        print(f"  {'figure':<{w}}  {'target (PostgreSQL)':<20}  {'file store':>12}  {'PostgreSQL':>12}  result")
        for key, label, op, target, unit in FIGURES:
            cols = []
            for name in ("file", "postgresql"):
                v, note = self.cells.get((key, name), (None, "not run"))
                cols.append("-" if v is None else f"{v:.4g} {unit}")
                if v is not None:
                    result(f"i17_{key}_{'pg' if name == 'postgresql' else 'file'}_{UNIT_KEY[unit]}", v, unit, note=note)
            v = self.cells.get((key, "postgresql"), (None, ""))[0]
            verdict = "-" if v is None else ("pass" if (v >= target if op == ">=" else v <= target) else "MISS")
            print(f"  {label:<{w}}  {op + ' ' + str(target) + ' ' + unit:<20}  {cols[0]:>12}  {cols[1]:>12}  {verdict}")
        for (key, name), (v, note) in sorted(self.cells.items()):
            if v is None:
                print(f"  not measured: {key} on {name}: {note}")


def main():
    base = tempfile.mkdtemp(prefix="dsh-bench-pg-")
    cluster = Cluster()
    table = Table()
    try:
        print(f"issue 17 store benchmarks ({SERVER}, echo provider, {'quick' if QUICK else 'full'} run: "
              f"{RUNS} run(s) per figure; {os.cpu_count()} CPUs, {load()})")
        print(f"  file store under {base} on {fs_type(base)}; fsync floor {fsync_ms(base):.2f} ms per 200-byte "
              "write+fsync (median of 100)")
        pg_rt = pg_data = None
        try:
            version = cluster.start()
            fsync, sync = cluster.settings()
            print(f"  PostgreSQL {version} in {cluster.dir} on {fs_type(cluster.dir)} (unix socket), fsync = {fsync}, "
                  f"synchronous_commit = {sync}; servers connect as {ROLE} (member of dsh_acp_user, RLS applies)")
            pg_rt = PgStore(cluster, base, "bench_rt")
            pg_data = PgStore(cluster, base, "bench_data")
        except (BenchError, subprocess.TimeoutExpired, OSError) as e:
            print(f"  PostgreSQL not measured: {e}")
            for key, *_ in FIGURES:
                table.put(key, "postgresql", None, str(e).splitlines()[0][:300])
            pg_rt = pg_data = None
        file_rt, file_data = FileStore(base, "rt"), FileStore(base, "data")

        if want("list") or want("visible"):
            t0 = time.perf_counter()
            root = listing_root(base)
            print(f"  generated {LIST_N} sessions in {time.perf_counter() - t0:.1f} s")
            if pg_data:
                try:
                    took, how = pg_data.load_root(root)
                    print(f"  {LIST_N} sessions into PostgreSQL by {how}: {took:.1f} s ({LIST_N / took:.0f} sessions/s)")
                    if how.startswith("dsh-acp"):
                        result("i17_copy_sessions_per_s", LIST_N / took, "/s", note=f"{took:.1f} s for {LIST_N} small sessions")
                except (BenchError, subprocess.TimeoutExpired) as e:
                    print(f"  PostgreSQL: the listing sessions not copied: {e}")
                    for key, *_ in FIGURES:
                        if key != "rt":
                            table.put(key, "postgresql", None, str(e).splitlines()[0][:300])
                    pg_data = None
            file_data.load_root(root)
        stores_rt = [s for s in (file_rt, pg_rt) if s]
        stores = [s for s in (file_data, pg_data) if s]

        if want("rt"):
            print(f"prompt round trips ({load()}):")
            table.measure(["rt"], stores_rt, round_trips)
        if want("list"):
            print(f"session/list of {LIST_N} sessions, first page ({load()}):")
            for s in stores:
                try:
                    listing(s, 0)  # unmeasured: the file store writes its index cache, PostgreSQL reads its pages
                except BenchError as e:
                    print(f"  [{s.name}] first listing: {e}")
            table.measure(["list_cold", "list_warm"], stores, listing)
        if want("visible"):
            print(f"visibility of a new session in another process ({load()}):")
            table.measure(["visible"], stores, visibility)

        if want("replay") or want("ref"):
            t0 = time.perf_counter()
            big, bucket, sizes = big_root(base)
            print(f"generated the replay session ({sizes['pgbench-replay'] / 1e6:.0f} MB) and the reference source "
                  f"({sizes['pgbench-ref'] / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
            if pg_data:
                try:
                    took, how = pg_data.load_root(big)
                    mb = sum(sizes.values()) / 1e6
                    print(f"  {mb:.0f} MB into PostgreSQL by {how}: {took:.1f} s ({mb / took:.0f} MB/s)")
                    if how.startswith("dsh-acp"):
                        result("i17_copy_mbps", mb / took, "MB/s", note=f"{mb:.0f} MB in 2 sessions")
                except (BenchError, subprocess.TimeoutExpired) as e:
                    print(f"  PostgreSQL: the big sessions not copied: {e}")
                    for key in ("replay", "ref_rss"):
                        table.put(key, "postgresql", None, str(e).splitlines()[0][:300])
                    stores = [file_data]
            # The file store gets them in its data root, a bucket beside the 10k listing sessions'.
            os.makedirs(file_data.root, exist_ok=True)
            os.rename(os.path.join(big, bucket), os.path.join(file_data.root, bucket))
            if want("replay"):
                print(f"replay, session/load of {sizes['pgbench-replay'] / 1e6:.0f} MB ({load()}):")
                table.measure(["replay"], stores, replay, "pgbench-replay", sizes["pgbench-replay"])
            if want("ref"):
                print(f"reference to a {sizes['pgbench-ref'] / 1e6:.0f} MB session ({load()}):")
                table.measure(["ref_rss"], stores, reference, "pgbench-ref", sizes["pgbench-ref"])
        if want("rtwords") and pg_rt:
            print(f"prompt round trips with and without words to index, PostgreSQL ({load()}):")
            round_trip_growth(pg_rt)
        if want("search") and pg_rt:
            print(f"recall by content, {SEARCH_SESSIONS} sessions ({load()}):")
            try:
                recall(cluster, base)
            except (BenchError, subprocess.TimeoutExpired) as e:
                print(f"  not measured: {e}")
        table.emit()
    finally:
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
