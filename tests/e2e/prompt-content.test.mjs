// How prompt content blocks reach the model: resource_link and embedded text resources rendered into
// the user text (seen in the echo's "last user message:" line), unsupported blocks rejected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, INIT_PARAMS, startSdkAgent, acp, echoAnswer, systemBytes, lastUserLine } from './lib/agent.mjs';

const M = acp.methods.agent;
const shown = (s) => s.replaceAll('\n', '\u23CE');

async function sessionOf(t) {
  const { agent, ctx } = startSdkAgent(t);
  await ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  return { agent, ctx, sessionId };
}

async function echoOf(agent, ctx, sessionId, prompt) {
  const from = agent.frames.length;
  const r = await ctx.request(M.session.prompt, { sessionId, prompt });
  assert.equal(r.stopReason, 'end_turn');
  return Agent.chunkText(agent.updates({ from }));
}

test('resource_link is rendered as \\n[resource_link name=<JSON> uri=<JSON>]\\n', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t);
  const name = 'notes "v2".md';
  const uri = 'file:///tmp/a b/notes.md';
  const text = await echoOf(agent, ctx, sessionId, [
    { type: 'text', text: 'see' },
    { type: 'resource_link', name, uri },
    { type: 'text', text: 'please' },
  ]);
  const user = `see\n[resource_link name=${JSON.stringify(name)} uri=${JSON.stringify(uri)}]\nplease`;
  assert.equal(lastUserLine(text), shown(user));
  assert.equal(text, echoAnswer([{ role: 'system', bytes: systemBytes(text) }, { role: 'user', text: user }]));
  await agent.finish();
});

test('an embedded text resource is rendered as \\n[resource uri=<JSON>]\\n<text>\\n', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t);
  const uri = 'file:///src/main.cpp';
  const body = 'int main() {\n  return 0;\n}';
  const text = await echoOf(agent, ctx, sessionId, [
    { type: 'text', text: 'explain' },
    { type: 'resource', resource: { uri, text: body, mimeType: 'text/x-c++' } },
  ]);
  const user = `explain\n[resource uri=${JSON.stringify(uri)}]\n${body}\n`;
  assert.equal(lastUserLine(text), shown(user));
  assert.equal(text, echoAnswer([{ role: 'system', bytes: systemBytes(text) }, { role: 'user', text: user }]));
  await agent.finish();
});

test('a prompt of only a resource_link is accepted (it is not blank)', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t);
  const text = await echoOf(agent, ctx, sessionId, [{ type: 'resource_link', name: 'x', uri: 'file:///x' }]);
  assert.equal(lastUserLine(text), shown('\n[resource_link name="x" uri="file:///x"]\n'));
  await agent.finish();
});

test('unknown fields, _meta and annotations are ignored everywhere in a prompt', async (t) => {
  const { agent, ctx, sessionId } = await sessionOf(t);
  const from = agent.frames.length;
  const r = await ctx.request(M.session.prompt, {
    sessionId,
    _meta: { 'x-test': { nested: [1, 2] } },
    someFutureField: 5,
    prompt: [
      { type: 'text', text: 'hi', annotations: { audience: ['user'], priority: 0.5, lastModified: '2025-01-01T00:00:00Z' }, _meta: {}, foo: 'bar' },
      { type: 'resource_link', name: 'n', uri: 'file:///n', title: 'T', description: 'D', mimeType: 'text/plain', size: 12, _meta: { a: 1 } },
      { type: 'resource', resource: { uri: 'file:///r', text: 'R', mimeType: 'text/plain', _meta: {} }, annotations: { priority: 1 } },
    ],
  });
  assert.equal(r.stopReason, 'end_turn');
  const text = Agent.chunkText(agent.updates({ from }));
  assert.equal(lastUserLine(text), shown('hi\n[resource_link name="n" uri="file:///n"]\n\n[resource uri="file:///r"]\nR\n'));
  await agent.finish();
});

const rejected = [
  ['image that is not whole', [{ type: 'text', text: 'look' }, { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }], '/prompt/1/data'],
  ['audio', [{ type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' }], '/prompt/0/type'],
  ['blob resource', [{ type: 'text', text: 'x' }, { type: 'resource', resource: { uri: 'file:///b.bin', blob: 'AAEC' } }], '/prompt/1/resource'],
  ['empty text', [{ type: 'text', text: '' }], '/prompt'],
  ['whitespace-only text', [{ type: 'text', text: ' \n\t ' }, { type: 'text', text: '  ' }], '/prompt'],
  ['empty prompt array', [], '/prompt'],
  ['unknown block type', [{ type: 'bogus' }], '/prompt/0/type'],
  ['text block without text', [{ type: 'text', text: 'a' }, { type: 'text' }], '/prompt/1/text'],
  ['resource_link without name', [{ type: 'resource_link', uri: 'file:///x' }], '/prompt/0/name'],
  ['prompt that is not an array', 'hello', '/prompt'],
];

for (const [what, prompt, expectedPath] of rejected) {
  test(`${what} in a prompt is -32602 with data.path, and the session stays usable`, async (t) => {
    const { agent, ctx, sessionId } = await sessionOf(t);
    const from = agent.frames.length;
    await assert.rejects(ctx.request(M.session.prompt, { sessionId, prompt }), (err) => {
      assert.equal(err.code, -32602, `code for ${what}: ${err.code} ${err.message}`);
      assert.match(err.message, /^Invalid params/);
      assert.equal(err.data?.path, expectedPath, `data.path for ${what}: ${JSON.stringify(err.data)}`);
      return true;
    });
    assert.equal(agent.updates({ from }).length, 0, 'a rejected prompt streams nothing');
    // The rejected prompt left no trace in the conversation.
    const text = await echoOf(agent, ctx, sessionId, [{ type: 'text', text: 'again' }]);
    assert.match(text, /^echo: received 2 messages\n/);
    await agent.finish();
  });
}
