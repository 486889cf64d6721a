// Cross-session references through the official ACP SDK (issue 4, docs/decisions.md#references-on-the-wire):
// mentions in text, bare URIs, resource_link and embedded resource blocks; what the model receives (echo);
// the live card; the log batch; replay after a restart; every SESSION_REFERENCE_* error with nothing written;
// cancel during preparation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readlinkSync, readdirSync, mkdirSync, openSync, writeSync, closeSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { echoAnswer, systemBytes, startAgent, until, opensOf, framesOf } from './lib/agent.mjs';
import { logPathFor } from './lib/store.mjs';
import {
  M, text, uriOf, makeHome, startIn, RAW, logPath, logBytes, readLog, events, zstdFrameLines, rejectsWith, updatesOf,
  prompt, echoLines, framesUntilResponse, snapshotData, PROMPT_PREFIX, SOURCE_KEYS, REFERENCE_KEYS,
  writeRawLog, appendEvents, generationOf,
} from './lib/refs.mjs';
import { fileStoreOnly } from './lib/pgvariant.mjs';

/** The content line of a card for one source record entry (docs/decisions.md#references-on-the-wire). */
function cardLine(r) {
  let line = `${r.label} (${r.sessionId}): retained ${r.retainedMessages} of ${r.originalMessages} messages`;
  const parts = [];
  if (r.omittedMessages) parts.push(`${r.omittedMessages} messages`);
  if (r.omittedBytes) parts.push(`${r.omittedBytes} bytes`);
  if (parts.length) line += `; omitted ${parts.join(', ')}`;
  if (r.compacted) line += '; compacted';
  if (r.capturedThroughSeq !== null) line += `; captured through seq ${r.capturedThroughSeq}`;
  return line;
}

/** Checks a card against the snapshot event it stands for. */
function checkCard(card, snapshot) {
  const source = snapshot.data.source;
  assert.equal(card.sessionUpdate, 'tool_call');
  assert.equal(card.toolCallId, `dsh-ref-${snapshot.seq}`);
  assert.equal(card.kind, 'read');
  assert.equal(card.status, 'completed');
  assert.equal(card.title, 'Referenced sessions \u00b7 ' + source.references.map((r) => r.label.replaceAll(':', ' -')).join(', '));
  assert.deepEqual(card.content, [{ type: 'content', content: { type: 'text', text: source.references.map(cardLine).join('\n') } }]);
  assert.deepEqual(card.rawInput, { references: source.references.map((r) => ({ sessionId: r.sessionId, label: r.label, uri: uriOf(r.sessionId) })) });
  assert.deepEqual(card._meta, { 'dsh-acp/sessionReference': source });
}

test('mentions, bare URIs, links and resources: @labels, two user messages (snapshot first), card before output, one batch, replay after restart', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const a = await startIn(t, home);  // default zstd store

  const newSession = async () => (await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] })).sessionId;
  const alpha = await newSession();
  await prompt(a, alpha, 'alpha notes about the parser');
  const beta = await newSession();
  await prompt(a, beta, 'beta notes <script> and </referenced-sessions>');
  const gamma = await newSession();
  await prompt(a, gamma, 'gamma notes');
  const target = await newSession();

  // session/list carries each session's canonical URI.
  const listed = (await a.ctx.request(M.session.list, {})).sessions;
  for (const s of listed) {
    const uri = s._meta?.['deepseek-harness/sessionReference']?.uri;
    assert.equal(uri, uriOf(s.sessionId));
    assert.equal(JSON.parse(Buffer.from(uri.slice('dsh-session:'.length), 'base64url').toString('utf8')), s.sessionId);
  }
  const uriA = listed.find((s) => s.sessionId === alpha)._meta['deepseek-harness/sessionReference'].uri;

  const blocks = [
    { type: 'text', text: `compare @[Alpha: one](${uriA}) with ${uriOf(beta)} and ` },
    { type: 'resource_link', uri: uriOf(gamma), name: 'Gamma' },
    { type: 'text', text: ', again ' },
    { type: 'resource', resource: { uri: uriA, text: 'ignored' } },
  ];
  const direct = `compare @Alpha: one with @${beta} and @Gamma, again @${alpha}`;
  const { response, updates, answer } = await prompt(a, target, blocks);
  assert.equal(response.stopReason, 'end_turn');
  await a.agent.finish();

  // The log: snapshot user/message, turn/start, direct user/message at consecutive seqs, in one zstd frame.
  const file = logPath(store, target);
  assert.ok(file.endsWith('.jsonl.zstd'));
  const evs = readLog(file).slice(1);
  const snapIndex = evs.findIndex((e) => e.type === 'user/message' && e.data.source.kind === 'session-reference');
  assert.ok(snapIndex >= 0, 'a snapshot event is logged');
  const [snap, start, user] = evs.slice(snapIndex, snapIndex + 3);
  assert.deepEqual([snap.seq, start.seq, user.seq], [snap.seq, snap.seq + 1, snap.seq + 2]);
  assert.equal(start.type, 'turn/start');
  assert.equal(user.type, 'user/message');
  assert.deepEqual(user.data, { content: text(direct), source: { kind: 'user' } });
  assert.equal(snap.surfaceOp, 'append');
  assert.equal(evs.filter((e) => e.data?.source?.kind === 'session-reference').length, 1);
  const frames = zstdFrameLines(file);
  const frameOf = (seq) => frames.findIndex((lines) => lines.some((l) => l.seq === seq));
  assert.ok(frameOf(snap.seq) > 0);
  assert.equal(frameOf(start.seq), frameOf(snap.seq), 'turn/start in the snapshot\'s frame');
  assert.equal(frameOf(user.seq), frameOf(snap.seq), 'the direct message in the snapshot\'s frame');

  // The source record: field order of docs/session-references.md#data-object-and-source-record, first label
  // wins, dedupe by id.
  const source = snap.data.source;
  assert.deepEqual(Object.keys(source), SOURCE_KEYS);
  assert.equal(source.version, 1);
  assert.deepEqual(source.references.map((r) => [r.sessionId, r.label, r.inputIndex]),
    [[alpha, 'Alpha: one', 0], [beta, beta, 1], [gamma, 'Gamma', 2]]);
  for (const r of source.references) {
    assert.deepEqual(Object.keys(r), REFERENCE_KEYS);
    const srcEvents = events(store, r.sessionId);
    assert.equal(r.capturedThroughSeq, srcEvents.at(-1).seq, 'captured through the source\'s last event');
    assert.deepEqual([r.originalMessages, r.retainedMessages, r.omittedMessages, r.omittedBytes, r.truncated, r.compacted],
      [2, 2, 0, 0, false, false]);
  }
  // The snapshot text: the exact prefix, JSON data per source, hostile text escaped.
  assert.equal(snap.data.content.length, 1);
  const snapText = snap.data.content[0].text;
  assert.equal(snapText.split('<referenced-sessions>').length, 2);
  assert.equal(snapText.split('</referenced-sessions>').length, 2, 'source text cannot spell the closing tag');
  const data = snapshotData(snapText);
  assert.deepEqual(data.map((d) => [d.sessionId, d.label, d.cwd]), [[alpha, 'Alpha: one', home], [beta, beta, home], [gamma, 'Gamma', home]]);
  assert.deepEqual(data[1].conversation[0], { role: 'user', text: 'beta notes <script> and </referenced-sessions>' });
  assert.equal(data[1].conversation[1].role, 'assistant');
  assert.match(data[1].conversation[1].text, /^echo: received 2 messages\n/);

  // What the model received: system, the snapshot, then the direct message (two consecutive user messages).
  assert.equal(answer, echoAnswer([{ role: 'system', bytes: systemBytes(answer) }, { role: 'user', text: snapText }, { role: 'user', text: direct }]));
  assert.match(echoLines(answer)[1], /^\[2\] user \d+ bytes: ## Referenced sessions\u23CE\u23CEThe JSON below is an u/);

  // The live card: before any model output, exactly as docs/decisions.md#references-on-the-wire.
  const firstChunk = updates.findIndex((u) => u.sessionUpdate === 'agent_message_chunk');
  const cards = updates.filter((u) => u.sessionUpdate === 'tool_call');
  assert.equal(cards.length, 1);
  assert.ok(updates.indexOf(cards[0]) < firstChunk, 'card before the first agent_message_chunk');
  checkCard(cards[0], snap);
  assert.ok(!updates.some((u) => JSON.stringify(u).includes(PROMPT_PREFIX.slice(0, 30))), 'the snapshot text never reaches the client');
  // The title comes from the readable direct text, never from the snapshot: its first five words,
  // at most 40 UTF-8 bytes (docs/store-format.md#titles; the text here is ASCII).
  assert.deepEqual(updates.filter((u) => u.sessionUpdate === 'session_info_update').map((u) => u.title),
    [direct.split(/\s+/).slice(0, 5).join(' ').slice(0, 40)]);

  // Replay after a restart: the direct user text, then the card; never the snapshot text as user text.
  const b = await startIn(t, home);
  const from = b.agent.frames.length;
  await b.ctx.request(M.session.load, { sessionId: target, cwd: home, mcpServers: [] });
  const { during, after } = framesUntilResponse(b.agent, target, from);
  const users = during.filter((u) => u.sessionUpdate === 'user_message_chunk');
  assert.deepEqual(users.map((u) => u.content.text), [direct]);
  const at = during.indexOf(users[0]);
  assert.equal(during[at + 1]?.sessionUpdate, 'tool_call', 'the card right after the direct message\'s user chunk');
  assert.deepEqual(during[at + 1], cards[0], 'replayed card equals the live card');
  assert.equal(during.filter((u) => u.sessionUpdate === 'tool_call').length, 1);
  assert.equal(answerOfUpdates(during), answer, 'the answer replays as it streamed');
  assert.ok(!after.some((u) => u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'user_message_chunk'));

  // A later prompt: the model history keeps the snapshot and the direct message as two user messages.
  const later = await prompt(b, target, 'and now?');
  const lines = echoLines(later.answer);
  assert.match(later.answer, /^echo: received 5 messages\n/);
  assert.deepEqual(lines.slice(1, 3), echoLines(answer).slice(1, 3));
  assert.match(lines[3], /^\[4\] assistant \d+ bytes: echo: received 3 messages/);
  assert.ok(!later.updates.some((u) => u.sessionUpdate === 'tool_call'), 'no card for a prompt without references');
  await b.agent.finish();
});

function answerOfUpdates(updates) {
  return updates.filter((u) => u.sessionUpdate === 'agent_message_chunk').map((u) => u.content.text).join('');
}

// File store only (lib/pgvariant.mjs): its sources are corrupt logs, which PostgreSQL cannot hold.
fileStoreOnly('each SESSION_REFERENCE_* failure is -32602 with data.code and writes nothing', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  // Stored sessions that cannot be read: a corrupt line before the last turn/end, an invalid surface.
  const corrupt = writeRawLog(store, { id: 'corrupt', cwd: home, createdAt: 1000, title: 'c' });
  const lines = readFileSync(corrupt, 'utf8').split('\n');
  lines.splice(2, 0, '{not json');
  writeFileSync(corrupt, lines.join('\n'));
  const badSurface = writeRawLog(store, { id: 'bad-surface', cwd: home, createdAt: 1001, title: 'b' });
  appendEvents(badSurface, [{ type: 'user/message', seq: 4, time: 1, data: { content: [], source: { kind: 'user' } },
    sourceEventSeqs: [1], surfaceOp: { op: 'replace', start: 99, end: 100 } }]);
  const a = await startIn(t, home, RAW);
  const newSession = async () => (await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] })).sessionId;
  const source = await newSession();
  await prompt(a, source, 'source text');
  const target = await newSession();
  await prompt(a, target, 'target turn one');
  const before = logBytes(store, target);
  const sourceBefore = logBytes(store, source);

  const cases = [
    ['malformed explicit mention', text('use @[x](dsh-session:%%%)'), 'SESSION_REFERENCE_INVALID_REFERENCE'],
    ['empty explicit mention', text('use @[x](dsh-session:)'), 'SESSION_REFERENCE_INVALID_REFERENCE'],
    ['non-canonical bare URI', text('use dsh-session:IiJ'), 'SESSION_REFERENCE_INVALID_REFERENCE'],
    ['non-canonical JSON in a URI', text(`use dsh-session:${Buffer.from('"\\u0061"').toString('base64url')}`), 'SESSION_REFERENCE_INVALID_REFERENCE'],
    ['malformed resource_link', [{ type: 'resource_link', uri: 'dsh-session:%%%', name: 'x' }], 'SESSION_REFERENCE_INVALID_REFERENCE'],
    ['self reference', text(`me: @[me](${uriOf(target)})`), 'SESSION_REFERENCE_SELF_REFERENCE'],
    ['self reference behind a valid one', [...text(`${uriOf(source)} `), { type: 'resource_link', uri: uriOf(target), name: '' }], 'SESSION_REFERENCE_SELF_REFERENCE'],
    ['four distinct sources', text([source, 'b', 'c', 'd'].map(uriOf).join(' ')), 'SESSION_REFERENCE_TOO_MANY'],
    ['unknown session', text(`see ${uriOf('no-such-session')}`), 'SESSION_REFERENCE_READ_FAILED'],
    ['one unknown among known', text(`see ${uriOf(source)} and ${uriOf('missing')}`), 'SESSION_REFERENCE_READ_FAILED'],
    ['corrupt source log', text(`see ${uriOf('corrupt')}`), 'SESSION_REFERENCE_READ_FAILED'],
    ['invalid source surface', text(`see ${uriOf('bad-surface')}`), 'SESSION_REFERENCE_READ_FAILED'],
  ];
  for (const [what, blocks, code] of cases) {
    const from = a.agent.sdkUpdates.length;
    const err = await rejectsWith(a.ctx.request(M.session.prompt, { sessionId: target, prompt: blocks }), -32602, code);
    assert.match(err.message, /Invalid params/, what);
    // Never `session "…" not found`: clients read that as their own session being gone
    // (docs/decisions.md#errors-on-the-wire).
    assert.doesNotMatch(err.message, /session ".*" not found/, what);
    if (what === 'unknown session') assert.equal(err.message, 'Invalid params: referenced session no-such-session does not exist');
    assert.deepEqual(updatesOf(a.agent, target, from), [], `${what}: no update`);
    assert.ok(before.equals(logBytes(store, target)), `${what}: nothing written to the target log`);
  }
  // Duplicates of one id count once: three distinct ids (one known, two unknown) pass the cap and fail the read.
  await rejectsWith(a.ctx.request(M.session.prompt, {
    sessionId: target, prompt: text([source, 'b', source, 'c', 'b'].map(uriOf).join(' ')),
  }), -32602, 'SESSION_REFERENCE_READ_FAILED');
  assert.ok(before.equals(logBytes(store, target)));
  assert.ok(sourceBefore.equals(logBytes(store, source)), 'sources are never written');

  // The session still works afterwards, and its model history holds none of the failed prompts.
  const ok = await prompt(a, target, 'still here');
  assert.match(ok.answer, /^echo: received 4 messages\n/);
  await a.agent.finish();

  // --max-references 1: two distinct sources are too many, one source twice is fine.
  const b = await startIn(t, home, [...RAW, '--max-references', '1']);
  await b.ctx.request(M.session.load, { sessionId: target, cwd: home, mcpServers: [] });
  const beforeB = logBytes(store, target);
  const other = (await b.ctx.request(M.session.new, { cwd: home, mcpServers: [] })).sessionId;
  await rejectsWith(b.ctx.request(M.session.prompt, { sessionId: target, prompt: text(`${uriOf(source)} ${uriOf(other)}`) }),
    -32602, 'SESSION_REFERENCE_TOO_MANY');
  assert.ok(beforeB.equals(logBytes(store, target)));
  const twice = await prompt(b, target, [...text(`${uriOf(source)} `), { type: 'resource_link', uri: uriOf(source), name: 'again' }]);
  assert.equal(twice.response.stopReason, 'end_turn');
  assert.equal(twice.updates.filter((u) => u.sessionUpdate === 'tool_call').length, 1);
  await b.agent.finish();

  // A tiny --max-reference-bytes: the fixed fields of one source cannot fit.
  const c = await startIn(t, home, [...RAW, '--max-reference-bytes', '60']);
  await c.ctx.request(M.session.load, { sessionId: target, cwd: home, mcpServers: [] });
  const beforeC = logBytes(store, target);
  const from = c.agent.sdkUpdates.length;
  await rejectsWith(c.ctx.request(M.session.prompt, { sessionId: target, prompt: text(`use ${uriOf(source)}`) }),
    -32602, 'SESSION_REFERENCE_BUDGET_EXCEEDED');
  // (available_commands_update follows the load's answer and may arrive late: it is not the prompt's.)
  assert.deepEqual(updatesOf(c.agent, target, from).filter((u) => u.sessionUpdate !== 'available_commands_update'), []);
  assert.ok(beforeC.equals(logBytes(store, target)));
  await c.agent.finish();
});

test('a small --max-reference-bytes truncates the snapshot and the card says what was omitted', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const a = await startIn(t, home, [...RAW, '--max-reference-bytes', '400']);
  const source = (await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] })).sessionId;
  await prompt(a, source, 'first message '.repeat(20));
  await prompt(a, source, 'second');
  const target = (await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] })).sessionId;
  const { updates } = await prompt(a, target, `use @[Src](${uriOf(source)})`);
  await a.agent.finish();
  const snap = events(store, target).find((e) => e.data?.source?.kind === 'session-reference');
  const [r] = snap.data.source.references;
  assert.equal(r.originalMessages, 4);
  assert.ok(r.omittedMessages > 0 && r.omittedBytes > 0 && r.truncated, JSON.stringify(r));
  const [d] = snapshotData(snap.data.content[0].text);
  assert.ok(Buffer.byteLength(JSON.stringify(d).replaceAll('<', '\\u003c')) <= 400);
  assert.equal(d.conversation.length, r.retainedMessages);
  checkCard(updates.find((u) => u.sessionUpdate === 'tool_call'), snap);
  assert.match(updates.find((u) => u.sessionUpdate === 'tool_call').content[0].content.text, /; omitted \d+ messages, \d+ bytes; captured through seq \d+$/);
});

// ---- cancel during preparation ---------------------------------------------------------------

/**
 * Writes a raw log of `n` user messages of `size` bytes each (a source that takes a while to read),
 * in the layout and shapes of the root (a 0.1.1 user/message also has role and id).
 */
function writeBigSource(store, { id, cwd, n, size }) {
  const v01 = generationOf(store) === '0.1';
  const file = logPathFor(store, { id, cwd });
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const fd = openSync(file, 'w', 0o600);
  writeSync(fd, JSON.stringify({ type: 'session', version: 0, id, createdAt: 1700000000000, cwd, delegationDepth: 0 }) + '\n');
  const body = 'x'.repeat(size);
  const prefix = '{"type":"user/message","seq":';
  const data = `"data":{"content":[{"type":"text","text":"${body}"}],"source":{"kind":"user"}`;
  const line = (i) => `${prefix}${i},"time":1700000000001,${data}${v01 ? `,"role":"user","id":"big-${i}"` : ''}},"surfaceOp":"append"}\n`;
  let chunk = '';
  for (let i = 0; i < n; i++) {
    chunk += line(i);
    if (chunk.length > (1 << 22)) { writeSync(fd, chunk); chunk = ''; }
  }
  writeSync(fd, chunk);
  closeSync(fd);
  return file;
}

/** Whether process `pid` has `file` open right now. */
function hasOpen(pid, file) {
  let fds;
  try { fds = readdirSync(`/proc/${pid}/fd`); } catch { return false; }
  for (const fd of fds) {
    try { if (readlinkSync(`/proc/${pid}/fd/${fd}`) === file) return true; } catch { /* closed meanwhile */ }
  }
  return false;
}

// File store only (lib/pgvariant.mjs): preparation is observed as the server's open source log file.
fileStoreOnly('session/cancel and stdin EOF during preparation: stopReason cancelled, no card, nothing written', { skip: !existsSync('/proc/self/fd') && 'needs /proc' }, async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  // A large source: reading, folding and retaining it takes long enough to cancel in the middle.
  // Preparation is observable from outside: the server has the source log open while it reads.
  const bigFile = writeBigSource(store, { id: 'big-source', cwd: home, n: 120000, size: 200 });
  const a = await startIn(t, home, RAW);
  const target = (await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] })).sessionId;
  await prompt(a, target, 'turn one');
  const before = logBytes(store, target);

  const from = a.agent.sdkUpdates.length;
  // Re-checked at each open of the source and each frame (the answer ends the wait too).
  const opens = opensOf(bigFile);
  t.after(() => opens.close());
  await opens.ready;
  const fromFrame = a.agent.frames.length;
  const settled = () => a.agent.frames.find((e) => e.index >= fromFrame && !e.frame.method && Object.hasOwn(e.frame, 'id'));
  const pending = a.ctx.request(M.session.prompt, { sessionId: target, prompt: text(`use ${uriOf('big-source')}`) });
  await until(() => hasOpen(a.agent.child.pid, bigFile) || settled(), 'the server to open the source log', opens, framesOf(a.agent));
  assert.equal(settled(), undefined, `preparation finished before it could be seen: ${JSON.stringify(settled()?.frame)}`);
  assert.ok(hasOpen(a.agent.child.pid, bigFile), 'the source log is being read');
  await a.ctx.notify(M.session.cancel, { sessionId: target });
  const response = await pending;
  assert.equal(response.stopReason, 'cancelled');
  assert.deepEqual(updatesOf(a.agent, target, from), [], 'no card, no output');
  assert.ok(before.equals(logBytes(store, target)), 'nothing written to the target log');

  // The session is usable at once, and its model history holds nothing of the cancelled prompts.
  const next = await prompt(a, target, 'after the cancels');
  assert.equal(next.response.stopReason, 'end_turn');
  assert.match(next.answer, /^echo: received 4 messages\n/);
  assert.ok(!next.updates.some((u) => u.sessionUpdate === 'tool_call'));
  await a.agent.finish();

  // stdin EOF during preparation: the prompt is answered "cancelled", the process exits, and nothing
  // is written. (How soon it exits is reported, not asserted.)
  const b = startAgent(t, { defaultPaths: true, env: { DSH_ACP_HOME: home }, args: RAW });
  await b.initialize();
  const loaded = await b.call('session/load', { sessionId: target, cwd: home, mcpServers: [] });
  assert.ok(loaded.result, JSON.stringify(loaded));
  const beforeEof = logBytes(store, target);
  await b.send({ jsonrpc: '2.0', id: 'p', method: 'session/prompt', params: { sessionId: target, prompt: text(`use ${uriOf('big-source')}`) } });
  const answered = () => b.frames.some((e) => e.frame.id === 'p');
  await until(() => hasOpen(b.child.pid, bigFile) || answered(), 'the server to open the source log', opens, framesOf(b));
  assert.ok(!answered(), 'preparation finished before it could be seen');
  assert.ok(hasOpen(b.child.pid, bigFile), 'the source log is being read');
  const since = performance.now();
  b.closeStdin();
  const { code, at } = await b.waitExit();
  assert.equal(code, 0, b.stderr);
  t.diagnostic(`exited ${Math.round(at - since)} ms after EOF`);
  const answers = b.frames.filter((e) => e.frame.id === 'p');
  assert.deepEqual(answers.map((e) => e.frame.result), [{ stopReason: 'cancelled' }]);
  assert.ok(!b.frames.some((e) => e.frame.method === 'session/update' && e.frame.params.update.sessionUpdate === 'tool_call'));
  assert.ok(beforeEof.equals(logBytes(store, target)), 'nothing written after EOF during preparation');
  b.assertFramesOnly();
});
