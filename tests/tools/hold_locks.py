#!/usr/bin/env python3
"""The second process of the lock-wait tests and benchmark: takes an exclusive flock on every
path given, prints "held", and keeps the locks until its stdin ends."""
import fcntl
import sys

held = []
for path in sys.argv[1:]:
    f = open(path, "a")
    fcntl.flock(f, fcntl.LOCK_EX)
    held.append(f)
print("held", flush=True)
sys.stdin.read()
