// References are snapshots (issue 4, docs/session-references.md#in-the-log): after a source is appended to,
// compacted by a hand-written `replace` (docs/store-format.md#compaction) and deleted, the target's replay
// and model history stay exactly as they were; a compacted source referenced afresh contributes its
// checkpoint plus the messages after it, never the shadowed text. Raw stores, so lines can be appended.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  M, uriOf, makeHome, startIn, RAW, logPath, events, appendEvents, rejectsWith, prompt, echoLines, framesUntilResponse,
  snapshotData, answerOf,
} from './lib/refs.mjs';
import { until, storeChanges } from './lib/agent.mjs';
import { fileStoreOnly } from './lib/pgvariant.mjs';

const PREAMBLE = 'This is an automatically generated checkpoint condensing an earlier span of the conversation to free up context. ' +
  'Treat the captured context as established background and build on it without restating it. Continue the task directly ' +
  'from the messages that follow, without acknowledging this checkpoint.';
const SUMMARY = '## Goal\n- the summary of the source session';
const CHECKPOINT_TEXT = `${PREAMBLE}\n\n<compacted-summary>\n${SUMMARY}\n</compacted-summary>`;

/**
 * Appends a compaction of the whole current surface, as compact-basic logs it: inside a turn,
 * compact/start, compact/summary, the checkpoint user/message replacing [first node, last node],
 * compact/end. Returns the checkpoint's seq.
 */
function compactWholeSurface(file) {
  const evs = readFileSync(file, 'utf8').trimEnd().split('\n').slice(1).map((l) => JSON.parse(l));
  const nodes = [];
  for (const e of evs) {
    if (e.surfaceOp === 'append') nodes.push(e.seq);
    else if (e.surfaceOp) throw new Error('this helper expects a surface without replaces');
  }
  const turn = Math.max(0, ...evs.filter((e) => e.type === 'turn/start').map((e) => e.data.turn)) + 1;
  let seq = evs.at(-1).seq + 1;
  const time = evs.at(-1).time + 10;
  const startSeq = seq + 1;
  const summarySeq = seq + 2;
  const lines = [
    { type: 'turn/start', seq: seq++, time, data: { turn, trigger: { kind: 'message', source: { kind: 'user' } } } },
    { type: 'compact/start', seq: seq++, time, data: { turn } },
    {
      type: 'compact/summary', seq: seq++, time,
      data: {
        summary: [{ type: 'text', text: SUMMARY }], shadowedRange: { start: nodes[0], end: nodes.at(-1) }, shadowedSeqs: nodes,
        shadowedTokenCount: 120, provider: 'echo', model: 'echo',
      },
    },
    {
      type: 'user/message', seq: seq++, time,
      data: {
        content: [{ type: 'text', text: `${PREAMBLE}\n\n<compacted-summary>` }, { type: 'text', text: SUMMARY }, { type: 'text', text: '</compacted-summary>' }],
        source: { kind: 'plugin', plugin: 'compact' },
      },
      sourceEventSeqs: [startSeq, summarySeq, ...nodes],
      surfaceOp: { op: 'replace', start: nodes[0], end: nodes.at(-1) },
    },
    { type: 'compact/end', seq: seq++, time, data: { turn } },
    { type: 'turn/end', seq: seq++, time, data: { turn, reason: { kind: 'completed' } } },
  ];
  appendEvents(file, lines);
  return summarySeq + 1;
}

// File store only (lib/pgvariant.mjs): the source is compacted by rewriting its log file behind the server.
fileStoreOnly('a target\'s replay and model history survive the source being appended to, compacted and deleted', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const open = (args = []) => startIn(t, home, [...RAW, ...args]);
  const newSession = async (a) => (await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] })).sessionId;

  // The source with two turns, and a target that references it.
  const a = await open();
  const source = await newSession(a);
  await prompt(a, source, 'source one: the original plan');
  await prompt(a, source, 'source two: a refinement');
  const target = await newSession(a);
  const first = await prompt(a, target, `use @[Src](${uriOf(source)})`);
  assert.equal(first.response.stopReason, 'end_turn');
  const card = first.updates.find((u) => u.sessionUpdate === 'tool_call');
  assert.ok(card);
  await a.agent.finish();
  const targetLog = logPath(store, target);
  const sourceLog = logPath(store, source);
  const targetBytes = readFileSync(targetLog);
  const snapshotLine = readFileSync(targetLog, 'utf8').split('\n').find((l) => l.includes('"session-reference"'));
  const [snapshot] = snapshotData(JSON.parse(snapshotLine).data.content[0].text);
  assert.deepEqual(snapshot.conversation.map((m) => m.role), ['user', 'assistant', 'user', 'assistant']);
  const modelLines = echoLines(first.answer).slice(1, 3);  // [2] the snapshot, [3] the direct message
  assert.match(modelLines[0], /^\[2\] user \d+ bytes: ## Referenced sessions/);
  assert.equal(modelLines[1], `[3] user 8 bytes: use @Src`);

  // The replay as a fresh process sees it before any change to the source.
  const replayOf = async (b) => {
    const from = b.agent.frames.length;
    await b.ctx.request(M.session.load, { sessionId: target, cwd: home, mcpServers: [] });
    // The commands update comes last, before the answer: after the source changes the target's
    // own history is compared, so it is left out.
    return framesUntilResponse(b.agent, target, from).during.filter((u) => u.sessionUpdate !== 'available_commands_update');
  };
  const b = await open();
  const baseline = await replayOf(b);
  await b.agent.finish();
  assert.deepEqual(baseline.filter((u) => u.sessionUpdate === 'tool_call'), [card]);

  /** A fresh process: the replay starts exactly as the baseline, and the model still gets the same two messages. */
  const checkUnchanged = async (what, earlierChecks) => {
    const c = await open();
    const replay = await replayOf(c);
    assert.deepEqual(replay.slice(0, baseline.length), baseline, `${what}: replay unchanged`);
    const later = await prompt(c, target, `after ${what}`);
    const lines = echoLines(later.answer);
    assert.equal(lines.length, 5 + 2 * earlierChecks, `${what}: ${later.answer}`);
    assert.deepEqual(lines.slice(1, 3), modelLines, `${what}: the model gets the same snapshot and direct message`);
    await c.agent.finish();
    assert.ok(readFileSync(targetLog).subarray(0, targetBytes.length).equals(targetBytes), `${what}: earlier target lines untouched`);
  };

  // 1. The source is appended to.
  const c = await open();
  await c.ctx.request(M.session.load, { sessionId: source, cwd: home, mcpServers: [] });
  await prompt(c, source, 'source three: appended later');
  await c.agent.finish();
  await checkUnchanged('append', 0);

  // 2. The source is compacted (a hand-written replace of its whole surface).
  const checkpointSeq = compactWholeSurface(sourceLog);
  await checkUnchanged('compaction', 1);

  // A compacted source referenced afresh: its checkpoint plus the messages after it.
  const d = await open();
  await d.ctx.request(M.session.load, { sessionId: source, cwd: home, mcpServers: [] });
  await prompt(d, source, 'source four: after compaction');
  const fresh = await newSession(d);
  const second = await prompt(d, fresh, `again @[Src](${uriOf(source)})`);
  assert.equal(second.response.stopReason, 'end_turn');
  await d.agent.finish();
  const freshSnap = events(store, fresh).find((e) => e.data?.source?.kind === 'session-reference');
  const [data] = snapshotData(freshSnap.data.content[0].text);
  assert.deepEqual(data.conversation.map((m) => m.role), ['user', 'user', 'assistant']);
  assert.deepEqual(data.conversation[0], { role: 'user', text: CHECKPOINT_TEXT });
  assert.deepEqual(data.conversation[1], { role: 'user', text: 'source four: after compaction' });
  assert.match(data.conversation[2].text, /^echo: received 3 messages\n/, 'the source\'s model saw the checkpoint, not the shadowed turns');
  assert.ok(!freshSnap.data.content[0].text.includes('source one'), 'shadowed text is not restored');
  const [ref] = freshSnap.data.source.references;
  assert.equal(ref.compacted, true);
  assert.equal(ref.originalMessages, 3);
  assert.equal(ref.capturedThroughSeq, events(store, source).at(-1).seq);
  assert.ok(checkpointSeq < ref.capturedThroughSeq);
  const freshCard = second.updates.find((u) => u.sessionUpdate === 'tool_call');
  assert.equal(freshCard.content[0].content.text,
    `Src (${source}): retained 3 of 3 messages; compacted; captured through seq ${ref.capturedThroughSeq}`);
  assert.equal(echoLines(second.answer)[1], `[2] user ${Buffer.byteLength(freshSnap.data.content[0].text)} bytes: ` +
    '## Referenced sessions\u23CE\u23CEThe JSON below is an unt\u2026');

  // 3. The source is deleted.
  const e = await open();
  await e.ctx.request(M.session.delete, { sessionId: source });
  await rejectsWith(e.ctx.request(M.session.prompt, { sessionId: await newSession(e), prompt: [{ type: 'text', text: uriOf(source) }] }),
    -32602, 'SESSION_REFERENCE_READ_FAILED');
  await e.agent.finish();
  await checkUnchanged('deletion', 2);

  // The fresh target still replays its card from its own log.
  const f = await open();
  const from = f.agent.frames.length;
  await f.ctx.request(M.session.load, { sessionId: fresh, cwd: home, mcpServers: [] });
  const replay = framesUntilResponse(f.agent, fresh, from).during;
  assert.deepEqual(replay.filter((u) => u.sessionUpdate === 'tool_call'), [freshCard]);
  assert.equal(answerOf(replay), second.answer);
  await f.agent.finish();
});

// The reference must be taken while the source's answer streams. On a loaded machine the answer may
// end first (the capture then holds its turn/end): that attempt is left aside and the test made again
// with the chunks spaced out four times as much. (A server that never captured mid-turn would retry
// until the CTest timeout.)
test('a source in the middle of a turn: its unfinished answer is left out, captured through its last logged event', async (t) => {
  for (let delayMs = 40; ; delayMs *= 4) {
    const home = makeHome(t);
    const store = path.join(home, 'sessions');
    const a = await startIn(t, home, [...RAW, '--echo-delay-ms', String(delayMs)]);
    const newSession = async () => (await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] })).sessionId;
    const source = await newSession();
    const first = await prompt(a, source, 'first');
    const target = await newSession();

    // The source's second answer streams slowly; reference it once some of its chunks are in its log.
    const streaming = prompt(a, source, 'second');
    const chunkLogged = () => {
      try { return events(store, source).some((e) => e.type === 'assistant/chunk' && e.data.turn === 2); } catch { return false; }
    };
    await until(chunkLogged, 'chunks of the source\'s open turn in its log', storeChanges(store));
    const referenced = await prompt(a, target, `during @[Src](${uriOf(source)})`);
    assert.equal(referenced.response.stopReason, 'end_turn');
    const second = await streaming;
    assert.equal(second.response.stopReason, 'end_turn');
    await a.agent.finish();

    const snap = events(store, target).find((e) => e.data?.source?.kind === 'session-reference');
    const [ref] = snap.data.source.references;
    const sourceEvents = events(store, source);
    const captured = sourceEvents[ref.capturedThroughSeq];
    assert.ok(captured && captured.data.turn === 2, `captured in the second turn: ${JSON.stringify(captured)}`);
    if (captured.type === 'turn/end') {
      t.diagnostic(`the source's answer ended before it was referenced; again with --echo-delay-ms ${delayMs * 4}`);
      continue;
    }
    const [data] = snapshotData(snap.data.content[0].text);
    assert.deepEqual(data.conversation, [
      { role: 'user', text: 'first' }, { role: 'assistant', text: first.answer }, { role: 'user', text: 'second' },
    ], 'the unfinished answer is not in the snapshot');
    assert.ok(sourceEvents.slice(ref.capturedThroughSeq + 1).some((e) => e.type === 'assistant/message'), 'the answer was completed later');
    assert.equal(ref.originalMessages, 3);
    break;
  }
});

test('a source that references another contributes only its own conversation (no nested snapshot)', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const a = await startIn(t, home, RAW);
  const newSession = async () => (await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] })).sessionId;
  const inner = await newSession();
  await prompt(a, inner, 'inner secret plan');
  const middle = await newSession();
  const mid = await prompt(a, middle, `read @[Inner](${uriOf(inner)})`);
  const outer = await newSession();
  await prompt(a, outer, `and @[Middle](${uriOf(middle)})`);
  await a.agent.finish();
  const snap = events(store, outer).find((e) => e.data?.source?.kind === 'session-reference');
  const [data] = snapshotData(snap.data.content[0].text);
  assert.deepEqual(data.conversation, [{ role: 'user', text: 'read @Inner' }, { role: 'assistant', text: mid.answer }]);
  assert.ok(!snap.data.content[0].text.includes('inner secret plan'), 'the middle session\'s own snapshot is not passed on');
  assert.deepEqual(snap.data.source.references.map((r) => [r.sessionId, r.originalMessages]), [[middle, 2]]);
});
