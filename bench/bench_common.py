"""Helpers shared by the Python benchmark programs."""
import ctypes
import ctypes.util
import json
import os
import select
import sys
import time

# The one ACP client of the tests (framing, spawning, event waits) serves the benches too.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "common"))
from acp_client import Lines, encode, request, spawn  # noqa: E402,F401  (re-exported to the benches)


def result(figure, value, unit, **extra):
    """One machine-readable summary line; bench/run collects these into the final table (bench/report.py)."""
    print("BENCH-RESULT " + json.dumps({"figure": figure, "value": value, "unit": unit, **extra}), flush=True)


def fs_type(path):
    """The file-system type of the mount holding `path` (the figures depend on it: fsync on ext4 vs tmpfs)."""
    best, kind = "", "?"
    with open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            if path.startswith(parts[1]) and len(parts[1]) > len(best):
                best, kind = parts[1], parts[2]
    return kind


class Zstd:
    """Standard zstd frames with content checksums through the system libzstd
    (docs/store-format.md#encodings-and-zstd-framing)."""

    def __init__(self):
        lib = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
        lib.ZSTD_createCCtx.restype = ctypes.c_void_p
        lib.ZSTD_CCtx_setParameter.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        lib.ZSTD_CCtx_setParameter.restype = ctypes.c_size_t
        lib.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
        lib.ZSTD_compressBound.restype = ctypes.c_size_t
        lib.ZSTD_compress2.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
        lib.ZSTD_compress2.restype = ctypes.c_size_t
        lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
        lib.ZSTD_freeCCtx.argtypes = [ctypes.c_void_p]
        self.lib = lib
        self.cctx = lib.ZSTD_createCCtx()
        lib.ZSTD_CCtx_setParameter(self.cctx, 100, 3)  # ZSTD_c_compressionLevel: the default level
        lib.ZSTD_CCtx_setParameter(self.cctx, 201, 1)  # ZSTD_c_checksumFlag
        self.out = ctypes.create_string_buffer(1 << 20)

    def frame(self, data):
        bound = self.lib.ZSTD_compressBound(len(data))
        if bound > len(self.out):
            self.out = ctypes.create_string_buffer(bound)
        n = self.lib.ZSTD_compress2(self.cctx, self.out, len(self.out), data, len(data))
        if self.lib.ZSTD_isError(n):
            raise RuntimeError("zstd compression failed")
        return ctypes.string_at(self.out, n)

    def close(self):
        self.lib.ZSTD_freeCCtx(self.cctx)


class EchoServer:
    """One dsh-acp process on the echo provider, driven over stdio JSON-RPC by one thread: requests
    written, stdout split into frames (frames_read, bytes_read), the server's /proc figures. The
    benches' own classes add how they wait for a response (store_bench.py, pg_bench.py)."""

    def __init__(self, server, home, extra=(), stderr=None):
        # DSH_HOME: no harness root of this machine's user is discovered beside the bench's store.
        env = dict(os.environ, DSH_ACP_HOME=home, DSH_HOME=os.path.join(home, "no-harness-home"))
        self.proc = spawn(server, ["--provider", "echo", *extra], env, stderr=stderr)
        self.reader = Lines()
        self.next_id = 0

    @property
    def frames_read(self):
        return self.reader.frames_read

    @property
    def bytes_read(self):
        return self.reader.bytes_read

    def send(self, method, params):
        self.next_id += 1
        self.proc.stdin.write(encode(request(self.next_id, method, params)))
        return self.next_id

    def lines(self, deadline=None):
        """Frames (without their newline) until stdout ends; TimeoutError once time.monotonic()
        passes `deadline` with no frame to hand out."""
        fd = self.proc.stdout.fileno()
        while True:
            line = self.reader.next()
            if line is not None:
                yield line
                continue
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    raise TimeoutError
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return
            self.reader.feed(chunk)

    def status_mb(self, field):
        """A /proc/PID/status figure in MB (VmHWM, VmRSS)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith(field + ":")) / 1024

    def cpu_s(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def cpu_ns(self):
        """CPU time of the server's live threads in ns (/proc schedstat: finer than the 10 ms ticks of
        cpu_s; a thread that already exited is not counted)."""
        total = 0
        task = f"/proc/{self.proc.pid}/task"
        for tid in os.listdir(task):
            try:
                with open(f"{task}/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except OSError:
                pass
        return total
