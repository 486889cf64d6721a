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
  https           a prompt to an HTTPS model on loopback (a certificate of a CA made here, --ca-file)
                  is answered through OpenSSL opened at run time: libssl is not mapped after
                  initialize and session/new, and is after the answer
  libssl-missing  with DSH_ACP_LIBSSL naming a file that does not exist, that prompt fails with a
                  message naming libssl (the server goes on: the next request is answered), and
                  nothing else changes: start-up, sessions, the echo model
Usage: startup_test.py BUILD/dsh-acp needed --allow PATTERN...
       startup_test.py BUILD/dsh-acp mapped|libpq-missing|https|libssl-missing
"""
import fnmatch
import http.server
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from acp_client import Client, encode, request, spawn, wait_exit  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from chat_stub import StreamingChatHandler  # noqa: E402

INITIALIZE = encode(request(1, "initialize", {"protocolVersion": 1})).decode()


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
        proc = spawn(binary, ["--provider", "echo"], env, stderr=None)
        proc.stdin.write(INITIALIZE.encode())
        answer = proc.stdout.readline()
        if b'"result"' not in answer:
            fail(f"no initialize result: {answer[:300]!r}")
        with open(f"/proc/{proc.pid}/maps") as f:
            mapped = {os.path.realpath(line.split()[5]) for line in f
                      if len(line.split()) > 5 and ".so" in os.path.basename(line.split()[5])}
        proc.stdin.close()
        wait_exit(proc, "dsh-acp to exit after stdin EOF")
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
    return subprocess.run([binary, *args], input=INITIALIZE, capture_output=True, text=True, env=env)


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


class ChatServer(StreamingChatHandler):
    ANSWER = "answered over TLS"


def make_certificates(directory):
    """A CA and a leaf certificate for 127.0.0.1 signed by it (the openssl command line)."""
    def sh(*args):
        r = subprocess.run(["openssl", *args], cwd=directory, capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"openssl {' '.join(args)}: {r.stderr}")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    sh("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=dsh-acp-test-CA",
       "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    with open(os.path.join(directory, "ext.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    sh("req", *ec, "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=localhost")
    sh("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
       "-out", "leaf.pem", "-extfile", "ext.cnf")
    return os.path.join(directory, "ca.pem"), os.path.join(directory, "leaf.pem"), os.path.join(directory, "leaf.key")


def mapped_libssl(pid):
    with open(f"/proc/{pid}/maps") as f:
        return sorted({line.split()[5] for line in f if len(line.split()) > 5 and "libssl" in line.split()[5]})


def check_https(binary, missing_libssl):
    home = tempfile.mkdtemp(prefix="dsh-acp-https-")
    server = None
    try:
        ca, cert, key = make_certificates(home)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ChatServer)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"https://127.0.0.1:{server.server_address[1]}/v1"
        env = {"OPENAI_API_KEY": "test-key", "DSH_HOME": os.path.join(home, "none")}
        if missing_libssl:
            env["DSH_ACP_LIBSSL"] = os.path.join(home, "no-such-dir", "libssl.so.3")
        c = Client(binary, home, ["--provider", "openai", "--base-url", url, "--ca-file", ca, "--model", "m1",
                                  "--max-retries", "0"], env=env)
        c.initialize()
        sid = c.ok("session/new", {"cwd": home, "mcpServers": []})["sessionId"]
        if mapped_libssl(c.proc.pid):
            fail(f"libssl mapped before any HTTPS request: {mapped_libssl(c.proc.pid)}")
        r = c.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]})
        said = "".join(u.get("content", {}).get("text", "") for u in c.updates(sid, "agent_message_chunk"))
        if missing_libssl:
            shown = json.dumps(r) + said
            if "libssl" not in shown or "cannot be loaded" not in shown:
                fail(f"the prompt's failure does not say libssl cannot be loaded: {r} {said!r}")
            if mapped_libssl(c.proc.pid):
                fail("libssl mapped although DSH_ACP_LIBSSL names no file")
            c.ok("session/new", {"cwd": home, "mcpServers": []})  # the server goes on
            print(f"without libssl the prompt fails: {shown[:300]}")
        else:
            if r.get("result", {}).get("stopReason") != "end_turn" or ChatServer.ANSWER not in said:
                fail(f"no answer over TLS: {r} {said!r}; stderr {c.stderr_text()}")
            if not mapped_libssl(c.proc.pid):
                fail("answered over TLS but libssl is not mapped: what answered?")
            print(f"answered over TLS via {mapped_libssl(c.proc.pid)}")
        if c.close() != 0:
            fail("non-zero exit")
    finally:
        if server:
            server.shutdown()
            server.server_close()
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
    elif mode in ("https", "libssl-missing"):
        check_https(binary, mode == "libssl-missing")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
