#!/usr/bin/env python3
"""Two real dsh-acp processes on one store (same DSH_ACP_HOME), docs/store-format.md#locks:

1. concurrent prompts to different sessions: all succeed, both logs strictly valid;
2. concurrent prompts to the same session (created and prompted by A, loaded by B; A's prompt
   sleeps a minute in the echo model while holding the session lock, until the test cancels it):
   B's load is answered while A's turn is open, B's prompt gets -32603 with data.code
   SESSION_BUSY, or waits and succeeds; afterwards both processes prompt again and each continues
   from what the other wrote. The file stays valid, seqs contiguous, turns numbered 1, 2, 3 …;
3. a writer killed with SIGKILL mid-turn while the other process waits for the same session: the
   waiter gets the lock, closes the open turn 'interrupted' and continues.

With DSH_ACP_TEST_STORE=pg (crash.two_processes.pg) the store is a fresh PostgreSQL database of the
suite's cluster (tests/tools/pg_store.py): both processes run with `--store URL`, the session lock is
the session's lock row (B's wait is seen in pg_locks), and the logs checked are an export.

Usage: two_processes_test.py DSH_ACP_BIN
"""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from acp_client import Client, FlockWaits, Inotify, turn_starts, wait_until  # noqa: E402
from crash_test import log_files, strict_check, user_texts  # noqa: E402  (puts tests/tools on the path)
import pg_store  # noqa: E402


class Store:
    """The store both processes share: the home's file root, or a fresh database (pg_store.enabled())."""

    def __init__(self, binary, home):
        self.binary, self.home = binary, home
        self.files = os.path.join(home, "sessions")
        self.pg = pg_store.ScratchStore(binary) if pg_store.enabled() else None

    def client(self, args=()):
        return Client(self.binary, self.home, args=args, store=self.pg.url if self.pg else None)

    def turn_starts(self, sid):
        return self.pg.turn_starts(sid) if self.pg else turn_starts(self.files, sid)

    def wait_turn_start(self, sid, before, what):
        """Until the session holds more than `before` turn/start events: re-read as the root's files
        change (inotify); a database announces nothing, so it is asked again every 10 ms."""
        if self.pg:
            wait_until(lambda: self.turn_starts(sid) > before, what, recheck=0.01)
            return
        watch = Inotify()
        try:
            watch.watch_tree(self.files)
            wait_until(lambda: self.turn_starts(sid) > before, what, watch=watch)
        finally:
            watch.close()

    def lock_waits(self):
        """Made before the request that will wait for a lock: see wait_for_lock."""
        return None if self.pg else FlockWaits(self.files)

    def wait_for_lock(self, waits, client, what):
        """Until `client`'s process waits for the session lock another holds."""
        if self.pg:
            wait_until(lambda: self.pg.lock_waiters() > 0, what, recheck=0.01)
            return
        try:
            waits.wait(client.proc.pid, 1, what)
        finally:
            waits.close()

    def log_of(self, sid):
        """The session's log file (of a database: in an export made now)."""
        if self.pg:
            pg_store.remove(self.files)
            self.pg.export(self.files)
        [path] = [f for f in log_files(self.files) if sid in f]
        return path

    def close(self):
        if self.pg:
            self.pg.drop()


def text_of(client, sid, start):
    return "".join(u["content"]["text"] for u in
                   [f["params"]["update"] for f in client.frames[start:]
                    if f.get("method") == "session/update" and f["params"]["sessionId"] == sid]
                   if u["sessionUpdate"] == "agent_message_chunk")


def prompt(client, sid, text):
    return client.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})


def different_sessions(store, cwd):
    a = store.client()
    b = store.client()
    try:
        a.initialize()
        b.initialize()
        sa = a.ok("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
        sb = b.ok("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
        n = 25
        sent = {a: [], b: []}
        for i in range(n):
            sent[a].append(prompt(a, sa, f"a-{i}"))
            sent[b].append(prompt(b, sb, f"b-{i}"))
            for c in (a, b):
                r = c.wait(sent[c][-1])
                assert "result" in r and r["result"]["stopReason"] == "end_turn", f"prompt failed: {r}"
        # Each process lists the session the other one created after it started (bucket mtime check).
        for c in (a, b):
            listed = [x["sessionId"] for x in c.ok("session/list", {"cwd": cwd})["sessions"]]
            assert sorted(listed) == sorted([sa, sb]), f"listing {listed}, expected both sessions"
    finally:
        assert a.close() == 0 and b.close() == 0
    for sid, prefix in ((sa, "a"), (sb, "b")):
        path = store.log_of(sid)
        _h, events, turns = strict_check(path)
        assert turns == n, f"{path}: {turns} turns, expected {n}"
        assert user_texts(events) == [f"{prefix}-{i}" for i in range(n)], user_texts(events)
    print(f"ok - different sessions: {n} prompts each from two processes, both logs valid")


# A minute's sleep, the echo model's longest: these turns end only when the test ends them.
SLOW = "a-slow [[echo:sleep=60000]]"
SLOW2 = "a-slow2 [[echo:sleep=60000]]"
KILLED = "killed [[echo:sleep=60000]]"


def same_session(store, cwd):
    a = store.client()
    b = store.client()
    try:
        a.initialize()
        b.initialize()
        sid = a.ok("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
        assert a.ok("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "first"}]})["stopReason"] == "end_turn"
        b.ok("session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
        assert any("first" in u["content"]["text"] for u in b.updates(sid, "user_message_chunk")), "B's replay lacks A's prompt"

        before = store.turn_starts(sid)
        # A holds the lock once its turn is logged, and the echo model then sleeps a minute inside the
        # turn: until the cancel below, A's turn is certainly open.
        slow = prompt(a, sid, SLOW)
        store.wait_turn_start(sid, before, "A's turn started")
        # Readers take no lock: B loads the session while A's turn is open.
        start = len(b.frames)
        b.ok("session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
        replayed = [f["params"]["update"]["content"]["text"] for f in b.frames[start:]
                    if f.get("method") == "session/update" and f["params"]["update"]["sessionUpdate"] == "user_message_chunk"]
        assert replayed == ["first", SLOW], f"replay during A's open turn: {replayed}"
        t0 = time.monotonic()
        rb = b.wait(prompt(b, sid, "b-concurrent"))
        waited = time.monotonic() - t0
        # Answered "cancelled": A's turn was still running, so neither the load nor B's prompt
        # waited for its end.
        a.notify("session/cancel", {"sessionId": sid})
        ra = a.wait(slow)
        assert "result" in ra and ra["result"]["stopReason"] == "cancelled", f"A's prompt: {ra}"
        if "error" in rb:
            assert rb["error"]["code"] == -32603, rb
            assert rb["error"].get("data", {}).get("code") == "SESSION_BUSY", rb
            assert rb["error"]["message"].startswith("Session busy"), rb
            outcome = f"B got SESSION_BUSY after {waited:.1f} s"
            b_done = []
        else:
            assert rb["result"]["stopReason"] == "end_turn", rb
            outcome = f"B waited {waited:.1f} s and succeeded"
            b_done = ["b-concurrent"]

        # Each process continues from what the other one wrote (refresh before writing).
        start = len(b.frames)
        assert b.ok("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "b-after"}]})["stopReason"] == "end_turn"
        answer_b = text_of(b, sid, start)
        assert "a-slow" in answer_b, f"B's request lacks A's turn (no refresh before writing): {answer_b!r}"
        start = len(a.frames)
        assert a.ok("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "a-after"}]})["stopReason"] == "end_turn"
        answer_a = text_of(a, sid, start)
        assert "b-after" in answer_a, f"A's request lacks B's turn: {answer_a!r}"

        # session/delete while the other process writes the session: SESSION_BUSY, the log stays.
        before = store.turn_starts(sid)
        slow = prompt(a, sid, SLOW2)
        store.wait_turn_start(sid, before, "A's second slow turn started")
        rd = b.call("session/delete", {"sessionId": sid})
        a.notify("session/cancel", {"sessionId": sid})
        ra = a.wait(slow)
        assert "result" in ra and ra["result"]["stopReason"] == "cancelled", ra
        assert "error" in rd and rd["error"]["code"] == -32603 and rd["error"].get("data", {}).get("code") == "SESSION_BUSY", \
            f"delete during a write: {rd}"
    finally:
        assert a.close() == 0 and b.close() == 0
    _h, events, turns = strict_check(store.log_of(sid))
    expected = ["first", SLOW] + b_done + ["b-after", "a-after", SLOW2]
    got = user_texts(events)
    assert sorted(got) == sorted(expected), f"user messages {got}, expected {expected}"
    assert turns == len(expected), f"{turns} turns for {len(expected)} prompts"
    print(f"ok - same session: load during the other's turn answers while it runs; {outcome}; delete during a write is "
          f"SESSION_BUSY; log valid, seqs contiguous, turns 1..{turns}")


def killed_writer(store, cwd):
    """A is killed with SIGKILL in the middle of a turn while B waits for the same session: the
    lock dies with A, B's prompt repairs the open turn ('interrupted') and continues. B waits up to
    an hour for the lock, so however slowly the kill lands B's answer shows that the lock died with A."""
    a = store.client()
    b = store.client(["--lock-timeout-ms", "3600000"])
    try:
        a.initialize()
        b.initialize()
        sid = a.ok("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
        a.ok("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "before"}]})
        b.ok("session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
        before = store.turn_starts(sid)
        prompt(a, sid, KILLED)
        store.wait_turn_start(sid, before, "A's turn started")
        waits = store.lock_waits()
        pending = prompt(b, sid, "survivor")
        store.wait_for_lock(waits, b, "B waits for A's lock")
        a.kill9()
        t0 = time.monotonic()
        rb = b.wait(pending)
        assert "result" in rb and rb["result"]["stopReason"] == "end_turn", f"B after A's death: {rb}"
        waited = time.monotonic() - t0
    finally:
        assert b.close() == 0
    _h, events, turns = strict_check(store.log_of(sid))
    assert user_texts(events) == ["before", KILLED, "survivor"], user_texts(events)
    ends = [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"]
    assert ends == ["completed", "interrupted", "completed"], ends
    print(f"ok - writer killed mid-turn: the waiting process got the lock {waited:.2f} s after the kill, closed the "
          f"open turn 'interrupted' and continued (turns 1..{turns})")


def main():
    binary = sys.argv[1]
    base = tempfile.mkdtemp(prefix="dsh-two-")
    passed = failed = 0
    try:
        cwd = os.path.join(base, "work")
        os.makedirs(cwd)
        for name, fn in (("different", different_sessions), ("same", same_session), ("killed", killed_writer)):
            home = os.path.join(base, name)
            os.makedirs(home)
            store = Store(binary, home)
            try:
                fn(store, cwd)
                passed += 1
            except AssertionError as e:
                failed += 1
                print(f"not ok - {name}: {e}", file=sys.stderr)
            finally:
                store.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
