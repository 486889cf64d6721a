"""Process-level memory test of one large, valid input frame (issue 10).

A 50 MB frame must be held about twice at most: as text while it is parsed, then as the parsed
value, which is moved (never copied) to its handler and released once decoded. From
/proc/<pid>/status (VmHWM after resetting it) the RSS growth while the server reads, parses, decodes
and answers the frame must stay within 2 x the frame size + 16 MiB. Two frames are checked: a
session/new carrying 50 MB in `_meta` (the handler runs and creates the session) and a session/prompt
with one 50 MB text block for a session that is not open (decoded, then -32002). Measured on the
release build: growth +100 MB for each; before params were moved it was +250 MB (262 MB peak RSS).
After each frame the server still serves a normal request.
Usage: large_frame_test.py BUILD/dsh-acp
"""
import json
import os
import shutil
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from acp_client import Client  # noqa: E402
from memory_bounds import GROWTH_FACTOR  # noqa: E402

MB = 1 << 20
FRAME_BYTES = 50 * MB
BOUND = (2 * FRAME_BYTES + 16 * MB) * GROWTH_FACTOR


def status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"{key} missing from /proc/{pid}/status")


def frame_of(template, size):
    """The JSON text of `template` with its "@@" string grown so the frame is exactly `size` bytes."""
    head = json.dumps(template, separators=(",", ":"))
    pad = size - (len(head) - 2)
    data = head.replace("@@", "x" * pad).encode()
    assert len(data) == size
    return data + b"\n"


def check(client, rid, data, label):
    pid = client.proc.pid
    base = status(pid, "VmRSS")
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")  # VmHWM := current RSS
    # Written from a thread: the server reads while we write, and its answer may come before we are done.
    writer = threading.Thread(target=lambda: client.proc.stdin.write(data))
    writer.start()
    answer = client.wait(rid, timeout=120)
    writer.join()
    growth = status(pid, "VmHWM") - base
    print(f"{label}: frame {len(data) - 1} bytes, RSS growth {growth / MB:.1f} MB (bound {BOUND / MB:.0f} MB)")
    assert growth <= BOUND, f"{label}: RSS grew by {growth / MB:.1f} MB, more than {BOUND / MB:.0f} MB"
    # And the connection goes on.
    client.ok("session/list", {})
    return answer


def main():
    binary = sys.argv[1]
    home = tempfile.mkdtemp(prefix="dsh-acp-frame-")
    try:
        client = Client(binary, home, ["--max-frame-bytes", str(FRAME_BYTES + MB)])
        client.initialize()
        new = check(client, 900, frame_of({"jsonrpc": "2.0", "id": 900, "method": "session/new",
                                           "params": {"cwd": home, "mcpServers": [], "_meta": {"pad": "@@"}}},
                                          FRAME_BYTES), "session/new with 50 MB of _meta")
        assert "sessionId" in new.get("result", {}), new
        prompt = check(client, 901, frame_of({"jsonrpc": "2.0", "id": 901, "method": "session/prompt",
                                              "params": {"sessionId": "not-open",
                                                         "prompt": [{"type": "text", "text": "@@"}]}},
                                             FRAME_BYTES), "session/prompt with a 50 MB text block")
        assert prompt.get("error", {}).get("code") == -32002, prompt
        client.proc.stdin.close()
        assert client.proc.wait(30) == 0
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
