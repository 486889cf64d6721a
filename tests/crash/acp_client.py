"""A minimal ACP client for process-level tests: runs the real dsh-acp binary over pipes and reads
its frames with deadlines (stdlib only)."""
import json
import os
import select
import signal
import subprocess
import time


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

    def wait(self, rid, timeout=20.0):
        deadline = time.monotonic() + timeout
        while rid not in self.responses:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no response to id {rid} within {timeout} s")
            if not self.pump(left):
                raise AssertionError(f"stdout ended before the response to id {rid}; stderr: {self.stderr_text()}")
        return self.responses[rid]

    def call(self, method, params, timeout=20.0):
        return self.wait(self.send(method, params), timeout)

    def ok(self, method, params, timeout=20.0):
        r = self.call(method, params, timeout)
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
        self.proc.wait(timeout=10)
        self._close_pipes()

    def close(self, timeout=10):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("dsh-acp did not exit after stdin EOF")
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


def wait_until(condition, what, timeout=10.0, client=None):
    """Re-checks `condition` (pumping `client`'s frames meanwhile) until it holds; fails after `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        if client:
            client.pump(0.005)
        else:
            time.sleep(0.005)


def turn_starts(store, session_id):
    """turn/start events in the session's log (0 before it exists or while a line is being written)."""
    import store_layout  # tests/tools, on the path of every crash test
    path = store_layout.log_path(store, session_id)
    try:
        return sum(1 for e in store_layout.read_log(path)[1:] if e["type"] == "turn/start") if path else 0
    except (ValueError, subprocess.CalledProcessError):
        return 0
