#!/usr/bin/env python3
"""Tool-call benchmarks of issue 16 against the real binary on the offline echo model, whose
[[echo:tool=NAME {JSON}]] directives make it call tools.

Prints, each with what it includes:
  server CPU per tool call   user + system CPU of the whole server process (wait4's rusage, after
                             it exited) over TURNS prompt turns of N tool calls each, minus the
                             same turns without tool calls (the directives defused, so the prompt
                             and the echo answer's listing of it keep their size), divided by the
                             calls. `read` calls of a tiny file go to this client as
                             fs/read_text_file (the client advertises fs.readTextFile and answers
                             from memory): what is left is the server's own per-call work: the
                             model's call parsed, logged (tool/call, tool/result), the card and its
                             updates framed, the editor request and its answer, the result in the
                             next model request and in the echo answer's listing. Also reported:
                             the same for `glob` over a directory holding one tiny file, run in the
                             server (its own work included), and the marginal CPU of one more call
                             (N calls against 1, both with tools: without the second model step).
                             The store is on /dev/shm when it exists (fsync free: the server's own
                             cost, as store_bench's tmpfs figures).
  cancel with a command      a prompt whose model runs `bash sleep 30` in the server (no terminal
                             capability; the client answers session/request_permission with
                             allow_once); once the sleep is running, session/cancel: time to the
                             prompt's answer (stopReason cancelled), and until the command's process
                             group is gone (kill(-pgid, 0) fails: killed and reaped). Median of RUNS.
  MCP server start           session/new naming one stdio MCP server (bench/mcp_stub_server.c,
                             compiled with cc into BUILD/bench/: a C program that starts in about a
                             millisecond, one tool) -> answered, minus session/new without one,
                             minus that MCP server's own start-up: this client spawning it and doing
                             the same handshake (initialize, notifications/initialized, tools/list)
                             itself. Medians of MCP_RUNS, the three interleaved, each session closed
                             (its server stopped) before the next. Also reported: session/new with
                             three such servers (started concurrently).
  memory per session, 3 MCP  the server's own VmRSS growth over MCP_SESSIONS sessions each naming
                             three MCP servers, per session (the MCP servers are processes of their
                             own, not counted), next to the growth per session without MCP servers.
Usage: tools_bench.py DSH_ACP_BIN   (TOOLS_BENCH_TURNS, TOOLS_BENCH_CALLS, TOOLS_BENCH_CANCEL_RUNS,
                                     TOOLS_BENCH_MCP_RUNS, TOOLS_BENCH_MCP_SESSIONS)
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bench_common import Lines, encode, fs_type, request, result, spawn
from acp_client import notification, response  # noqa: E402

SERVER = sys.argv[1] if len(sys.argv) > 1 else "build/dsh-acp"
TURNS = int(os.environ.get("TOOLS_BENCH_TURNS", "300"))
CALLS = int(os.environ.get("TOOLS_BENCH_CALLS", "8"))
CANCEL_RUNS = int(os.environ.get("TOOLS_BENCH_CANCEL_RUNS", "10"))
MCP_RUNS = int(os.environ.get("TOOLS_BENCH_MCP_RUNS", "15"))
MCP_SESSIONS = int(os.environ.get("TOOLS_BENCH_MCP_SESSIONS", "20"))
HERE = os.path.dirname(os.path.abspath(__file__))
TURNS_PER_SESSION = 2  # short conversations: the echo answer lists every message so far
TINY = "one line of a tiny file\n"


class Client:
    """One server process on a pipe. Answers the server's requests: session/request_permission with
    allow_once, fs/read_text_file with TINY."""

    def __init__(self, home, capabilities):
        env = dict(os.environ, DSH_ACP_HOME=home, DSH_HOME=os.path.join(home, "no-harness-home"))
        self.proc = spawn(SERVER, ["--provider", "echo"], env, stderr=None)
        self.reader = Lines()
        self.next_id = 0
        self.early = {}
        self.server_requests = 0
        self.call("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})

    def write(self, frame):
        self.proc.stdin.write(encode(frame))

    def send(self, method, params):
        self.next_id += 1
        self.write(request(self.next_id, method, params))
        return self.next_id

    def notify(self, method, params):
        self.write(notification(method, params))

    def frames(self):
        fd = self.proc.stdout.fileno()
        while True:
            while (line := self.reader.next()) is not None:
                yield line
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return
            self.reader.feed(chunk)

    def answer(self, req):
        self.server_requests += 1
        method = req["method"]
        if method == "session/request_permission":
            res = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
        elif method == "fs/read_text_file":
            res = {"content": TINY}
        else:
            self.write(response(req["id"], error={"code": -32601, "message": "not offered"}))
            return
        self.write(response(req["id"], res))

    def wait(self, rid):
        f = self.early.pop(rid, None)
        if f is None:
            for line in self.frames():
                if line.startswith(b'{"jsonrpc":"2.0","method":"session/update"'):
                    continue
                g = json.loads(line)
                if "method" in g:
                    if "id" in g:
                        self.answer(g)
                    continue
                if g.get("id") == rid:
                    f = g
                    break
                self.early[g.get("id")] = g
        if f is None:
            raise SystemExit("bench: server closed stdout")
        if "error" in f:
            raise SystemExit(f"bench: request failed: {f}")
        return f

    def call(self, method, params):
        return self.wait(self.send(method, params))

    def finish(self):
        """Closes stdin; returns the server's CPU seconds over its whole life (rusage of the child)."""
        self.proc.stdin.close()
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        if self.proc.returncode != 0:
            raise SystemExit(f"bench: the server exited with {self.proc.returncode}")
        return usage.ru_utime + usage.ru_stime


def prompt_text(tool, calls, live):
    args = {"read": '{"file_path":"tiny.txt"}', "glob": '{"pattern":"*.txt"}'}[tool]
    # Defused directives keep the prompt (and the echo answer that repeats it) the same size.
    opener = "[[echo:tool=" if live else "[[echo:tooX="
    return "measure " + " ".join(f"{opener}{tool} {args}]]" for _ in range(calls))


def run_turns(base, tool, calls, live):
    """A fresh server; TURNS prompts in sessions of TURNS_PER_SESSION; returns (CPU s, server requests)."""
    home = tempfile.mkdtemp(dir=base)
    project = os.path.join(home, "project")
    os.mkdir(project)
    with open(os.path.join(project, "tiny.txt"), "w") as f:
        f.write(TINY)
    caps = {"fs": {"readTextFile": True, "writeTextFile": False}, "terminal": False}
    c = Client(home, caps)
    text = prompt_text(tool, calls, live)
    sid = None
    for t in range(TURNS):
        if t % TURNS_PER_SESSION == 0:
            sid = c.call("session/new", {"cwd": project, "mcpServers": []})["result"]["sessionId"]
        r = c.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})
        if r["result"]["stopReason"] != "end_turn":
            raise SystemExit(f"bench: turn ended {r['result']['stopReason']}")
    requests = c.server_requests
    cpu = c.finish()
    shutil.rmtree(home, ignore_errors=True)
    return cpu, requests


def per_call(base, tool, rounds=3):
    """Median over `rounds` of (tools - baseline) / calls, runs interleaved so load hits both alike;
    also the marginal cost of one more call (CALLS calls against 1)."""
    diffs, marginal = [], []
    for _ in range(rounds):
        with_tools, requests = run_turns(base, tool, CALLS, True)
        if tool == "read" and requests < TURNS * CALLS:
            raise SystemExit(f"bench: only {requests} fs/read_text_file requests for {TURNS * CALLS} read calls")
        baseline, _ = run_turns(base, tool, CALLS, False)
        one, _ = run_turns(base, tool, 1, True)
        diffs.append((with_tools - baseline) / (TURNS * CALLS) * 1000)
        marginal.append((with_tools - one) / (TURNS * (CALLS - 1)) * 1000)
        print(f"    {tool}: {TURNS} turns, CPU with {CALLS} calls {with_tools * 1000:.0f} ms, with 1 call "
              f"{one * 1000:.0f} ms, without {baseline * 1000:.0f} ms", flush=True)
    return statistics.median(diffs), statistics.median(marginal)


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def children_of(pid):
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append((int(entry), int(fields[2])))  # (pid, pgid)
    return out


def cancel_once(base):
    home = tempfile.mkdtemp(dir=base)
    project = os.path.join(home, "project")
    os.mkdir(project)
    c = Client(home, {})
    sid = c.call("session/new", {"cwd": project, "mcpServers": []})["result"]["sessionId"]
    text = '[[echo:tool=bash {"command":"sleep 30","description":"wait half a minute"}]]'
    rid = c.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})
    # Answer the permission request, then wait for the command's start (its card goes in_progress);
    # the shell's process group is the server's child.
    started = False
    for line in c.frames():
        g = json.loads(line)
        if "id" in g and "method" in g:
            c.answer(g)
        elif g.get("method") == "session/update" and g["params"]["update"].get("status") == "in_progress":
            started = True
            break
        elif g.get("id") == rid:
            raise SystemExit(f"bench: the prompt ended before the command ran: {g}")
    if not started:
        raise SystemExit("bench: server closed stdout")
    pgid = None
    deadline = time.monotonic() + 5
    while pgid is None and time.monotonic() < deadline:
        kids = [k for k in children_of(c.proc.pid) if k[0] == k[1]]
        if kids:
            pgid = kids[0][1]
        else:
            time.sleep(0.001)
    if pgid is None:
        raise SystemExit("bench: the command's process group did not appear")
    time.sleep(0.05)  # the shell is running `sleep`
    t0 = time.monotonic()
    c.notify("session/cancel", {"sessionId": sid})
    answer = c.wait(rid)
    answered = time.monotonic() - t0
    if answer["result"]["stopReason"] != "cancelled":
        raise SystemExit(f"bench: the cancelled prompt ended {answer['result']['stopReason']}")
    while group_alive(pgid) and time.monotonic() - t0 < 10:
        time.sleep(0.0005)
    gone = time.monotonic() - t0
    c.finish()
    shutil.rmtree(home, ignore_errors=True)
    return answered * 1000, gone * 1000


def mcp_stub():
    """Compiles the C MCP server into the build directory (once); None when no C compiler is found."""
    out = os.path.join(os.path.dirname(os.path.abspath(SERVER)), "bench", "mcp_stub_server")
    src = os.path.join(HERE, "mcp_stub_server.c")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        if subprocess.run(["cc", "-O2", "-o", out, src]).returncode != 0:
            return None
    return out


def mcp_spec(name, stub):
    return {"name": name, "command": stub, "args": [], "env": []}


def mcp_handshake_ms(stub):
    """The MCP server's own start-up: spawn -> initialize, initialized, tools/list answered."""
    t0 = time.monotonic()
    p = subprocess.Popen([stub], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    p.stdin.write(encode(request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                   "clientInfo": {"name": "bench", "version": "0"}})))
    p.stdin.flush()
    p.stdout.readline()
    p.stdin.write(encode(notification("notifications/initialized")) + encode(request(2, "tools/list", {})))
    p.stdin.flush()
    if b'"tools"' not in p.stdout.readline():
        raise SystemExit("bench: the MCP server did not list its tools")
    elapsed = time.monotonic() - t0
    p.stdin.close()
    p.wait()
    return elapsed * 1000


def vmrss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS")) / 1024


def mcp_figures(base):
    stub = mcp_stub()
    if stub is None:
        print("  MCP figures: skipped (no C compiler for bench/mcp_stub_server.c)", flush=True)
        return
    home = tempfile.mkdtemp(dir=base)
    project = os.path.join(home, "project")
    os.mkdir(project)
    c = Client(home, {})
    new_session = lambda servers: c.call("session/new", {"cwd": project, "mcpServers": servers})  # noqa: E731

    def new_ms(servers):
        t0 = time.monotonic()
        sid = new_session(servers)["result"]["sessionId"]
        ms = (time.monotonic() - t0) * 1000
        c.call("session/close", {"sessionId": sid})  # stops its MCP servers
        return ms

    new_ms([])  # warm-up
    plain, one, three, own = [], [], [], []
    for _ in range(MCP_RUNS):
        plain.append(new_ms([]))
        one.append(new_ms([mcp_spec("m", stub)]))
        three.append(new_ms([mcp_spec(f"m{k}", stub) for k in range(3)]))
        own.append(mcp_handshake_ms(stub))
    m_plain, m_one, m_three, m_own = (statistics.median(v) for v in (plain, one, three, own))
    added = m_one - m_plain - m_own
    print(f"  MCP start, median of {MCP_RUNS}: session/new {m_plain:.1f} ms without MCP servers, {m_one:.1f} ms with one, "
          f"{m_three:.1f} ms with three; the MCP server's own start-up {m_own:.1f} ms; added by us: {added:.1f} ms"
          f"   (target <= 50 ms)", flush=True)
    result("mcp_start_ms", round(added, 2), "ms", note=f"session/new {m_one:.1f} ms with one, {m_plain:.1f} ms without; "
           f"the MCP server's own start-up {m_own:.1f} ms")
    result("mcp_start_three_ms", round(m_three - m_plain, 2), "ms", note="three servers started concurrently, their own start-up included")

    # Memory: sessions stay open (and their MCP servers running) while RSS is read.
    for _ in range(5):
        new_session([])
    r0 = vmrss_mb(c.proc.pid)
    for _ in range(MCP_SESSIONS):
        new_session([])
    r1 = vmrss_mb(c.proc.pid)
    for i in range(MCP_SESSIONS):
        new_session([mcp_spec(f"s{i}m{k}", stub) for k in range(3)])
    r2 = vmrss_mb(c.proc.pid)
    without, with_mcp = (r1 - r0) / MCP_SESSIONS, (r2 - r1) / MCP_SESSIONS
    print(f"  memory per session, our process's VmRSS over {MCP_SESSIONS} sessions: {with_mcp:.3f} MB with 3 MCP servers each "
          f"(target <= 2 MB), {without:.3f} MB without", flush=True)
    result("mcp_session_own_mb", round(with_mcp, 3), "MB", note=f"{without:.3f} MB per session without MCP servers")
    c.finish()
    shutil.rmtree(home, ignore_errors=True)


def main():
    base = tempfile.mkdtemp(prefix="dsh-acp-tools-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        print(f"tool calls on the echo model ({fs_type(base)} store at {base}), {TURNS} turns of {CALLS} calls, "
              f"sessions of {TURNS_PER_SESSION} turns; 3 interleaved rounds, median", flush=True)
        read_ms, read_marginal = per_call(base, "read")
        print(f"  server CPU per read call (answered by the client over fs/read_text_file): {read_ms:.3f} ms"
              f"   (target <= 0.2 ms); one more call in a step: {read_marginal:.3f} ms", flush=True)
        result("tool_call_cpu_ms", round(read_ms, 4), "ms", note=f"read via fs/read_text_file; {CALLS} calls a turn")
        result("tool_call_marginal_cpu_ms", round(read_marginal, 4), "ms", note=f"{CALLS} calls a turn against 1")
        glob_ms, glob_marginal = per_call(base, "glob")
        print(f"  server CPU per glob call (in the server, one tiny file): {glob_ms:.3f} ms"
              f"   (report); one more call in a step: {glob_marginal:.3f} ms", flush=True)
        result("tool_call_glob_cpu_ms", round(glob_ms, 4), "ms", note=f"{CALLS} calls a turn, the glob's own work included")

        answers, gones = [], []
        for _ in range(CANCEL_RUNS):
            a, g = cancel_once(base)
            answers.append(a)
            gones.append(g)
        a, g = statistics.median(answers), statistics.median(gones)
        print(f"  cancel with `sleep 30` running, median of {CANCEL_RUNS}: prompt answered after {a:.1f} ms "
              f"(target <= 100 ms; max {max(answers):.1f}), process group gone after {g:.1f} ms "
              f"(target <= 1000 ms; max {max(gones):.1f})", flush=True)
        result("tool_cancel_answer_ms", round(a, 2), "ms", note=f"max {max(answers):.1f} ms of {CANCEL_RUNS}")
        result("tool_cancel_group_gone_ms", round(g, 2), "ms", note=f"max {max(gones):.1f} ms of {CANCEL_RUNS}")
        mcp_figures(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
