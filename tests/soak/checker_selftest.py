"""Proof that check_logs.py catches what it checks: copies of logs of a soak's plain JSONL store get one
damage per log (a prompt removed, a prompt's text changed, a turn written twice, a seq gap, a snapshot text that the source
never had, a turn left open by a writer that was not killed), and each must be reported."""
import json
import os
import shutil

import check_logs


def load_lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def save_lines(path, recs):
    with open(path, "w", encoding="utf-8") as f:
        for r in recs:
            f.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")


def renumber(recs):
    for i, r in enumerate(recs[1:]):
        r["seq"] = i


def user_token(e):
    if e["type"] == "user/message" and e["data"].get("source", {}).get("kind") == "user":
        found = check_logs.TOKEN.findall(check_logs.text_content(e["data"]["content"]))
        return found[0] if found else None
    return None


def remove_prompt(recs, answered):
    for r in recs[1:]:
        tok = user_token(r)
        if tok in answered:
            recs.remove(r)
            renumber(recs)
            return f"lost: prompt {tok}"
    return None


def alter_user_text(recs, answered):
    for r in recs[1:]:
        if user_token(r) in answered:
            r["data"]["content"][0]["text"] += " (edited)"
            return "the prompt sent"
    return None


def duplicate_turn(recs, _answered):
    ends = [i for i, r in enumerate(recs) if r.get("type") == "turn/end" and r["data"]["reason"]["kind"] == "completed"]
    if not ends or recs[-1].get("type") != "turn/end":
        return None
    end = ends[0]
    start = max(i for i in range(end) if recs[i].get("type") == "turn/start")
    recs += json.loads(json.dumps(recs[start:end + 1]))
    renumber(recs)
    return "duplicated or missing turn"


def seq_gap(recs, _answered):
    for r in recs[1:]:
        if r["type"] == "assistant/chunk":
            recs.remove(r)
            return "seqs must be 0, 1, 2"
    return None


def alter_snapshot(recs, _answered):
    for r in recs[1:]:
        d = r.get("data", {})
        if r["type"] == "user/message" and d.get("source", {}).get("kind") == "session-reference":
            text = d["content"][0]["text"]
            body = text[len(check_logs.PROMPT_PREFIX):-len(check_logs.PROMPT_SUFFIX)]
            data = json.loads(body)
            if not data[0]["conversation"]:
                continue
            data[0]["conversation"][0]["text"] += " (never said)"
            body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
            d["content"][0]["text"] = check_logs.PROMPT_PREFIX + body + check_logs.PROMPT_SUFFIX
            return f"seq {r['seq']} reference 0"
    return None


def open_last_turn(recs, answered):
    last = recs[-1]
    if last.get("type") != "turn/end" or last["data"]["reason"]["kind"] != "completed":
        return None
    start = max(i for i in range(len(recs)) if recs[i].get("type") == "turn/start")
    if not any(user_token(r) in answered for r in recs[start:]):
        return None
    recs.pop()
    return "left open by a writer that was not killed"


DAMAGES = (remove_prompt, alter_user_text, duplicate_turn, seq_gap, alter_snapshot, open_last_turn)


def run(store, ledger, scratch):
    """Returns (failures, damages applied). Only the damaged logs (and the sources of the damaged
    snapshot) are copied, so the cost does not grow with the soak's length."""
    copy = os.path.join(scratch, "damaged")
    answered = {p["token"] for p in ledger["prompts"] if p["outcome"] in check_logs.ANSWERED}
    paths = sorted(os.path.join(d, f) for d, _s, fs in os.walk(store) for f in fs if f.endswith(".jsonl"))
    by_id = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            by_id[json.loads(f.readline())["id"]] = path
    expected, used = [], set()

    def place(path, recs):
        target = os.path.join(copy, os.path.relpath(path, store))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        save_lines(target, recs)
        used.add(path)
        return target

    for damage in DAMAGES:
        for path in paths:
            if path in used:
                continue
            recs = load_lines(path)
            needle = damage(recs, answered)
            if not needle:
                continue
            expected.append((damage.__name__, place(path, recs), needle))
            if damage is alter_snapshot:
                for r in recs[1:]:
                    if r.get("type") == "user/message" and r["data"].get("source", {}).get("kind") == "session-reference":
                        for ref in r["data"]["source"]["references"]:
                            src = by_id[ref["sessionId"]]
                            if src not in used:
                                place(src, load_lines(src))
            break
    failures = [f"no log to apply {d.__name__} to" for d in DAMAGES if d.__name__ not in [e[0] for e in expected]]
    copied = {json.loads(open(os.path.join(d, f), encoding="utf-8").readline())["id"]
              for d, _s, fs in os.walk(copy) for f in fs}
    subset = {"prompts": [p for p in ledger["prompts"] if p["sessionId"] in copied]}
    violations, _stats = check_logs.check_store(copy, subset)
    for name, path, needle in expected:
        if not any(needle in v and (path in v or name == "remove_prompt") for v in violations):
            failures.append(f"the checker missed {name} in {path} (expected a violation with {needle!r})")
    shutil.rmtree(copy, ignore_errors=True)
    return failures, len(expected)
