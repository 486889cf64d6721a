#!/usr/bin/env python3
"""Peers side by side: spawn -> initialize answered, and RSS after initialize, for dsh-acp and the npm
ACP agents @zed-industries/codex-acp and @zed-industries/claude-code-acp, in the same run.

  spawn -> initialize  process start to the initialize response read by this client, median of N spawns
  RSS after initialize VmRSS summed over the agent's process tree (a node launcher and the child it
                       starts count together) right after the response
The peers are installed with npm into a bench-local directory (PEERS_DIR, default BUILD/bench-peers),
never into the repo's test package; each runs with an empty temporary HOME (no keys, no user config).
When npm or the registry is unreachable the peers are skipped with a note.
Usage: peers_bench.py DSH_ACP_BIN [PEERS_DIR]
"""
import json
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from bench_common import Lines, encode, request, result

SERVER = sys.argv[1] if len(sys.argv) > 1 else "build/dsh-acp"
PEERS_DIR = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(SERVER)), "bench-peers")
PEERS = {"codex-acp": "@zed-industries/codex-acp", "claude-code-acp": "@zed-industries/claude-code-acp"}
SPAWNS = int(os.environ.get("PEERS_SPAWNS", "10"))
TIMEOUT_S = 30.0


def tree_rss_kb(pid):
    """VmRSS of pid and every descendant."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                total += next((int(l.split()[1]) for l in f if l.startswith("VmRSS")), 0)
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def one_spawn(argv, home):
    """Returns (ms to the initialize response, tree RSS in MB after it)."""
    env = dict(os.environ, HOME=home, DSH_ACP_HOME=home, XDG_CONFIG_HOME=home)
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "CODEX_API_KEY"):
        env.pop(key, None)
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=home, bufsize=0, start_new_session=True)
    try:
        proc.stdin.write(encode(request(1, "initialize", {
            "protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False},
                                                         "terminal": False}})))
        lines = Lines()
        while True:
            left = TIMEOUT_S - (time.perf_counter() - t0)
            if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
                raise TimeoutError("no initialize response")
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise EOFError("stdout closed before the initialize response")
            lines.feed(chunk)
            done = False
            while (line := lines.next()) is not None:
                try:
                    frame = json.loads(line)
                except ValueError:
                    continue
                if frame.get("id") == 1 and ("result" in frame or "error" in frame):
                    if "error" in frame:
                        raise RuntimeError(f"initialize failed: {frame['error']}")
                    done = True
            if done:
                break
        ms = (time.perf_counter() - t0) * 1000
        rss = tree_rss_kb(proc.pid) / 1024
        return ms, rss
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the group this bench started for the agent
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


def measure(argv):
    times, rss = [], []
    for _ in range(SPAWNS):
        home = tempfile.mkdtemp(prefix="dsh-bench-peer-")
        try:
            ms, mb = one_spawn(argv, home)
        finally:
            shutil.rmtree(home, ignore_errors=True)
        times.append(ms)
        rss.append(mb)
    return statistics.median(times), statistics.median(rss)


def install():
    """Installs the peers into PEERS_DIR unless present; returns {name: argv} of those available."""
    bins = {name: os.path.join(PEERS_DIR, "node_modules", ".bin", name) for name in PEERS}
    if not all(os.path.exists(b) for b in bins.values()):
        if not shutil.which("npm"):
            print("  peers skipped: npm is not on PATH")
            return {}
        os.makedirs(PEERS_DIR, exist_ok=True)
        try:
            r = subprocess.run(["npm", "install", "--prefix", PEERS_DIR, "--no-audit", "--no-fund", "--loglevel=error",
                                *PEERS.values()], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=600)
        except subprocess.TimeoutExpired:
            print("  peers skipped: npm install timed out (registry unreachable?)")
            return {}
        if r.returncode != 0:
            print("  peers skipped: npm install failed (registry unreachable?): "
                  + r.stderr.decode(errors="replace").strip().splitlines()[-1:][0] if r.stderr else "")
            return {}
    return {name: [b] for name, b in bins.items() if os.path.exists(b)}


def main():
    print(f"peers side by side (spawn -> initialize answered, median of {SPAWNS}; RSS of the process tree after "
          f"initialize, median; empty HOME, no keys; peers from npm in {PEERS_DIR})")
    ours_ms, ours_rss = measure([os.path.abspath(SERVER), "--provider", "echo"])
    print(f"  dsh-acp          {ours_ms:8.1f} ms  {ours_rss:7.1f} MB")
    peers = install()
    for name, argv in peers.items():
        try:
            ms, rss = measure(argv)
        except (TimeoutError, EOFError, RuntimeError, OSError) as e:
            print(f"  {name:<16} failed: {e}")
            continue
        version = ""
        try:
            with open(os.path.join(PEERS_DIR, "node_modules", PEERS[name], "package.json")) as f:
                version = json.load(f).get("version", "")
        except OSError:
            pass
        print(f"  {name:<16} {ms:8.1f} ms  {rss:7.1f} MB   ({ms / ours_ms:.0f}x our start-up, {rss / ours_rss:.1f}x our "
              f"RSS; {PEERS[name]} {version})")
        key = name.replace("-", "_")
        result(f"peer_{key}_initialize_ratio", ms / ours_ms, "x", note=f"{ms:.0f} ms vs {ours_ms:.1f} ms")
        result(f"peer_{key}_rss_ratio", rss / ours_rss, "x", note=f"{rss:.1f} MB vs {ours_rss:.1f} MB")
    if not peers:
        result("peers_skipped", 0, "", note="npm unreachable")


if __name__ == "__main__":
    main()
