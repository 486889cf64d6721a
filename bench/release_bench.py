#!/usr/bin/env python3
"""The release as a user downloads it (release/package.py, docs/release.md): the archive's size, the
stripped binary's and the debug info's, and spawn -> initialize of the released (stripped) binary beside
the built one, interleaved (median of SPAWNS, default 25).
Usage: release_bench.py DSH_ACP_BIN
"""
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile

from bench_common import result
from spawn_bench import one_spawn

HERE = os.path.dirname(os.path.abspath(__file__))
SPAWNS = int(os.environ.get("SPAWNS", "25"))


def main():
    server = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/dsh-acp")
    tmp = tempfile.mkdtemp(prefix="dsh-release-bench-")
    try:
        out = os.path.join(tmp, "dist")
        subprocess.run([sys.executable, os.path.join(HERE, "..", "release", "package.py"), os.path.dirname(server), out],
                       check=True, stdout=subprocess.DEVNULL)
        [vdir] = [d for d in os.listdir(out) if d.startswith("v")]
        files = [os.path.join(out, vdir, f) for f in os.listdir(os.path.join(out, vdir))]
        [archive] = [f for f in files if not f.endswith("-debug.tar.gz")]
        [debug] = [f for f in files if f.endswith("-debug.tar.gz")]
        with tarfile.open(archive) as t:
            t.extractall(os.path.join(tmp, "x"))
        [released] = [os.path.join(d, "dsh-acp") for d, _s, f in os.walk(os.path.join(tmp, "x")) if "dsh-acp" in f]
        env = dict(os.environ, DSH_ACP_HOME=tmp, HOME=tmp, XDG_CONFIG_HOME=tmp)
        spawns = {"built": [], "released": []}
        for label, binary in (("built", server), ("released", released)):
            one_spawn([binary, "--provider", "echo"], env)
        for _ in range(SPAWNS):
            for label, binary in (("built", server), ("released", released)):
                spawns[label].append(one_spawn([binary, "--provider", "echo"], env)[0])
        mb = lambda path: os.path.getsize(path) / 1e6  # noqa: E731
        print(f"release of {server} ({os.path.basename(archive)})")
        print(f"  archive {mb(archive):.1f} MB; binary {mb(server):.1f} MB as built, {mb(released):.1f} MB stripped; "
              f"debug archive {mb(debug):.1f} MB")
        print(f"  spawn -> initialize, median of {SPAWNS} interleaved: built {statistics.median(spawns['built']):.2f} ms, "
              f"released {statistics.median(spawns['released']):.2f} ms")
        result("release_archive_mb", mb(archive), "MB")
        result("release_binary_mb", mb(released), "MB")
        result("release_debug_archive_mb", mb(debug), "MB")
        result("release_spawn_initialize_ms", statistics.median(spawns["released"]), "ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
