#!/usr/bin/env python3
"""Golden session logs of the deepseek-harness 0.1.1 store (docs/store-format.md#release-011-shapes),
written by our own generator from the facts of that format, beside the same conversations in the 45fc shapes
(docs/store-format.md).

Every scenario is one list of logical events; each event has its 0.1.1 shape and its 45fc shape.
The two logs of a scenario hold the same events at the same seqs, so whatever dsh-acp derives from
them (replay frames, the model's conversation, a reference snapshot) must be the same: that is the
oracle the tests use, besides direct checks of the 0.1 shapes.

    generate.py OUT_DIR CWD [--dsh-home DIR] [--harness-valid]

writes OUT_DIR/{v01-raw,v01-zstd,v45-raw,v45-zstd}/ (four store roots; the zstd 0.1 root packs
chunk runs into rows as 0.1.1's packChunks does) and, with --dsh-home, the attachment objects of the
images (one present, one missing on purpose). Ids: "01-<scenario>" and "45-<scenario>".
--harness-valid leaves out the one event 0.1.1 itself refuses (an unknown type not marked
ignorable), so the 0.1 roots can be checked by the harness's own reader (tests/harness-check).
Uses only the standard library and the `zstd` command.
"""
import hashlib
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from store_layout import encode_segment, project_key  # noqa: E402  (one implementation of the naming rules)

T0 = 1783352050748
PREAMBLE = ('This is an automatically generated checkpoint condensing an earlier span of the conversation to free up '
            'context. Treat the captured context as established background and build on it without restating it. '
            'Continue the task directly from the messages that follow, without acknowledging this checkpoint.')
IMAGE_PRESENT = b'\x89PNG\r\n\x1a\n' + b'golden-image-bytes' * 8
IMAGE_MISSING_HEX = 'ab' * 32


def sha(b):
    return hashlib.sha256(b).hexdigest()


def js(o):
    """JSON.stringify: no spaces, non-ASCII kept."""
    return json.dumps(o, separators=(',', ':'), ensure_ascii=False)


def text(t):
    return {'type': 'text', 'text': t}


class Log:
    """Builds one scenario: every add() appends the same logical event to both generations."""

    def __init__(self, name, cwd, agent_preset=None):
        self.name = name
        self.cwd = cwd
        self.events = []  # (v01 dict, v45 dict)
        self.batches = []  # [start, end) index ranges: one append batch each
        self.batch_start = 0
        self.nodes = []  # surface seqs (append / replace), to place replaces
        self.header = {}
        self.agent_preset = agent_preset

    def seq(self):
        return len(self.events)

    def add(self, typ, v01, v45=None, surface=None, sources=None, ignorable=False):
        seq = self.seq()
        time = T0 + 10 * seq
        both = []
        for data in (v01, v45 if v45 is not None else v01):
            e = {'type': typ, 'seq': seq, 'time': time, 'data': data}
            if sources is not None:
                e['sourceEventSeqs'] = sources
            if surface is not None:
                e['surfaceOp'] = surface
            if ignorable:
                e['ignorable'] = True
            both.append(e)
        if typ in ('compaction/start', 'compaction/summary', 'compaction/end'):
            both[1]['type'] = 'compact/' + typ.split('/')[1]
        self.events.append(tuple(both))
        if surface == 'append':
            self.nodes.append(seq)
        return seq

    def flush(self):
        """Ends an append batch (one zstd frame)."""
        if self.batch_start < self.seq():
            self.batches.append((self.batch_start, self.seq()))
        self.batch_start = self.seq()

    # ---- the shapes of docs/store-format.md#release-011-shapes / docs/store-format.md#event-types ----

    def turn_start(self, turn):
        return self.add('turn/start', {'turn': turn}, {'turn': turn, 'trigger': {'kind': 'message', 'source': {'kind': 'user'}}})

    def turn_end(self, turn, reason01, reason45=None):
        return self.add('turn/end', {'turn': turn, 'reason': reason01}, {'turn': turn, 'reason': reason45 or reason01})

    def user(self, blocks, mid, source=None):
        source = source or {'kind': 'user'}
        return self.add('user/message', {'content': blocks, 'source': source, 'role': 'user', 'id': mid},
                        {'content': blocks, 'source': source}, surface='append')

    def chunks(self, turn, step, pieces):
        """pieces: (chunk dict) list; returns their seqs."""
        return [self.add('assistant/chunk', {'turn': turn, 'step': step, 'chunk': c}) for c in pieces]

    def assistant(self, turn, step, blocks, mid, sources, usage=None, interrupted=False):
        msg = {'role': 'assistant', 'content': blocks,
               'source': {'kind': 'model', 'provider': 'deepseek', 'model': 'deepseek-chat'}, 'id': mid}
        d01 = {'turn': turn, 'step': step, 'message': msg}
        d45 = {'turn': turn, 'step': step, 'content': blocks, 'provenance': {'provider': 'deepseek', 'model': 'deepseek-chat'}}
        if interrupted:
            d01['interrupted'] = True
            d45['interrupted'] = True
        if usage:
            d01['usage'] = usage
            d45['usage'] = usage
        return self.add('assistant/message', d01, d45, surface='append', sources=sources)

    def tool_call(self, turn, step, call_id, name, args):
        return self.add('tool/call', {'turn': turn, 'step': step, 'callId': call_id, 'name': name, 'arguments': args})

    def tool_result(self, turn, step, call_id, blocks, mid, call_seq, is_error=False, error=None, replace=None):
        msg = {'source': {'kind': 'tool', 'callId': call_id},
               'content': [{'type': 'tool-result', 'toolCallId': call_id, 'content': blocks, 'isError': is_error}],
               'role': 'user', 'id': mid}
        d01 = {'turn': turn, 'step': step, 'message': msg}
        d45 = {'turn': turn, 'step': step, 'callId': call_id, 'content': blocks, 'isError': is_error}
        if error:
            d01['error'] = error
            d45['error'] = error
        if replace is not None:
            seq = self.add('tool/result', d01, d45, surface={'op': 'replace', 'start': replace, 'end': replace},
                           sources=[replace])
            self.nodes[self.nodes.index(replace)] = seq
            return seq
        return self.add('tool/result', d01, d45, surface='append', sources=[call_seq])

    def step(self, typ, turn, step):
        return self.add(typ, {'turn': turn, 'step': step})


def image(hexdigest, size, name):
    return {'type': 'image', 'attachment': {'attachmentId': 'sha256:' + hexdigest, 'mediaType': 'image/png',
                                            'width': 64, 'height': 32, 'bytes': size, 'name': name}}


def stream(log, turn, step, reasoning, answer, call=None):
    """The chunks of one step: reasoning and text deltas (three pieces each), a tool call's deltas."""
    pieces = [{'type': 'block-start', 'index': 0, 'blockType': 'reasoning'}]
    pieces += [{'type': 'reasoning-delta', 'index': 0, 'text': p} for p in reasoning]
    pieces += [{'type': 'block-end', 'index': 0, 'block': {'type': 'reasoning', 'text': ''.join(reasoning)}},
               {'type': 'block-start', 'index': 1, 'blockType': 'text'}]
    pieces += [{'type': 'text-delta', 'index': 1, 'text': p} for p in answer]
    pieces += [{'type': 'block-end', 'index': 1, 'block': {'type': 'text', 'text': ''.join(answer)}}]
    if call:
        cid, name, args = call
        third = len(args) // 3
        parts = [args[:third], args[third:2 * third], args[2 * third:]]
        pieces += [{'type': 'tool-call-delta', 'index': 2, 'id': cid, 'name': name, 'argumentsDelta': parts[0]}]
        pieces += [{'type': 'tool-call-delta', 'index': 2, 'id': cid, 'argumentsDelta': p} for p in parts[1:]]
    pieces += [{'type': 'usage', 'usage': {'inputTokens': 120, 'outputTokens': 30}},
               {'type': 'finish', 'reason': {'kind': 'tool-calls' if call else 'stop'}}]
    return log.chunks(turn, step, pieces)


HARNESS_VALID = False


def scenario_tools(cwd):
    """A harness 0.1.1 coding session: tools, images, a plan, every opaque plugin record, an aborted,
    a failed and a blocked turn, a pruned tool result and an idle compaction."""
    log = Log('tools', cwd, agent_preset='default')
    log.add('agent-preset/selected', {'agentPreset': 'default'})
    log.add('permission/preset', {'preset': 'ask'})
    log.add('sandbox/mode', {'mode': 'workspace-write'})
    log.add('approval/policy', {'policy': 'on-request'})
    log.flush()
    # Turn 1: read, edit, bash, then the answer.
    prompt = [text('Read the config and fix the typo in it.'), image(sha(IMAGE_PRESENT), len(IMAGE_PRESENT), 'screenshot.png')]
    log.turn_start(1)
    log.add('agent/inbox/spliced', {'target': 'next-turn', 'start': 0,
                                    'inserted': [{'content': prompt, 'source': {'kind': 'user'}, 'role': 'user', 'id': 'msg-u1'}]})
    log.step('step/start', 1, 1)
    u1 = log.user(prompt, 'msg-u1')
    log.add('request/header', {'header': {'config': {'provider': 'deepseek', 'model': 'deepseek-chat'},
                                          'system': 'You are a coding agent.'}, 'reason': 'initial'})
    log.add('request/context', {'provider': 'deepseek', 'model': 'deepseek-chat', 'contextWindow': 128000})
    log.add('hook/invoked', {'hook': 'agent/pre-step', 'plugin': 'golden'})
    log.add('hook/result', {'hook': 'agent/pre-step', 'plugin': 'golden', 'outcome': 'continue'})
    log.flush()
    read_args = js({'file_path': 'src/config.ts'})
    c = stream(log, 1, 1, ['Looking ', 'at the ', 'config.'], ['Let me ', 'read ', 'it.'], ('call-read', 'read', read_args))
    log.flush()
    log.assistant(1, 1, [{'type': 'reasoning', 'text': 'Looking at the config.'}, text('Let me read it.'),
                         {'type': 'tool-call', 'id': 'call-read', 'name': 'read', 'arguments': read_args}],
                  'msg-a1', c, usage={'inputTokens': 120, 'outputTokens': 30})
    call = log.tool_call(1, 1, 'call-read', 'read', read_args)
    log.add('approval/asked', {'callId': 'call-read', 'tool': 'read'})
    log.add('approval/decided', {'callId': 'call-read', 'decision': 'allow'})
    read_result = log.tool_result(1, 1, 'call-read', [text('export const nmae = "demo";\n')], 'msg-t1', call)
    log.step('step/end', 1, 1)
    log.flush()
    log.step('step/start', 1, 2)
    log.add('llm/retry-started', {'retryId': 'r1', 'turn': 1, 'step': 2})
    log.add('llm/retry', {'retryId': 'r1', 'turn': 1, 'step': 2, 'provider': 'deepseek', 'mode': 'auto',
                          'policyKey': 'default', 'retry': 1, 'maxRetries': 3, 'delayMs': 500,
                          'failure': {'message': 'rate limited', 'code': 'PROVIDER_RATE_LIMIT'}})
    edit_args = js({'file_path': 'src/config.ts', 'old_string': 'nmae', 'new_string': 'name'})
    c = stream(log, 1, 2, ['A typo: ', 'nmae ', '-> name.'], ['Fixing ', 'the ', 'typo.'], ('call-edit', 'edit', edit_args))
    log.assistant(1, 2, [{'type': 'reasoning', 'text': 'A typo: nmae -> name.'}, text('Fixing the typo.'),
                         {'type': 'tool-call', 'id': 'call-edit', 'name': 'edit', 'arguments': edit_args}], 'msg-a2', c)
    call = log.tool_call(1, 2, 'call-edit', 'edit', edit_args)
    log.add('tool-workflow/run-start', {'runId': 'w1'})
    log.add('tool-workflow/agent-start', {'runId': 'w1', 'agent': 'edit'})
    log.add('tool/code-dispatch-start', {'rootCallId': 'call-edit', 'parentCallId': 'call-edit', 'subCallId': 's1',
                                         'name': 'edit', 'arguments': edit_args})
    log.add('tool/code-dispatch', {'rootCallId': 'call-edit', 'subCallId': 's1', 'ok': True})
    log.add('tool-workflow/agent-end', {'runId': 'w1', 'agent': 'edit'})
    log.add('tool-workflow/run-end', {'runId': 'w1'})
    log.tool_result(1, 2, 'call-edit', [text('Edited src/config.ts (1 replacement).')], 'msg-t2', call)
    log.add('todo/write', {'todos': [{'content': 'Fix the typo', 'status': 'completed', 'activeForm': 'Fixing the typo'},
                                     {'content': 'Run the tests', 'status': 'in_progress', 'activeForm': 'Running the tests'},
                                     {'content': 'Report back', 'status': 'pending', 'activeForm': 'Reporting back'}]})
    log.step('step/end', 1, 2)
    log.flush()
    log.step('step/start', 1, 3)
    bash_args = js({'command': 'npm test', 'timeout': 60000})
    c = stream(log, 1, 3, ['Now ', 'the ', 'tests.'], ['Running ', 'the ', 'tests.'], ('call-bash', 'bash', bash_args))
    log.assistant(1, 3, [{'type': 'reasoning', 'text': 'Now the tests.'}, text('Running the tests.'),
                         {'type': 'tool-call', 'id': 'call-bash', 'name': 'bash', 'arguments': bash_args}], 'msg-a3', c)
    call = log.tool_call(1, 3, 'call-bash', 'bash', bash_args)
    log.tool_result(1, 3, 'call-bash', [text('1 failing: expected "name"')], 'msg-t3', call, is_error=True,
                    error={'name': 'CommandFailedError', 'code': 'EXIT_1'})
    log.step('step/end', 1, 3)
    log.step('step/start', 1, 4)
    c = stream(log, 1, 4, ['One ', 'test ', 'fails.'], ['Fixed ', 'the ', 'typo.'])
    log.assistant(1, 4, [{'type': 'reasoning', 'text': 'One test fails.'}, text('Fixed the typo.')], 'msg-a4', c,
                  usage={'inputTokens': 300, 'outputTokens': 12, 'cacheReadTokens': 200})
    log.step('step/end', 1, 4)
    log.turn_end(1, {'kind': 'completed'})
    log.flush()
    # Outside any turn: a title, plugin records, commands.
    log.add('session/title', {'title': 'Read the config and fix', 'messageSeqs': [u1], 'source': {'kind': 'fallback'}})
    log.add('session/title-llm-request', {'provider': 'deepseek', 'model': 'deepseek-chat'})
    for typ, data in [('plan/mode', {'enabled': False}), ('goal/change', {'goalId': 'g1', 'revision': 1}),
                      ('schedule/change', {'scheduleId': 's1'}), ('feedback/record', {'rating': 'up'}),
                      ('team/member', {'memberId': 'm1'}), ('team/task', {'taskId': 't1'}),
                      ('team/message/queued', {'messageId': 'tm1'}), ('team/message/delivered', {'messageId': 'tm1'}),
                      ('subagent/descriptor', {'sessionId': 'child-1'}),
                      ('web/deepseek-search-llm-request', {'query': 'typo'})]:
        log.add(typ, data)
    log.add('future/ignorable-thing', {'note': 'a newer harness wrote this'}, ignorable=True)
    if not HARNESS_VALID:
        log.add('future/unknown-thing', {'note': 'not marked ignorable'})
    log.flush()
    # Turn 2: aborted by the user mid-stream.
    log.turn_start(2)
    log.step('step/start', 2, 1)
    log.user([text('Now run the whole suite.'), image(IMAGE_MISSING_HEX, 4096, 'gone.png')], 'msg-u2')
    c = log.chunks(2, 1, [{'type': 'text-delta', 'index': 0, 'text': 'Running '},
                          {'type': 'text-delta', 'index': 0, 'text': 'the suite'}])
    log.assistant(2, 1, [text('Running the suite')], 'msg-a5', c, interrupted=True)
    log.step('step/end', 2, 1)
    log.turn_end(2, {'kind': 'aborted', 'reason': {'kind': 'user'}}, {'kind': 'aborted'})
    log.flush()
    # Turn 3: the provider fails.
    log.turn_start(3)
    log.step('step/start', 3, 1)
    log.user([text('Try again please.')], 'msg-u3')
    log.step('step/end', 3, 1)
    log.turn_end(3, {'kind': 'error', 'error': {'message': 'upstream returned 500', 'code': 'PROVIDER_HTTP', 'status': 500}},
                 {'kind': 'error', 'step': 1, 'failure': {'message': 'upstream returned 500', 'code': 'PROVIDER_HTTP', 'status': 500}})
    log.flush()
    # The read result is pruned (compaction/prune, then the replacing tool/result), then an idle
    # /compact condenses turn 1's surface (compaction/* with turn null).
    log.add('compaction/prune', {'shadowedRange': {'start': read_result, 'end': read_result},
                                 'shadowedSeqs': [read_result], 'shadowedTokenCount': 12})
    log.tool_result(1, 1, 'call-read', [text('[tool output pruned]')], 'msg-t1', None, replace=read_result)
    log.flush()
    log.add('command/run', {'commandId': 'cmd-1', 'name': 'compact', 'source': {'kind': 'user'}})
    first, last = log.nodes[0], log.nodes[log.nodes.index(u1) + 7]  # turn 1: prompt .. final answer
    shadowed = log.nodes[log.nodes.index(first):log.nodes.index(last) + 1]
    start = log.add('compaction/start', {'compactionId': 'cmp-1', 'sourceCommandId': 'cmd-1', 'turn': None},
                    {'turn': None})
    summary = [text('## Goal\n- fix the typo in src/config.ts\n## Done\n- fixed; one test still fails')]
    sdata = {'shadowedRange': {'start': first, 'end': last}, 'shadowedSeqs': shadowed, 'shadowedTokenCount': 2100,
             'provider': 'deepseek', 'model': 'deepseek-chat'}
    summ = log.add('compaction/summary', {'compactionId': 'cmp-1', 'sourceCommandId': 'cmd-1', 'summary': summary, **sdata},
                   {'summary': summary, **sdata})
    content = [text(PREAMBLE + '\n\n<compacted-summary>'), *summary, text('</compacted-summary>')]
    cp = log.add('user/message',
                 {'content': content, 'source': {'kind': 'plugin', 'plugin': 'compact', 'compactionId': 'cmp-1',
                                                 'sourceCommandId': 'cmd-1'}, 'role': 'user', 'id': 'msg-cp'},
                 {'content': content, 'source': {'kind': 'plugin', 'plugin': 'compact'}},
                 surface={'op': 'replace', 'start': first, 'end': last}, sources=[start, summ, *shadowed])
    i, j = log.nodes.index(first), log.nodes.index(last)
    log.nodes[i:j + 1] = [cp]
    log.add('compaction/end', {'compactionId': 'cmp-1', 'sourceCommandId': 'cmd-1', 'turn': None}, {'turn': None})
    log.add('command/done', {'commandId': 'cmd-1'})
    log.flush()
    # Turn 4: blocked before its first step; then the end of a resume seed.
    log.turn_start(4)
    log.user([text('Deploy it.')], 'msg-u4')
    log.turn_end(4, {'kind': 'blocked'})
    log.add('session/end-seed', {})
    log.flush()
    return log


def scenario_recall(cwd, other_id):
    """0.1.1's reference order: the direct message (mentions as @label), then the recall message."""
    log = Log('recall', cwd)
    log.turn_start(1)
    log.step('step/start', 1, 1)
    log.user([text('What did @Typo fix decide?')], 'msg-r1')
    snapshot = '## Referenced sessions\n\n(the snapshot text)'
    ref = {'sessionId': other_id, 'label': 'Typo fix', 'capturedThroughSeq': 10, 'compacted': False,
           'originalMessages': 2, 'retainedMessages': 2, 'omittedMessages': 0, 'omittedBytes': 0, 'truncated': False,
           'inputIndex': 0}
    log.add('user/message', {'source': {'kind': 'session-reference', 'form': 'recall', 'version': 1, 'references': [ref]},
                             'content': [text(snapshot)], 'role': 'user', 'id': 'msg-r2'},
            {'content': [text(snapshot)], 'source': {'kind': 'session-reference', 'version': 1, 'references': [ref]}},
            surface='append')
    c = log.chunks(1, 1, [{'type': 'text-delta', 'index': 0, 'text': 'It renamed '},
                          {'type': 'text-delta', 'index': 0, 'text': 'a field.'}])
    log.assistant(1, 1, [text('It renamed a field.')], 'msg-r3', c)
    log.step('step/end', 1, 1)
    log.turn_end(1, {'kind': 'completed'})
    log.flush()
    return log


# ---- writing ----

def pack(events):
    """packChunks (docs/store-format.md#packed-chunk-rows): runs of >= 3 text/reasoning deltas with the
    same turn, step and index become one row."""
    out, k = [], 0
    while k < len(events):
        e = events[k]
        kind = e['data'].get('chunk', {}).get('type') if e['type'] == 'assistant/chunk' else None
        if kind in ('text-delta', 'reasoning-delta'):
            key = (kind, e['data']['turn'], e['data']['step'], e['data']['chunk']['index'])
            j = k
            while (j + 1 < len(events) and events[j + 1]['type'] == 'assistant/chunk'
                   and events[j + 1]['data']['chunk'].get('type') == kind
                   and (kind, events[j + 1]['data']['turn'], events[j + 1]['data']['step'],
                        events[j + 1]['data']['chunk']['index']) == key):
                j += 1
            if j - k + 1 >= 3:
                run = events[k:j + 1]
                out.append({'type': 'text-chunks' if kind == 'text-delta' else 'reasoning-chunks', 'seq0': e['seq'],
                            'time0': e['time'],
                            'data': {'turn': key[1], 'step': key[2], 'index': key[3],
                                     'dt': [run[i + 1]['time'] - run[i]['time'] for i in range(len(run) - 1)],
                                     'texts': [r['data']['chunk']['text'] for r in run]}})
                k = j + 1
                continue
        out.append(e)
        k += 1
    return out


def zstd_frame(plain):
    return subprocess.run(['zstd', '-q', '-c', '--check', '--no-progress'], input=plain.encode(), check=True,
                          stdout=subprocess.PIPE).stdout


def write_log(root, gen, log, sid, zstd, packed):
    header = {'type': 'session', 'version': 0, 'id': sid, 'createdAt': T0 + (1000 if log.name == 'recall' else 0),
              'cwd': log.cwd, 'delegationDepth': 0}
    if gen == 'v01' and log.agent_preset:
        header['agentPreset'] = log.agent_preset
    pick = 0 if gen == 'v01' else 1
    suffix = '.jsonl.zstd' if zstd else '.jsonl'
    if gen == 'v01':
        d = os.path.join(root, '--' + project_key(log.cwd) + '--', encode_segment(sid))
        path = os.path.join(d, 'session' + suffix)
    else:
        d = os.path.join(root, 'cwd-' + hashlib.sha256(log.cwd.encode()).hexdigest()[:12])
        path = os.path.join(d, encode_segment(sid) + suffix)
    os.makedirs(d, mode=0o700, exist_ok=True)
    with open(path, 'wb') as f:
        first = js(header) + '\n'
        f.write(zstd_frame(first) if zstd else first.encode())
        for a, b in log.batches:
            events = [e[pick] for e in log.events[a:b]]
            if packed:
                events = pack(events)
            plain = ''.join(js(e) + '\n' for e in events)
            f.write(zstd_frame(plain) if zstd else plain.encode())
    os.chmod(path, 0o600)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    out, cwd = argv[1], argv[2]
    dsh_home = argv[argv.index('--dsh-home') + 1] if '--dsh-home' in argv else None
    global HARNESS_VALID
    HARNESS_VALID = '--harness-valid' in argv
    for gen, prefix in (('v01', '01'), ('v45', '45')):
        for zstd in (False, True):
            root = os.path.join(out, '%s-%s' % (gen, 'zstd' if zstd else 'raw'))
            os.makedirs(root, mode=0o700, exist_ok=True)
            write_log(root, gen, scenario_tools(cwd), prefix + '-tools', zstd, packed=(gen == 'v01' and zstd))
            write_log(root, gen, scenario_recall(cwd, prefix + '-tools'), prefix + '-recall', zstd, packed=False)
    if dsh_home:
        hexd = sha(IMAGE_PRESENT)
        obj = os.path.join(dsh_home, 'attachments', 'v1', 'objects', hexd[:2])
        os.makedirs(obj, exist_ok=True)
        with open(os.path.join(obj, hexd), 'wb') as f:
            f.write(IMAGE_PRESENT)


if __name__ == '__main__':
    main(sys.argv)
