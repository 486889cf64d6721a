// Context usage (issue 28): a `usage_update` after every model call — the provider's count of the
// last request and answer against the model's context window, our own estimate where the model
// gives no count (echo) — and the turn's tokens as `usage` in the session/prompt answer, through
// the official SDK against a loopback OpenAI-compatible provider and the echo model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { INIT_PARAMS, startSdkAgent, acp } from './lib/agent.mjs';
import { startFakeProvider, answer, providerArgs, startSse, chunkEvent, usageEvent } from './lib/fake-provider.mjs';

const M = acp.methods.agent;
const NO_KEYS = { OPENAI_API_KEY: '', DEEPSEEK_API_KEY: '' };

const require = createRequire(import.meta.url);
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
for (const f of ['int32', 'int64', 'uint16', 'uint32', 'uint64', 'double', 'float']) ajv.addFormat(f, { type: 'number', validate: Number.isFinite });
ajv.addSchema(JSON.parse(readFileSync(require.resolve('@agentclientprotocol/sdk/schema/v1/schema.json'), 'utf8')), 'acp');
ajv.addSchema(JSON.parse(readFileSync(require.resolve('@agentclientprotocol/sdk/schema/v1/schema.unstable.json'), 'utf8')), 'unstable');
function checkSchema(def, value, schema = 'acp') {
  const v = ajv.getSchema(`${schema}#/$defs/${def}`);
  assert.ok(v(value), `${schema} ${def}: ${ajv.errorsText(v.errors)}\n${JSON.stringify(value)}`);
}

const usageUpdates = (agent, sessionId, from) =>
  agent.updates({ sessionId, from }).filter((u) => u.frame.params.update.sessionUpdate === 'usage_update');

test('a provider\'s usage: usage_update used/size after each call, the turn\'s tokens in the answer', async (t) => {
  const server = await startFakeProvider(t);
  // The first answer calls a tool, so the turn makes two model calls; each reports its usage.
  server.queue(async (req, res) => {
    startSse(res);
    res.write(chunkEvent({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'glob', arguments: '{"pattern":"*.none"}' } }] }));
    res.write(chunkEvent({}, 'tool_calls'));
    res.write(usageEvent(100, 20));
    res.end('data: [DONE]\n\n');
  }, answer({ content: ['done'] }));
  const { agent, ctx } = startSdkAgent(t, {
    args: providerArgs(server.url, ['--context-window', '4096']),
    env: NO_KEYS,
  });
  await ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  const from = agent.frames.length;
  const r = await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'find nothing' }] });
  assert.equal(server.requests[0].body.stream_options?.include_usage, true, 'the final usage chunk is asked for');
  assert.equal(server.requests.length, 2);
  checkSchema('PromptResponse', r);
  checkSchema('PromptResponse', r, 'unstable');
  assert.deepEqual(r.usage, { totalTokens: 100 + 20 + 11 + 7, inputTokens: 111, outputTokens: 27 });

  const gauges = usageUpdates(agent, sessionId, from);
  assert.deepEqual(gauges.map((u) => u.frame.params.update), [
    { sessionUpdate: 'usage_update', used: 120, size: 4096 },
    { sessionUpdate: 'usage_update', used: 18, size: 4096 },
  ]);
  for (const u of gauges) checkSchema('SessionNotification', u.frame.params);
  // Each right after its call's answer (the first before the tool it asked for runs), both before
  // the response; the SDK took them as valid updates.
  const updates = agent.updates({ sessionId, from });
  const lastChunk = updates.findLastIndex((u) => u.frame.params.update.sessionUpdate === 'agent_message_chunk');
  assert.ok(updates.indexOf(gauges[0]) < updates.findIndex((u) => u.frame.params.update.sessionUpdate === 'tool_call'));
  assert.ok(updates.indexOf(gauges[1]) > lastChunk);
  const response = agent.frames.find((e) => e.index >= from && e.frame.result?.stopReason);
  assert.ok(gauges.every((g) => g.index < response.index));
  assert.equal(agent.sdkUpdatesFor(sessionId).filter((u) => u.params.update.sessionUpdate === 'usage_update').length, 2);
  await agent.finish();
});

test('no window known for the model: no usage_update, the answer still counts the tokens', async (t) => {
  const server = await startFakeProvider(t);
  server.queue(answer({ content: ['hi'] }));
  const { agent, ctx } = startSdkAgent(t, { args: providerArgs(server.url), env: NO_KEYS });
  await ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  const from = agent.frames.length;
  const r = await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'hello' }] });
  assert.deepEqual(r.usage, { totalTokens: 18, inputTokens: 11, outputTokens: 7 });
  assert.deepEqual(usageUpdates(agent, sessionId, from), []);
  await agent.finish();
});

test('the echo model gives no count: our estimate, growing with the conversation', async (t) => {
  const { agent, ctx } = startSdkAgent(t, { args: ['--context-window', '100000'] });
  await ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  const used = [];
  for (const text of ['first question', 'a second, longer question about the first answer']) {
    const from = agent.frames.length;
    const r = await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });
    checkSchema('PromptResponse', r, 'unstable');
    const gauges = usageUpdates(agent, sessionId, from);
    assert.equal(gauges.length, 1, 'one model call, one usage_update');
    const { used: u, size } = gauges[0].frame.params.update;
    assert.equal(size, 100000);
    // The estimate (bytes / 3) of everything the request carried and of the answer: more than the
    // answer's text alone, and the answer's tokens are the turn's output.
    const answerBytes = Buffer.byteLength(agent.chunks({ sessionId, from }).map((c) => c.frame.params.update.content.text).join(''));
    assert.ok(r.usage.outputTokens >= Math.ceil(answerBytes / 3), JSON.stringify(r.usage));
    assert.ok(u > r.usage.outputTokens && u <= r.usage.totalTokens, `${u} ${JSON.stringify(r.usage)}`);
    assert.equal(r.usage.totalTokens, r.usage.inputTokens + r.usage.outputTokens);
    used.push(u);
  }
  assert.ok(used[1] > used[0], `the context grows: ${used}`);
  await agent.finish();
});
