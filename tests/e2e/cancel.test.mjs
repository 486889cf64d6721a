// session/cancel through the SDK: a streaming prompt ends promptly with stopReason "cancelled",
// nothing for that turn arrives after its response, and the session keeps working.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { INIT_PARAMS, startSdkAgent, acp, sleep, isChunk } from './lib/agent.mjs';

const M = acp.methods.agent;


async function sessionOf(t, opts) {
  const { agent, ctx } = startSdkAgent(t, opts);
  await ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  return { agent, ctx, sessionId };
}

test('cancel after the first chunk ends the prompt with "cancelled" promptly, nothing follows the response', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t, { args: ['--echo-delay-ms', '50'] });
  const from = agent.frames.length;
  const prompt = ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'a long enough answer to cancel' }] });
  const first = await agent.nextFrame(isChunk(sessionId), { from, what: 'first chunk' });
  assert.equal(first.frame.params.update.content.text, 'echo: ');
  const cancelledAt = performance.now();
  await ctx.notify(M.session.cancel, { sessionId });
  const r = await prompt;
  const elapsed = performance.now() - cancelledAt;
  assert.equal(r.stopReason, 'cancelled');
  // Target: well under one chunk delay (50 ms); bound: 2 s.
  assert.ok(elapsed < 2000, `prompt answered ${Math.round(elapsed)} ms after session/cancel`);

  const response = agent.frames.find((e) => e.index >= from && e.frame.result?.stopReason === 'cancelled');
  assert.ok(response, 'the cancelled response is on the wire');
  const streamed = agent.chunks({ sessionId, from });
  assert.ok(streamed.length < 12, `the stream stopped early (${streamed.length} chunks)`);
  // Several chunk delays later, still nothing new for that session.
  await sleep(300);
  const late = agent.updates({ sessionId, from: response.index });
  assert.deepEqual(late.map((e) => e.line), [], 'no session/update after the cancelled response');
  assert.ok(agent.frames.filter((e) => e.index > response.index).length === 0, 'no frame at all after the response');

  // The session takes the next prompt normally.
  const next = await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'again' }] });
  assert.equal(next.stopReason, 'end_turn');
  await agent.finish();
});

test('cancel during an [[echo:sleep=...]] wait answers "cancelled" promptly with no output', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t);
  const from = agent.frames.length;
  const started = performance.now();
  const prompt = ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'nap [[echo:sleep=5000]]' }] });
  await agent.turnStarted(sessionId);
  await ctx.notify(M.session.cancel, { sessionId });
  const r = await prompt;
  assert.equal(r.stopReason, 'cancelled');
  assert.ok(performance.now() - started < 2200, 'answered long before the 5 s sleep ends');
  assert.equal(agent.chunks({ sessionId, from }).length, 0, 'no answer text');
  await agent.finish();
});

test('cancel touches only its own session', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t, { args: ['--echo-delay-ms', '20'] });
  const { sessionId: other } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  const a = ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'one' }] });
  const b = ctx.request(M.session.prompt, { sessionId: other, prompt: [{ type: 'text', text: 'two' }] });
  await agent.nextFrame(isChunk(sessionId), { what: 'first chunk' });
  await ctx.notify(M.session.cancel, { sessionId });
  assert.equal((await a).stopReason, 'cancelled');
  assert.equal((await b).stopReason, 'end_turn');
  await agent.finish();
});

test('cancel with no prompt running, or for an unknown session, is ignored and never answered', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t);
  const from = agent.frames.length;
  await ctx.notify(M.session.cancel, { sessionId });
  await ctx.notify(M.session.cancel, { sessionId: '00000000-0000-4000-8000-000000000000' });
  const r = await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'still fine' }] });
  assert.equal(r.stopReason, 'end_turn', 'a stale cancel does not cancel a later prompt');
  const answers = agent.frames.filter((e) => e.index >= from && !Object.hasOwn(e.frame, 'method'));
  assert.equal(answers.length, 1, `only the prompt was answered: ${answers.map((e) => e.line).join('\n')}`);
  await agent.finish();
});

// A cancel can land at any point of the stream (during a pause, while a chunk is being written, ...).
// Whatever the point, ACP requires the prompt to be answered with stopReason "cancelled" (or
// "end_turn" if it had already finished), never with an error.
test('cancel at any moment of a stream answers "cancelled", never an error (100 cancel points)', async (t) => {
    const { agent, ctx } = startSdkAgent(t, { args: ['--echo-delay-ms', '20'] });
    await ctx.request(M.initialize, INIT_PARAMS);
    const outcomes = {};
    const failures = [];
    // ~5% of cancels hit the race at 20 ms chunk spacing: 100 points make a miss unlikely (< 1%).
    for (let i = 0; i < 100; i++) {
      const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
      const wait = (i * 37) % 320; // spread over the ~300 ms the answer takes to stream
      const from = agent.frames.length;
      const prompt = ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'x' }] })
        .then((r) => r.stopReason, (err) => `error ${err.code} ${err.message} ${JSON.stringify(err.data)}`);
      await sleep(wait);
      await ctx.notify(M.session.cancel, { sessionId });
      const outcome = await prompt;
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      if (outcome !== 'cancelled' && outcome !== 'end_turn') failures.push(`cancel after ${wait} ms: ${outcome}`);
      const response = agent.frames.find((e) => e.index >= from && !e.frame.method && Object.hasOwn(e.frame, 'id'));
      const late = agent.updates({ sessionId, from: response.index });
      if (late.length) failures.push(`cancel after ${wait} ms: ${late.length} update(s) after the response`);
    }
    t.diagnostic(JSON.stringify(outcomes));
    assert.deepEqual(failures, []);
    await agent.finish();
  });
