#!/usr/bin/env python3
"""Makes a release of a built dsh-acp (`./dev release`, docs/release.md).

  package.py BUILD_DIR OUT_DIR [--download-base URL] [--also-build BUILD_DIR]...

Each build directory's dsh-acp is packaged for the architecture its ELF header names (x86_64, aarch64),
one build per architecture, all of them of one version and commit. Writes into OUT_DIR, per architecture:
  v<version>/dsh-acp-<version>-linux-<arch>.tar.gz   the stripped binary, README, docs/, schemas/
  v<version>/dsh-acp-<version>-linux-<arch>-debug.tar.gz   dsh-acp.debug: the debug info split off
                                                     (the binary's .gnu_debuglink names it)
and once for all of them:
  registry/dsh-acp/agent.json, icon.svg             the ACP registry entry, each archive pinned by URL
                                                     and SHA-256
  dsh-acp-<version>.tgz                              the npm wrapper package (`npx dsh-acp`)
A binary of another architecture than the machine's runs (for its --version) under qemu user mode.
and prints one line per file with its size. The archive URLs are DOWNLOAD_BASE/v<version>/<file>
(release/release.json's downloadBase unless --download-base names another, a file:// URL for tests).
Archives are reproducible: sorted entries, owner 0, times from the commit (SOURCE_DATE_EPOCH).
"""
import argparse
import gzip
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ARCHES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
# e_machine of the ELF header: EM_X86_64, EM_AARCH64.
ELF_MACHINES = {62: "x86_64", 183: "aarch64"}


def fail(msg):
    raise SystemExit("package.py: " + msg)


def elf_arch(binary):
    """The release name of the architecture `binary` is built for, from its ELF header."""
    with open(binary, "rb") as f:
        head = f.read(20)
    # 64-bit (EI_CLASS 2), little-endian (EI_DATA 1): e_machine is the 16-bit word at offset 18.
    if head[:4] != b"\x7fELF" or head[4:6] != b"\x02\x01":
        fail(f"{binary} is not a 64-bit little-endian ELF file")
    machine = int.from_bytes(head[18:20], "little")
    if machine not in ELF_MACHINES:
        fail(f"{binary}: no release name for ELF machine {machine}")
    return ELF_MACHINES[machine]


def runner(arch):
    """The command prefix that runs a binary of `arch` on this machine: none for its own architecture,
    else qemu user mode with / as the root its loader and libraries are looked up in: the multiarch
    C library (libc6:arm64, which the arm64 -dev packages bring) has its loader and libc.so.6 from one
    package. Not /usr/<arch>-linux-gnu (the cross compiler's libc6-<arch>-cross): qemu finds its loader
    there but libc.so.6 under /lib/<arch>-linux-gnu, and a loader and a libc of two glibc builds disagree
    on the loader's private data, so the first thread a program starts spins forever in pthread_create."""
    if arch == ARCHES.get(platform.machine()):
        return []
    return [f"qemu-{arch}-static", "-L", "/"]


def objcopy(arch):
    """The target's binutils when installed (Debian's binutils-aarch64-linux-gnu beside the cross
    compiler): the machine's own objcopy may know no other architecture's relocations."""
    return shutil.which(f"{arch}-linux-gnu-objcopy") or "objcopy"


def version_of(binary, arch):
    line = subprocess.run(runner(arch) + [binary, "--version"], check=True, capture_output=True,
                          text=True).stdout.strip()
    m = re.fullmatch(r"dsh-acp (\d+\.\d+\.\d+\S*) \(commit (\w+)\)", line)
    if not m:
        fail(f"{binary} --version said {line!r}")
    return m.group(1), m.group(2)


def source_date():
    if "SOURCE_DATE_EPOCH" in os.environ:
        return int(os.environ["SOURCE_DATE_EPOCH"])
    r = subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%ct"], capture_output=True, text=True)
    return int(r.stdout.strip()) if r.returncode == 0 and r.stdout.strip() else 0


def reproducible_tar_gz(path, entries, mtime):
    """entries: (name in archive, file on disk) in any order; directories are implied."""
    # Level 6: within 2% of level 9's size for this binary, in a third of the time.
    with open(path, "wb") as out, \
            gzip.GzipFile(fileobj=out, mode="wb", compresslevel=6, mtime=mtime, filename="") as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, src in sorted(entries):
            info = tar.gettarinfo(src, arcname=name)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = mtime
            info.mode = 0o755 if os.access(src, os.X_OK) else 0o644
            with open(src, "rb") as f:
                tar.addfile(info, f)


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tree_files(top, prefix):
    out = []
    for dirpath, _dirs, files in os.walk(top):
        for f in files:
            full = os.path.join(dirpath, f)
            out.append((os.path.join(prefix, os.path.relpath(full, top)), full))
    return out


def split_debug(binary, arch, stripped, debug):
    """The debug info into `debug`; `stripped` keeps no symbols beyond the dynamic ones, and names
    `debug` (its basename) in .gnu_debuglink, where gdb looks beside the binary."""
    subprocess.run([objcopy(arch), "--only-keep-debug", binary, debug], check=True)
    subprocess.run([objcopy(arch), "--strip-all", "--add-gnu-debuglink=" + debug, binary, stripped], check=True)


def agent_entry(meta, version, archives):
    return {
        "id": meta["id"],
        "name": meta["name"],
        "version": version,
        "description": meta["description"],
        "repository": meta["repository"],
        "distribution": {
            "binary": {key: {"archive": a["archive"], "sha256": a["sha256"], "cmd": "./" + a["cmd"]}
                       for key, a in archives.items()},
            "npx": {"package": f"{meta['npmPackage']}@{version}"},
        },
    }


def npm_package(meta, version, archives, out_dir, work):
    pkg = os.path.join(work, "npm")
    shutil.copytree(os.path.join(HERE, "npm"), pkg)
    with open(os.path.join(pkg, "package.json"), "w") as f:
        json.dump({
            "name": meta["npmPackage"],
            "version": version,
            "description": meta["description"],
            "repository": meta["repository"],
            "bin": {"dsh-acp": "bin/dsh-acp.js"},
            "files": ["bin/", "dist.json"],
            "engines": {"node": ">=18"},
        }, f, indent=2)
        f.write("\n")
    with open(os.path.join(pkg, "dist.json"), "w") as f:
        json.dump({"version": version, "archives": archives}, f, indent=2)
        f.write("\n")
    r = subprocess.run(["npm", "pack", "--silent", "--pack-destination", out_dir], cwd=pkg,
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("npm pack: " + r.stderr)
    return os.path.join(out_dir, r.stdout.strip().splitlines()[-1])


def builds_by_arch(build_dirs):
    """{arch: binary} of the builds, and their one (version, commit)."""
    binaries, versions = {}, {}
    for build in build_dirs:
        binary = os.path.join(build, "dsh-acp")
        arch = elf_arch(binary)
        if arch in binaries:
            fail(f"{binaries[arch]} and {binary} are both {arch} builds")
        binaries[arch] = binary
        versions[binary] = version_of(binary, arch)
    if len(set(versions.values())) != 1:
        fail("the builds are of different versions or commits: " +
             ", ".join(f"{b}: {v} (commit {c})" for b, (v, c) in versions.items()))
    return binaries, next(iter(versions.values()))


def package_arch(binary, arch, version, vdir, mtime, work):
    """The archive and debug archive of one architecture's build in `vdir`; returns the release's
    platform key, the archive's registry/npm target, and the lines that say what was made."""
    key = f"linux-{arch}"
    name = f"dsh-acp-{version}-{key}"
    stripped = os.path.join(work, arch, "dsh-acp")
    debug = os.path.join(work, arch, "dsh-acp.debug")
    os.makedirs(os.path.dirname(stripped))
    split_debug(binary, arch, stripped, debug)
    entries = [(f"{name}/dsh-acp", stripped), (f"{name}/README.md", os.path.join(ROOT, "README.md"))]
    entries += tree_files(os.path.join(ROOT, "docs"), f"{name}/docs")
    entries += tree_files(os.path.join(ROOT, "schemas"), f"{name}/schemas")
    archive = os.path.join(vdir, f"{name}.tar.gz")
    reproducible_tar_gz(archive, entries, mtime)
    debug_archive = os.path.join(vdir, f"{name}-debug.tar.gz")
    reproducible_tar_gz(debug_archive, [(f"{name}/dsh-acp.debug", debug)], mtime)
    target = {"archive": os.path.basename(archive), "sha256": sha256_of(archive), "cmd": f"{name}/dsh-acp"}
    lines = [f"  {key}:",
             f"  {os.path.getsize(binary):>11,} bytes  {binary} (as built, with debug info)",
             f"  {os.path.getsize(stripped):>11,} bytes  dsh-acp in the archive (stripped)"]
    lines += [f"  {os.path.getsize(path):>11,} bytes  {path}" for path in (archive, debug_archive)]
    return key, target, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("out")
    ap.add_argument("--download-base")
    ap.add_argument("--also-build", action="append", default=[], metavar="BUILD_DIR",
                    help="another architecture's build directory (build-aarch64/), packaged beside BUILD_DIR's")
    a = ap.parse_args()
    with open(os.path.join(HERE, "release.json")) as f:
        meta = json.load(f)
    base = (a.download_base or meta["downloadBase"]).rstrip("/")
    binaries, (version, commit) = builds_by_arch([a.build] + a.also_build)
    mtime = source_date()
    out = os.path.abspath(a.out)
    vdir = os.path.join(out, f"v{version}")
    os.makedirs(vdir, exist_ok=True)

    archives, lines = {}, []
    with tempfile.TemporaryDirectory(prefix="dsh-release-") as work:
        for arch, binary in binaries.items():
            key, target, made = package_arch(binary, arch, version, vdir, mtime, work)
            target["archive"] = f"{base}/v{version}/{target['archive']}"
            archives[key] = target
            lines += made
        reg = os.path.join(out, "registry", meta["id"])
        os.makedirs(reg, exist_ok=True)
        with open(os.path.join(reg, "agent.json"), "w") as f:
            json.dump(agent_entry(meta, version, archives), f, indent=2)
            f.write("\n")
        shutil.copy(os.path.join(HERE, "icon.svg"), os.path.join(reg, "icon.svg"))
        npm = npm_package(meta, version, archives, out, work)

    print(f"dsh-acp {version} (commit {commit}), {' '.join(archives)}")
    print("\n".join(lines))
    for path in (os.path.join(reg, "agent.json"), npm):
        print(f"  {os.path.getsize(path):>11,} bytes  {path}")


if __name__ == "__main__":
    sys.exit(main())
