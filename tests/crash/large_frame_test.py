"""Process-level memory test of one large, valid input frame (issue 10).

A 50 MB frame must be held about twice at most: as text while it is parsed, then as the parsed
value, which is moved (never copied) to its handler and released once decoded. From
/proc/<pid>/status (VmHWM after resetting it) the RSS growth while the server reads, parses, decodes
and answers the frame must stay within 2 x the frame size + 16 MiB. Two frames are checked: a
session/new carrying 50 MB in `_meta` (the handler runs and creates the session) and a session/prompt
with one 50 MB text block for a session that is not open (decoded, then -32002). Measured on the
release build: growth +100 MB for each; before params were moved it was +250 MB (262 MB peak RSS).
After each frame the server still serves a normal request.

A whole turn holds more than the frame: the logged event, the conversation, the request to the model.
A third check runs a real 50 MB prompt against a loopback chat-completions server (short answer) and
bounds its growth at 5 x the prompt + 16 MiB; measured +216 MB (+758 MB before the title stopped reading
the whole prompt, the log batch was serialized in place and the request body was neither copied as JSON
nor into the HTTP request).
Usage: large_frame_test.py BUILD/dsh-acp
"""
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from acp_client import Client, wait_exit  # noqa: E402
from memory_bounds import GROWTH_FACTOR, status  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from chat_stub import StreamingChatHandler  # noqa: E402

MB = 1 << 20
FRAME_BYTES = 50 * MB
BOUND = (2 * FRAME_BYTES + 16 * MB) * GROWTH_FACTOR
TURN_BOUND = (5 * FRAME_BYTES + 16 * MB) * GROWTH_FACTOR


class ChatServer(StreamingChatHandler):
    """Records the size of each request it answers."""
    received_sizes = []

    def received(self, body):
        ChatServer.received_sizes.append(len(body))


def frame_of(template, size):
    """The JSON text of `template` with its "@@" string grown so the frame is exactly `size` bytes."""
    head = json.dumps(template, separators=(",", ":"))
    pad = size - (len(head) - 2)
    data = head.replace("@@", "x" * pad).encode()
    assert len(data) == size
    return data + b"\n"


def check(client, rid, data, label, bound=BOUND):
    pid = client.proc.pid
    base = status(pid, "VmRSS")
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")  # VmHWM := current RSS
    # Written from a thread: the server reads while we write, and its answer may come before we are done.
    writer = threading.Thread(target=lambda: client.write_raw(data))
    writer.start()
    answer = client.wait(rid)
    writer.join()
    growth = status(pid, "VmHWM") - base
    print(f"{label}: frame {len(data) - 1} bytes, RSS growth {growth / MB:.1f} MB (bound {bound / MB:.0f} MB)")
    assert growth <= bound, f"{label}: RSS grew by {growth / MB:.1f} MB, more than {bound / MB:.0f} MB"
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
        assert wait_exit(client.proc, "dsh-acp to exit") == 0

        # A whole turn with a 50 MB prompt, against a loopback model.
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ChatServer)
        serving = threading.Thread(target=server.serve_forever)
        serving.start()
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}"
            turn = Client(binary, home, ["--max-frame-bytes", str(FRAME_BYTES + MB), "--provider", "openai",
                                         "--base-url", url, "--model", "m1", "--max-retries", "0"])
            turn.initialize()
            sid = turn.ok("session/new", {"cwd": home, "mcpServers": []})["sessionId"]
            answer = check(turn, 902, frame_of({"jsonrpc": "2.0", "id": 902, "method": "session/prompt",
                                                "params": {"sessionId": sid,
                                                           "prompt": [{"type": "text", "text": "@@"}]}},
                                               FRAME_BYTES), "a turn with a 50 MB prompt", TURN_BOUND)
            assert answer.get("result", {}).get("stopReason") == "end_turn", answer
            assert ChatServer.received_sizes and ChatServer.received_sizes[-1] > FRAME_BYTES - MB, "the model got the prompt"
            turn.proc.stdin.close()
            assert wait_exit(turn.proc, "dsh-acp to exit") == 0
        finally:
            server.shutdown()
            serving.join()
            server.server_close()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
