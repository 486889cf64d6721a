// Compaction (issue 9) through the ACP SDK client against the real binary on the echo model:
// automatic compaction under a small configured window over a long conversation (echo refuses any
// request above the window, as real servers do), `/compact` and unknown commands, a reference to a
// session we compacted, session/load replay after compaction in a new process, and a hand-built
// harness-shaped compacted log (docs/store-format.md#compaction's example) loaded and prompted. Raw stores, so
// the logs can be read line by line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  M, text, uriOf, makeHome, startIn, RAW, events, prompt, echoLines, updatesOf, answerOf, bucketOf, encodeSegment,
  snapshotData,
} from './lib/refs.mjs';

const PREAMBLE = 'This is an automatically generated checkpoint condensing an earlier span of the conversation to free up context. ' +
  'Treat the captured context as established background and build on it without restating it. Continue the task directly ' +
  'from the messages that follow, without acknowledging this checkpoint.';

const isCard = (u) => u.sessionUpdate === 'tool_call' && u.kind === 'think' && u.toolCallId.startsWith('dsh-compact-');

/** The estimate of llm/token_estimate.hpp, recomputed from the byte sizes an echo answer lists. */
function estimateFromEcho(answer) {
  const sizes = echoLines(answer).map((l) => Number(/^\[\d+\] \w+ (\d+) bytes/.exec(l)[1]));
  return 3 + sizes.reduce((sum, b) => sum + Math.ceil(b / 3) + 4, 0);
}

/** Checks the surface fold of docs/store-format.md#folding over raw events; returns the surface seqs. */
function fold(evs) {
  const nodes = [];
  evs.forEach((e, i) => {
    assert.equal(e.seq, i, 'contiguous seqs');
    if (!e.surfaceOp) return;
    if (e.surfaceOp === 'append') { nodes.push(e.seq); return; }
    assert.deepEqual(Object.keys(e.surfaceOp), ['op', 'start', 'end']);
    const si = nodes.indexOf(e.surfaceOp.start);
    const ei = nodes.indexOf(e.surfaceOp.end);
    assert.ok(si >= 0 && ei >= si, `replace ${JSON.stringify(e.surfaceOp)} fits the surface`);
    for (const s of nodes.slice(si, ei + 1)) assert.ok(e.sourceEventSeqs.includes(s), `shadowed ${s} in sourceEventSeqs`);
    nodes.splice(si, ei - si + 1, e.seq);
  });
  return nodes;
}

test('automatic compaction keeps a long echo conversation under a small window', async (t) => {
  const home = makeHome(t);
  const cwd = path.join(home, 'w');
  mkdirSync(cwd);
  const WINDOW = 2500;
  const a = await startIn(t, home, [...RAW, '--context-window', String(WINDOW)]);
  const sid = (await a.ctx.request(M.session.new, { cwd, mcpServers: [] })).sessionId;
  let cards = 0;
  for (let turn = 1; turn <= 16; turn++) {
    const r = await prompt(a, sid, `turn ${turn}: ${'words to fill the context '.repeat(24)}`);
    assert.equal(r.response.stopReason, 'end_turn', `turn ${turn} answered`);
    assert.ok(estimateFromEcho(r.answer) <= WINDOW, `turn ${turn}: the request stays under the window`);
    const at = r.updates.findIndex(isCard);
    if (at >= 0) {
      cards++;
      const card = r.updates[at];
      assert.match(card.title, /^Compacted conversation · \d+ messages$/);
      assert.equal(card.status, 'completed');
      assert.match(card.content[0].content.text, /^## Goal\n- echo summary of \d+ messages/);
      const firstAnswer = r.updates.findIndex((u) => u.sessionUpdate === 'agent_message_chunk');
      assert.ok(at < firstAnswer, 'the card comes before the answer');
      // The request after compaction is the checkpoint plus the messages after it.
      assert.match(echoLines(r.answer)[1], /^\[2\] user \d+ bytes: This is an automatically generated checkpoint c/);
    }
  }
  assert.ok(cards >= 3, `compacted several times (${cards})`);
  const evs = events(path.join(home, 'sessions'), sid);
  fold(evs);
  // Every compaction has the harness's shape: start, summary, checkpoint, end, inside its turn.
  const starts = evs.filter((e) => e.type === 'compact/start');
  assert.equal(starts.length, cards);
  for (const s of starts) {
    const [summary, checkpoint, end] = evs.slice(s.seq + 1, s.seq + 4);
    assert.equal(summary.type, 'compact/summary');
    assert.deepEqual(Object.keys(summary.data), ['summary', 'shadowedRange', 'shadowedSeqs', 'shadowedTokenCount', 'provider', 'model', 'maxTokens']);
    assert.equal(checkpoint.type, 'user/message');
    assert.deepEqual(checkpoint.data.source, { kind: 'plugin', plugin: 'compact' });
    assert.deepEqual(checkpoint.sourceEventSeqs, [s.seq, summary.seq, ...summary.data.shadowedSeqs]);
    assert.deepEqual(checkpoint.surfaceOp, { op: 'replace', ...summary.data.shadowedRange });
    assert.equal(checkpoint.data.content[0].text, `${PREAMBLE}\n\n<compacted-summary>`);
    assert.deepEqual(end, { type: 'compact/end', seq: s.seq + 3, time: end.time, data: { turn: s.data.turn } });
  }
  await a.agent.finish();
});

test('/compact, unknown commands, a reference to the compacted session, and replay in a new process', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const a = await startIn(t, home, RAW);
  const src = (await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] })).sessionId;
  for (const q of ['first question', 'second question', 'third question']) await prompt(a, src, q);
  const before = events(store, src).length;

  // Unknown `/word`: the commands, no model request, no log write. `//` and `/ ` go to the model.
  const unknown = await prompt(a, src, '/help me');
  assert.match(unknown.answer, /^Unknown command \/help\. Commands:\n- \/compact \[focus\]/);
  assert.equal(events(store, src).length, before);
  const slashed = await prompt(a, src, '//help');
  assert.match(slashed.answer, /last user message: \/\/help$/);
  const spaced = await prompt(a, src, '/ help');
  assert.match(spaced.answer, /last user message: \/ help$/);

  const compacted = await prompt(a, src, '/compact keep the question numbers');
  assert.equal(compacted.response.stopReason, 'end_turn');
  const card = compacted.updates.find(isCard);
  assert.ok(card, 'the compaction card');
  assert.equal(card.title, 'Compacted conversation · 6 messages');
  assert.match(card.content[0].content.text, /^## Goal\n- echo summary of 6 messages, \d+ bytes\n## Focus\n- keep the question numbers\n## Messages/);
  assert.match(compacted.answer, /^Compacted 6 messages \([\d,]+ bytes\) into a summary\. Estimated request size: [\d,]+ → [\d,]+ tokens\.$/);
  const after = await prompt(a, src, 'after compaction');
  const lines = echoLines(after.answer);
  assert.match(lines[1], /^\[2\] user \d+ bytes: This is an automatically generated checkpoint c/);
  assert.match(lines[2], /^\[3\] user 6 bytes: \/\/help$/);
  assert.equal(lines.length, 7, 'system, checkpoint, the two kept turns, the new prompt');

  // A reference to the compacted session: checkpoint plus the later conversation, card says compacted.
  const target = (await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] })).sessionId;
  const ref = await prompt(a, target, [{ type: 'text', text: `what happened in @[src](${uriOf(src)})` }]);
  const refCard = ref.updates.find((u) => u.sessionUpdate === 'tool_call' && u.toolCallId.startsWith('dsh-ref-'));
  assert.match(refCard.content[0].content.text, /; compacted; captured through seq \d+$/);
  const snapshot = events(store, target).find((e) => e.data.source?.kind === 'session-reference');
  const conversation = snapshotData(snapshot.data.content[0].text)[0].conversation;
  assert.ok(conversation[0].text.startsWith(`${PREAMBLE}\n\n<compacted-summary>\n## Goal`));
  assert.ok(!conversation.some((m) => m.text === 'first question'), 'shadowed text is not restored');
  assert.equal(conversation.at(-2).text, 'after compaction');
  assert.equal(snapshot.data.source.references[0].compacted, true);
  await a.agent.finish();

  // A new process: the whole conversation replays, the card where the compaction happened.
  const b = await startIn(t, home, RAW);
  const from = b.agent.sdkUpdates.length;
  await b.ctx.request(M.session.load, { sessionId: src, cwd: home, mcpServers: [] });
  const replay = updatesOf(b.agent, src, from).filter((u) => u.sessionUpdate !== 'available_commands_update');
  const users = replay.filter((u) => u.sessionUpdate === 'user_message_chunk').map((u) => u.content.text);
  assert.deepEqual(users, ['first question', 'second question', 'third question', '//help', '/ help', 'after compaction']);
  const at = replay.findIndex(isCard);
  assert.deepEqual(replay[at], card, 'the same card as live');
  assert.equal(replay[at - 1].sessionUpdate, 'agent_message_chunk', 'after the answer before /compact');
  assert.equal(replay[at + 1].sessionUpdate, 'user_message_chunk');
  const next = await prompt(b, src, 'in a new process');
  const nextLines = echoLines(next.answer);
  assert.match(nextLines[1], /^\[2\] user \d+ bytes: This is an automatically generated checkpoint c/, 'the request still starts at the checkpoint');
  assert.equal(nextLines.length, 9, 'system, checkpoint, three kept turns, the new prompt');
  await b.agent.finish();
});

test('a hand-built harness-shaped compacted log loads, replays its card and answers from the checkpoint', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const id = 'harness-compacted';
  const time = 1783600629541;
  const user = (seq, s) => ({ type: 'user/message', seq, time, data: { content: text(s), source: { kind: 'user' } }, surfaceOp: 'append' });
  const lines = [
    { type: 'session', version: 0, id, createdAt: time, cwd: home, delegationDepth: 0 },
    { type: 'turn/start', seq: 0, time, data: { turn: 1, trigger: { kind: 'message', source: { kind: 'user' } } } },
    user(1, 'old question'),
    { type: 'assistant/message', seq: 2, time, data: { turn: 1, step: 1, content: text('old answer'), provenance: { provider: 'deepseek', model: 'deepseek-flash' } }, sourceEventSeqs: [], surfaceOp: 'append' },
    { type: 'steering/message', seq: 3, time, data: { turn: 1, content: text('and one more thing'), source: { kind: 'user' } }, surfaceOp: 'append' },
    { type: 'turn/end', seq: 4, time, data: { turn: 1, reason: { kind: 'completed' } } },
    { type: 'turn/start', seq: 5, time, data: { turn: 2, trigger: { kind: 'message', source: { kind: 'user' } } } },
    user(6, 'second question'),
    { type: 'step/start', seq: 7, time, data: { turn: 2, step: 1 } },
  ];
  // Chunks up to seq 37 so the compaction sits at the example's seqs (40, 41, 42).
  for (let seq = 8; seq <= 37; seq++) {
    lines.push({ type: 'assistant/chunk', seq, time, data: { turn: 2, step: 1, chunk: { type: 'text-delta', index: 0, text: `w${seq} ` } } });
  }
  const answer = Array.from({ length: 30 }, (_, i) => `w${i + 8} `).join('');
  lines.push(
    { type: 'assistant/message', seq: 38, time, data: { turn: 2, step: 1, content: text(answer), provenance: { provider: 'deepseek', model: 'deepseek-flash' } }, sourceEventSeqs: [], surfaceOp: 'append' },
    { type: 'step/end', seq: 39, time, data: { turn: 2, step: 1 } },
    { type: 'compact/start', seq: 40, time, data: { turn: 2 } },
    { type: 'compact/summary', seq: 41, time, data: { summary: text('## Goal\n- …'), shadowedRange: { start: 1, end: 3 }, shadowedSeqs: [1, 2, 3], shadowedTokenCount: 12, provider: 'deepseek', model: 'deepseek-flash' } },
    // The example line of docs/store-format.md#compaction, with the harness's preamble and our time.
    JSON.parse(`{"type":"user/message","seq":42,"time":${time},"data":{"content":[{"type":"text","text":"This is an automatically generated checkpoint condensing an earlier span of the conversation to free up context. Treat the captured context as established background and build on it without restating it. Continue the task directly from the messages that follow, without acknowledging this checkpoint.\\n\\n<compacted-summary>"},{"type":"text","text":"## Goal\\n- …"},{"type":"text","text":"</compacted-summary>"}],"source":{"kind":"plugin","plugin":"compact"}},"sourceEventSeqs":[40,41,1,2,3],"surfaceOp":{"op":"replace","start":1,"end":3}}`),
    { type: 'compact/end', seq: 43, time, data: { turn: 2 } },
    { type: 'turn/end', seq: 44, time, data: { turn: 2, reason: { kind: 'completed' } } },
  );
  const dir = path.join(store, bucketOf(home));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(path.join(dir, `${encodeSegment(id)}.jsonl`), lines.map((l) => JSON.stringify(l) + '\n').join(''), { mode: 0o600 });

  // A 45fc log (compact/*, steering/message, the spec's example line) in a 45fc root: this test is
  // about that generation, also when the suite runs with DSH_ACP_STORE_GENERATION=0.1.
  const a = await startIn(t, home, [...RAW, '--store-generation', '45fc']);
  const from = a.agent.sdkUpdates.length;
  await a.ctx.request(M.session.load, { sessionId: id, cwd: home, mcpServers: [] });
  const replay = updatesOf(a.agent, id, from).filter((u) => u.sessionUpdate !== 'available_commands_update');
  assert.deepEqual(replay.filter((u) => u.sessionUpdate === 'user_message_chunk').map((u) => u.content.text),
    ['old question', 'and one more thing', 'second question'], 'shadowed messages replay as before');
  const card = replay.find(isCard);
  assert.deepEqual(card, {
    sessionUpdate: 'tool_call', toolCallId: 'dsh-compact-42', title: 'Compacted conversation · 3 messages', kind: 'think',
    status: 'completed', content: [{ type: 'content', content: { type: 'text', text: '## Goal\n- …' } }],
  });
  assert.equal(answerOf(replay.slice(replay.indexOf(card) + 1)), '', 'the card comes after the streamed answer');

  const r = await prompt(a, id, 'continue');
  assert.equal(r.response.stopReason, 'end_turn');
  const l = echoLines(r.answer);
  assert.equal(l.length, 5, 'system, checkpoint, second question, its answer, the prompt');
  assert.match(l[1], /^\[2\] user \d+ bytes: This is an automatically generated checkpoint co…$/);
  assert.equal(l[2], '[3] user 15 bytes: second question');
  assert.match(l[3], /^\[4\] assistant \d+ bytes: w8 w9 /);
  const evs = events(store, id);
  assert.deepEqual(fold(evs).slice(0, 3), [42, 6, 38]);
  assert.equal(evs[45].type, 'turn/start');
  assert.equal(evs[45].data.turn, 3);
  await a.agent.finish();
});
