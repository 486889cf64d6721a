"""RSS bounds for process-level memory tests that hold in the release and the AddressSanitizer build.

Under ASan (CMake sets DSH_TEST_ASAN=1 for these tests in a `-fsanitize=address` build) freed blocks
wait in a 256 MB quarantine and every allocation carries redzones and shadow memory, so RSS says
little about what the server keeps. We shrink the quarantine and return freed memory to the kernel
quickly, so RSS follows live memory again, and allow twice the growth for the per-allocation
overhead (measured: a stalled client's outbox +4 MB release, +47 MB ASan; 20 stalled replays +54 MB
release, +111 MB ASan). The bounds stay far below what the defects they guard against produced
(206 MB of unbounded outbox, 20 x 24 MB of unheld replays, 655 MB kept after a reference).
"""
import os

ASAN = os.environ.get("DSH_TEST_ASAN") == "1"
GROWTH_FACTOR = 2 if ASAN else 1

if ASAN:
    # The server inherits os.environ (acp_client.Client copies it).
    os.environ["ASAN_OPTIONS"] = ":".join(filter(None, [
        os.environ.get("ASAN_OPTIONS", ""),
        "quarantine_size_mb=8", "thread_local_quarantine_size_kb=256", "allocator_release_to_os_interval_ms=200"]))


def growth_bound(megabytes):
    """A bound on RSS growth in bytes, written for the release build."""
    return megabytes * GROWTH_FACTOR << 20


def status(pid, key):
    """A /proc/PID/status figure in bytes (VmRSS, VmHWM)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"{key} missing from /proc/{pid}/status")
