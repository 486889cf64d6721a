#!/usr/bin/env python3
"""Memory of the real binary follows a turn's unwritten output, not its whole answer (issue 18).

  turns    three sessions, each one echo turn of 200,000 streamed chunks read by the client, then
           closed: RSS (VmRSS) after them grows by at most 32 MB over the RSS before them. (A turn
           kept every chunk's record until it ended — about 1.2 KB a chunk — and the freed memory
           stayed in malloc arenas: +106 MB after three turns of 100,000.)
  stalled  a client that never reads stdout: 10,000 pipelined prompts over 200 sessions; the peak
           RSS (VmHWM) levels off within 48 MB of the baseline, plus what the prompts the server
           read hold while they wait in their sessions' queues. (Running turns used to stream
           without waiting for the outbox: +71 MB with 50 sessions, +138 MB with 500.)

How many prompts the server reads before its outbox fills and it stops reading is not the test's
to choose: on a quiet machine about 100 (0.4 MB; +35 MB), but when the disk is slow the first
turns produce nothing for a while and the reader goes on up to the queues' bounds (8 waiting per
session): 6 MB read, +51 MB. A queued prompt holds its text and about 6.5 KB more (its frame's
coroutines, its turn, its place in the queue; measured with turns that never produce: 1,800 prompts
of 4 KB +21 MB, of 40 KB +101 MB), so each input byte read is allowed 3 bytes on top (the prompts
here are 4 KB: 1.2 x 4 KB + 6.5 KB is 2.8 bytes a byte).

Under ASan (memory_bounds.py) RSS after a turn keeps the allocator's own pools and shadow pages
(malloc_trim does not reach ASan's allocator), so `turns` bounds what the second and third turns
add to the first (the defect added its retention every turn), and `stalled` allows three times
the growth for the per-allocation overhead (measured +105 MB against +36 MB in a release build;
the defect reached +432 MB in a release build).

Memory bounds only; no timing is asserted. By hand: python3 tests/crash/turn_memory_test.py
build/dsh-acp turns|stalled [SESSIONS] [--report FILE] (FILE gets the measured figures as JSON).
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from acp_client import Client, encode, request  # noqa: E402
from memory_bounds import ASAN, growth_bound, status  # noqa: E402
from shutdown_test import Feeder, settle_rss  # noqa: E402

CHUNKS = 200_000
# Memory a prompt waiting in its session's queue may hold, per byte of its frame (see `stalled`).
QUEUED_BYTES_PER_INPUT_BYTE = 3
UPDATE_PREFIX = b'{"jsonrpc":"2.0","method":"session/update"'


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def prompt_and_drain(c, session_id, text):
    """Sends one prompt and reads until its answer, counting the session/update frames without
    parsing them (a turn of 200,000 chunks is 200,000 frames)."""
    rid = c.send("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})
    fd = c.proc.stdout.fileno()
    updates = 0
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            fail("stdout ended during the prompt; stderr: " + c.stderr_text())
        c.lines.feed(chunk)
        while (line := c.lines.next()) is not None:
            if line.startswith(UPDATE_PREFIX):
                updates += 1
                continue
            frame = json.loads(line)
            if frame.get("id") == rid:
                if "error" in frame:
                    fail(f"the prompt failed: {frame['error']}")
                if c.lines.rest():
                    fail("frames after the prompt's answer")
                return frame["result"], updates


def test_turns(binary, home):
    c = Client(binary, home)
    c.initialize()
    pid = c.proc.pid
    # A small turn first, so the baseline includes what any turn sets up once.
    warm = c.ok("session/new", {"cwd": "/tmp", "mcpServers": []})["sessionId"]
    prompt_and_drain(c, warm, "warm up")
    c.ok("session/close", {"sessionId": warm})
    base = status(pid, "VmRSS")
    text = "w " * CHUNKS  # the echo answer repeats it: one chunk a word, plus its own lines
    figures = {"baseline_rss_mb": base / 2**20, "turns": []}
    after_first = None
    for i in range(3):
        sid = c.ok("session/new", {"cwd": "/tmp", "mcpServers": []})["sessionId"]
        result, updates = prompt_and_drain(c, sid, text)
        if result.get("stopReason") != "end_turn" or updates < CHUNKS:
            fail(f"turn {i + 1}: {result}, {updates} updates (expected at least {CHUNKS})")
        c.ok("session/close", {"sessionId": sid})
        rss = status(pid, "VmRSS")
        after_first = after_first or rss
        figures["turns"].append({"updates": updates, "rss_growth_mb": (rss - base) / 2**20})
        print(f"turn {i + 1}: {updates} updates, RSS {rss / 2**20:.1f} MB (baseline {base / 2**20:.1f} MB)")
    figures["peak_growth_mb"] = (status(pid, "VmHWM") - base) / 2**20
    status_at_end = status(pid, "VmRSS")
    grown = status_at_end - base
    figures["rss_growth_mb"] = grown / 2**20
    print(f"after three turns of {CHUNKS} chunks: RSS +{grown / 2**20:.1f} MB, "
          f"peak +{figures['peak_growth_mb']:.1f} MB over the baseline")
    if c.close() != 0:
        fail("dsh-acp did not exit 0")
    if ASAN:
        later = status_at_end - after_first
        if later > growth_bound(32):
            fail(f"RSS grew by {later / 2**20:.1f} MB over turns 2 and 3 (bound {growth_bound(32) >> 20} MB)")
    elif grown > growth_bound(32):
        fail(f"RSS grew by {grown / 2**20:.1f} MB after the turns (bound {growth_bound(32) >> 20} MB)")
    return figures


def test_stalled(binary, home, sessions=200, prompts=10_000):
    c = Client(binary, home)
    c.initialize()
    ids = [c.ok("session/new", {"cwd": "/tmp", "mcpServers": []})["sessionId"] for _ in range(sessions)]
    base = status(c.proc.pid, "VmRSS")
    frames = []
    for i in range(prompts):
        frames.append(encode(request(1000 + i, "session/prompt",
                                     {"sessionId": ids[i % sessions],
                                      "prompt": [{"type": "text", "text": f"prompt {i} " + "w " * 2000}]})))
    feeder = Feeder(c.proc.stdin, b"".join(frames))
    feeder.start()
    peak = settle_rss(c.proc.pid, seconds=5.0) * 1024
    feeder.stop()
    figures = {"sessions": sessions, "prompts": prompts, "input_bytes_accepted": feeder.sent,
               "peak_growth_mb": (peak - base) / 2**20}
    print(f"stalled client, {prompts} prompts over {sessions} sessions: peak RSS +{(peak - base) / 2**20:.1f} MB, "
          f"{feeder.sent} of {len(feeder.data)} input bytes accepted")
    c.kill9()
    queued = QUEUED_BYTES_PER_INPUT_BYTE * feeder.sent
    bound = ((48 << 20) + queued) * (3 if ASAN else 1)
    figures["bound_mb"] = bound / 2**20
    if peak - base > bound:
        fail(f"peak RSS grew by {(peak - base) / 2**20:.1f} MB (bound {bound / 2**20:.1f} MB: 48 MB and "
             f"{queued / 2**20:.1f} MB for the {feeder.sent} input bytes read)")
    return figures


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    binary, mode = sys.argv[1], sys.argv[2]
    report = sys.argv[sys.argv.index("--report") + 1] if "--report" in sys.argv else None
    with tempfile.TemporaryDirectory(prefix="dsh-turn-memory-") as home:
        if mode == "turns":
            figures = test_turns(binary, home)
        else:  # an optional third argument: the number of sessions
            sessions = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3].isdigit() else 200
            figures = test_stalled(binary, home, sessions)
    if report:
        with open(report, "w") as f:
            json.dump(figures, f, indent=2)
    print("PASS")


if __name__ == "__main__":
    main()
