// session/prompt through the SDK: the echo model's exact answer, streamed word by word, and the
// conversation growing turn by turn (docs/decisions.md#the-echo-model).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, INIT_PARAMS, startSdkAgent, acp, echoAnswer, echoChunks, systemBytes } from './lib/agent.mjs';

const M = acp.methods.agent;

async function sessionOf(t, opts) {
  const { agent, ctx } = startSdkAgent(t, opts);
  await ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  return { agent, ctx, sessionId };
}

// > 48 code points, multi-byte characters (2, 3 and 4 UTF-8 bytes) and a newline, so byte size,
// the 48-character preview, the ellipsis and the ⏎ rendering are all exercised.
const FIRST = 'héllo wörld ✓ 🚀 first line\nsecond line runs on past the forty-eight character preview';
const SECOND = 'and a short one';

test('a prompt streams the exact echo answer, one word per chunk, then end_turn', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t);
  const from = agent.frames.length;
  const r = await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: FIRST }] });
  assert.equal(r.stopReason, 'end_turn');

  const all = agent.updates({ from });
  for (const u of all) assert.equal(u.frame.params.sessionId, sessionId);
  // Besides the answer, the first turn may only announce the session's title (session_info_update).
  const others = all.filter((u) => u.frame.params.update.sessionUpdate !== 'agent_message_chunk');
  assert.ok(others.every((u) => u.frame.params.update.sessionUpdate === 'session_info_update'),
    `unexpected updates: ${others.map((u) => u.line).join('\n')}`);
  const updates = agent.chunks({ from });
  assert.ok(updates.length > 0, 'chunks were streamed');
  for (const u of updates) assert.equal(u.frame.params.update.content.type, 'text');
  const text = Agent.chunkText(updates);
  const expected = echoAnswer([{ role: 'system', bytes: systemBytes(text) }, { role: 'user', text: FIRST }]);
  assert.equal(text, expected);
  assert.deepEqual(updates.map((u) => u.frame.params.update.content.text), echoChunks(expected));
  assert.equal(updates[0].frame.params.update.content.text, 'echo: ');

  // The SDK delivered the same updates, all before the response.
  assert.equal(Agent.sdkText(agent.sdkUpdatesFor(sessionId)), expected);
  const response = agent.frames.find((e) => e.index >= from && e.frame.result?.stopReason);
  assert.ok(updates.every((u) => u.index < response.index), 'every update precedes the prompt response');
  await agent.finish();
});

test('a second prompt in the same session sees system, user, assistant, user', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t);
  const from1 = agent.frames.length;
  await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: FIRST }] });
  const answer1 = Agent.chunkText(agent.updates({ from: from1 }));
  const sys = systemBytes(answer1);

  const from2 = agent.frames.length;
  const r = await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: SECOND }] });
  assert.equal(r.stopReason, 'end_turn');
  const answer2 = Agent.chunkText(agent.updates({ from: from2 }));
  assert.equal(answer2, echoAnswer([
    { role: 'system', bytes: sys },
    { role: 'user', text: FIRST },
    { role: 'assistant', text: answer1 },
    { role: 'user', text: SECOND },
  ]));
  assert.match(answer2, /^echo: received 4 messages\n/);
  await agent.finish();
});

test('sessions are independent: a prompt in a new session sees only its own messages', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t);
  await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: FIRST }] });
  const { sessionId: other } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  const from = agent.frames.length;
  await ctx.request(M.session.prompt, { sessionId: other, prompt: [{ type: 'text', text: SECOND }] });
  const updates = agent.updates({ from });
  assert.ok(updates.every((u) => u.frame.params.sessionId === other));
  const text = Agent.chunkText(updates);
  assert.equal(text, echoAnswer([{ role: 'system', bytes: systemBytes(text) }, { role: 'user', text: SECOND }]));
  await agent.finish();
});

test('several text blocks are joined into one user message as sent', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t);
  const from = agent.frames.length;
  await ctx.request(M.session.prompt, {
    sessionId,
    prompt: [{ type: 'text', text: 'one ' }, { type: 'text', text: 'two' }],
  });
  const text = Agent.chunkText(agent.updates({ from }));
  assert.equal(text, echoAnswer([{ role: 'system', bytes: systemBytes(text) }, { role: 'user', text: 'one two' }]));
  await agent.finish();
});

test('--echo-delay-ms spaces the chunks out', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t, { args: ['--echo-delay-ms', '30'] });
  const from = agent.frames.length;
  await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'hi' }] });
  const updates = agent.chunks({ from });
  assert.ok(updates.length >= 8, `expected many chunks, got ${updates.length}`);
  const span = updates.at(-1).at - updates[0].at;
  // (n-1) pauses of 30 ms; allow scheduling slack below, the lower bound is what matters.
  assert.ok(span >= (updates.length - 1) * 30 * 0.8, `chunks spread over ${span} ms for ${updates.length} chunks`);
  await agent.finish();
});

test('a 2 MiB prompt is accepted and echoed back in full', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t);
  const big = 'w'.repeat(2 * 1024 * 1024);
  const from = agent.frames.length;
  const r = await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: big }] });
  assert.equal(r.stopReason, 'end_turn');
  const text = Agent.chunkText(agent.updates({ from }));
  assert.equal(text, echoAnswer([{ role: 'system', bytes: systemBytes(text) }, { role: 'user', text: big }]));
  await agent.finish();
});

test("the SDK's high-level session helpers (buildSession, prompt, readText) work against the agent", async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  await ctx.request(M.initialize, INIT_PARAMS);
  const session = await ctx.buildSession(agent.home).start();
  try {
    const done = session.prompt('via the helper');
    const text = await session.readText();
    assert.equal((await done).stopReason, 'end_turn');
    assert.equal(text, echoAnswer([{ role: 'system', bytes: systemBytes(text) }, { role: 'user', text: 'via the helper' }]));
  } finally {
    session.dispose();
  }
  await agent.finish();
});
