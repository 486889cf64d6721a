#!/usr/bin/env python3
"""Scripted echo prompts against one server, for instruction counts and byte comparisons (issue 31 in
bench/README.md): initialize, then SESSIONS sessions of PER sequential prompts each (texts with
quotes, backslashes, a tab, C0 controls, an accented letter, an emoji and U+2028), every frame the
server writes kept in OUT (its stdout bytes). BIN may be a command line, e.g.
"valgrind --tool=callgrind --callgrind-out-file=cg.30 build/dsh-acp"; the instructions per prompt
are (total of 30 sessions - total of 10 sessions) / 100 with PER = 5.
Usage: prompt_driver.py BIN HOME SESSIONS PER OUT [extra server args, e.g. --store-compression none]"""
import json, os, subprocess, sys
binary, home, sessions, per, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
extra = sys.argv[6:]
os.makedirs(home, exist_ok=True)
env = dict(os.environ, DSH_ACP_HOME=home, DSH_HOME=os.path.join(home, "no-harness-home"))
p = subprocess.Popen(binary.split() + ["--provider", "echo", *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=0)
texts = ["ping", "h\u00e9llo \"quoted\" \\ back\tslash", "emoji \U0001F600 and \u2028 sep", "ctl \x01\x1f end", "plain text prompt number five"]
buf = b""
raw = open(out, "wb")
nid = 0
def send(method, params):
    global nid
    nid += 1
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": nid, "method": method, "params": params}) + "\n").encode())
    return nid
def wait(rid):
    global buf
    while True:
        nl = buf.find(b"\n")
        while nl < 0:
            chunk = os.read(p.stdout.fileno(), 1 << 20)
            if not chunk:
                raise SystemExit("server closed stdout")
            raw.write(chunk)
            buf += chunk
            nl = buf.find(b"\n")
        line, buf = buf[:nl], buf[nl + 1:]
        if b'"method"' in line[:40]:
            continue
        f = json.loads(line)
        if f.get("id") == rid:
            if "error" in f:
                raise SystemExit(f"error: {f}")
            return f
wait(send("initialize", {"protocolVersion": 1}))
for s in range(sessions):
    sid = wait(send("session/new", {"cwd": home, "mcpServers": []}))["result"]["sessionId"]
    for k in range(per):
        wait(send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": texts[k % len(texts)]}]}))
p.stdin.close()
raw.write(p.stdout.read())
p.wait()
