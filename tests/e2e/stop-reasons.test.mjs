// The echo model's stop directives end the turn with that stop reason (docs/decisions.md#the-echo-model).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, INIT_PARAMS, startSdkAgent, acp, echoAnswer, systemBytes } from './lib/agent.mjs';

const M = acp.methods.agent;

for (const reason of ['max_tokens', 'refusal']) {
  test(`[[echo:stop=${reason}]] ends the turn with stopReason ${reason} after the full answer`, async (t) => {
    const { agent, ctx } = startSdkAgent(t);
    await ctx.request(M.initialize, INIT_PARAMS);
    const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
    const prompt = `stop please [[echo:stop=${reason}]]`;
    const from = agent.frames.length;
    const r = await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: prompt }] });
    assert.equal(r.stopReason, reason);
    const text = Agent.chunkText(agent.updates({ from }));
    assert.equal(text, echoAnswer([{ role: 'system', bytes: systemBytes(text) }, { role: 'user', text: prompt }]));
    await agent.finish();
  });
}

test('a directive in an earlier message does not apply to a later prompt', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  await ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  const first = await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: '[[echo:stop=max_tokens]]' }] });
  assert.equal(first.stopReason, 'max_tokens');
  const second = await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'plain' }] });
  assert.equal(second.stopReason, 'end_turn');
  await agent.finish();
});

test('[[sleep:MS]] and [[echo:sleep=MS]] delay the answer', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  await ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  for (const directive of ['[[sleep:300]]', '[[echo:sleep=300]]']) {
    const from = agent.frames.length;
    const started = performance.now();
    const r = await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: `wait ${directive}` }] });
    assert.equal(r.stopReason, 'end_turn');
    const first = agent.chunks({ from })[0];
    assert.ok(first, 'the answer streamed');
    assert.ok(first.at - started >= 280, `${directive}: first chunk after ${Math.round(first.at - started)} ms`);
  }
  await agent.finish();
});

// ACP v1 StopReason "refusal": "The user prompt and everything that comes after it won't be included in the
// next prompt" (https://agentclientprotocol.com/protocol/prompt-turn#stop-reasons). So the turn after a
// refusal sees system + the new user message only, not the refused prompt and its answer.
test('after a refusal, the refused prompt and its answer leave the next request', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  await ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  const first = await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'no [[echo:stop=refusal]]' }] });
  assert.equal(first.stopReason, 'refusal');
  const from = agent.frames.length;
  await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'next' }] });
  const text = Agent.chunkText(agent.updates({ from }));
  assert.equal(text, echoAnswer([{ role: 'system', bytes: systemBytes(text) }, { role: 'user', text: 'next' }]));
  await agent.finish();
});
