"""The one ACP client of the Python tests and benches: runs the real dsh-acp binary over pipes and
speaks newline-delimited JSON-RPC to it (stdlib only).

One framing (encode, Lines) under two faces: Client, synchronous, for the process-level tests and
benches; AsyncClient, asyncio, for the soak, whose many requests run at once. Raw bytes (a malformed
or oversized frame) go through Client.write_raw, so even those tests use the one pipe discipline.

Waits have no time limit and never sleep: each blocks on an event (a frame on stdout, a pidfd
becoming readable at process exit, an inotify event on a watched path). A loaded machine is slow,
not wrong, so a test never fails by taking long; one that never ends is caught by CTest's TIMEOUT,
and meanwhile a note on stderr every SLOW_WAIT seconds names what it waits for.

Tests and benches put this directory on sys.path:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
(from bench/: "..", "tests", "common")."""
import asyncio
import ctypes
import ctypes.util
import json
import os
import select
import signal
import struct
import subprocess
import sys
import time

SLOW_WAIT = 10.0


# ---- framing: one JSON value a line -----------------------------------------------------------------

def encode(frame):
    """The bytes of one frame: compact JSON text and its newline."""
    return (json.dumps(frame) + "\n").encode()


def request(rid, method, params=None):
    frame = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        frame["params"] = params
    return frame


def notification(method, params=None):
    frame = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        frame["params"] = params
    return frame


def response(rid, result=None, error=None):
    """A response to a request of the server: its result, or an error object ({code, message})."""
    if error is not None:
        return {"jsonrpc": "2.0", "id": rid, "error": error}
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def is_response(frame):
    return "method" not in frame and "id" in frame


class Lines:
    """Splits a byte stream into frames (without their newline). A caller may stop taking frames
    between two of them and go on later: nothing read is lost (frames_read, bytes_read count)."""

    def __init__(self):
        self.buf = b""
        self.pos = 0
        self.frames_read = 0
        self.bytes_read = 0

    def feed(self, chunk):
        self.bytes_read += len(chunk)
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0

    def next(self):
        """The next whole frame, or None until more bytes are fed."""
        nl = self.buf.find(b"\n", self.pos)
        if nl < 0:
            return None
        line = self.buf[self.pos:nl]
        self.pos = nl + 1
        self.frames_read += 1
        return line

    def rest(self):
        """Bytes after the last newline (at EOF: a frame cut off by a kill)."""
        return self.buf[self.pos:]


# ---- waiting on events -----------------------------------------------------------------------------

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


def wait_readable(fds, what):
    """Blocks until one of `fds` (file descriptors or objects with fileno()) is readable; returns those
    that are. The select timeout only paces the note on stderr."""
    waiting = Waiting(what)
    while True:
        ready, _, _ = select.select(list(fds), [], [], SLOW_WAIT)
        if ready:
            return ready
        waiting.tick()


def wait_gone(pid, what):
    """Blocks until process `pid` (any process, not only a child) has exited: its pidfd becomes readable."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        wait_readable([fd], what)
    finally:
        os.close(fd)


def wait_exit(proc, what):
    """`proc`'s exit code, once it has exited (a subprocess.Popen child)."""
    if proc.poll() is None:
        wait_gone(proc.pid, what)
    return proc.wait()


IN_ACCESS, IN_MODIFY, IN_CLOSE_WRITE, IN_OPEN = 0x1, 0x2, 0x8, 0x20
IN_MOVED_TO, IN_CREATE, IN_DELETE, IN_ISDIR = 0x80, 0x100, 0x200, 0x40000000
CHANGES = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE


class Inotify:
    """Linux inotify through libc: watched files and directory trees; readable when something happened."""
    _EVENT = struct.Struct("iIII")

    def __init__(self):
        self.libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.dirs = {}  # watch descriptor -> directory of a watched tree
        self.tree_mask = 0

    def fileno(self):
        return self.fd

    def watch(self, path, mask):
        wd = self.libc.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {path}")
        return wd

    def watch_tree(self, root, mask=CHANGES):
        """Every directory under `root`, and each one created later (added as its creation is read)."""
        self.tree_mask = mask | IN_CREATE | IN_MOVED_TO
        for d, _, _ in os.walk(root):
            self._watch_dir(d)

    def _watch_dir(self, d):
        try:
            self.dirs[self.watch(d, self.tree_mask)] = d
        except OSError:
            pass  # gone again already

    def drain(self):
        """Reads the pending events (watching the directories they created); their count."""
        n = 0
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return n
            at = 0
            while at < len(data):
                wd, mask, _, length = self._EVENT.unpack_from(data, at)
                name = data[at + 16:at + 16 + length].rstrip(b"\0")
                at += 16 + length
                n += 1
                if mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO) and wd in self.dirs:
                    for d, _, _ in os.walk(os.path.join(self.dirs[wd], os.fsdecode(name))):
                        self._watch_dir(d)

    def close(self):
        os.close(self.fd)


def wait_until(condition, what, client=None, watch=None, recheck=None):
    """Re-checks `condition` each time an event may have changed it, until it holds: a frame on
    `client`'s stdout (read into client.frames) or an event of the Inotify `watch`. At least one is
    needed. `recheck` (seconds) is only for state no event announces (a PostgreSQL row, read with
    psql: the `.pg` variants); a test on files never passes it."""
    if client is None and watch is None and recheck is None:
        raise ValueError("wait_until needs an event source (a client or an inotify watch)")
    waiting = Waiting(what)
    fds = ([client.proc.stdout] if client else []) + ([watch] if watch else [])
    while not condition():
        ready, _, _ = select.select(fds, [], [], recheck if recheck is not None else SLOW_WAIT)
        if client and client.proc.stdout in ready and not client.pump():
            if not condition():
                raise AssertionError(f"stdout ended before {what}; stderr: {client.stderr_text()}")
            return
        if watch and watch in ready:
            watch.drain()
        waiting.tick()


# ---- the synchronous face ----------------------------------------------------------------------------

def spawn(binary, args, env, stderr=subprocess.PIPE):
    """The server process with its stdio on pipes (unbuffered: a frame written is in the pipe)."""
    return subprocess.Popen([binary, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                            env=env, bufsize=0)


class Client:
    """One server on the echo provider (unless `args` name another), log file in `home`."""

    def __init__(self, binary, home, args=(), store=None, env=None):
        self.home = home
        env = dict(os.environ, DSH_ACP_HOME=home, **(env or {}))
        argv = ["--provider", "echo", "--log-file", os.path.join(home, "dsh-acp.log")]
        if store:
            argv += ["--store", store]
        self.proc = spawn(binary, argv + list(args), env)
        self.lines = Lines()
        self.next_id = 0
        self.frames = []      # every frame read so far, in order
        self.responses = {}   # id -> response frame
        self.eof = False

    # ---- writing ---------------------------------------------------------------------------------
    def write_raw(self, data):
        """Bytes to stdin as they are (a test of malformed or huge frames); False once the pipe is closed."""
        try:
            self.proc.stdin.write(data)
            return True
        except (BrokenPipeError, OSError):
            return False

    def send(self, method, params):
        self.next_id += 1
        self.write_raw(encode(request(self.next_id, method, params)))
        return self.next_id

    def notify(self, method, params):
        self.write_raw(encode(notification(method, params)))

    def respond(self, rid, result=None, error=None):
        self.write_raw(encode(response(rid, result, error)))

    # ---- reading ---------------------------------------------------------------------------------
    def pump(self, timeout=None):
        """Reads what stdout has (blocking until something comes, or for at most `timeout` seconds);
        returns False at EOF."""
        if self.eof:
            return False
        if timeout is not None and not select.select([self.proc.stdout], [], [], max(0.0, timeout))[0]:
            return True
        chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
        if not chunk:
            self.eof = True
            return False
        self.lines.feed(chunk)
        while (line := self.lines.next()) is not None:
            f = json.loads(line)
            self.frames.append(f)
            if is_response(f):
                self.responses[f["id"]] = f
        return True

    def wait(self, rid):
        waiting = Waiting(f"the response to id {rid}")
        while rid not in self.responses:
            if select.select([self.proc.stdout], [], [], SLOW_WAIT)[0] and not self.pump():
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
            if self.proc.poll() is not None and self.proc.stderr:
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
                if p:
                    p.close()
            except OSError:
                pass


# ---- the asyncio face --------------------------------------------------------------------------------

class Gone(Exception):
    """The process died (killed) before answering."""


class RpcError(Exception):
    def __init__(self, error):
        super().__init__(f"{error.get('code')} {error.get('message')}")
        self.error = error
        self.code = error.get("code")
        self.data_code = (error.get("data") or {}).get("code", "")


class AsyncClient:
    """One server process driven with asyncio: requests run concurrently, each awaits its own answer;
    a process that dies fails every pending request with Gone. Same framing as Client."""

    def __init__(self, argv, env, stderr):
        self.argv, self.env, self.stderr = argv, env, stderr
        self.proc = None
        self.next_id = 0
        self.pending = {}
        self.user_chunks = {}  # sessionId -> replayed user texts, in order
        self.reader = None
        self.dead = False
        self.torn_frame = False
        self.expected_exit = False  # set before we kill or close it; otherwise an exit is a crash

    async def start(self):
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=self.stderr,
            env=self.env)
        self.reader = asyncio.create_task(self._read())

    async def _read(self):
        lines = Lines()
        try:
            while True:
                chunk = await self.proc.stdout.read(1 << 16)
                if not chunk:
                    self.torn_frame = bool(lines.rest())  # killed in the middle of writing a frame
                    break
                lines.feed(chunk)
                while (line := lines.next()) is not None:
                    self._take(json.loads(line))
        finally:
            self.dead = True
            for fut in self.pending.values():
                if not fut.done():
                    fut.set_exception(Gone())
            self.pending.clear()

    def _take(self, frame):
        if "method" in frame:
            if frame["method"] == "session/update":
                p = frame["params"]
                u = p["update"]
                if u.get("sessionUpdate") == "user_message_chunk":
                    self.user_chunks.setdefault(p["sessionId"], []).append(u["content"].get("text", ""))
            return
        fut = self.pending.pop(frame.get("id"), None)
        if fut is not None and not fut.done():
            fut.set_result(frame)

    def _write(self, frame):
        if self.dead:
            raise Gone()
        try:
            self.proc.stdin.write(encode(frame))
        except (BrokenPipeError, ConnectionResetError, RuntimeError):
            raise Gone()

    async def request(self, method, params, timeout):
        self.next_id += 1
        rid = self.next_id
        fut = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        self._write(request(rid, method, params))
        try:
            frame = await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            self.pending.pop(rid, None)
            raise
        if "error" in frame:
            raise RpcError(frame["error"])
        return frame["result"]

    def notify(self, method, params):
        self._write(notification(method, params))

    def kill9(self):
        self.expected_exit = True
        if self.proc.returncode is None:
            self.proc.kill()

    async def wait_dead(self):
        await self.proc.wait()
        await self.reader

    async def close(self, timeout):
        """stdin EOF; returns the exit code (None if it did not exit in time, then it is killed)."""
        self.expected_exit = True
        try:
            self.proc.stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            code = await asyncio.wait_for(self.proc.wait(), timeout)
        except asyncio.TimeoutError:
            self.proc.kill()
            await self.proc.wait()
            code = None
        await self.reader
        return code


# ---- the server's state, read from outside -----------------------------------------------------------

def blocked_flocks(pid):
    """flock() calls of process `pid` blocked on a lock another holds (the `->` lines of /proc/locks)."""
    n = 0
    with open("/proc/locks") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 5 and parts[1] == "->" and parts[2] == "FLOCK" and parts[5] == str(pid):
                n += 1
    return n


class FlockWaits:
    """Waits until a process has flock() calls blocked (/proc/locks) on lock files under `root`.
    The kernel announces no lock wait; the nearest event is the lock file's open (inotify IN_OPEN),
    which the server does just before flock() in the same thread. So /proc/locks is re-read at each
    open, and after one, with the CPU given away between reads, until the wait shows. Made before
    the requests that will wait, so that no open is missed."""

    def __init__(self, root):
        self.watch = Inotify()
        self.watch.watch_tree(root, IN_OPEN)
        self.opened = False

    def wait(self, pid, at_least, what):
        waiting = Waiting(what)
        while blocked_flocks(pid) < at_least:
            if self.watch.drain():
                self.opened = True
            elif self.opened:
                os.sched_yield()  # an open came: its flock() is a few instructions away
            else:
                wait_readable([self.watch], what)
            waiting.tick()

    def close(self):
        self.watch.close()


def open_fd(pid, path):
    """The descriptor under which process `pid` has `path` open, or None."""
    fds = f"/proc/{pid}/fd"
    for fd in os.listdir(fds):
        try:
            if os.path.realpath(os.path.join(fds, fd)) == path:
                return fd
        except OSError:
            pass
    return None


class OpenWatch:
    """Waits until a process has a file open, woken by the file's opens (inotify IN_OPEN). Made
    before the request that opens it, so that no open is missed."""

    def __init__(self, path):
        self.path = os.path.realpath(path)
        self.watch = Inotify()
        self.watch.watch(self.path, IN_OPEN)

    def wait(self, pid, what, client=None, stop=lambda: False):
        """The descriptor once `pid` has the file open; None once `stop()` holds first (re-checked at
        each open and, with `client`, each frame it reads)."""
        found = [None]

        def seen():
            found[0] = open_fd(pid, self.path)
            return found[0] is not None or stop()

        wait_until(seen, what, client=client, watch=self.watch)
        return found[0]

    def close(self):
        self.watch.close()


def turn_starts(store, session_id):
    """turn/start events in the session's log (0 before it exists or while a line is being written)."""
    import store_layout  # tests/tools, on the path of every test that asks
    path = store_layout.log_path(store, session_id)
    try:
        return sum(1 for e in store_layout.read_log(path)[1:] if e["type"] == "turn/start") if path else 0
    except (ValueError, subprocess.CalledProcessError):
        return 0
