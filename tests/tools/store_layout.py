"""Layout-aware access to a session store root for the Python tests (crash, shutdown, refs, soak).

A root holds one of the harness's two layouts ("generations"):
  45fc  <root>/cwd-<12 hex of sha256(cwd)>/<encodeSegment(id)>.jsonl[.zstd]        (docs/store-format.md#flat-layout-45fc)
  0.1   <root>/--<projectKey(cwd)>--/<encodeSegment(id)>/session.jsonl[.zstd]       (docs/store-format.md#project-layout-01)
(`_no-cwd` for a session without a cwd, in both). The server gives a new root the layout of
--store-generation / DSH_ACP_STORE_GENERATION (45fc by default) and keeps the layout an existing
root holds, so the suite runs against either. These helpers find logs in a root of either layout (by
looking at what the root holds), read events in one normalised model (the 45fc shape, see
normalise_event) and write hand-made logs in the root's layout and shapes. The JavaScript twin is
tests/e2e/lib/store.mjs.
"""
import copy
import hashlib
import json
import os
import subprocess
import uuid

LOG_NAMES = ("session.jsonl", "session.jsonl.zstd")

# The layout a new root takes in this run: DSH_ACP_STORE_GENERATION, else 45fc (the server's default).
DEFAULT_GENERATION = "0.1" if os.environ.get("DSH_ACP_STORE_GENERATION") == "0.1" else "45fc"


def _utf16_units(s):
    b = s.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(b[i:i + 2], "little") for i in range(0, len(b), 2)]


def _kept(u):
    return u < 128 and (chr(u).isalnum() or chr(u) in "._-")


def encode_segment(session_id):
    """encodeSegment(): per UTF-16 unit keep [A-Za-z0-9._-], else ~XXXX; "." and ".." fully escaped."""
    if session_id == ".":
        return "~002E"
    if session_id == "..":
        return "~002E~002E"
    return "".join(chr(u) if _kept(u) else "~%04X" % u for u in _utf16_units(session_id))


def bucket_name(cwd):
    """The 45fc bucket: cwd-<first 12 hex of sha256(cwd)>, or _no-cwd."""
    return "_no-cwd" if cwd is None else "cwd-" + hashlib.sha256(cwd.encode()).hexdigest()[:12]


def project_key(cwd):
    """projectKey(cwd) of the 0.1 layout (docs/store-format.md#projectkey; src/store/layout.cpp project_key)."""
    assert cwd, "cannot encode an empty project path"
    out, in_run = [], False
    for u in _utf16_units(cwd):
        if u in (0x2F, 0x5C, 0x3A):  # / \ :
            if not in_run:
                out.append("-")
            in_run = True
            continue
        in_run = False
        out.append(chr(u) if _kept(u) else "~%04X" % u)
    key = "".join(out).lstrip("-") or "root"
    return key[:251]


def project_dir(cwd):
    """The 0.1 project directory: --<projectKey(cwd)>--, or _no-cwd."""
    return "_no-cwd" if cwd is None else "--" + project_key(cwd) + "--"


def is_log_name(name):
    return name.endswith(".jsonl") or name.endswith(".jsonl.zstd")


def generation_of(store):
    """The layout a root holds: "0.1" when a directory of the root holds a session directory with a
    session.jsonl[.zstd], "45fc" when one holds a flat log; else the layout a new root takes."""
    flat = False
    if os.path.isdir(store):
        for b in os.listdir(store):
            bdir = os.path.join(store, b)
            if not os.path.isdir(bdir):
                continue
            for n in os.listdir(bdir):
                if is_log_name(n):
                    flat = True
                elif any(os.path.isfile(os.path.join(bdir, n, f)) for f in LOG_NAMES):
                    return "0.1"
    return "45fc" if flat else DEFAULT_GENERATION


def log_files(store):
    """Every log file in a root, of either layout and encoding (sorted paths)."""
    out = []
    if not os.path.isdir(store):
        return out
    for b in os.listdir(store):
        bdir = os.path.join(store, b)
        if not os.path.isdir(bdir) or os.path.islink(bdir):
            continue
        for n in os.listdir(bdir):
            p = os.path.join(bdir, n)
            if is_log_name(n) and os.path.isfile(p):
                out.append(p)
            elif os.path.isdir(p):
                out += [os.path.join(p, f) for f in LOG_NAMES if os.path.isfile(os.path.join(p, f))]
    return sorted(out)


def segment_of(path):
    """The encoded session id a log file belongs to (its file name in 45fc, its directory in 0.1)."""
    base = os.path.basename(path)
    if base in LOG_NAMES:
        return os.path.basename(os.path.dirname(path))
    return base[:-len(".jsonl.zstd")] if base.endswith(".zstd") else base[:-len(".jsonl")]


def is_v01_log(path):
    return os.path.basename(path) in LOG_NAMES


def log_path(store, session_id):
    """The log of `session_id` in `store`, or None when there is none; raises when there are several."""
    name = encode_segment(session_id)
    found = [f for f in log_files(store) if segment_of(f) == name]
    if len(found) > 1:
        raise AssertionError(f"several logs for {session_id}: {found}")
    return found[0] if found else None


def log_path_for(store, session_id, cwd, generation=None, encoding="none"):
    """Where the log of a session would be in a root of `generation` ("45fc"/"0.1") and `encoding`."""
    generation = generation or generation_of(store)
    suffix = ".jsonl.zstd" if encoding == "zstd" else ".jsonl"
    if generation == "0.1":
        return os.path.join(store, project_dir(cwd), encode_segment(session_id), "session" + suffix)
    return os.path.join(store, bucket_name(cwd), encode_segment(session_id) + suffix)


def store_root_of(path):
    """The store root a log file lives in."""
    up = 3 if is_v01_log(path) else 2
    for _ in range(up):
        path = os.path.dirname(path)
    return path


def read_lines(path):
    """The log's complete lines as stored, parsed (zstd through the zstd CLI): [header, *events]."""
    if path.endswith(".zstd"):
        data = subprocess.run(["zstd", "-dcq", path], stdout=subprocess.PIPE, check=True).stdout
    else:
        with open(path, "rb") as f:
            data = f.read()
    return [json.loads(l) for l in data.split(b"\n") if l.strip()]


# ---- the normalised model -------------------------------------------------------------------


def _is_id(v):
    return isinstance(v, str) and v != ""


def _drop_message_id(where, seq, data, role=None):
    if "id" not in data and "role" not in data:
        return data
    assert _is_id(data.get("id")), f"seq {seq}: {where} has a message id: {json.dumps(data)[:200]}"
    if role is not None:
        assert data.get("role") == role, f"seq {seq}: {where} role {data.get('role')!r}"
    return {k: v for k, v in data.items() if k not in ("id", "role")}


def normalise_event(event):
    """One event in the normalised model: the 45fc shape (a new object).

    Step 1 mirrors src/store/event_model.cpp (normalise_event), so a 0.1.1 line reads as the server
    reads it:
      assistant/message  data.message{role, content, source{kind:'model', ...provenance}, id} -> data{content, provenance}
      tool/result        data.message{source, content:[tool-result], role, id}                -> data{callId, content, isError}
      turn/end           reason {kind:'error', error}                                         -> reason {kind:'error', failure}
      compaction/start|summary|end                                                            -> compact/start|summary|end
    Step 2 takes off, after checking it, the identity 0.1.1 adds and 45fc does not have: message ids
    (and role) on user/message, assistant/message and tool/result, the compaction id on compact/* and
    on the checkpoint's source, the recall source's form:'recall', an aborted turn's reason
    {kind:'user'} (what event_model.cpp's to_v01_record writes), so a check written against the 45fc
    shape checks the same fact in either layout. A 45fc line passes through unchanged.
    """
    e = copy.deepcopy(event)
    d = e.get("data")
    seq = e.get("seq")
    t = e.get("type")
    if not isinstance(d, dict):
        return e
    if t == "assistant/message":
        msg = d.get("message")
        if isinstance(msg, dict) and "content" not in d and "content" in msg:
            assert msg.get("role") == "assistant" and _is_id(msg.get("id")), f"seq {seq}: assistant message {msg}"
            source = msg.get("source") or {}
            assert source.get("kind") == "model", f"seq {seq}: assistant source {source}"
            out = {}
            for k, v in d.items():
                if k == "message":
                    out["content"] = msg["content"]
                    out["provenance"] = {sk: sv for sk, sv in source.items() if sk != "kind"}
                else:
                    out[k] = v
            e["data"] = out
        else:
            e["data"] = _drop_message_id(t, seq, d)
    elif t == "tool/result":
        msg = d.get("message")
        block = msg["content"][0] if isinstance(msg, dict) and isinstance(msg.get("content"), list) \
            and len(msg["content"]) == 1 and isinstance(msg["content"][0], dict) else None
        if block is not None and block.get("type") == "tool-result" and "content" not in d:
            assert msg.get("role") == "user" and _is_id(msg.get("id")), f"seq {seq}: tool result {msg}"
            source = msg.get("source") or {}
            assert source.get("kind") == "tool" and source.get("callId") == block.get("toolCallId"), \
                f"seq {seq}: tool result source {source}"
            out = {}
            for k, v in d.items():
                if k != "message":
                    out[k] = v
                    continue
                out["callId"] = block.get("toolCallId", source.get("callId"))
                if "content" in block:
                    out["content"] = block["content"]
                if "isError" in block:
                    out["isError"] = block["isError"]
            e["data"] = out
        else:
            e["data"] = _drop_message_id(t, seq, d)
    elif t == "turn/end":
        r = d.get("reason")
        if isinstance(r, dict) and r.get("kind") == "error" and isinstance(r.get("error"), dict) and "failure" not in r:
            d["reason"] = {("failure" if k == "error" else k): v for k, v in r.items()}
        elif isinstance(r, dict) and r.get("kind") == "aborted" and r.get("reason") == {"kind": "user"}:
            d["reason"] = {"kind": "aborted"}
    elif t in ("compaction/start", "compaction/summary", "compaction/end", "compact/start", "compact/summary", "compact/end"):
        e["type"] = t.replace("compaction/", "compact/")
        if "compactionId" in d:
            assert _is_id(d["compactionId"]), f"seq {seq}: compactionId"
            del d["compactionId"]
    elif t in ("user/message", "steering/message"):
        data = _drop_message_id(t, seq, d, "user")
        s = data.get("source")
        if isinstance(s, dict) and s.get("kind") == "plugin" and s.get("plugin") == "compact" and "compactionId" in s:
            assert _is_id(s["compactionId"]), f"seq {seq}: checkpoint compactionId"
            del s["compactionId"]
        if isinstance(s, dict) and s.get("kind") == "session-reference" and "form" in s:
            assert s["form"] == "recall", f"seq {seq}: session-reference form {s['form']!r}"
            data["source"] = {k: v for k, v in s.items() if k != "form"}
        e["data"] = data
    return e


def read_log(path):
    """[header, *events] of a log with every event normalised."""
    lines = read_lines(path)
    return lines[:1] + [normalise_event(e) for e in lines[1:]]


# ---- writing hand-made logs -----------------------------------------------------------------


def to_v01(event, state):
    """A 45fc-shaped event in the shape 0.1.1 writes (mirrors to_v01_record and assign_v01_ids in
    src/store/event_model.cpp). `state` (a dict) carries the open compaction's id across calls."""
    d = event.get("data")
    if not isinstance(d, dict):
        return event
    t = event["type"]

    def env(type_, data):
        out = {"type": type_, "seq": event["seq"], "time": event["time"], "data": data}
        for k in ("sourceEventSeqs", "surfaceOp"):
            if k in event:
                out[k] = event[k]
        return out

    def pick(keys):
        return {k: d[k] for k in keys if k in d}

    if t == "turn/start":
        return env(t, pick(["turn"]))
    if t == "turn/end":
        r = d.get("reason") or {"kind": "completed"}
        reason = {"kind": r["kind"]}
        if r["kind"] == "aborted":
            reason["reason"] = r["reason"] if isinstance(r.get("reason"), dict) else {"kind": "user"}
        elif r["kind"] == "error":
            reason["error"] = r.get("failure") or r.get("error") or {"message": r.get("message", ""), "code": r.get("code") or "UNKNOWN"}
        elif r["kind"] == "disposed":
            reason = {"kind": "aborted", "reason": {"kind": "disposed"}}
        return env(t, {**pick(["turn"]), "reason": reason})
    if t in ("user/message", "steering/message"):
        source = d.get("source")
        if isinstance(source, dict) and source.get("kind") == "plugin" and source.get("plugin") == "compact" \
                and "compactionId" not in source and state.get("compactionId"):
            source = {**source, "compactionId": state["compactionId"]}
        recall = isinstance(source, dict) and source.get("kind") == "session-reference"
        if recall and "form" not in source:
            source = {"kind": source["kind"], "form": "recall", **{k: v for k, v in source.items() if k != "kind"}}
        data = {"source": source, "content": d.get("content")} if recall else {"content": d.get("content"), "source": source}
        return env("user/message", {**data, "role": "user", "id": d.get("id") or str(uuid.uuid4())})
    if t == "assistant/message":
        message = {"role": "assistant", "content": d.get("content", []),
                   "source": {"kind": "model", **(d.get("provenance") or {})}, "id": d.get("id") or str(uuid.uuid4())}
        return env(t, {**pick(["turn", "step"]), "message": message, **pick(["interrupted", "usage"])})
    if t == "tool/result":
        block = {"type": "tool-result", "toolCallId": d.get("callId"), "content": d.get("content", []),
                 "isError": d.get("isError", False)}
        message = {"source": {"kind": "tool", "callId": d.get("callId")}, "content": [block], "role": "user",
                   "id": d.get("id") or str(uuid.uuid4())}
        return env(t, {**pick(["turn", "step"]), "message": message, **pick(["error", "meta"])})
    if t == "compact/start":
        state["compactionId"] = d.get("compactionId") or str(uuid.uuid4())
        return env("compaction/start", {"compactionId": state["compactionId"], **pick(["sourceCommandId", "turn"])})
    if t == "compact/summary":
        state.setdefault("compactionId", str(uuid.uuid4()))
        return env("compaction/summary", {"compactionId": state["compactionId"], **pick(
            ["sourceCommandId", "summary", "rawOutput", "llmStreamCall", "shadowedRange", "shadowedSeqs",
             "shadowedTokenCount", "provider", "model", "maxTokens", "usage"])})
    if t == "compact/end":
        cid = state.pop("compactionId", None) or str(uuid.uuid4())
        return env("compaction/end", {"compactionId": cid, **pick(["sourceCommandId", "turn", "error"])})
    return event


def event_writer(generation):
    """A function mapping a 45fc-shaped event to the shape of `generation` (with its own state)."""
    if generation != "0.1":
        return lambda e: e
    state = {}
    return lambda e: to_v01(e, state)


def open_new_log(store, header, generation=None):
    """Creates the raw log of `header`'s session where the root's layout puts it (dirs 0700, log
    0600), writes the header line and returns (open text file, path)."""
    path = log_path_for(store, header["id"], header.get("cwd"), generation)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    f = os.fdopen(fd, "w", encoding="utf-8")
    f.write(json.dumps(header, separators=(",", ":")) + "\n")
    return f, path
