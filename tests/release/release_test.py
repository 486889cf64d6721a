#!/usr/bin/env python3
"""The release of a built binary (release/package.py, docs/release.md), made and then used as a user would.

  package    (the fixture the others use) packages the build and the aarch64 cross build (AARCH64_BUILD_DIR,
             build-aarch64/) twice into BUILD_DIR/release-test/: the two give the same bytes. `cleanup`
             removes the directory.
  archive    the build's archive holds a stripped binary that answers initialize and an echo prompt; the
             debug info is in its own archive, named by the binary's .gnu_debuglink.
  archive-aarch64   the same of the aarch64 archive, its binary run under qemu user mode: an AArch64 ELF
             file that needs only the C library, names the build's version and commit, answers initialize
             and an echo prompt (session/new starts the binary's first threads).
  registry   agent.json and icon.svg meet the ACP registry's rules (checked here: id, pinned versions,
             archive URL and SHA-256 of both platforms, platform names, a 16x16 currentColor icon).
  npm        the npm package names both platforms' archives; installed offline from its tarball, it fetches
             this machine's archive from a file://
             URL, checks its SHA-256, and serves ACP on stdout through the binary; a second start uses
             the cache; an archive whose bytes differ from the SHA-256 installs nothing.
  install    `cmake --install` puts a working binary and the docs under a prefix.

Usage: release_test.py BUILD_DIR MODE AARCH64_BUILD_DIR
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from fnmatch import fnmatchcase

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "common"))
from acp_client import Client, encode, request  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "release"))
from package import runner  # noqa: E402

PACKAGE = os.path.join(ROOT, "release", "package.py")
# readelf -h's name of each release architecture's ELF machine.
ELF_MACHINES = {"x86_64": "Advanced Micro Devices X86-64", "aarch64": "AArch64"}
# What the aarch64 binary may need at run time: the C library's own objects (startup.needed's list for the
# build, whose sanitizer variants need more; the cross build is always the plain one).
C_LIBRARY = ("libc.so.6", "libm.so.6", "ld-linux*.so.*")
PLATFORMS = {"darwin-aarch64", "darwin-x86_64", "linux-aarch64", "linux-x86_64", "windows-aarch64", "windows-x86_64"}
INSTALLER_SUFFIXES = (".dmg", ".pkg", ".deb", ".rpm", ".msi", ".appimage")


def fail(msg):
    raise SystemExit("FAIL: " + msg)


def fixture_dir(build):
    return os.path.join(build, "release-test")


def package(build, aarch64_build, out):
    subprocess.run([sys.executable, PACKAGE, build, out, "--download-base", "file://" + out,
                    "--also-build", aarch64_build], check=True, stdout=subprocess.DEVNULL)
    return packaged(out)


def packaged(out):
    """(version, {arch: (archive, debug archive)}) of a packaging in `out`."""
    [vdir] = [d for d in os.listdir(out) if d.startswith("v")]
    version = vdir[1:]
    files = sorted(os.listdir(os.path.join(out, vdir)))
    by_arch = {}
    for f in files:
        m = re.fullmatch(rf"dsh-acp-{re.escape(version)}-linux-(\w+?)(-debug)?\.tar\.gz", f)
        if not m:
            fail(f"{vdir}/{f} is not a release archive")
        by_arch.setdefault(m.group(1), [None, None])[1 if m.group(2) else 0] = os.path.join(out, vdir, f)
    if set(by_arch) != set(ELF_MACHINES) or any(None in pair for pair in by_arch.values()):
        fail(f"{vdir} holds {files}: an archive and a debug archive of each of {sorted(ELF_MACHINES)} expected")
    return version, {arch: tuple(pair) for arch, pair in by_arch.items()}


def test_package(build, aarch64_build, _tmp):
    if not os.path.isfile(os.path.join(aarch64_build, "dsh-acp")):
        fail(f"no aarch64 build in {aarch64_build}: `./dev test` and `./dev release` make it "
             "(`./dev build --aarch64` alone)")
    top = fixture_dir(build)
    shutil.rmtree(top, ignore_errors=True)
    _v, first = package(build, aarch64_build, os.path.join(top, "a"))
    _v, again = package(build, aarch64_build, os.path.join(top, "b"))
    for arch in first:
        for one, other in zip(first[arch], again[arch]):
            if sha256_of(one) != sha256_of(other):
                fail(f"two packagings of one build differ: {os.path.basename(one)}: {tar_difference(one, other)}")
    print(f"packaged {sorted(first)} twice into {top}: the same bytes")


def tar_difference(a, b):
    """Which entries of two archives differ, and how (names, headers or contents)."""
    def entries(path):
        with tarfile.open(path) as t:
            return {m.name: (m.get_info(), hashlib.sha256(t.extractfile(m).read()).hexdigest() if m.isfile() else "")
                    for m in t.getmembers()}
    ea, eb = entries(a), entries(b)
    if ea.keys() != eb.keys():
        return f"entries only in one: {sorted(ea.keys() ^ eb.keys())}"
    differ = [n for n in sorted(ea) if ea[n] != eb[n]]
    if not differ:
        return "the same entries, headers and contents; the compressed bytes differ"
    return "; ".join(f"{n}: header {ea[n][0]} vs {eb[n][0]}" if ea[n][0] != eb[n][0] else f"{n}: contents"
                     for n in differ)


def test_cleanup(build, _aarch64_build, _tmp):
    shutil.rmtree(fixture_dir(build), ignore_errors=True)


def sections(path):
    out = subprocess.run(["readelf", "-SW", path], check=True, capture_output=True, text=True).stdout
    return set(re.findall(r"\]\s+(\.\S+)", out))


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def initialize_through(binary, home, env=None, prompt=None):
    """initialize's result; with `prompt`, also a session whose prompt the echo model must answer by
    repeating it."""
    c = Client(binary, home, env=env)
    try:
        result = c.initialize()
        if prompt:
            sid = c.ok("session/new", {"cwd": home, "mcpServers": []})["sessionId"]
            stop = c.ok("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": prompt}]})
            answer = "".join(u["content"]["text"] for u in c.updates(sid, "agent_message_chunk"))
            if stop.get("stopReason") != "end_turn" or prompt not in answer:
                fail(f"{binary}: the prompt {prompt!r} ended {stop}, answered {answer!r}")
        return result
    finally:
        if c.close() != 0:
            fail(f"{binary} exited non-zero: {c.stderr_text()}")


def launcher(binary, arch, tmp):
    """An executable that runs `binary` on this machine (under qemu for another architecture), for the
    tests that start it by one path."""
    prefix = runner(arch)
    if not prefix:
        return binary
    path = os.path.join(tmp, f"dsh-acp-{arch}")
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexec " + " ".join(prefix + [binary]) + ' "$@"\n')
    os.chmod(path, 0o755)
    return path


def elf_machine(binary):
    out = subprocess.run(["readelf", "-h", binary], check=True, capture_output=True, text=True).stdout
    return re.search(r"^\s*Machine:\s*(.+?)\s*$", out, re.M).group(1)


def check_needs_c_library_only(binary):
    out = subprocess.run(["readelf", "-d", binary], check=True, capture_output=True, text=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", out)
    stray = [n for n in needed if not any(fnmatchcase(n, p) for p in C_LIBRARY)]
    if not needed or stray:
        fail(f"{binary} needs {needed}: only the C library ({', '.join(C_LIBRARY)}) may be")
    return needed


def built_version(build):
    return subprocess.run([os.path.join(build, "dsh-acp"), "--version"], check=True, capture_output=True,
                          text=True).stdout.strip()


def host_arch(build):
    """The architecture of the build's own binary (this machine's)."""
    out = elf_machine(os.path.join(build, "dsh-acp"))
    return next(a for a, m in ELF_MACHINES.items() if m == out)


def unpack_release(archive, debug, tmp):
    """The unpacked binary and debug file of one architecture's archives, after checking its contents."""
    unpacked = os.path.join(tmp, "unpacked")
    with tarfile.open(archive) as t:
        names = t.getnames()
        t.extractall(unpacked)
    [top] = {n.split("/")[0] for n in names}
    if f"{top}.tar.gz" != os.path.basename(archive):
        fail(f"archive {os.path.basename(archive)}: top directory {top}")
    for need in ("dsh-acp", "README.md", "docs/store-format.md", "schemas/config.schema.json"):
        if f"{top}/{need}" not in names:
            fail(f"the archive lacks {need}: {names}")
    with tarfile.open(debug) as t:
        t.extractall(unpacked)
    return os.path.join(unpacked, top, "dsh-acp"), os.path.join(unpacked, top, "dsh-acp.debug")


def check_stripped(binary, debug_file):
    have = sections(binary)
    if ".debug_info" in have or ".symtab" in have or ".gnu_debuglink" not in have:
        fail(f"the archive's binary is not stripped with a debug link: {sorted(have)}")
    if ".debug_info" not in sections(debug_file):
        fail("the debug archive's dsh-acp.debug holds no .debug_info")
    # readelf reads any architecture's ELF file (objcopy only those binutils was built for); the section's
    # second string is its CRC's bytes, hence latin-1.
    dump = subprocess.run(["readelf", "-p", ".gnu_debuglink", binary], check=True,
                          capture_output=True).stdout.decode("latin-1")
    if not re.search(r"^\s*\[\s*0\]\s+dsh-acp\.debug$", dump, re.M):
        fail(f".gnu_debuglink: {dump!r}")


def test_archive(build, aarch64_build, tmp, arch=None):
    arch = arch or host_arch(build)
    version, archives = packaged(os.path.join(fixture_dir(build), "a"))
    archive, debug = archives[arch]
    binary, debug_file = unpack_release(archive, debug, tmp)
    if elf_machine(binary) != ELF_MACHINES[arch]:
        fail(f"the {arch} archive's binary is for {elf_machine(binary)}")
    check_stripped(binary, debug_file)
    needed = check_needs_c_library_only(binary) if arch != host_arch(build) else None
    run = launcher(binary, arch, tmp)
    if subprocess.run([run, "--version"], check=True, capture_output=True, text=True).stdout.strip() != built_version(build):
        fail(f"the {arch} archive's binary names another version or commit than the build ({built_version(build)})")
    prompt = f"echo from {arch}"
    r = initialize_through(run, os.path.join(tmp, "home"), prompt=prompt)
    if r["agentInfo"]["version"] != version:
        fail(f"initialize from the archive's binary: {r['agentInfo']}")
    # The registry starts the agent (its default provider, DeepSeek) and requires an auth method of type agent or terminal, with a key
    # present or not (the DeepSeek provider, the default).
    for label, env in (("without a key", {"DEEPSEEK_API_KEY": ""}), ("with a key", {"DEEPSEEK_API_KEY": "sk-test"})):
        p = subprocess.run([run], input=encode(request(1, "initialize", {"protocolVersion": 1})),
                           capture_output=True, env=dict(os.environ, DSH_ACP_HOME=os.path.join(tmp, "home-" + label.replace(" ", "-")), **env))
        answer = json.loads(p.stdout.splitlines()[0])
        types = [m.get("type") for m in answer["result"].get("authMethods", [])]
        if not {"agent", "terminal"} & set(types):
            fail(f"initialize {label} offers auth methods of types {types}: the registry needs agent or terminal")
    built = os.path.join(build if arch == host_arch(build) else aarch64_build, "dsh-acp")
    print(f"{arch} ({elf_machine(binary)}{f', NEEDED {needed}' if needed else ''}): archive {os.path.getsize(archive):,} "
          f"bytes (built binary {os.path.getsize(built):,}, stripped {os.path.getsize(binary):,}), debug archive "
          f"{os.path.getsize(debug):,} bytes; --version, initialize{' and an echo prompt' if prompt else ''} answered")


def check_icon(path):
    text = open(path).read()
    if "<!--" in text:
        fail("icon.svg holds a comment")
    root = ET.fromstring(text)
    if root.tag.split("}")[-1] != "svg":
        fail("icon.svg's root is not <svg>")
    if (root.get("width"), root.get("height")) != ("16", "16") or root.get("viewBox", "0 0 16 16").split()[2:] != ["16", "16"]:
        fail("icon.svg is not 16x16")
    colours = [v.strip().lower() for e in root.iter() for v in (e.get("fill"), e.get("stroke")) if v is not None]
    if "currentcolor" not in colours or any(c not in ("currentcolor", "none", "inherit") for c in colours):
        fail(f"icon.svg's colours {colours}: only currentColor (or none) lets clients theme it")


def test_registry(build, _aarch64_build, _tmp):
    out = os.path.join(fixture_dir(build), "a")
    version, archives = packaged(out)
    reg = os.path.join(out, "registry")
    [agent_dir] = os.listdir(reg)
    entry = json.load(open(os.path.join(reg, agent_dir, "agent.json")))
    for field in ("id", "name", "version", "description", "distribution"):
        if not entry.get(field):
            fail(f"agent.json lacks {field}")
    if not re.fullmatch(r"[a-z][a-z0-9-]*", entry["id"]) or entry["id"] != agent_dir:
        fail(f"id {entry['id']!r} in directory {agent_dir!r}")
    if entry["version"] != version or not re.match(r"^[0-9]+\.[0-9]+\.[0-9]+", version):
        fail(f"version {entry['version']} (the build is {version})")
    dist = entry["distribution"]
    if not dist or set(dist) - {"binary", "npx", "uvx"}:
        fail(f"distribution kinds {sorted(dist)}")
    if set(dist["binary"]) != {f"linux-{arch}" for arch in archives}:
        fail(f"binary targets {sorted(dist['binary'])}, the archives are of {sorted(archives)}")
    for key, target in dist["binary"].items():
        archive = archives[key.removeprefix("linux-")][0]
        if key not in PLATFORMS or set(target) - {"archive", "sha256", "cmd", "args", "env"}:
            fail(f"binary target {key}: {target}")
        url = target["archive"]
        if "/latest/" in url or url.lower().endswith(INSTALLER_SUFFIXES):
            fail(f"archive URL {url} is not a pinned archive")
        m = re.search(r"/v?(\d+\.\d+\.\d+)/", url)
        if not m or m.group(1) != version:
            fail(f"archive URL {url} does not name version {version}")
        if url != "file://" + archive or target["sha256"] != sha256_of(archive):
            fail(f"binary target {key} names {url} {target['sha256']}, the archive is {archive}")
        with tarfile.open(archive) as t:
            if target["cmd"].removeprefix("./") not in t.getnames():
                fail(f"cmd {target['cmd']} is not in the archive")
    pkg = dist["npx"]["package"]
    if pkg.lower().endswith("@latest") or not pkg.endswith("@" + version):
        fail(f"npx package {pkg} is not pinned to {version}")
    check_icon(os.path.join(reg, agent_dir, "icon.svg"))
    print(f"agent.json {entry['id']} {version}: platforms {sorted(dist['binary'])}, npx {pkg}; icon 16x16 currentColor")


def test_npm(build, _aarch64_build, tmp):
    out = os.path.join(fixture_dir(build), "a")
    version, archives = packaged(out)
    [tgz] = [f for f in os.listdir(out) if f.endswith(".tgz")]
    prefix = os.path.join(tmp, "prefix")
    npm_env = dict(os.environ, npm_config_cache=os.path.join(tmp, "npm-cache"), npm_config_update_notifier="false")
    subprocess.run(["npm", "install", "--offline", "--no-audit", "--no-fund", "--prefix", prefix,
                    os.path.join(out, tgz)], check=True, env=npm_env, stdout=subprocess.DEVNULL)
    wrapper = os.path.join(prefix, "node_modules", ".bin", "dsh-acp")
    cache = os.path.join(tmp, "release-cache")
    env = {"DSH_ACP_RELEASE_CACHE": cache}
    r = initialize_through(wrapper, os.path.join(tmp, "home1"), env)
    if r["agentInfo"]["version"] != version:
        fail(f"initialize through the npm package: {r['agentInfo']}")
    [installed] = os.listdir(cache)
    if not os.path.isfile(os.path.join(cache, installed, f"dsh-acp-{version}-{installed.split('-', 1)[1]}", "dsh-acp")):
        fail(f"the cache holds {os.listdir(os.path.join(cache, installed))}")
    # The installed package's dist.json, pointed elsewhere below.
    dist_path = os.path.join(prefix, "node_modules", "dsh-acp", "dist.json")
    dist = json.load(open(dist_path))
    if set(dist["archives"]) != {f"linux-{arch}" for arch in archives} or any(
            target["sha256"] != sha256_of(archives[key.removeprefix("linux-")][0]) for key, target in dist["archives"].items()):
        fail(f"the npm package's dist.json names {dist['archives']}, the archives are {archives}")
    key = f"linux-{host_arch(build)}"
    archive = archives[host_arch(build)][0]

    def point_at(url):
        dist["archives"][key]["archive"] = url
        with open(dist_path, "w") as f:
            json.dump(dist, f)

    # Installed once: a second start needs no archive.
    point_at("file://" + os.path.join(tmp, "no-such-archive.tar.gz"))
    initialize_through(wrapper, os.path.join(tmp, "home2"), env)
    # An archive that is not the one the package pins: refused, nothing installed, nothing on stdout.
    tampered = os.path.join(tmp, "tampered.tar.gz")
    with open(tampered, "wb") as f:
        f.write(open(archive, "rb").read()[:-1] + b"\0")
    point_at("file://" + tampered)
    bad_cache = os.path.join(tmp, "bad-cache")
    p = subprocess.run([wrapper, "--provider", "echo"], input=b"", capture_output=True,
                       env=dict(os.environ, DSH_ACP_RELEASE_CACHE=bad_cache, DSH_ACP_HOME=os.path.join(tmp, "home3")))
    if p.returncode == 0 or p.stdout or b"SHA-256" not in p.stderr:
        fail(f"a tampered archive: exit {p.returncode}, stdout {p.stdout[:200]!r}, stderr {p.stderr[-300:]!r}")
    if os.path.isdir(bad_cache) and [d for d in os.listdir(bad_cache) if not d.startswith(".")]:
        fail(f"a tampered archive left {os.listdir(bad_cache)}")
    print(f"npm package {tgz}: names {sorted(dist['archives'])}; installed offline, fetched and checked the {key} archive, served initialize, "
          "started again from its cache, refused a tampered archive")


def test_install(build, _aarch64_build, tmp):
    prefix = os.path.join(tmp, "prefix")
    subprocess.run(["cmake", "--install", build, "--prefix", prefix], check=True, stdout=subprocess.DEVNULL)
    binary = os.path.join(prefix, "bin", "dsh-acp")
    if subprocess.run([binary, "--version"], check=True, capture_output=True, text=True).stdout.strip() != built_version(build):
        fail("the installed binary is not the build's")
    for need in ("README.md", "docs/store-format.md", "schemas/config.schema.json"):
        if not os.path.isfile(os.path.join(prefix, "share", "doc", "dsh-acp", need)):
            fail(f"cmake --install left out share/doc/dsh-acp/{need}")
    initialize_through(binary, os.path.join(tmp, "home"))
    print(f"cmake --install: {binary} answers initialize; docs under share/doc/dsh-acp")


def test_archive_aarch64(build, aarch64_build, tmp):
    test_archive(build, aarch64_build, tmp, "aarch64")


def main():
    build, mode, aarch64_build = os.path.abspath(sys.argv[1]), sys.argv[2], os.path.abspath(sys.argv[3])
    tmp = tempfile.mkdtemp(prefix="dsh-release-test-")
    try:
        {"package": test_package, "cleanup": test_cleanup, "archive": test_archive,
         "archive-aarch64": test_archive_aarch64, "registry": test_registry, "npm": test_npm,
         "install": test_install}[mode](build, aarch64_build, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
