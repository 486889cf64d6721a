// session/cancel through the SDK: a streaming prompt ends with stopReason "cancelled", nothing for
// that turn arrives after its response, and the session keeps working. The prompts cancelled here
// cannot end any other way while the test runs (an hour between chunks, a minute's sleep), so the
// answer itself shows the cancel worked, however slow the machine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { INIT_PARAMS, startSdkAgent, acp, isChunk } from './lib/agent.mjs';

const M = acp.methods.agent;


async function sessionOf(t, opts) {
  const { agent, ctx } = startSdkAgent(t, opts);
  await ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  return { agent, ctx, sessionId };
}

test('cancel after the first chunk ends the prompt with "cancelled", nothing follows the response', async (t) => {
  // The second chunk is an hour away: while the test runs, only the cancel can end the prompt.
  const { agent, ctx, sessionId } = await sessionOf(t, { args: ['--echo-delay-ms', '3600000'] });
  const from = agent.frames.length;
  const prompt = ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'a long enough answer to cancel' }] });
  const first = await agent.nextFrame(isChunk(sessionId), { from, what: 'first chunk' });
  assert.equal(first.frame.params.update.content.text, 'echo: ');
  await ctx.notify(M.session.cancel, { sessionId });
  assert.equal((await prompt).stopReason, 'cancelled');
  const response = agent.frames.find((e) => e.index >= from && e.frame.result?.stopReason === 'cancelled');
  assert.ok(response, 'the cancelled response is on the wire');
  assert.deepEqual(agent.chunks({ sessionId, from }).map((e) => e.frame.params.update.content.text), ['echo: '],
    'the stream stopped at the cancel');

  // The session takes the next prompt, which runs (its first chunk) and is cancelled the same way.
  // Its turn starts only after the first one has ended, so its answer is the barrier: every frame
  // between the two answers is the second turn's own first chunk.
  const next = ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'again' }] });
  const again = await agent.nextFrame(isChunk(sessionId), { from: response.index + 1, what: 'the next prompt\'s first chunk' });
  assert.equal(again.frame.params.update.content.text, 'echo: ');
  await ctx.notify(M.session.cancel, { sessionId });
  assert.equal((await next).stopReason, 'cancelled');
  const nextResponse = agent.frames.find((e) => e.index > response.index && e.frame.result?.stopReason === 'cancelled');
  const between = agent.frames.filter((e) => e.index > response.index && e.index < nextResponse.index);
  assert.deepEqual(between.map((e) => e.line), [again.line], 'nothing of the first turn after its response');
  // finish() reads stdout to its end: nothing at all followed the second answer either.
  await agent.finish();
  assert.deepEqual(agent.frames.filter((e) => e.index > nextResponse.index).map((e) => e.line), [],
    'no frame after the cancelled response');
});

test('cancel during an [[echo:sleep=...]] wait answers "cancelled" with no output', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t);
  const from = agent.frames.length;
  // A minute, the longest the echo model sleeps: answered before it ends only through the cancel
  // (after it, the answer would stream and end "end_turn").
  const prompt = ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'nap [[echo:sleep=60000]]' }] });
  await agent.turnStarted(sessionId);
  await ctx.notify(M.session.cancel, { sessionId });
  const r = await prompt;
  assert.equal(r.stopReason, 'cancelled');
  assert.equal(agent.chunks({ sessionId, from }).length, 0, 'no answer text');
  await agent.finish();
});

test('cancel touches only its own session', async (t) => {
  // The other session's prompt is in flight when the cancel comes, held by its permission request,
  // which the client answers only once the cancelled prompt has been answered.
  let asked;
  const question = new Promise((resolve) => { asked = resolve; });
  let answer;
  const decision = new Promise((resolve) => { answer = resolve; });
  const withdrawn = [];
  const client = {
    requestPermission: ({ params, signal }) => {
      asked(params);
      signal.addEventListener('abort', () => withdrawn.push(params.toolCall.toolCallId));
      return decision;
    },
  };
  const { agent, ctx, sessionId } = await sessionOf(t, { client });
  const { sessionId: other } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  const written = path.join(agent.home, 'other.txt');
  const a = ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'one [[echo:sleep=60000]]' }] });
  const b = ctx.request(M.session.prompt, {
    sessionId: other,
    prompt: [{ type: 'text', text: `two [[echo:tool=write ${JSON.stringify({ file_path: 'other.txt', content: 'two\n' })}]]` }],
  });
  assert.equal((await question).sessionId, other);
  await agent.turnStarted(sessionId);
  await ctx.notify(M.session.cancel, { sessionId });
  assert.equal((await a).stopReason, 'cancelled');
  answer({ outcome: { outcome: 'selected', optionId: 'allow_once' } });
  assert.equal((await b).stopReason, 'end_turn');
  assert.deepEqual(withdrawn, [], 'the other session\'s permission request was not withdrawn');
  assert.equal(readFileSync(written, 'utf8'), 'two\n', 'the other session\'s tool ran');
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

// A cancel can land at any point of the stream (before the first chunk, in the pause after any
// chunk, once the answer is complete). Whatever the point, ACP requires the prompt to be answered
// with stopReason "cancelled" (or "end_turn" if it had already finished), never with an error.
test('cancel at any moment of a stream answers "cancelled", never an error (100 cancel points)', async (t) => {
    const { agent, ctx } = startSdkAgent(t, { args: ['--echo-delay-ms', '20'] });
    await ctx.request(M.initialize, INIT_PARAMS);
    const outcomes = {};
    const failures = [];
    const answered = []; // [sessionId, index of its prompt's response, label]
    const isResponse = (f) => !Object.hasOwn(f, 'method') && Object.hasOwn(f, 'id');
    for (let i = 0; i < 100; i++) {
      const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
      // The cancel follows the k-th chunk the client reads (0: right after the prompt is sent): k
      // runs over the ~15 chunks of the answer and past its end.
      const k = (i * 7) % 20;
      const from = agent.frames.length;
      const prompt = ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'x' }] })
        .then((r) => r.stopReason, (err) => `error ${err.code} ${err.message} ${JSON.stringify(err.data)}`);
      let at = from;
      for (let seen = 0; seen < k; seen++) {
        const e = await agent.nextFrame((f) => isChunk(sessionId)(f) || isResponse(f), { from: at, what: `chunk ${seen + 1}` });
        if (isResponse(e.frame)) break;
        at = e.index + 1;
      }
      await ctx.notify(M.session.cancel, { sessionId });
      const outcome = await prompt;
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      if (outcome !== 'cancelled' && outcome !== 'end_turn') failures.push(`cancel after chunk ${k}: ${outcome}`);
      const response = agent.frames.find((e) => e.index >= from && isResponse(e.frame));
      answered.push([sessionId, response.index, `cancel after chunk ${k}`]);
    }
    t.diagnostic(JSON.stringify(outcomes));
    // Looked at once stdout has ended (finish() reads it to the end): nothing for a session, ever,
    // after its prompt's answer.
    await agent.finish();
    for (const [sessionId, at, label] of answered) {
      const late = agent.updates({ sessionId, from: at });
      if (late.length) failures.push(`${label}: ${late.length} update(s) after the response`);
    }
    assert.deepEqual(failures, []);
  });
