"""A minimal ACP client for process-level tests: runs the real dsh-acp binary over pipes and reads
its frames (stdlib only).

Waits have no time limit: a loaded machine is slow, not wrong, so a test never fails by taking long.
One that never ends is caught by CTest's TIMEOUT; meanwhile a note on stderr every SLOW_WAIT seconds
names what it waits for."""
import json
import os
import select
import signal
import subprocess
import sys
import time

SLOW_WAIT = 10.0


class Waiting:
    """Notes on stderr, every SLOW_WAIT seconds, that `what` is still awaited."""

    def __init__(self, what):
        self.what, self.since = what, time.monotonic()
        self.noted = self.since

    def tick(self):
        now = time.monotonic()
        if now - self.noted >= SLOW_WAIT:
            self.noted = now
            print(f"# still waiting for {self.what} after {now - self.since:.0f} s", file=sys.stderr, flush=True)


class Client:
    def __init__(self, binary, home, args=(), store=None, env=None):
        self.home = home
        env = dict(os.environ, DSH_ACP_HOME=home, **(env or {}))
        argv = [binary, "--provider", "echo", "--log-file", os.path.join(home, "dsh-acp.log")]
        if store:
            argv += ["--store", store]
        self.proc = subprocess.Popen(argv + list(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, bufsize=0)
        self.buf = b""
        self.next_id = 0
        self.frames = []      # every frame read so far, in order
        self.responses = {}   # id -> response frame
        self.eof = False

    # ---- writing ---------------------------------------------------------------------------------
    def send(self, method, params):
        self.next_id += 1
        frame = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        try:
            self.proc.stdin.write((json.dumps(frame) + "\n").encode())
        except (BrokenPipeError, OSError):
            pass
        return self.next_id

    def notify(self, method, params):
        frame = {"jsonrpc": "2.0", "method": method, "params": params}
        try:
            self.proc.stdin.write((json.dumps(frame) + "\n").encode())
        except (BrokenPipeError, OSError):
            pass

    # ---- reading ---------------------------------------------------------------------------------
    def pump(self, timeout):
        """Reads what is available within `timeout` seconds; returns False at EOF."""
        if self.eof:
            return False
        r, _, _ = select.select([self.proc.stdout], [], [], max(0.0, timeout))
        if not r:
            return True
        chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            f = json.loads(line)
            self.frames.append(f)
            if "method" not in f and "id" in f:
                self.responses[f["id"]] = f
        return True

    def wait(self, rid):
        waiting = Waiting(f"the response to id {rid}")
        while rid not in self.responses:
            if not self.pump(1.0):
                raise AssertionError(f"stdout ended before the response to id {rid}; stderr: {self.stderr_text()}")
            waiting.tick()
        return self.responses[rid]

    def call(self, method, params):
        return self.wait(self.send(method, params))

    def ok(self, method, params):
        r = self.call(method, params)
        if "error" in r:
            raise AssertionError(f"{method} failed: {r['error']}")
        return r["result"]

    def initialize(self):
        return self.ok("initialize", {"protocolVersion": 1, "clientCapabilities": {}})

    def updates(self, session_id, kind=None):
        out = []
        for f in self.frames:
            if f.get("method") == "session/update" and f["params"]["sessionId"] == session_id:
                u = f["params"]["update"]
                if kind is None or u.get("sessionUpdate") == kind:
                    out.append(u)
        return out

    # ---- lifetime --------------------------------------------------------------------------------
    def stderr_text(self):
        try:
            if self.proc.poll() is not None:
                return self.proc.stderr.read().decode(errors="replace")[-2000:]
        except Exception:
            pass
        return ""

    def kill9(self):
        try:
            self.proc.send_signal(signal.SIGKILL)
        except ProcessLookupError:
            pass
        wait_exit(self.proc, "dsh-acp to die of SIGKILL")
        self._close_pipes()

    def close(self):
        """Closes stdin and returns the exit code, once the process has exited."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        code = wait_exit(self.proc, "dsh-acp to exit after stdin EOF")
        self._close_pipes()
        return code

    def _close_pipes(self):
        for p in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                p.close()
            except OSError:
                pass


# ---- waiting for the server's state (instead of sleeping) -----------------------------------------

def blocked_flocks(pid):
    """flock() calls of process `pid` blocked on a lock another holds (the `->` lines of /proc/locks)."""
    n = 0
    with open("/proc/locks") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 5 and parts[1] == "->" and parts[2] == "FLOCK" and parts[5] == str(pid):
                n += 1
    return n


def wait_exit(proc, what):
    """`proc`'s exit code, once it has exited."""
    waiting = Waiting(what)
    while True:
        try:
            return proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            waiting.tick()


def wait_until(condition, what, client=None):
    """Re-checks `condition` (pumping `client`'s frames meanwhile) until it holds."""
    waiting = Waiting(what)
    while not condition():
        if client:
            client.pump(0.005)
        else:
            time.sleep(0.005)
        waiting.tick()


def turn_starts(store, session_id):
    """turn/start events in the session's log (0 before it exists or while a line is being written)."""
    import store_layout  # tests/tools, on the path of every crash test
    path = store_layout.log_path(store, session_id)
    try:
        return sum(1 for e in store_layout.read_log(path)[1:] if e["type"] == "turn/start") if path else 0
    except (ValueError, subprocess.CalledProcessError):
        return 0
