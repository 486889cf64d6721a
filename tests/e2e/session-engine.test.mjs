// Session semantics of the engine (issue 8), each across real processes on one store:
// session/new is durable before it is answered; a refused turn leaves every later request, also
// after session/load in a new process; a prompt cancelled in the same write as it arrives still
// logs the user's message and closes its turn "aborted".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { INIT_PARAMS, startAgent, startSdkAgent, acp, Agent, echoAnswer, systemBytes } from './lib/agent.mjs';
import { events, readLog, logPath } from './lib/refs.mjs';

const M = acp.methods.agent;
const text = (s) => [{ type: 'text', text: s }];

function makeHome(t) {
  const home = mkdtempSync(path.join(tmpdir(), 'dsh-acp-engine-'));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  return home;
}

async function startIn(t, home, args = []) {
  const { agent, ctx } = startSdkAgent(t, { defaultPaths: true, env: { DSH_ACP_HOME: home }, args: ['--store-compression', 'none', ...args] });
  await ctx.request(M.initialize, INIT_PARAMS);
  return { agent, ctx, store: path.join(home, 'sessions') };
}

test('session/new is durable: listed at once, and loads, resumes and prompts from a later process', async (t) => {
  const home = makeHome(t);
  const a = await startIn(t, home);
  const { sessionId } = await a.ctx.request(M.session.new, { cwd: '/work/durable', mcpServers: [] });
  // Listed in the same process at once, without a title; the log holds the header alone.
  const listed = await a.ctx.request(M.session.list, {});
  assert.deepEqual(listed.sessions.map((s) => [s.sessionId, s.title ?? null]), [[sessionId, null]]);
  const lines = readLog(logPath(a.store, sessionId));
  assert.equal(lines.length, 1);
  assert.equal(lines[0].type, 'session');
  assert.equal(lines[0].id, sessionId);
  await a.agent.finish();

  // A later process (acpx's `sessions new`, then `prompt` in a new process).
  const b = await startIn(t, home);
  assert.deepEqual((await b.ctx.request(M.session.list, {})).sessions.map((s) => s.sessionId), [sessionId]);
  await b.ctx.request(M.session.load, { sessionId, cwd: '/work/durable', mcpServers: [] });
  const r = await b.ctx.request(M.session.prompt, { sessionId, prompt: text('hello durable') });
  assert.equal(r.stopReason, 'end_turn');
  await b.agent.finish();

  const c = await startIn(t, home);
  await c.ctx.request(M.session.resume, { sessionId, cwd: '/work/durable', mcpServers: [] });
  await c.ctx.request(M.session.prompt, { sessionId, prompt: text('again') });
  const ev = events(c.store, sessionId);
  assert.deepEqual(ev.map((e) => e.seq), ev.map((_, i) => i), 'contiguous seqs from 0');
  assert.deepEqual(ev.filter((e) => e.type === 'turn/start').map((e) => e.data.turn), [1, 2]);
  await c.agent.finish();
});

test('a refused turn leaves every later request, also after session/load in a new process', async (t) => {
  const home = makeHome(t);
  const a = await startIn(t, home);
  const { sessionId } = await a.ctx.request(M.session.new, { cwd: '/work/refusal', mcpServers: [] });
  await a.ctx.request(M.session.prompt, { sessionId, prompt: text('kept question') });
  const refused = await a.ctx.request(M.session.prompt, { sessionId, prompt: text('refuse me [[echo:stop=refusal]]') });
  assert.equal(refused.stopReason, 'refusal');
  // Logged as the original logs a refusal: error finish, no assistant/message, turn/end error CONTENT_FILTER.
  const ev = events(a.store, sessionId);
  const turn2 = ev.filter((e) => e.data?.turn === 2);
  assert.equal(turn2.filter((e) => e.type === 'assistant/message').length, 0);
  assert.equal(turn2.at(-1).type, 'turn/end');
  assert.equal(turn2.at(-1).data.reason.kind, 'error');
  assert.equal(turn2.at(-1).data.reason.failure.code, 'CONTENT_FILTER');
  const finish = turn2.filter((e) => e.type === 'assistant/chunk' && e.data.chunk.type === 'finish');
  assert.equal(finish.length, 1);
  assert.deepEqual(finish[0].data.chunk.reason, { kind: 'error', failure: { message: 'model stopped: content_filter', code: 'CONTENT_FILTER' } });
  const firstAnswer = ev.find((e) => e.type === 'assistant/message').data.content[0].text;

  const expected = (last) => (answer) => echoAnswer([
    { role: 'system', bytes: systemBytes(answer) },
    { role: 'user', text: 'kept question' },
    { role: 'assistant', text: firstAnswer },
    { role: 'user', text: last },
  ]);
  const from = a.agent.frames.length;
  await a.ctx.request(M.session.prompt, { sessionId, prompt: text('next') });
  let answer = Agent.chunkText(a.agent.updates({ sessionId, from }));
  assert.equal(answer, expected('next')(answer));
  await a.agent.finish();

  const b = await startIn(t, home);
  let at = b.agent.frames.length;
  await b.ctx.request(M.session.load, { sessionId, cwd: '/work/refusal', mcpServers: [] });
  // The replay still shows what was streamed for the refused prompt (raw frames: they precede the answer).
  const replayed = b.agent.updates({ sessionId, from: at }).map((e) => e.frame.params.update);
  assert.ok(replayed.some((u) => u.sessionUpdate === 'user_message_chunk' && u.content.text.startsWith('refuse me')));
  at = b.agent.frames.length;
  await b.ctx.request(M.session.prompt, { sessionId, prompt: text('after reload') });
  answer = Agent.chunkText(b.agent.updates({ sessionId, from: at }));
  assert.ok(!answer.includes('refuse me'), answer);
  assert.ok(answer.startsWith('echo: received 6 messages\n'), answer);
  await b.agent.finish();
});

test('a prompt cancelled in the same write as it arrives still logs the message, closed "aborted"', async (t) => {
  const home = makeHome(t);
  const agent = startAgent(t, { defaultPaths: true, env: { DSH_ACP_HOME: home }, args: ['--store-compression', 'none'] });
  await agent.initialize();
  const sessionId = await agent.newSession('/work/early');
  const prompt = { jsonrpc: '2.0', id: 77, method: 'session/prompt', params: { sessionId, prompt: text('gone too soon') } };
  const cancel = { jsonrpc: '2.0', method: 'session/cancel', params: { sessionId } };
  await agent.writeRaw(JSON.stringify(prompt) + '\n' + JSON.stringify(cancel) + '\n');
  const r = await agent.response(77);
  assert.equal(r.result.stopReason, 'cancelled');
  const store = path.join(home, 'sessions');
  const ev = events(store, sessionId);
  assert.deepEqual(ev.map((e) => e.type), ['turn/start', 'user/message', 'session/title', 'step/start', 'step/end', 'turn/end']);
  assert.equal(ev[1].data.content[0].text, 'gone too soon');
  assert.deepEqual(ev.at(-1).data.reason, { kind: 'aborted' });
  await agent.finish();

  // On reload the user sees what they sent.
  const b = await startIn(t, home);
  const at = b.agent.frames.length;
  await b.ctx.request(M.session.load, { sessionId, cwd: '/work/early', mcpServers: [] });
  const user = b.agent.updates({ sessionId, from: at }).map((e) => e.frame.params.update).filter((u) => u.sessionUpdate === 'user_message_chunk');
  assert.deepEqual(user.map((u) => u.content.text), ['gone too soon']);
  await b.agent.finish();
});

test('session/close during a running prompt: the prompt answers "cancelled" before close answers', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  const sessionId = await agent.newSession();
  const from = agent.frames.length;
  await agent.send({ jsonrpc: '2.0', id: 'p', method: 'session/prompt', params: { sessionId, prompt: text('slow [[echo:sleep=5000]]') } });
  await agent.send({ jsonrpc: '2.0', id: 'c', method: 'session/close', params: { sessionId } });
  const closed = await agent.response('c', { from });
  const prompt = await agent.response('p', { from });
  assert.deepEqual(closed.result, {});
  assert.equal(prompt.result.stopReason, 'cancelled');
  const order = agent.frames.filter((e) => e.index >= from && (e.frame.id === 'p' || e.frame.id === 'c')).map((e) => e.frame.id);
  assert.deepEqual(order, ['p', 'c']);
  await agent.finish();
});

test('session/cancel sent as a request is performed and answered {}; for an unknown session -32002', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  const sessionId = await agent.newSession();
  const from = agent.frames.length;
  await agent.send({ jsonrpc: '2.0', id: 'p', method: 'session/prompt', params: { sessionId, prompt: text('slow [[echo:sleep=5000]]') } });
  const cancel = await agent.call('session/cancel', { sessionId });
  assert.deepEqual(cancel.result, {});
  const prompt = await agent.response('p', { from });
  assert.equal(prompt.result.stopReason, 'cancelled');
  // With nothing running: {}.
  assert.deepEqual((await agent.call('session/cancel', { sessionId })).result, {});
  // An unknown session is -32002 like for every session method; the notification form stays silent.
  const unknown = await agent.call('session/cancel', { sessionId: 'nope' });
  assert.equal(unknown.error?.code, -32002);
  assert.deepEqual(unknown.error?.data, { sessionId: 'nope' });
  const before = agent.frames.length;
  await agent.send({ jsonrpc: '2.0', method: 'session/cancel', params: { sessionId: 'nope' } });
  assert.ok((await agent.call('session/list', {})).result);
  assert.equal(agent.frames.length - before, 1, 'only session/list was answered');
  await agent.finish();
});

test('$/cancel_request {requestId} cancels a running session/prompt like session/cancel; other ids are ignored', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  const sessionId = await agent.newSession();
  for (const [i, id] of [41, 'prompt-41'].entries()) {
    const from = agent.frames.length;
    // A minute's sleep (the echo model's longest): answered before it ends only through the cancel.
    await agent.send({ jsonrpc: '2.0', id, method: 'session/prompt', params: { sessionId, prompt: text('slow [[echo:sleep=60000]]') } });
    await agent.turnStarted(sessionId, i + 1);  // the prompt is running (sleeping in the echo model)
    await agent.notify('$/cancel_request', { requestId: id });
    const r = await agent.response(id, { from });
    assert.equal(r.result.stopReason, 'cancelled');
    assert.equal(agent.chunks({ sessionId, from }).length, 0, 'cancelled in its sleep, before any answer text');
  }
  // Unknown ids (and a request that is not a prompt) are ignored: no answer to the notification.
  const from = agent.frames.length;
  await agent.notify('$/cancel_request', { requestId: 999 });
  const listed = await agent.call('session/list', {});
  assert.ok(listed.result);
  await agent.finish();  // stdout read to its end: an answer to the notification would be in
  assert.deepEqual(agent.frames.slice(from).filter((e) => e.frame.id !== listed.id && !e.frame.method), []);
});

test('no notification frame exceeds 32 KiB, however much escaping the text needs: live and replayed', async (t) => {
  const home = makeHome(t);
  const a = await startIn(t, home);
  const { sessionId } = await a.ctx.request(M.session.new, { cwd: '/work/big', mcpServers: [] });
  // Each one "word" the echo model streams as a single delta, from 80 KB to 180 KB once escaped
  // (an ESC is \u001b on the wire, six bytes), with visible text so the prompt is not refused.
  const controls = Array.from({ length: 30000 }, (_, i) => String.fromCharCode(1 + (i % 31))).join('').replaceAll('\n', '\t');
  const prompts = [
    'multibyte:' + 'é€'.repeat(16000),
    'escapes:' + '\x1b'.repeat(30000),
    'controls:' + controls,
    'quotes:' + '"'.repeat(40000),
    'backslashes:' + '\\'.repeat(40000),
    '4-byte:' + '\u{1F600}'.repeat(20000),
    'mixed:' + '\x1b[31m"red\\"\x1b[0m\u{1F600}€\t\x01'.repeat(4000),
  ];
  const answers = [];
  for (const prompt of prompts) {
    const from = a.agent.frames.length;
    await a.ctx.request(M.session.prompt, { sessionId, prompt: text(prompt) });
    const live = a.agent.frames.slice(from).filter((e) => e.frame.method === 'session/update');
    const sizes = live.map((e) => Buffer.byteLength(e.line));
    assert.ok(sizes.every((n) => n <= 32768), `live frames of ${Math.max(...sizes)} bytes for ${prompt.slice(0, 12)}`);
    const answer = Agent.chunkText(live);
    assert.ok(answer.endsWith(`last user message: ${prompt}`), `the answer to ${prompt.slice(0, 12)} arrived whole, in pieces`);
    answers.push(answer);
  }
  await a.agent.finish();

  const b = await startIn(t, home);
  const from = b.agent.frames.length;
  await b.ctx.request(M.session.load, { sessionId, cwd: '/work/big', mcpServers: [] });
  const replay = b.agent.frames.slice(from).filter((e) => e.frame.method === 'session/update');
  const sizes = replay.map((e) => Buffer.byteLength(e.line));
  assert.ok(sizes.every((n) => n <= 32768), `replayed frames of ${Math.max(...sizes)} bytes`);
  // Runs of user chunks are the prompts, runs of agent chunks the answers: whole code points, nothing lost.
  const runs = { user_message_chunk: [], agent_message_chunk: [] };
  let last = null;
  for (const u of replay.map((e) => e.frame.params.update)) {
    if (!(u.sessionUpdate in runs)) continue;
    if (u.sessionUpdate !== last) runs[u.sessionUpdate].push('');
    runs[u.sessionUpdate].push(runs[u.sessionUpdate].pop() + u.content.text);
    last = u.sessionUpdate;
  }
  assert.deepEqual(runs.user_message_chunk, prompts);
  assert.deepEqual(runs.agent_message_chunk, answers);
  assert.ok(replay.filter((e) => e.frame.params.update.sessionUpdate === 'user_message_chunk').length > prompts.length * 2);
  await b.agent.finish();
});
