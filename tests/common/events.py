#!/usr/bin/env python3
"""Kernel events for tests that cannot read them themselves (Node has no inotify IN_OPEN and no
pidfd): tests/e2e/lib/agent.mjs runs this and waits on its output or its exit.

  events.py opens PATH...  prints "ready" once PATH (each one) is watched, then "open" each time one
                           is opened (inotify IN_OPEN; a batch of opens may print one line). Watching
                           /etc/ld.so.cache sees every dynamically linked program start.
  events.py gone PID...    exits once every PID has exited (a pidfd each; a PID already gone counts).
Runs until its stdin closes (opens) or the processes are gone: a test that ends kills it anyway."""
import os
import select
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from acp_client import IN_OPEN, Inotify, wait_gone  # noqa: E402


def opens(paths):
    watch = Inotify()
    for p in paths:
        watch.watch(p, IN_OPEN)
    print("ready", flush=True)
    while True:
        ready, _, _ = select.select([watch, sys.stdin], [], [])
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 4096):
            return
        if watch in ready and watch.drain():
            print("open", flush=True)


def main():
    kind, args = sys.argv[1], sys.argv[2:]
    if kind == "opens":
        opens(args)
    elif kind == "gone":
        for pid in args:
            wait_gone(int(pid), f"process {pid} to exit")
    else:
        raise SystemExit(f"events.py: unknown kind {kind}")


if __name__ == "__main__":
    main()
