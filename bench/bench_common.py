"""Helpers shared by the Python benchmark programs."""
import ctypes
import ctypes.util
import json


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
    """Standard zstd frames with content checksums (harness-compat §1.7) through the system libzstd."""

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
