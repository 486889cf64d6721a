#!/usr/bin/env python3
"""Processes and secrets of what the real binary starts (issue 27), as root in CI.

  close    a bash call (no client terminal, mode auto) leaves a `setsid` sleeper and a double-forked
           one behind and sleeps; session/close → both gone once close answers
  exit     the same; stdin EOF → both gone once the server has exited
  sigterm  the same; SIGTERM → both gone once the server has exited
  mcp      an MCP server leaves the same two behind; session/close → gone once close answers; a
           second server's, at stdin EOF → gone once the server has exited
  secrets  DEEPSEEK_API_KEY, OPENAI_API_KEY and PGPASSWORD given to the server only: absent from a
           command's environment and from every ancestor's /proc/PID/environ it reads (the server's
           included), likewise for an MCP server, which still gets its configured `env`; and the
           server's own /proc/PID/environ, read by this test, holds none of them

Processes are found by the pids they write into files; "gone" is read from /proc.
Usage: sandbox_test.py DSH_ACP_BIN MODE
"""
import json
import os
import signal
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from acp_client import CHANGES, Client, Inotify, wait_until  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "..", "tools", "mcp_fake_server.py")
SECRETS = {"DEEPSEEK_API_KEY": "sk-dsh-test-deepseek-7f3a", "OPENAI_API_KEY": "sk-dsh-test-openai-91c2",
           "PGPASSWORD": "dsh-test-pg-password-55e1"}


def fail(msg):
    raise SystemExit("FAIL: " + msg)


def gone(pid):
    """No /proc entry (a zombie would still be one of ours to reap: not gone)."""
    return not os.path.exists(f"/proc/{pid}")


def running(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def bash_prompt(command):
    return "[[echo:tool=bash " + json.dumps({"command": command}) + "]]"


def leaving_sleepers(work):
    """Shell text leaving two sleepers behind (setsid; double fork), each pid in a file once it runs."""
    a, b = os.path.join(work, "setsid.pid"), os.path.join(work, "double.pid")
    return (f"setsid sh -c 'echo $$ > {a}.tmp; mv {a}.tmp {a}; exec sleep 1000' & "
            f"(sh -c 'echo $$ > {b}.tmp; mv {b}.tmp {b}; exec sleep 1000' &); "
            f"while [ ! -s {a} ] || [ ! -s {b} ]; do sleep 0.01; done; ")


def read_pids(*files):
    pids = []
    for f in files:
        with open(f) as h:
            pids += [int(x) for x in h.read().split()]
    return pids


def session(c, work, mcp_servers=()):
    c.initialize()
    sid = c.ok("session/new", {"cwd": work, "mcpServers": list(mcp_servers)})["sessionId"]
    c.ok("session/set_mode", {"sessionId": sid, "modeId": "auto"})
    return sid


def command_left_running(c, work):
    """Starts a prompt whose bash call leaves the sleepers and then sleeps; returns their pids once both run."""
    sid = session(c, work)
    prompt = c.send("session/prompt", {"sessionId": sid, "prompt": [
        {"type": "text", "text": bash_prompt(leaving_sleepers(work) + "sleep 1000")}]})
    files = [os.path.join(work, "setsid.pid"), os.path.join(work, "double.pid")]
    watch = Inotify()  # each pid file is moved into place once written
    try:
        watch.watch(work, CHANGES)
        wait_until(lambda: all(os.path.exists(f) for f in files), "the sleepers started", client=c, watch=watch)
    finally:
        watch.close()
    pids = read_pids(*files)
    for pid in pids:
        if not running(pid):
            fail(f"sleeper {pid} is not running before the test's event")
    return sid, prompt, pids


def expect_gone(pids, when):
    left = [p for p in pids if not gone(p)]
    if left:
        for p in left:
            os.kill(p, signal.SIGKILL)
        fail(f"still there after {when}: {left}")


def test_close(binary, home, work):
    c = Client(binary, home)
    sid, prompt, pids = command_left_running(c, work)
    c.ok("session/close", {"sessionId": sid})
    if c.wait(prompt)["result"]["stopReason"] != "cancelled":
        fail("the prompt was not answered cancelled")
    expect_gone(pids, "session/close")
    c.close()


def test_exit(binary, home, work, how):
    c = Client(binary, home)
    _, _, pids = command_left_running(c, work)
    if how == "sigterm":
        c.proc.send_signal(signal.SIGTERM)
    code = c.close()
    if code != 0:
        fail(f"exit code {code}")
    expect_gone(pids, "the server's exit (" + how + ")")


def test_mcp(binary, home, work):
    marks = [os.path.join(work, f"mcp{i}.pids") for i in range(2)]
    servers = [{"name": f"spawner{i}", "command": sys.executable, "args": [FAKE, "spawner"],
                "env": [{"name": "DSH_MCP_FAKE_MARK", "value": marks[i]}]} for i in range(2)]
    c = Client(binary, home)
    c.initialize()
    first = c.ok("session/new", {"cwd": work, "mcpServers": [servers[0]]})["sessionId"]
    c.ok("session/new", {"cwd": work, "mcpServers": [servers[1]]})
    pids = [read_pids(m) for m in marks]  # written before the servers answered initialize
    for pid in pids[0] + pids[1]:
        if not running(pid):
            fail(f"MCP sleeper {pid} is not running")
    c.ok("session/close", {"sessionId": first})
    expect_gone(pids[0], "session/close of the MCP server's session")
    if any(not running(p) for p in pids[1]):
        fail("another session's MCP server lost its processes")
    code = c.close()
    if code != 0:
        fail(f"exit code {code}")
    expect_gone(pids[1], "the server's exit")


def test_secrets(binary, home, work):
    out = os.path.join(work, "seen.txt")
    # Every ancestor's environment the command can read, then its own.
    walk = ("p=$PPID; while [ \"$p\" -gt 1 ]; do echo \"ancestor $p:\"; cat /proc/$p/environ; echo; "
            "p=$(awk '{print $4}' /proc/$p/stat); done > seen.txt 2>&1; echo self: >> seen.txt; env >> seen.txt")
    mark = os.path.join(work, "mcp.environ")
    server = {"name": "env", "command": sys.executable, "args": [FAKE, "environ"],
              "env": [{"name": "DSH_MCP_FAKE_MARK", "value": mark}, {"name": "OPENAI_API_KEY", "value": "given-to-mcp"}]}
    c = Client(binary, home, env=SECRETS)
    sid = session(c, work, [server])
    c.ok("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": bash_prompt(walk)}]})
    with open(out, "rb") as f:
        seen = f.read()
    if b"ancestor " not in seen or b"self:" not in seen or b"HOME=" not in seen:
        fail("the command did not read the environments: " + seen[:400].decode(errors="replace"))
    with open(mark, "rb") as f:
        mcp_seen = f.read()
    if b"OPENAI_API_KEY=given-to-mcp" not in mcp_seen:
        fail("the MCP server's configured env did not reach it")
    with open(f"/proc/{c.proc.pid}/environ", "rb") as f:
        server_environ = f.read()
    for name, value in SECRETS.items():
        v = value.encode()
        for what, text in (("the command", seen), ("the MCP server", mcp_seen), ("/proc/<server>/environ", server_environ)):
            if v in text:
                fail(f"{name}'s value is readable by {what}")
    if b"DSH_ACP_HOME=" not in server_environ:
        fail("the server's /proc environ lost more than the secrets")
    c.close()


def main():
    binary, mode = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="dsh-sandbox-") as home:
        work = os.path.join(home, "work")
        os.makedirs(work)
        if mode == "close":
            test_close(binary, home, work)
        elif mode in ("exit", "sigterm"):
            test_exit(binary, home, work, mode)
        elif mode == "mcp":
            test_mcp(binary, home, work)
        elif mode == "secrets":
            test_secrets(binary, home, work)
        else:
            fail("unknown mode " + mode)
    print(f"sandbox {mode}: ok")


if __name__ == "__main__":
    main()
