#!/usr/bin/env python3
"""Multi-process soak of the session store (issue 10): three real `dsh-acp --provider echo` processes
share one store as three editor windows would (same DSH_ACP_HOME), ten sessions each. Every
process gets concurrent prompts (some mentioning sessions of the other processes, some sleeping in
the echo model and cancelled with `session/cancel`), `session/list`, `session/load` and
`session/resume` of the others' sessions and prompts into them, while a random process is killed
with SIGKILL every few seconds and restarted at once (it reloads its sessions with session/load).
The first half runs on a zstd store, the second on a `--store-compression none` store. Afterwards
check_logs.py (independent of the server's reader) verifies every log against the ledger of
prompts. A session is referenced or loaded by another process only after its first prompt was
answered (before that it need not be durable).

Usage: soak.py DSH_ACP_BIN [--minutes M | --seconds S] [--seed N] [--keep DIR]
Prints a summary; exits 1 on any violation.
"""
import argparse
import asyncio
import base64
import json
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from acp_client import AsyncClient, Gone, RpcError  # noqa: E402
import check_logs  # noqa: E402
import checker_selftest  # noqa: E402

WINDOWS = 3
SLOTS = 10
MAX_TURNS = 24          # a session is retired (replaced by a new one) after this many prompts
TIMEOUT = 120.0         # any answer later than this is a hang (a violation)
ALLOWED_PROMPT_ERRORS = {"SESSION_BUSY"}


def mention(sid, label):
    text = json.dumps(sid, ensure_ascii=False, separators=(",", ":"))
    uri = "dsh-session:" + base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
    return f"@[{label}]({uri})"


class Sess:
    def __init__(self, sid, cwd, owner):
        self.sid, self.cwd, self.owner = sid, cwd, owner
        self.sent = 0
        self.published_at = None  # monotonic time its first prompt was answered


class Window:
    def __init__(self, soak, idx):
        self.soak, self.idx = soak, idx
        self.proc = None
        self.gen = 0
        self.ready = asyncio.Event()
        self.slots = [None] * SLOTS
        self.attached = set()   # foreign sessions attached to the current process
        self.loading = set()
        self.prompting = set()  # foreign sessions with a prompt in flight from this window

    def argv(self):
        s = self.soak
        argv = [s.binary, "--provider", "echo", "--log-file", os.path.join(s.home, "dsh-acp.log")]
        if s.compression == "none":
            argv += ["--store-compression", "none"]
        if self.idx == 2:
            argv += ["--max-reference-bytes", "6000"]  # this window's snapshots get truncated
        return argv

    async def spawn(self):
        s = self.soak
        self.proc = AsyncClient(self.argv(), dict(os.environ, DSH_ACP_HOME=s.home), s.stderr)
        await self.proc.start()
        self.gen += 1
        self.attached = set()
        try:
            await self.proc.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}}, TIMEOUT)
            for k in range(SLOTS):
                sess = self.slots[k]
                if sess is None:
                    self.slots[k] = await self.new_session()
                    continue
                try:
                    await s.load_and_check(self, sess)
                except RpcError as e:
                    if e.code == -32002 and sess.published_at is None:
                        self.slots[k] = await self.new_session()  # never prompted: not durable (yet)
                        s.count["unprompted_lost_on_kill"] += 1
                    else:
                        s.violation(f"window {self.idx}: reloading {sess.sid} after restart: {e}")
        except Gone:
            self.soak.violation(f"window {self.idx}: the process died while starting (exit {self.proc.proc.returncode})")
            return
        self.ready.set()

    async def new_session(self):
        s = self.soak
        cwd = random.choice(s.cwds)
        r = await self.proc.request("session/new", {"cwd": cwd, "mcpServers": []}, TIMEOUT)
        sess = Sess(r["sessionId"], cwd, self.idx)
        s.sessions[sess.sid] = sess
        s.count["sessions"] += 1
        return sess

    async def restart(self):
        self.ready.clear()
        self.proc.kill9()
        await self.proc.wait_dead()
        self.soak.count["kills"] += 1
        for _attempt in range(3):
            await self.spawn()
            if self.ready.is_set():
                return
        raise SystemExit(f"window {self.idx}: the process does not start")


class Soak:
    def __init__(self, binary, home, compression, seconds, rng):
        self.binary, self.home, self.compression, self.seconds = binary, home, compression, seconds
        self.rng = rng
        self.cwds = [os.path.join(home, "work-a"), os.path.join(home, "work-b")]
        for c in self.cwds:
            os.makedirs(c, exist_ok=True)
        self.stderr = open(os.path.join(home, "stderr.txt"), "ab")
        self.sessions = {}
        self.prompts = []
        self.by_session = {}  # sessionId -> its prompts
        self.violations = []
        self.stop = False
        self.count = {k: 0 for k in ("sessions", "kills", "loads", "resumes", "lists", "list_pages", "cancels",
                                     "foreign_prompts", "reference_prompts",
                                     "unprompted_lost_on_kill")}
        self.windows = [Window(self, i) for i in range(WINDOWS)]

    def violation(self, text):
        print("VIOLATION:", text, file=sys.stderr, flush=True)
        self.violations.append(text)

    def published(self, exclude):
        return [s for s in self.sessions.values() if s.published_at is not None and s.sid != exclude]

    def answered_tokens(self, sid, before):
        return {p["token"] for p in self.by_session.get(sid, []) if p["outcome"] == "end_turn" and p["answered"] < before}

    async def load_and_check(self, win, sess):
        """session/load; the replay must show every prompt answered before the load, once. False when
        this window is loading that session already (it is attached only once that load answers)."""
        if sess.sid in win.loading:
            return False
        win.loading.add(sess.sid)
        try:
            proc = win.proc
            t0 = time.monotonic()
            expected = self.answered_tokens(sess.sid, t0)
            start = len(proc.user_chunks.get(sess.sid, []))
            try:
                await proc.request("session/load", {"sessionId": sess.sid, "cwd": sess.cwd, "mcpServers": []}, TIMEOUT)
            except asyncio.TimeoutError:
                self.violation(f"window {win.idx}: session/load {sess.sid} not answered within {TIMEOUT} s")
                return False
            self.count["loads"] += 1
            chunks = proc.user_chunks.get(sess.sid, [])
            replayed = check_logs.TOKEN.findall("\n".join(chunks[start:]))
            del chunks[start:]
            if len(replayed) != len(set(replayed)):
                self.violation(f"window {win.idx}: load of {sess.sid} replayed a prompt twice: {replayed}")
            missing = expected - set(replayed)
            if missing:
                self.violation(f"window {win.idx}: load of {sess.sid} lacks answered prompts {sorted(missing)}")
            return True
        finally:
            win.loading.discard(sess.sid)

    async def prompt(self, win, sess, foreign):
        rng = self.rng
        token = f"TOK-{len(self.prompts):07d}-K"
        mentions = []
        parts = [f"soak {token} from window {win.idx}"]
        stored = list(parts)  # the text the log must hold: mentions shown as @label
        if not foreign and rng.random() < 0.4:
            pool = self.published(sess.sid)
            others = [s for s in pool if s.owner != win.idx] or pool
            for src in rng.sample(others, min(len(others), rng.randint(1, 3))):
                mentions.append(src.sid)
                parts.append("see " + mention(src.sid, f"src{len(mentions)}"))
                stored.append(f"see @src{len(mentions)}")
            if mentions:
                self.count["reference_prompts"] += 1
        sleep_ms = 0
        if rng.random() < 0.3:
            sleep_ms = rng.randint(300, 3000)
            parts.append(f"[[echo:sleep={sleep_ms}]]")
            stored.append(parts[-1])
        cancel_after = rng.uniform(0.02, sleep_ms / 1000) if sleep_ms and rng.random() < 0.5 else None
        entry = {"token": token, "sessionId": sess.sid, "window": win.idx, "pid": win.proc.proc.pid, "mentions": mentions,
                 "text": " ".join(stored), "foreign": foreign, "sleepMs": sleep_ms, "cancel": cancel_after is not None,
                 "sent": time.monotonic(), "answered": None, "outcome": "pending"}
        self.prompts.append(entry)
        self.by_session.setdefault(sess.sid, []).append(entry)
        sess.sent += 1
        proc = win.proc
        canceller = None
        if cancel_after is not None:
            async def cancel():
                await asyncio.sleep(cancel_after)
                try:
                    proc.notify("session/cancel", {"sessionId": sess.sid})
                    self.count["cancels"] += 1
                except Gone:
                    pass
            canceller = asyncio.create_task(cancel())
        try:
            r = await proc.request("session/prompt", {"sessionId": sess.sid,
                                                      "prompt": [{"type": "text", "text": " ".join(parts)}]}, TIMEOUT)
            entry["outcome"] = r["stopReason"]
            entry["answered"] = time.monotonic()
            if r["stopReason"] == "end_turn" and sess.published_at is None:
                sess.published_at = entry["answered"]
            elif r["stopReason"] not in ("end_turn", "cancelled"):
                self.violation(f"{token}: unexpected stopReason {r['stopReason']}")
        except Gone:
            entry["outcome"] = "killed"
        except RpcError as e:
            entry["outcome"] = f"error:{e.code}:{e.data_code}"
            entry["answered"] = time.monotonic()
            if e.data_code not in ALLOWED_PROMPT_ERRORS:
                self.violation(f"{token} to {sess.sid} (window {win.idx}, mentions {mentions}): {e.error}")
        except asyncio.TimeoutError:
            entry["outcome"] = "timeout"
            self.violation(f"{token}: session/prompt not answered within {TIMEOUT} s")
        if canceller is not None:
            canceller.cancel()
            try:
                await canceller
            except asyncio.CancelledError:
                pass

    async def wait_ready(self, win):
        """Waits until the window's process is up; False when the soak is over."""
        while not self.stop:
            if win.ready.is_set():
                return True
            try:
                await asyncio.wait_for(win.ready.wait(), 1.0)
            except asyncio.TimeoutError:
                pass
        return False

    async def slot_worker(self, win, k):
        rng = self.rng
        while await self.wait_ready(win):
            sess = win.slots[k]
            try:
                if sess.sent >= MAX_TURNS:
                    proc = win.proc
                    fresh = await win.new_session()
                    # A restart meanwhile may already have reattached the slots: this one would
                    # not be attached to the new process, so it is left unused.
                    if proc is win.proc and win.ready.is_set():
                        win.slots[k] = fresh
                    continue
            except Gone:
                continue
            except RpcError as e:
                self.violation(f"window {win.idx}: session/new: {e}")
                continue
            await self.prompt(win, sess, foreign=False)
            await asyncio.sleep(rng.uniform(0.0, 0.3))

    async def other_worker(self, win):
        """session/list, session/load, session/resume of the other windows' sessions and prompts into them."""
        rng = self.rng
        while await self.wait_ready(win):
            proc = win.proc
            foreign = [s for s in self.published("") if s.owner != win.idx]
            action = rng.random()
            try:
                if action < 0.35 or not foreign:
                    await self.list_and_check(win, rng.choice(self.cwds))
                elif action < 0.6:
                    sess = rng.choice(foreign)
                    if await self.load_and_check(win, sess) and proc is win.proc:
                        win.attached.add(sess.sid)
                elif action < 0.8:
                    sess = rng.choice(foreign)
                    await proc.request("session/resume", {"sessionId": sess.sid, "cwd": sess.cwd, "mcpServers": []},
                                       TIMEOUT)
                    self.count["resumes"] += 1
                    if proc is win.proc:
                        win.attached.add(sess.sid)
                elif win.attached - win.prompting:
                    # One prompt at a time per session and connection (a second one is refused).
                    sess = self.sessions[rng.choice(sorted(win.attached - win.prompting))]
                    self.count["foreign_prompts"] += 1
                    win.prompting.add(sess.sid)
                    try:
                        await self.prompt(win, sess, foreign=True)
                    finally:
                        win.prompting.discard(sess.sid)
            except Gone:
                pass
            except RpcError as e:
                self.violation(f"window {win.idx}: {e}")
            except asyncio.TimeoutError:
                self.violation(f"window {win.idx}: a request was not answered within {TIMEOUT} s")
            await asyncio.sleep(rng.uniform(0.05, 0.4))

    async def list_and_check(self, win, cwd):
        """Every session published before the listing (in that cwd) is listed, once."""
        t0 = time.monotonic()
        expected = {s.sid for s in self.sessions.values() if s.cwd == cwd and s.published_at is not None
                    and s.published_at < t0}
        listed, cursor = [], None
        while True:
            params = {"cwd": cwd}
            if cursor:
                params["cursor"] = cursor
            r = await win.proc.request("session/list", params, TIMEOUT)
            self.count["list_pages"] += 1
            listed += [x["sessionId"] for x in r["sessions"]]
            cursor = r.get("nextCursor")
            if not cursor:
                break
        self.count["lists"] += 1
        if len(listed) != len(set(listed)):
            self.violation(f"window {win.idx}: session/list returned a session twice")
        missing = expected - set(listed)
        if missing:
            self.violation(f"window {win.idx}: session/list of {cwd} lacks {sorted(missing)}")

    async def killer(self, lo, hi):
        rng = self.rng
        while not self.stop:
            await asyncio.sleep(rng.uniform(lo, hi))
            if self.stop:
                break
            for w in self.windows:
                if w.ready.is_set() and w.proc.dead and not w.proc.expected_exit:
                    self.violation(f"window {w.idx}: the process died by itself (exit {w.proc.proc.returncode})")
                    await w.restart()
            ready = [w for w in self.windows if w.ready.is_set()]
            if ready:
                await rng.choice(ready).restart()

    async def run(self):
        for w in self.windows:
            await w.spawn()
            if not w.ready.is_set():
                raise SystemExit(f"window {w.idx}: the process does not start")
        tasks = [asyncio.create_task(self.slot_worker(w, k)) for w in self.windows for k in range(SLOTS)]
        tasks += [asyncio.create_task(self.other_worker(w)) for w in self.windows for _ in range(2)]
        killer = asyncio.create_task(self.killer(1.5, 4.0))
        await asyncio.sleep(self.seconds)
        self.stop = True
        await killer
        await asyncio.gather(*tasks)
        for w in self.windows:
            code = await w.proc.close(30)
            if code != 0:
                self.violation(f"window {w.idx}: exit code {code} after stdin EOF (None: did not exit in 30 s)")
        self.stderr.close()


def run_phase(binary, base, compression, seconds, rng):
    home = os.path.join(base, f"store-{compression}")
    os.makedirs(home)
    soak = Soak(binary, home, compression, seconds, rng)
    asyncio.run(soak.run())
    ledger = {"prompts": soak.prompts}
    with open(os.path.join(home, "ledger.json"), "w") as f:
        json.dump(ledger, f)
    store = os.path.join(home, "sessions")
    violations, stats = check_logs.check_store(store, ledger)
    for v in violations:
        print("VIOLATION:", v, file=sys.stderr)
    if compression == "none":
        failures, stats["checker_selftest_damages"] = checker_selftest.run(store, ledger, base)
        for f in failures:
            print("CHECKER SELF-TEST:", f, file=sys.stderr)
        violations += failures
    return soak, violations + soak.violations, stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep", help="directory for the stores (kept); default: a temporary one, removed on success")
    a = ap.parse_args()
    seconds = a.seconds if a.seconds is not None else a.minutes * 60
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    print(f"soak: seed {seed}, {seconds:.0f} s, {WINDOWS} processes x {SLOTS} sessions, "
          f"half on a zstd store, half on a plain JSONL store", flush=True)
    rng = random.Random(seed)
    base = a.keep or tempfile.mkdtemp(prefix="dsh-soak-")
    os.makedirs(base, exist_ok=True)
    total = {}
    all_violations = []
    for compression in ("zstd", "none"):
        soak, violations, stats = run_phase(a.binary, base, compression, seconds / 2, rng)
        all_violations += violations
        p = soak.prompts
        outcomes = {}
        for e in p:
            key = e["outcome"].split(":")[-1] if e["outcome"].startswith("error") else e["outcome"]
            outcomes[key] = outcomes.get(key, 0) + 1
        line = dict(soak.count, prompts=len(p), **{f"outcome_{k}": v for k, v in sorted(outcomes.items())}, **stats)
        print(f"phase {compression}: " + ", ".join(f"{k} {v}" for k, v in line.items()), flush=True)
        for k, v in line.items():
            total[k] = total.get(k, 0) + v
    print(f"soak summary: {total.get('turns', 0)} turns in {total.get('logs', 0)} logs, "
          f"{total.get('prompts', 0)} prompts ({total.get('outcome_end_turn', 0)} answered, "
          f"{total.get('outcome_cancelled', 0)} cancelled, {total.get('outcome_SESSION_BUSY', 0)} busy, "
          f"{total.get('outcome_killed', 0)} cut by a kill), {total.get('kills', 0)} kills, "
          f"{total.get('loads', 0)} loads, {total.get('resumes', 0)} resumes, {total.get('lists', 0)} listings, "
          f"{total.get('references', 0)} references checked in {total.get('reference_records', 0)} records "
          f"({total.get('truncated_references', 0)} cut), {total.get('interrupted', 0)} turns closed interrupted, "
          f"{total.get('open_last_turns', 0)} left open by a kill, lost = {total.get('lost', 0)}, "
          f"violations = {len(all_violations)}")
    if all_violations:
        print(f"soak: FAILED (seed {seed}; stores kept in {base})")
        return 1
    if not a.keep:
        shutil.rmtree(base, ignore_errors=True)
    print("soak: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
