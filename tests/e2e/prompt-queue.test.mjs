// A session/prompt sent while the session's turn runs is queued, not refused (editors let the user
// type again the moment Stop is pressed): queued prompts run as the next turns in arrival order,
// each logged and answered in order; session/cancel ends the running turn and every prompt queued
// before it (each answers "cancelled", its message logged), and a prompt sent after the cancel runs
// once they are done. $/cancel_request ends one prompt, session/close all of them. At most 8 wait:
// the next one is refused with -32010, data.reason "busy".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { INIT_PARAMS, startAgent, startSdkAgent, acp, Agent } from './lib/agent.mjs';
import { events, rejectsWith, text } from './lib/refs.mjs';

const M = acp.methods.agent;

async function sessionOf(t, opts) {
  const { agent, ctx } = startSdkAgent(t, opts);
  await ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  return { agent, ctx, sessionId };
}

/** A raw request frame, for frames written back to back without waiting. */
const frame = (id, method, params) => JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n';
const isResponse = (e) => !Object.hasOwn(e.frame, 'method') && Object.hasOwn(e.frame, 'id');

/** The user texts of the session's turns, with how each turn ended, from the log. */
function turnsOf(agent, sessionId) {
  const out = [];
  for (const e of events(agent.storeDir, sessionId)) {
    if (e.type === 'user/message' && e.data.source?.kind === 'user') out.push({ text: e.data.content[0].text });
    if (e.type === 'turn/end') out.at(-1).end = e.data.reason.kind;
  }
  return out;
}

/** The echo answer's last line: the text of the user message the model answered. */
const lastUser = (answer) => answer.split('\n').find((l) => l.startsWith('last user message: '))?.slice(19);

test('prompts sent while a turn runs are queued and run next, in arrival order, each logged and answered in order', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t, { args: ['--echo-delay-ms', '5'] });
  const from = agent.frames.length;
  const texts = ['first of three', 'second of three', 'third of three'];
  const answers = await Promise.all(texts.map((s) => ctx.request(M.session.prompt, { sessionId, prompt: text(s) })));
  assert.deepEqual(answers.map((r) => r.stopReason), ['end_turn', 'end_turn', 'end_turn']);

  // Answered in order, and each answer's updates lie between the previous answer and its own.
  const responses = agent.frames.filter((e) => e.index >= from && isResponse(e) && e.frame.result?.stopReason);
  assert.equal(responses.length, 3);
  let previous = from;
  texts.forEach((s, i) => {
    const answer = Agent.chunkText(agent.chunks({ sessionId, from: previous }).filter((e) => e.index < responses[i].index));
    assert.equal(lastUser(answer), s, `turn ${i + 1} answered "${s}"`);
    // The model saw the earlier turns: every queued prompt ran after the previous one ended.
    assert.match(answer, new RegExp(`^echo: received ${2 * i + 2} messages\\n`), answer);
    previous = responses[i].index;
  });
  assert.deepEqual(turnsOf(agent, sessionId), texts.map((s) => ({ text: s, end: 'completed' })));
  await agent.finish();
});

test('session/cancel ends the running turn and the prompts queued before it; a prompt sent after it runs next', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t);
  const from = agent.frames.length;
  const running = ctx.request(M.session.prompt, { sessionId, prompt: text('running [[echo:sleep=60000]]') });
  const queued = ['queued one', 'queued two'].map((s) => ctx.request(M.session.prompt, { sessionId, prompt: text(s) }));
  await agent.turnStarted(sessionId, 1);
  // The queued prompts were sent before the cancel, so they are in line when it arrives.
  await ctx.notify(M.session.cancel, { sessionId });
  const after = ctx.request(M.session.prompt, { sessionId, prompt: text('after the cancel') });

  assert.equal((await running).stopReason, 'cancelled');
  for (const q of queued) assert.equal((await q).stopReason, 'cancelled');
  assert.equal((await after).stopReason, 'end_turn');

  // Answered in arrival order; the prompt after the cancel answered from its own turn only.
  const responses = agent.frames.filter((e) => e.index >= from && isResponse(e) && e.frame.result?.stopReason);
  assert.deepEqual(responses.map((e) => e.frame.result.stopReason), ['cancelled', 'cancelled', 'cancelled', 'end_turn']);
  const chunks = agent.chunks({ sessionId, from });
  assert.ok(chunks.every((e) => e.index > responses[2].index), 'no answer text before the cancelled prompts were answered');
  const answer = Agent.chunkText(chunks);
  assert.equal(lastUser(answer), 'after the cancel', answer);
  // Nothing of the cancelled turns reached the model: it saw only the user messages.
  assert.doesNotMatch(answer, /\[\d+\] assistant/, answer);

  // Every user message is in the log, in order; the cancelled turns ended "aborted".
  assert.deepEqual(turnsOf(agent, sessionId), [
    { text: 'running [[echo:sleep=60000]]', end: 'aborted' },
    { text: 'queued one', end: 'aborted' },
    { text: 'queued two', end: 'aborted' },
    { text: 'after the cancel', end: 'completed' },
  ]);
  await agent.finish();
});

test('$/cancel_request of a queued prompt cancels that prompt alone', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  const sessionId = await agent.newSession();
  const from = agent.frames.length;
  const prompt = (id, s) => ({ jsonrpc: '2.0', id, method: 'session/prompt', params: { sessionId, prompt: text(s) } });
  // The running prompt waits for its permission request, answered only once the server has read the
  // cancel: the session/list written after it is answered (the reader handles $/cancel_request as
  // it reads it). So prompt 2 is certainly still in line when the cancel reaches it.
  const running = `running [[echo:tool=write ${JSON.stringify({ file_path: 'w.txt', content: 'w\n' })}]]`;
  await agent.writeRaw([prompt(1, running), prompt(2, 'never mind'), prompt(3, 'but this one'),
    { jsonrpc: '2.0', method: '$/cancel_request', params: { requestId: 2 } },
    { jsonrpc: '2.0', id: 'read', method: 'session/list', params: {} }].map((f) => JSON.stringify(f) + '\n').join(''));
  await agent.response('read', { from });
  const asked = await agent.nextFrame((f) => f.method === 'session/request_permission', { from, what: 'the permission request' });
  await agent.send({ jsonrpc: '2.0', id: asked.frame.id, result: { outcome: { outcome: 'selected', optionId: 'allow_once' } } });
  const answers = await Promise.all([1, 2, 3].map((id) => agent.response(id, { from })));
  assert.deepEqual(answers.map((r) => r.result?.stopReason), ['end_turn', 'cancelled', 'end_turn']);
  const order = agent.frames.filter((e) => e.index >= from && isResponse(e) && e.frame.id !== 'read').map((e) => e.frame.id);
  assert.deepEqual(order, [1, 2, 3]);
  assert.deepEqual(turnsOf(agent, sessionId), [
    { text: running, end: 'completed' },
    { text: 'never mind', end: 'aborted' },
    { text: 'but this one', end: 'completed' },
  ]);
  await agent.finish();
});

test('eight prompts wait at most: the ninth is refused -32010 with data.reason "busy", the queue unharmed', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t);
  const running = ctx.request(M.session.prompt, { sessionId, prompt: text('running [[echo:sleep=60000]]') });
  const queued = [];
  for (let i = 1; i <= 8; i++) queued.push(ctx.request(M.session.prompt, { sessionId, prompt: text(`queued ${i}`) }));
  const refused = await rejectsWith(ctx.request(M.session.prompt, { sessionId, prompt: text('one too many') }), -32010);
  assert.equal(refused.data?.reason, 'busy');
  assert.equal(refused.data?.sessionId, sessionId);
  assert.match(refused.message, /^Session busy/);
  // Refused while the others still wait: none of them has been answered.
  assert.equal(agent.frames.filter((e) => isResponse(e) && e.frame.result?.stopReason).length, 0);
  await ctx.notify(M.session.cancel, { sessionId });
  assert.equal((await running).stopReason, 'cancelled');
  for (const q of queued) assert.equal((await q).stopReason, 'cancelled');
  // The refused prompt left no trace; the session takes prompts again.
  const texts = turnsOf(agent, sessionId).map((x) => x.text);
  assert.ok(!texts.includes('one too many'), texts.join(', '));
  assert.equal(texts.length, 9);
  assert.equal((await ctx.request(M.session.prompt, { sessionId, prompt: text('again') })).stopReason, 'end_turn');
  await agent.finish();
});

test('session/close with prompts in line: each answers "cancelled", then close answers', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  const sessionId = await agent.newSession();
  const from = agent.frames.length;
  await agent.writeRaw(frame(1, 'session/prompt', { sessionId, prompt: text('running [[echo:sleep=60000]]') }) +
    frame(2, 'session/prompt', { sessionId, prompt: text('queued') }) +
    frame(3, 'session/prompt', { sessionId, prompt: text('/ref') }));
  await agent.turnStarted(sessionId, 1);
  const closed = await agent.call('session/close', { sessionId }, { id: 4 });
  assert.deepEqual(closed.result, {});
  const order = agent.frames.filter((e) => e.index >= from && isResponse(e)).map((e) => [e.frame.id, e.frame.result?.stopReason]);
  assert.deepEqual(order, [[1, 'cancelled'], [2, 'cancelled'], [3, 'cancelled'], [4, undefined]]);
  // A closing session writes nothing more: the queued prompt never reached the log.
  assert.deepEqual(turnsOf(agent, sessionId).map((x) => x.text), ['running [[echo:sleep=60000]]']);
  await agent.finish();
});

test('a session/load waiting behind a turn does not bring back a session closed meanwhile', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  const sessionId = await agent.newSession();
  const from = agent.frames.length;
  await agent.writeRaw(frame(1, 'session/prompt', { sessionId, prompt: text('running [[echo:sleep=60000]]') }) +
    frame(2, 'session/load', { sessionId, cwd: agent.home, mcpServers: [] }));
  await agent.turnStarted(sessionId, 1);
  const closed = await agent.call('session/close', { sessionId }, { id: 3 });
  assert.deepEqual(closed.result, {});
  const answers = agent.frames.filter((e) => e.index >= from && isResponse(e));
  const load = answers.find((e) => e.frame.id === 2);
  assert.ok(load, 'the waiting load is answered by the time close is');
  assert.equal(load.frame.error?.code, -32002, JSON.stringify(load.frame));
  // Closed stays closed: a cancel for it finds nothing running, and a prompt must load it first.
  const prompt = await agent.call('session/prompt', { sessionId, prompt: text('after close') }, { id: 4 });
  assert.equal(prompt.error?.code, -32002, JSON.stringify(prompt));
  await agent.finish();
});
