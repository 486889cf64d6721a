#!/usr/bin/env python3
"""End-to-end provider figures through the real binary (--provider openai against a loopback server).

A scripted OpenAI-compatible server runs in this process (raw sockets, chunked SSE) and the binary
talks to it over 127.0.0.1; this process is also the ACP client reading the binary's stdout.

  added latency   the server writes the first SSE data event (after the response headers went out
                  and a 2 ms pause) -> this client has read the first agent_message_chunk frame.
                  Includes: loopback TCP, HTTP chunk + SSE + JSON decoding, recording the delta for
                  the log (buffered: appended in batches every 100 ms, never fsynced per delta),
                  frame encoding, the stdout pipe and this client's read.
                  Median of N prompts in one session (target <= 1 ms).
  relay           one answer of K small content chunks written back to back: first byte sent ->
                  last agent_message_chunk read; chunks/s and payload MB/s of the relayed text.
"""
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from bench_common import Lines, encode, request, result, spawn
from acp_client import wait_exit  # noqa: E402

SERVER = sys.argv[1] if len(sys.argv) > 1 else "build/dsh-acp"
PROMPTS = 200
RELAY_CHUNKS = 20000


def sse(obj):
    return ("data: " + json.dumps(obj) + "\n\n").encode()


def content(text, finish=None):
    return sse({"choices": [{"index": 0, "delta": {"content": text} if text else {}, "finish_reason": finish}]})


class Provider:
    """One scripted answer per request: `plan` is ("latency",) or ("relay", k)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.plan = ("latency",)
        self.first_sent = None
        threading.Thread(target=self.accept_loop, daemon=True).start()

    def accept_loop(self):
        while True:
            conn, _ = self.sock.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    k, _, v = line.partition(b":")
                    if k.strip().lower() == b"content-length":
                        length = int(v.strip())
                while len(buf) < length:
                    buf += conn.recv(65536)
                buf = buf[length:]
                self.answer(conn)
        except OSError:
            return
        finally:
            conn.close()

    def answer(self, conn):
        def chunk(data):
            conn.sendall(b"%x\r\n%s\r\n" % (len(data), data))

        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        time.sleep(0.002)  # headers processed: what follows measures the data path only
        if self.plan[0] == "latency":
            self.first_sent = time.perf_counter()
            chunk(content("Hello"))
            chunk(content(" world") + content(None, "stop") + b"data: [DONE]\n\n")
        else:
            self.first_sent = time.perf_counter()
            piece = content("0123456789")
            batch = piece * 100
            for _ in range(self.plan[1] // 100):
                chunk(batch)
            chunk(content(None, "stop") + b"data: [DONE]\n\n")
        conn.sendall(b"0\r\n\r\n")


class Client:
    def __init__(self, port):
        self.home = tempfile.mkdtemp(prefix="dsh-bench-prov-")
        env = dict(os.environ, DSH_ACP_HOME=self.home, OPENAI_API_KEY="")
        self.proc = spawn(SERVER, ["--provider", "openai", "--base-url", f"http://127.0.0.1:{port}",
                                   "--model", "bench", "--max-retries", "0"], env, stderr=None)
        self.reader = Lines()
        self.next_id = 0

    def send(self, method, params):
        self.next_id += 1
        self.proc.stdin.write(encode(request(self.next_id, method, params)))
        return self.next_id

    def frames(self):
        while True:
            while (line := self.reader.next()) is not None:
                yield json.loads(line), time.perf_counter()
            data = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not data:
                return
            self.reader.feed(data)

    def call(self, method, params):
        rid = self.send(method, params)
        for f, _ in self.frames():
            if f.get("id") == rid:
                if "error" in f:
                    raise SystemExit(f"bench: {method} failed: {f}")
                return f["result"]

    def close(self):
        self.proc.stdin.close()
        wait_exit(self.proc, "the server to exit after stdin EOF")
        subprocess.run(["rm", "-rf", self.home])


def is_chunk(f):
    return f.get("method") == "session/update" and f["params"]["update"].get("sessionUpdate") == "agent_message_chunk"


def main():
    provider = Provider()
    c = Client(provider.port)
    c.call("initialize", {"protocolVersion": 1})
    sid = c.call("session/new", {"cwd": c.home, "mcpServers": []})["sessionId"]

    latencies = []
    for i in range(PROMPTS):
        if i % 50 == 0 and i:
            sid = c.call("session/new", {"cwd": c.home, "mcpServers": []})["sessionId"]  # keep requests small
        rid = c.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": f"p{i}"}]})
        first = None
        for f, at in c.frames():
            if first is None and is_chunk(f):
                first = at
            if f.get("id") == rid:
                break
        latencies.append((first - provider.first_sent) * 1000)

    provider.plan = ("relay", RELAY_CHUNKS)
    rid = c.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "relay"}]})
    n = 0
    last = None
    for f, at in c.frames():
        if is_chunk(f):
            n += 1
            last = at
        if f.get("id") == rid:
            break
    elapsed = last - provider.first_sent
    c.close()

    latencies.sort()
    print(f"provider end to end ({SERVER} --provider openai, loopback HTTP server in the bench process)")
    print(f"added latency, first SSE data byte written -> first agent_message_chunk read by the client "
          f"(loopback TCP, SSE/JSON decode, delta buffered for the log, frame encode, stdout pipe), "
          f"median of {PROMPTS}: {statistics.median(latencies):.3f} ms (p90 {latencies[int(0.9 * len(latencies))]:.3f}, "
          f"min {latencies[0]:.3f}; target <= 1 ms)")
    print(f"chunk relay: {RELAY_CHUNKS} content chunks of 10 bytes written back to back -> {n} agent_message_chunk "
          f"frames read (each relayed chunk is one SSE event, one log event and one frame): {n / elapsed:.0f} chunks/s ({n * 10 / elapsed / 1e6:.2f} MB/s of text) over {elapsed * 1000:.0f} ms")
    result("provider_added_latency_ms", statistics.median(latencies), "ms")
    result("provider_relay_chunks_per_s", n / elapsed, "/s")


if __name__ == "__main__":
    main()
