#!/usr/bin/env python3
"""An MCP server that misbehaves on purpose, for the client's failure paths.

  silent      reads requests and never answers
  badversion  answers initialize with a protocol version nobody speaks
  dies        writes to stderr and exits at once with status 7
  noisy       prints a line that is not JSON-RPC before every answer, then behaves (one tool, "ok")
  tidy        behaves (one tool, "ok"); when its stdin closes, appends "stdin closed" to the file named by
              $DSH_MCP_FAKE_MARK and exits 0 (a graceful stop, not a kill)
  spawner     before serving (as tidy), leaves two `sleep 1000` behind: one in a session of its own
              (setsid), one double-forked (its parent exits at once); their pids, one a line, go to
              the file named by $DSH_MCP_FAKE_MARK
  environ     before serving (as tidy), writes to the file named by $DSH_MCP_FAKE_MARK its own
              environment and that of every ancestor it can read (/proc/PID/environ), NUL-separated
  hangs       behaves, but never answers a call of its tool "hang"; its tool "cancelled" answers with the
              request ids of the notifications/cancelled it has read
  many N [B]  lists N tools per tools/list page, each with a description of B bytes (default 20), and
              always another page (a nextCursor); with B=0 only its first page has tools
  heavy       lists one tool per page, each answer padded to 1 MiB, and always another page
  chatty      before answering a tools/call, sends 100 notifications/message of 1 MiB each, then 1,000 of 2 KiB
"""
import json
import os
import subprocess
import sys

mode = sys.argv[1]
if mode == "spawner":
    quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    alone = subprocess.Popen(["sleep", "1000"], start_new_session=True, **quiet)
    forked = subprocess.run(["sh", "-c", "sleep 1000 >/dev/null 2>&1 </dev/null & echo $!"], capture_output=True,
                            text=True, check=True)
    with open(os.environ["DSH_MCP_FAKE_MARK"] + ".tmp", "w") as mark:
        mark.write(f"{alone.pid}\n{forked.stdout.strip()}\n")
    os.rename(os.environ["DSH_MCP_FAKE_MARK"] + ".tmp", os.environ["DSH_MCP_FAKE_MARK"])
if mode == "environ":
    seen = [b"self:"] + [e.encode() for e in (f"{k}={v}" for k, v in os.environ.items())]
    pid = os.getppid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                seen += [f"ancestor {pid}:".encode()] + f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            break
    with open(os.environ["DSH_MCP_FAKE_MARK"] + ".tmp", "wb") as mark:
        mark.write(b"\0".join(seen))
    os.rename(os.environ["DSH_MCP_FAKE_MARK"] + ".tmp", os.environ["DSH_MCP_FAKE_MARK"])
if mode == "dies":
    sys.stderr.write("fatal: no configuration found\n")
    sys.stderr.flush()
    sys.exit(7)


def send(obj):
    if mode == "noisy":
        sys.stdout.write("debug: about to answer\n")
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


cancelled = []


def tools_page(msg):
    page = int(msg.get("params", {}).get("cursor", "0"))
    if mode == "many":
        count, described = int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 20
        tools = [{"name": f"t{page}_{i}", "description": "d" * described, "inputSchema": {"type": "object"}}
                 for i in range(count if described or page == 0 else 0)]
        return {"tools": tools, "nextCursor": str(page + 1)}
    if mode == "heavy":
        return {"tools": [{"name": f"t{page}", "inputSchema": {"type": "object"}}], "padding": "p" * (1 << 20),
                "nextCursor": str(page + 1)}
    names = ["ok", "hang", "cancelled"] if mode == "hangs" else ["ok"]
    return {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in names]}


for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "notifications/cancelled":
        cancelled.append(msg["params"]["requestId"])
    if mode == "silent" or "id" not in msg:
        continue
    if msg["method"] == "initialize":
        version = "1999-01-01" if mode == "badversion" else msg["params"]["protocolVersion"]
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": version, "capabilities": {"tools": {}},
                                                               "serverInfo": {"name": "fake", "version": "0"}}})
    elif msg["method"] == "tools/list":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": tools_page(msg)})
    elif msg["method"] == "tools/call":
        tool = msg["params"]["name"]
        if tool == "hang":
            continue
        if mode == "chatty":
            for i in range(1100):
                send({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "info", "data": f"{i}:" + "m" * (1 << 20 if i < 100 else 2048)}})
        text = json.dumps(cancelled) if tool == "cancelled" else "fine"
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": text}]}})

if mode == "tidy":
    with open(os.environ["DSH_MCP_FAKE_MARK"], "a") as mark:
        mark.write("stdin closed\n")
