#!/usr/bin/env python3
"""Shutdown and backpressure of the real binary (docs/decisions.md#shutdown, issue 8).

  sighup   a prompt sleeps ([[echo:sleep=60000]]); SIGHUP → the prompt is answered `cancelled`,
           exit 0, the turn's log ends `aborted`.
  epipe    the client closes its read end of stdout while a prompt sleeps → exit 0 and the turn's
           log ends `aborted` (no model call runs for nobody).
  stalled  the client never reads stdout: 10,000 pipelined prompts in one session, then stdin
           EOF (or SIGTERM with `stalled-term`) → exit 0; peak RSS (VmHWM) grows by at most 96 MB
           (memory_bounds.py: twice that under ASan).
  loads    the client never reads stdout: 20 session/load of a 24 MB log, then EOF → exit 0; peak
           RSS grows by at most 80 MB (the replays' working set; twice under ASan).

docs/protocol.md promises an exit within about 1.5 s (the grace period): the times are printed, not asserted
(a loaded machine is slow, not wrong). The sleeping prompts sleep a minute, the longest the echo
model sleeps: a turn that ends `aborted` was cancelled by the shutdown, not waited for.

Usage: shutdown_test.py DSH_ACP_BIN MODE. Figures are printed.
"""
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from acp_client import Client, Inotify, encode, request, wait_exit as exit_code_of, wait_until  # noqa: E402
from memory_bounds import growth_bound  # noqa: E402
import store_layout  # noqa: E402

def fail(msg):
    raise SystemExit("FAIL: " + msg)


def log_events(home, session_id):
    """The session's events, normalised (tests/tools/store_layout.py; either layout); [] before its log exists."""
    path = store_layout.log_path(os.path.join(home, "sessions"), session_id)
    return store_layout.read_log(path)[1:] if path else []


def wait_for_turn_start(home, session_id):
    """Until the session's log holds a turn/start: re-read as the store's files change (inotify)."""
    watch = Inotify()
    try:
        watch.watch_tree(os.path.join(home, "sessions"))
        wait_until(lambda: any(e["type"] == "turn/start" for e in log_events(home, session_id)),
                   "the prompt's turn to start", watch=watch)
    finally:
        watch.close()


def last_turn_end(home, session_id):
    ends = [e for e in log_events(home, session_id) if e["type"] == "turn/end"]
    return ends[-1]["data"]["reason"]["kind"] if ends else None


def wait_exit(proc, began, what):
    code = exit_code_of(proc, f"dsh-acp to exit after {what}")
    took = time.monotonic() - began
    print(f"{what}: exited {code} after {took * 1000:.0f} ms")
    if code != 0:
        fail(f"exit code {code} after {what}")
    return took


def vm_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def start(binary, home, extra=()):
    return Client(binary, home, args=["--store-compression", "none", *extra])


def sleeping_prompt(c):
    c.initialize()
    sid = c.ok("session/new", {"cwd": "/tmp", "mcpServers": []})["sessionId"]
    rid = c.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "[[echo:sleep=60000]] hi"}]})
    wait_for_turn_start(c.home, sid)
    return sid, rid


def test_sighup(binary, home):
    c = start(binary, home)
    sid, rid = sleeping_prompt(c)
    began = time.monotonic()
    c.proc.send_signal(signal.SIGHUP)
    r = c.wait(rid)
    if r.get("result", {}).get("stopReason") != "cancelled":
        fail(f"the running prompt was answered {r}")
    wait_exit(c.proc, began, "SIGHUP")
    if last_turn_end(home, sid) != "aborted":
        fail(f"turn closed {last_turn_end(home, sid)!r}, not aborted")


def test_epipe(binary, home):
    c = start(binary, home)
    sid, _ = sleeping_prompt(c)
    began = time.monotonic()
    c.proc.stdout.close()  # the client's reader dies; stdin stays open
    wait_exit(c.proc, began, "closing the read end of stdout")
    # A turn run to completion would have ended `completed`.
    if last_turn_end(home, sid) != "aborted":
        fail(f"turn closed {last_turn_end(home, sid)!r}, not aborted")


class Feeder(threading.Thread):
    """Writes `data` to the server's stdin (which stops being read under backpressure) until done
    or told to stop; the pipe is non-blocking so stop() is prompt."""

    def __init__(self, pipe, data):
        super().__init__()
        self.pipe, self.data, self.sent = pipe, data, 0
        self.halt = threading.Event()
        os.set_blocking(pipe.fileno(), False)

    def run(self):
        view = memoryview(self.data)
        while self.sent < len(view) and not self.halt.is_set():
            _, w, _ = select.select([], [self.pipe], [], 0.05)
            if not w:
                continue
            try:
                self.sent += os.write(self.pipe.fileno(), view[self.sent:self.sent + 65536])
            except BlockingIOError:
                continue
            except (BrokenPipeError, OSError):
                return

    def stop(self):
        self.halt.set()
        self.join()


def settle_rss(pid, seconds=3.0):
    """Waits until the peak RSS stops growing for a second (the server stalled on backpressure)."""
    last, stable_since, deadline = -1, time.monotonic(), time.monotonic() + seconds * 4
    while time.monotonic() < deadline:
        peak = vm_kb(pid, "VmHWM")
        if peak != last:
            last, stable_since = peak, time.monotonic()
        elif time.monotonic() - stable_since >= 1.0:
            break
        time.sleep(0.1)
    return last


def test_stalled(binary, home, how):
    c = start(binary, home)
    c.initialize()
    sid = c.ok("session/new", {"cwd": "/tmp", "mcpServers": []})["sessionId"]
    base = vm_kb(c.proc.pid, "VmRSS")
    frames = []
    for i in range(10000):
        frames.append(encode(request(100 + i, "session/prompt",
                                     {"sessionId": sid, "prompt": [{"type": "text", "text": f"prompt {i}"}]})))
    feeder = Feeder(c.proc.stdin, b"".join(frames))
    feeder.start()
    peak = settle_rss(c.proc.pid)
    print(f"stalled client: baseline RSS {base / 1024:.1f} MB, peak {peak / 1024:.1f} MB, "
          f"{feeder.sent} of {len(feeder.data)} input bytes written")
    if feeder.sent >= len(feeder.data):
        print("note: all input was accepted (the pipe and the reader's buffer held it)")
    began = time.monotonic()
    feeder.stop()
    if how == "eof":
        c.proc.stdin.close()
    else:
        c.proc.send_signal(signal.SIGTERM)
    wait_exit(c.proc, began, "stdin EOF" if how == "eof" else "SIGTERM")
    # Growth, not absolute RSS: the baseline differs between the release and the sanitizer build.
    # The outbox holds at most 16 MiB; the unbounded queue this guards against reached 206 MB.
    if (peak - base) * 1024 > growth_bound(96):
        fail(f"peak RSS grew by {(peak - base) / 1024:.1f} MB (bound {growth_bound(96) >> 20} MB)")


def write_big_log(home, session_id, cwd, megabytes):
    """A raw log of many answered turns, in the layout and shapes of the store (store_layout)."""
    seq, t = 0, 1783957884563
    piece = "z" * 200
    store = os.path.join(home, "sessions")
    shaped = store_layout.event_writer(store_layout.generation_of(store))
    header = {"type": "session", "version": 0, "id": session_id, "createdAt": t, "cwd": cwd, "delegationDepth": 0}
    f, _path = store_layout.open_new_log(store, header)
    with f:
        def ev(kind, data, **extra):
            nonlocal seq
            rec = shaped({"type": kind, "seq": seq, "time": t, "data": data, **extra})
            seq += 1
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")

        turn = 0
        while f.tell() < megabytes << 20:
            turn += 1
            ev("turn/start", {"turn": turn, "trigger": {"kind": "message", "source": {"kind": "user"}}})
            ev("user/message", {"content": [{"type": "text", "text": f"q{turn}"}], "source": {"kind": "user"}},
               surfaceOp="append")
            ev("step/start", {"turn": turn, "step": 1})
            for _ in range(500):
                ev("assistant/chunk", {"turn": turn, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": piece}})
            ev("assistant/message", {"turn": turn, "step": 1, "content": [{"type": "text", "text": "done"}],
                                     "provenance": {"provider": "echo", "model": "echo"}}, surfaceOp="append")
            ev("step/end", {"turn": turn, "step": 1})
            ev("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


def test_loads(binary, home):
    sid = "33333333-3333-4333-8333-333333333333"
    write_big_log(home, sid, "/tmp/dsh-big", 24)
    c = start(binary, home)
    c.initialize()
    base = vm_kb(c.proc.pid, "VmRSS")
    frames = [encode(request(100 + i, "session/load", {"sessionId": sid, "cwd": "/tmp/dsh-big", "mcpServers": []}))
              for i in range(20)]
    feeder = Feeder(c.proc.stdin, b"".join(frames))
    feeder.start()
    peak = settle_rss(c.proc.pid)
    print(f"stalled client, 20 loads of a 24 MB log: baseline RSS {base / 1024:.1f} MB, peak {peak / 1024:.1f} MB")
    began = time.monotonic()
    feeder.stop()
    c.proc.stdin.close()
    wait_exit(c.proc, began, "stdin EOF during replays")
    # The outbox holds at most 256 KiB of this one session; two replays run at once on the pool,
    # each holding back up to 8 MiB of serialised frames before streaming (measured: +54 MB in
    # all). Anything near 20 x 24 MB would mean the replays are not held back by the client.
    if (peak - base) * 1024 > growth_bound(80):
        fail(f"peak RSS grew by {(peak - base) / 1024:.1f} MB (bound {growth_bound(80) >> 20} MB)")


def main():
    binary, mode = sys.argv[1], sys.argv[2]
    home = tempfile.mkdtemp(prefix="dsh-shutdown-")
    try:
        if mode == "sighup":
            test_sighup(binary, home)
        elif mode == "epipe":
            test_epipe(binary, home)
        elif mode == "stalled":
            test_stalled(binary, home, "eof")
        elif mode == "stalled-term":
            test_stalled(binary, home, "term")
        elif mode == "loads":
            test_loads(binary, home)
        else:
            fail("unknown mode " + mode)
    finally:
        subprocess.run(["rm", "-rf", home])
    print("ok")


if __name__ == "__main__":
    main()
