#!/usr/bin/env python3
"""Process-level benchmarks of docs/decisions.md#benchmarks against the real binary (echo provider, temp store).

Prints, each with what it includes:
  spawn -> initialize  process start to the initialize response, median of 50 spawns
  peak RSS             VmHWM after initialize + session/new + one echo prompt
  prompt round trips   sequential prompts in one session (echo, 0 ms delay), and 8 sessions in parallel
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench_common import Lines, encode, request, result, spawn
from acp_client import wait_exit

SERVER = sys.argv[1] if len(sys.argv) > 1 else "build/dsh-acp"


class Client:
    """A server on a fresh home, its frames parsed one by one (the round trips parse every frame)."""

    def __init__(self, extra=()):
        self.home = tempfile.mkdtemp(prefix="dsh-bench-")
        env = dict(os.environ, DSH_ACP_HOME=self.home)
        self.proc = spawn(SERVER, ["--provider", "echo", *extra], env, stderr=None)
        self.reader = Lines()
        self.next_id = 0

    def send(self, method, params):
        self.next_id += 1
        self.proc.stdin.write(encode(request(self.next_id, method, params)))
        return self.next_id

    def frames(self):
        while True:
            while (line := self.reader.next()) is not None:
                yield json.loads(line)
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                return
            self.reader.feed(chunk)

    def wait(self, rid):
        for f in self.frames():
            if f.get("id") == rid:
                if "error" in f:
                    raise SystemExit(f"bench: request failed: {f}")
                return f

    def call(self, method, params):
        return self.wait(self.send(method, params))

    def close(self):
        self.proc.stdin.close()
        wait_exit(self.proc, "the server to exit after stdin EOF")
        subprocess.run(["rm", "-rf", self.home])


def spawn_to_initialize(n=50):
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        c = Client()
        c.call("initialize", {"protocolVersion": 1})
        samples.append((time.perf_counter() - t0) * 1000)
        c.close()
    return statistics.median(samples), min(samples), max(samples)


def peak_rss():
    c = Client()
    c.call("initialize", {"protocolVersion": 1})
    sid = c.call("session/new", {"cwd": "/tmp", "mcpServers": []})["result"]["sessionId"]
    c.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]})
    with open(f"/proc/{c.proc.pid}/status") as f:
        hwm = next(int(l.split()[1]) for l in f if l.startswith("VmHWM"))
    c.close()
    return hwm / 1024


def round_trips(sessions, seconds=3.0):
    c = Client()
    c.call("initialize", {"protocolVersion": 1})
    sids = [c.call("session/new", {"cwd": "/tmp", "mcpServers": []})["result"]["sessionId"] for _ in range(sessions)]
    prompt = lambda sid: c.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "ping"}]})
    done = 0
    t0 = time.perf_counter()
    pending = {prompt(sid): sid for sid in sids}
    for f in c.frames():
        rid = f.get("id")
        if rid in pending:
            sid = pending.pop(rid)
            done += 1
            if time.perf_counter() - t0 < seconds:
                pending[prompt(sid)] = sid
            elif not pending:
                break
    elapsed = time.perf_counter() - t0
    c.close()
    return done / elapsed


def main():
    print(f"dsh-acp benchmarks ({SERVER}, echo provider, temporary store)")
    med, lo, hi = spawn_to_initialize()
    print(f"spawn -> initialize answered (process start to response, median of 50): {med:.2f} ms "
          f"(min {lo:.2f}, max {hi:.2f}; target <= 10 ms)")
    result("spawn_initialize_ms", med, "ms")
    rss = peak_rss()
    print(f"peak RSS (VmHWM after initialize + session/new + one echo prompt): {rss:.1f} MB (target <= 10 MB)")
    result("peak_rss_mb", rss, "MB")
    one = round_trips(1)
    print(f"prompt round trips, one session, sequential (echo, 0 ms delay; each includes ~30 streamed updates): "
          f"{one:.0f}/s (target >= 2000/s)")
    result("rt_growing_single_per_s", one, "/s")
    eight = round_trips(8)
    print(f"prompt round trips, 8 sessions in parallel on one connection: {eight:.0f}/s")
    result("rt_growing_parallel8_per_s", eight, "/s")

if __name__ == "__main__":
    main()
