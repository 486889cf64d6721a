#!/usr/bin/env python3
"""An MCP server that misbehaves on purpose, for the client's failure paths.

  silent      reads requests and never answers
  badversion  answers initialize with a protocol version nobody speaks
  dies        writes to stderr and exits at once with status 7
  noisy       prints a line that is not JSON-RPC before every answer, then behaves (one tool, "ok")
  tidy        behaves (one tool, "ok"); when its stdin closes, appends "stdin closed" to the file named by
              $DSH_MCP_FAKE_MARK and exits 0 (a graceful stop, not a kill)
"""
import json
import os
import sys

mode = sys.argv[1]
if mode == "dies":
    sys.stderr.write("fatal: no configuration found\n")
    sys.stderr.flush()
    sys.exit(7)


def send(obj):
    if mode == "noisy":
        sys.stdout.write("debug: about to answer\n")
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    msg = json.loads(line)
    if mode == "silent" or "id" not in msg:
        continue
    if msg["method"] == "initialize":
        version = "1999-01-01" if mode == "badversion" else msg["params"]["protocolVersion"]
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": version, "capabilities": {"tools": {}},
                                                               "serverInfo": {"name": "fake", "version": "0"}}})
    elif msg["method"] == "tools/list":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": [{"name": "ok", "inputSchema": {"type": "object"}}]}})
    elif msg["method"] == "tools/call":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": "fine"}]}})

if mode == "tidy":
    with open(os.environ["DSH_MCP_FAKE_MARK"], "a") as mark:
        mark.write("stdin closed\n")
