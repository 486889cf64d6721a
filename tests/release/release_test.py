#!/usr/bin/env python3
"""The release of a built binary (release/package.py, docs/release.md), made and then used as a user would.

  package    (the fixture the others use) packages the build twice into BUILD_DIR/release-test/: the two
             give the same bytes. `cleanup` removes the directory.
  archive    the archive holds a stripped binary that answers initialize; the debug info is in its own
             archive, named by the binary's .gnu_debuglink.
  registry   agent.json and icon.svg meet the ACP registry's rules (checked here: id, pinned versions,
             archive URL and SHA-256, platform names, a 16x16 currentColor icon).
  npm        the npm package, installed offline from its tarball, fetches the archive from a file://
             URL, checks its SHA-256, and serves ACP on stdout through the binary; a second start uses
             the cache; an archive whose bytes differ from the SHA-256 installs nothing.
  install    `cmake --install` puts a working binary and the docs under a prefix.

Usage: release_test.py BUILD_DIR MODE
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "common"))
from acp_client import Client, encode, request  # noqa: E402

PACKAGE = os.path.join(ROOT, "release", "package.py")
PLATFORMS = {"darwin-aarch64", "darwin-x86_64", "linux-aarch64", "linux-x86_64", "windows-aarch64", "windows-x86_64"}
INSTALLER_SUFFIXES = (".dmg", ".pkg", ".deb", ".rpm", ".msi", ".appimage")


def fail(msg):
    raise SystemExit("FAIL: " + msg)


def fixture_dir(build):
    return os.path.join(build, "release-test")


def package(build, out):
    subprocess.run([sys.executable, PACKAGE, build, out, "--download-base", "file://" + out], check=True,
                   stdout=subprocess.DEVNULL)
    return packaged(out)


def packaged(out):
    """(version, archive, debug archive) of a packaging in `out`."""
    [vdir] = [d for d in os.listdir(out) if d.startswith("v")]
    files = sorted(os.listdir(os.path.join(out, vdir)))
    [archive] = [f for f in files if not f.endswith("-debug.tar.gz")]
    [debug] = [f for f in files if f.endswith("-debug.tar.gz")]
    return vdir[1:], os.path.join(out, vdir, archive), os.path.join(out, vdir, debug)


def test_package(build, _tmp):
    top = fixture_dir(build)
    shutil.rmtree(top, ignore_errors=True)
    _v, archive, debug = package(build, os.path.join(top, "a"))
    _v, again, again_debug = package(build, os.path.join(top, "b"))
    for first, second in ((archive, again), (debug, again_debug)):
        if sha256_of(first) != sha256_of(second):
            fail(f"two packagings of one build differ: {os.path.basename(first)}: {tar_difference(first, second)}")
    print(f"packaged twice into {top}: the same bytes")


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


def test_cleanup(build, _tmp):
    shutil.rmtree(fixture_dir(build), ignore_errors=True)


def sections(path):
    out = subprocess.run(["readelf", "-SW", path], check=True, capture_output=True, text=True).stdout
    return set(re.findall(r"\]\s+(\.\S+)", out))


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def initialize_through(binary, home, env=None):
    c = Client(binary, home, env=env)
    try:
        return c.initialize()
    finally:
        if c.close() != 0:
            fail(f"{binary} exited non-zero: {c.stderr_text()}")


def built_version(build):
    return subprocess.run([os.path.join(build, "dsh-acp"), "--version"], check=True, capture_output=True,
                          text=True).stdout.strip()


def test_archive(build, tmp):
    version, archive, debug = packaged(os.path.join(fixture_dir(build), "a"))
    unpacked = os.path.join(tmp, "unpacked")
    with tarfile.open(archive) as t:
        names = t.getnames()
        t.extractall(unpacked)
    [top] = {n.split("/")[0] for n in names}
    if top != f"dsh-acp-{version}-linux-{os.uname().machine.replace('amd64', 'x86_64')}":
        fail(f"archive top directory {top}")
    for need in ("dsh-acp", "README.md", "docs/store-format.md", "schemas/config.schema.json"):
        if f"{top}/{need}" not in names:
            fail(f"the archive lacks {need}: {names}")
    binary = os.path.join(unpacked, top, "dsh-acp")
    have = sections(binary)
    if ".debug_info" in have or ".symtab" in have or ".gnu_debuglink" not in have:
        fail(f"the archive's binary is not stripped with a debug link: {sorted(have)}")
    with tarfile.open(debug) as t:
        t.extractall(unpacked)
    debug_file = os.path.join(unpacked, top, "dsh-acp.debug")
    if ".debug_info" not in sections(debug_file):
        fail("the debug archive's dsh-acp.debug holds no .debug_info")
    link = subprocess.run(["objcopy", "--dump-section", ".gnu_debuglink=/dev/stdout", binary],
                          check=True, capture_output=True).stdout
    if not link.startswith(b"dsh-acp.debug\0"):
        fail(f".gnu_debuglink names {link[:40]!r}")
    if subprocess.run([binary, "--version"], check=True, capture_output=True, text=True).stdout.strip() != built_version(build):
        fail("the archive's binary names another version or commit than the build")
    r = initialize_through(binary, os.path.join(tmp, "home"))
    if r["agentInfo"]["version"] != version:
        fail(f"initialize from the archive's binary: {r['agentInfo']}")
    # The registry starts the agent (its default provider, DeepSeek) and requires an auth method of type agent or terminal, with a key
    # present or not (the DeepSeek provider, the default).
    for label, env in (("without a key", {"DEEPSEEK_API_KEY": ""}), ("with a key", {"DEEPSEEK_API_KEY": "sk-test"})):
        p = subprocess.run([binary], input=encode(request(1, "initialize", {"protocolVersion": 1})),
                           capture_output=True, env=dict(os.environ, DSH_ACP_HOME=os.path.join(tmp, "home-" + label.replace(" ", "-")), **env))
        answer = json.loads(p.stdout.splitlines()[0])
        types = [m.get("type") for m in answer["result"].get("authMethods", [])]
        if not {"agent", "terminal"} & set(types):
            fail(f"initialize {label} offers auth methods of types {types}: the registry needs agent or terminal")
    print(f"archive {os.path.getsize(archive):,} bytes (built binary {os.path.getsize(os.path.join(build, 'dsh-acp')):,}, "
          f"stripped {os.path.getsize(binary):,}), debug archive {os.path.getsize(debug):,} bytes")


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


def test_registry(build, _tmp):
    out = os.path.join(fixture_dir(build), "a")
    version, archive, _debug = packaged(out)
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
    for key, target in dist["binary"].items():
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


def test_npm(build, tmp):
    out = os.path.join(fixture_dir(build), "a")
    version, archive, _debug = packaged(out)
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
    [key] = dist["archives"]

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
    print(f"npm package {tgz}: installed offline, fetched and checked the archive, served initialize, "
          "started again from its cache, refused a tampered archive")


def test_install(build, tmp):
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


def main():
    build, mode = os.path.abspath(sys.argv[1]), sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="dsh-release-test-")
    try:
        {"package": test_package, "cleanup": test_cleanup, "archive": test_archive, "registry": test_registry,
         "npm": test_npm, "install": test_install}[mode](build, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
