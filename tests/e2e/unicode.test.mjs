// Escaped unpaired UTF-16 surrogates in frames are read as U+FFFD (docs/decisions.md#errors-on-the-wire),
// never rejected; proper pairs are one code point. Output stays valid UTF-8 (the helper checks every stdout
// line).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, startAgent, echoAnswer, systemBytes, lastUserLine } from './lib/agent.mjs';

const cases = [
  // [JSON string body as written on the wire, the text the server must see]
  ['a\\ud800b', 'a\uFFFDb'],
  ['\\udc00', '\uFFFD'],
  ['\\ude80\\ud83d', '\uFFFD\uFFFD'],
  ['\\ud83d\\ude80', '\u{1F680}'],
  ['x\\ud800\\u0041', 'x\uFFFDA'],
  ['\\ud800\\ud800\\udc00', '\uFFFD\u{10000}'],
  ['end \\udbff', 'end \uFFFD'],
];

test('escaped unpaired surrogates in prompt text are read as U+FFFD', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  let id = 100;
  for (const [wire, seen] of cases) {
    // Fresh session each time so the expected conversation is just system + this message.
    const sid = await agent.newSession();
    const from = agent.frames.length;
    const reqId = id++;
    await agent.writeRaw(`{"jsonrpc":"2.0","id":${reqId},"method":"session/prompt","params":{"sessionId":"${sid}","prompt":[{"type":"text","text":"${wire}"}]}}\n`);
    const r = await agent.response(reqId, { from });
    assert.equal(r.result?.stopReason, 'end_turn', `${wire}: ${JSON.stringify(r)}`);
    const text = Agent.chunkText(agent.updates({ sessionId: sid, from }));
    assert.equal(lastUserLine(text), seen, wire);
    assert.equal(text, echoAnswer([{ role: 'system', bytes: systemBytes(text) }, { role: 'user', text: seen }]), wire);
  }
  await agent.finish();
});

test('an unpaired surrogate elsewhere in a frame (cwd, unknown fields) is not a parse error', async (t) => {
  const agent = startAgent(t);
  await agent.writeRaw('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"ed\\udfff","version":"1"},"_x":"\\ud800"}}\n');
  const init = await agent.response(1);
  assert.equal(init.result?.protocolVersion, 1, JSON.stringify(init));
  await agent.writeRaw('{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp/d\\ud800","mcpServers":[]}}\n');
  const created = await agent.response(2);
  assert.ok(created.result?.sessionId, JSON.stringify(created));
  await agent.finish();
});

test('non-ASCII text passes through unchanged and is counted in UTF-8 bytes', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  const sessionId = await agent.newSession();
  const msg = 'Grüße, 世界! \u{1F600} ﬁ \u0301e';
  const from = agent.frames.length;
  const r = await agent.call('session/prompt', { sessionId, prompt: [{ type: 'text', text: msg }] });
  assert.equal(r.result.stopReason, 'end_turn');
  const text = Agent.chunkText(agent.updates({ from }));
  assert.equal(text, echoAnswer([{ role: 'system', bytes: systemBytes(text) }, { role: 'user', text: msg }]));
  await agent.finish();
});
