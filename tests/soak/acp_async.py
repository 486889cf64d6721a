"""One real dsh-acp process driven over its stdio with asyncio: requests run concurrently, each
awaits its own answer; a process that dies fails every pending request with Gone."""
import asyncio
import json


class Gone(Exception):
    """The process died (killed) before answering."""


class RpcError(Exception):
    def __init__(self, error):
        super().__init__(f"{error.get('code')} {error.get('message')}")
        self.error = error
        self.code = error.get("code")
        self.data_code = (error.get("data") or {}).get("code", "")


class Process:
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
            env=self.env, limit=1 << 26)
        self.reader = asyncio.create_task(self._read())

    async def _read(self):
        try:
            while True:
                line = await self.proc.stdout.readline()
                if not line.endswith(b"\n"):
                    self.torn_frame = bool(line)  # killed in the middle of writing a frame
                    break
                frame = json.loads(line)
                if "method" in frame:
                    if frame["method"] == "session/update":
                        p = frame["params"]
                        u = p["update"]
                        if u.get("sessionUpdate") == "user_message_chunk":
                            self.user_chunks.setdefault(p["sessionId"], []).append(u["content"].get("text", ""))
                    continue
                fut = self.pending.pop(frame.get("id"), None)
                if fut is not None and not fut.done():
                    fut.set_result(frame)
        finally:
            self.dead = True
            for fut in self.pending.values():
                if not fut.done():
                    fut.set_exception(Gone())
            self.pending.clear()

    def _write(self, frame):
        if self.dead:
            raise Gone()
        try:
            self.proc.stdin.write((json.dumps(frame) + "\n").encode())
        except (BrokenPipeError, ConnectionResetError, RuntimeError):
            raise Gone()

    async def request(self, method, params, timeout):
        self.next_id += 1
        rid = self.next_id
        fut = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        try:
            frame = await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            self.pending.pop(rid, None)
            raise
        if "error" in frame:
            raise RpcError(frame["error"])
        return frame["result"]

    def notify(self, method, params):
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

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
