"""What a start of the product binary loads, and how it fails without libpq (issue 31).

  needed          the binary's ELF NEEDED entries (readelf -d) are all in the allow-list given after
                  `--allow` (shell patterns, e.g. "libc.so.6" "ld-linux*.so.*"): libpq, or anything
                  else linked that not every run uses, cannot come back unnoticed
  mapped          a server started with --provider echo and an empty home answers initialize having
                  mapped no shared object beyond what the binary itself names (ldd): PostgreSQL
                  support, loaded with dlopen, is not there
  libpq-missing   with DSH_ACP_LIBPQ naming a file that does not exist (or a library without libpq's
                  functions), a postgresql:// store is a start-up error: exit 2, nothing on stdout,
                  one message that names the store and libpq (no loader failure, no crash); `dsh-acp
                  store` says the same, and a password in the URL is still refused and never shown
Usage: startup_test.py BUILD/dsh-acp needed --allow PATTERN...
       startup_test.py BUILD/dsh-acp mapped|libpq-missing
"""
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile

INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}) + "\n"


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def needed_entries(binary):
    out = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True, check=True).stdout
    # " 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]"
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def check_needed(binary, allowed):
    entries = needed_entries(binary)
    if not entries:
        fail(f"readelf found no NEEDED entry in {binary}")
    stray = [e for e in entries if not any(fnmatch.fnmatchcase(e, p) for p in allowed)]
    if stray:
        fail(f"{binary} needs {stray}, which are not in the allow-list {allowed}: a library linked into the "
             "product binary is loaded at every start (load it when it is used, as src/store/pg/libpq_loader.hpp "
             "does, or link it statically; bench/README.md)")
    print(f"NEEDED {entries}: all allowed")


def ldd_paths(binary):
    """The real paths of the shared objects the dynamic loader maps for `binary` by itself."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    paths = set()
    for line in out.splitlines():
        # "libm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
        words = line.split()
        path = words[2] if len(words) > 2 and words[1] == "=>" else words[0]
        if path.startswith("/"):
            paths.add(os.path.realpath(path))
    return paths


def check_mapped(binary):
    home = tempfile.mkdtemp(prefix="dsh-acp-startup-")
    try:
        env = dict(os.environ, DSH_ACP_HOME=home, HOME=home, XDG_CONFIG_HOME=home, DSH_HOME=os.path.join(home, "none"))
        proc = subprocess.Popen([binary, "--provider", "echo"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        proc.stdin.write(INITIALIZE.encode())
        proc.stdin.flush()
        answer = proc.stdout.readline()
        if b'"result"' not in answer:
            fail(f"no initialize result: {answer[:300]!r}")
        with open(f"/proc/{proc.pid}/maps") as f:
            mapped = {os.path.realpath(line.split()[5]) for line in f
                      if len(line.split()) > 5 and ".so" in os.path.basename(line.split()[5])}
        proc.stdin.close()
        proc.wait()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    expected = ldd_paths(binary)
    extra = sorted(mapped - expected)
    if extra:
        fail(f"mapped at initialize beyond the binary's own libraries {sorted(expected)}: {extra}")
    if any("libpq" in os.path.basename(p) for p in mapped):
        fail(f"libpq mapped without a PostgreSQL store: {sorted(mapped)}")
    print(f"mapped at initialize: {sorted(mapped)}")


def run(binary, args, env_extra, home):
    env = dict(os.environ, DSH_ACP_HOME=home, HOME=home, XDG_CONFIG_HOME=home, DSH_HOME=os.path.join(home, "none"),
               **env_extra)
    env.pop("DSH_ACP_STORE", None)
    return subprocess.run([binary, *args], input=INITIALIZE, capture_output=True, text=True, env=env, timeout=60)


def check_libpq_missing(binary):
    home = tempfile.mkdtemp(prefix="dsh-acp-nolibpq-")
    try:
        # host= a directory with no server: were libpq loaded, this would be a connection failure instead.
        url = f"postgresql://dsh@/sessions?host={home}/no-server"
        missing = {"DSH_ACP_LIBPQ": os.path.join(home, "no-such-dir", "libpq.so.5")}
        # libc exists but has none of libpq's functions: the symbols are resolved at load too.
        wrong = {"DSH_ACP_LIBPQ": "libc.so.6"}
        cases = [
            (["--provider", "echo", "--store", url], missing, "no-such-dir/libpq.so.5"),
            (["--provider", "echo", "--store", url], wrong, "PQ"),
            (["--provider", "echo", "--store", os.path.join(home, "files"), "--store", url], missing, "libpq.so.5"),
            (["store", "verify", url], missing, "libpq.so.5"),
            (["store", "migrate", url], missing, "libpq.so.5"),
        ]
        for args, env, detail in cases:
            r = run(binary, args, env, home)
            what = f"{' '.join(args)} with {env}"
            if r.returncode != 2:
                fail(f"{what}: exit {r.returncode}, expected 2\nstdout: {r.stdout}\nstderr: {r.stderr}")
            if r.stdout:
                fail(f"{what}: wrote to stdout: {r.stdout!r}")
            for part in (url, "libpq", detail):
                if part not in r.stderr:
                    fail(f"{what}: the message does not name {part!r}: {r.stderr!r}")
            print(f"{what}: exit 2: {r.stderr.strip()}")
        # Without libpq the URL checks fall back to reading the text: a password is still refused
        # (exit 2, the message says why) and shown nowhere.
        secret = "s3cr3t-Pw"
        for bad in (f"postgresql://dsh:{secret}@/sessions", f"postgresql://dsh@/sessions?password={secret}"):
            r = run(binary, ["--provider", "echo", "--store", bad], missing, home)
            if r.returncode != 2 or "password" not in r.stderr or secret in r.stderr + r.stdout:
                fail(f"--store {bad} without libpq: exit {r.returncode}, stderr {r.stderr!r}")
            print(f"--store <url with a password> without libpq: exit 2: {r.stderr.strip()}")
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binary, mode = sys.argv[1], sys.argv[2]
    if mode == "needed" and sys.argv[3:4] == ["--allow"]:
        check_needed(binary, sys.argv[4:])
    elif mode == "mapped":
        check_mapped(binary)
    elif mode == "libpq-missing":
        check_libpq_missing(binary)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
