// The real OpenAI-compatible provider, end to end: the binary runs with `--provider openai
// --base-url http://127.0.0.1:PORT` against a scripted loopback server (lib/fake-provider.mjs) and
// is driven through the official SDK. Covers streaming (content and reasoning), stop reasons, the
// request body (system prompt, conversation from the stored surface after a restart, no reasoning sent
// back), provider errors on the wire (docs/decisions.md#errors-on-the-wire) and in the log, cancel, and the
// consecutive-user fallback (docs/decisions.md#references-on-the-wire).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { INIT_PARAMS, startSdkAgent, acp, isChunk, until, emitterSource } from './lib/agent.mjs';
import { startFakeProvider, answer, httpError, startSse, chunkEvent, providerArgs, logEvents } from './lib/fake-provider.mjs';
import { failureOf, logPath } from './lib/store.mjs';

const M = acp.methods.agent;
const NO_KEYS = { OPENAI_API_KEY: '', DEEPSEEK_API_KEY: '' };

async function openSession(t, url, { extra = [], env = {} } = {}) {
  const { agent, ctx } = startSdkAgent(t, { args: providerArgs(url, extra), env: { ...NO_KEYS, ...env } });
  await ctx.request(M.initialize, INIT_PARAMS);
  const created = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  return { agent, ctx, sessionId: created.sessionId, created };
}

const prompt = (ctx, sessionId, text) => ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });
const updatesOf = (agent, sessionId, kind) => agent.sdkUpdatesFor(sessionId).map((u) => u.params.update).filter((u) => u.sessionUpdate === kind);
const textOf = (updates) => updates.map((u) => u.content.text).join('');

test('content and reasoning stream as message and thought chunks; the request carries system prompt and model', async (t) => {
  const server = await startFakeProvider(t);
  server.queue(answer({ reasoning: ['Let me ', 'think.'], content: ['Hello', ', ', 'world'] }));
  const { agent, ctx, sessionId } = await openSession(t, server.url);
  const r = await prompt(ctx, sessionId, 'hi there');
  assert.equal(r.stopReason, 'end_turn');
  assert.equal(textOf(updatesOf(agent, sessionId, 'agent_thought_chunk')), 'Let me think.');
  assert.equal(textOf(updatesOf(agent, sessionId, 'agent_message_chunk')), 'Hello, world');
  assert.ok(updatesOf(agent, sessionId, 'agent_message_chunk').length >= 3, 'streamed piece by piece');

  assert.equal(server.requests.length, 1);
  const req = server.requests[0];
  assert.equal(req.method, 'POST');
  assert.equal(req.url, '/chat/completions');
  assert.equal(req.headers.authorization, undefined, 'no key on loopback without OPENAI_API_KEY');
  assert.equal(req.body.model, 'm1');
  assert.equal(req.body.stream, true);
  const [system, user, ...rest] = req.body.messages;
  assert.equal(rest.length, 0);
  assert.equal(system.role, 'system');
  assert.ok(system.content.includes(agent.home), 'system prompt names the cwd');
  assert.ok(system.content.includes(new Date().toISOString().slice(0, 10)), 'system prompt has the UTC date');
  assert.deepEqual(user, { role: 'user', content: 'hi there' });

  const events = logEvents(agent.storeDir, sessionId);
  const message = events.find((e) => e.type === 'assistant/message');
  assert.deepEqual(message.data.content, [{ type: 'reasoning', text: 'Let me think.' }, { type: 'text', text: 'Hello, world' }]);
  assert.deepEqual(message.data.provenance, { provider: 'openai', model: 'm1' });
  assert.equal(message.data.usage.inputTokens, 11);
  assert.equal(message.data.usage.outputTokens, 7);
  assert.deepEqual(events.at(-1).data.reason, { kind: 'completed' });
  await agent.finish();
});

for (const [finish, stopReason] of [['stop', 'end_turn'], ['length', 'max_tokens'], ['content_filter', 'refusal']]) {
  test(`finish_reason ${finish} ends the prompt with ${stopReason}`, async (t) => {
    const server = await startFakeProvider(t);
    server.queue(answer({ content: ['partial answer'], finish }));
    const { agent, ctx, sessionId } = await openSession(t, server.url);
    const r = await prompt(ctx, sessionId, 'go');
    assert.equal(r.stopReason, stopReason);
    assert.equal(textOf(updatesOf(agent, sessionId, 'agent_message_chunk')), 'partial answer');
    await agent.finish();
  });
}

test('after a restart the request is rebuilt from the stored surface, without reasoning', async (t) => {
  const server = await startFakeProvider(t);
  const store = mkdtempSync(path.join(tmpdir(), 'dsh-acp-prov-store-'));
  const cwd = mkdtempSync(path.join(tmpdir(), 'dsh-acp-prov-cwd-'));
  t.after(() => { rmSync(store, { recursive: true, force: true }); rmSync(cwd, { recursive: true, force: true }); });
  server.queue(answer({ reasoning: ['secret thoughts'], content: ['first answer'] }), answer({ content: ['second answer'] }));

  const first = startSdkAgent(t, { args: providerArgs(server.url, ['--store', store]), env: NO_KEYS });
  await first.ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId } = await first.ctx.request(M.session.new, { cwd, mcpServers: [] });
  await prompt(first.ctx, sessionId, 'question one');
  await first.agent.finish();

  const second = startSdkAgent(t, { args: providerArgs(server.url, ['--store', store]), env: NO_KEYS });
  await second.ctx.request(M.initialize, INIT_PARAMS);
  await second.ctx.request(M.session.load, { sessionId, cwd, mcpServers: [] });
  await prompt(second.ctx, sessionId, 'question two');
  const messages = server.requests[1].body.messages;
  assert.deepEqual(messages.slice(1), [
    { role: 'user', content: 'question one' },
    { role: 'assistant', content: 'first answer' },
    { role: 'user', content: 'question two' },
  ]);
  assert.ok(!JSON.stringify(messages).includes('secret thoughts'), 'reasoning is never sent back');
  await second.agent.finish();
});

test('401 answers -32000 naming the provider', async (t) => {
  const server = await startFakeProvider(t);
  server.queue(httpError(401, 'Authentication Fails, Your api key is invalid'));
  const { agent, ctx, sessionId } = await openSession(t, server.url);
  await assert.rejects(prompt(ctx, sessionId, 'x'), (e) => {
    assert.equal(e.code, -32000);
    assert.match(e.message, /^Authentication required/);
    assert.deepEqual(e.data, { provider: 'openai' });
    return true;
  });
  const end = logEvents(agent.storeDir, sessionId).at(-1);
  assert.equal(end.type, 'turn/end');
  assert.equal(end.data.reason.kind, 'error');
  await agent.finish();
});

for (const [status, code, headers] of [
  [402, 'PROVIDER_INSUFFICIENT_BALANCE', {}],
  [429, 'PROVIDER_RATE_LIMITED', { 'retry-after': '0' }],
  [500, 'PROVIDER_UNAVAILABLE', {}],
  [400, 'PROVIDER_BAD_REQUEST', {}],
]) {
  test(`HTTP ${status} answers -32603 with data.code ${code} and the provider's message`, async (t) => {
    const server = await startFakeProvider(t);
    server.queue(httpError(status, `scripted failure ${status}`, headers));
    const { agent, ctx, sessionId } = await openSession(t, server.url);
    await assert.rejects(prompt(ctx, sessionId, 'x'), (e) => {
      assert.equal(e.code, -32603);
      assert.equal(e.message, `scripted failure ${status}`);
      assert.deepEqual(e.data, { code, status });
      return true;
    });
    assert.equal(server.requests.length, 1, '--max-retries 0: no retry');
    const end = logEvents(agent.storeDir, sessionId).at(-1);
    assert.deepEqual(end.data.reason.kind, 'error');
    assert.equal(failureOf(end.data.reason).message, `scripted failure ${status}`);
    assert.equal(failureOf(end.data.reason).code, code);
    await agent.finish();
  });
}

test('429 then 200 is retried before any output', async (t) => {
  const server = await startFakeProvider(t);
  server.queue(httpError(429, 'slow down', { 'retry-after': '0' }), answer({ content: ['after retry'] }));
  const { agent, ctx, sessionId } = await openSession(t, server.url, { extra: ['--max-retries', '2'] });
  const r = await prompt(ctx, sessionId, 'x');
  assert.equal(r.stopReason, 'end_turn');
  assert.equal(server.requests.length, 2);
  assert.equal(textOf(updatesOf(agent, sessionId, 'agent_message_chunk')), 'after retry');
  await agent.finish();
});

test('a failure after partial output: cut-off message, then the error answer; turn/end error in the log', async (t) => {
  const server = await startFakeProvider(t);
  server.queue(async (req, res) => {
    startSse(res);
    res.write(chunkEvent({ content: 'partial ' }));
    // The error once the client has the partial output: it was streamed, not held back.
    await session.agent.nextFrame(isChunk(session.sessionId), { what: 'the partial chunk' });
    res.end('data: {"error":{"message":"Internal server error","code":500}}\n\n');
  });
  const session = await openSession(t, server.url, { extra: ['--max-retries', '3'] });
  const { agent, ctx, sessionId } = session;
  await assert.rejects(prompt(ctx, sessionId, 'x'), (e) => {
    assert.equal(e.code, -32603);
    assert.equal(e.message, 'Internal server error');
    assert.equal(e.data.code, 'PROVIDER_UNAVAILABLE');
    return true;
  });
  assert.equal(server.requests.length, 1, 'not retried after output');
  const text = textOf(updatesOf(agent, sessionId, 'agent_message_chunk'));
  assert.ok(text.startsWith('partial '), text);
  assert.match(text, /cut off/);
  // The cut-off note is a notification sent before the error response.
  const noteIndex = agent.frames.findIndex((e) => e.frame.method === 'session/update' && JSON.stringify(e.frame).includes('cut off'));
  const errorIndex = agent.frames.findIndex((e) => e.frame.error?.message === 'Internal server error');
  assert.ok(noteIndex >= 0 && errorIndex > noteIndex, `note ${noteIndex} before error ${errorIndex}`);
  const end = logEvents(agent.storeDir, sessionId).at(-1);
  assert.equal(end.type, 'turn/end');
  assert.equal(end.data.reason.kind, 'error');
  assert.equal(failureOf(end.data.reason).message, 'Internal server error');
  await agent.finish();
});

// The stream stays open until the test ends it (keep-alive comments do not count against the
// default idle timeout of two minutes, beyond the test's CTest timeout): only the cancel can end
// the turn with "cancelled" and close the connection while the test runs.
test('session/cancel mid-stream answers cancelled and closes the provider connection', async (t) => {
  const server = await startFakeProvider(t);
  let release;
  server.queue(async (req, res) => {
    startSse(res);
    res.write(chunkEvent({ content: 'first ' }));
    // Keep the stream open (with keep-alive comments) until the test ends it.
    const timer = setInterval(() => res.write(': keep-alive\n\n'), 50);
    await new Promise((r) => { release = r; res.on('close', r); });
    clearInterval(timer);
  });
  const { agent, ctx, sessionId } = await openSession(t, server.url);
  const pending = prompt(ctx, sessionId, 'long answer please');
  await agent.nextFrame((f) => f.params?.update?.sessionUpdate === 'agent_message_chunk', { what: 'first chunk' });
  await ctx.notify(M.session.cancel, { sessionId });
  const r = await pending;
  assert.equal(r.stopReason, 'cancelled');
  await until(() => server.requests[0].closedAt !== null, 'the provider to see the connection closed', emitterSource(server.events, 'closed'));
  release?.();
  const end = logEvents(agent.storeDir, sessionId).at(-1);
  assert.deepEqual(end.data.reason, { kind: 'aborted' });
  await agent.finish();
});

test('a 400 about consecutive user messages is retried once with them merged', async (t) => {
  const server = await startFakeProvider(t);
  server.queue(
    httpError(500, 'first turn fails'),  // leaves its user message in the conversation
    httpError(400, 'The model does not support successive user or assistant messages'),
    answer({ content: ['merged ok'] }),
  );
  const { agent, ctx, sessionId } = await openSession(t, server.url);
  await assert.rejects(prompt(ctx, sessionId, 'one'), (e) => e.code === -32603);
  const r = await prompt(ctx, sessionId, 'two');
  assert.equal(r.stopReason, 'end_turn');
  assert.equal(server.requests.length, 3);
  assert.deepEqual(server.requests[1].body.messages.slice(1), [{ role: 'user', content: 'one' }, { role: 'user', content: 'two' }]);
  assert.deepEqual(server.requests[2].body.messages.slice(1), [{ role: 'user', content: 'one\n\ntwo' }]);
  assert.equal(textOf(updatesOf(agent, sessionId, 'agent_message_chunk')), 'merged ok');
  // The log keeps both user messages as they were.
  const users = logEvents(agent.storeDir, sessionId).filter((e) => e.type === 'user/message');
  assert.equal(users.length, 2);
  await agent.finish();
});

test('OPENAI_API_KEY is sent as a bearer token', async (t) => {
  const server = await startFakeProvider(t);
  const { agent, ctx, sessionId } = await openSession(t, server.url, { env: { OPENAI_API_KEY: 'sk-openai-test' } });
  await prompt(ctx, sessionId, 'x');
  assert.equal(server.requests[0].headers.authorization, 'Bearer sk-openai-test');
  await agent.finish();
});

test('keep-alive comments do not extend the idle timeout: PROVIDER_TIMEOUT after --idle-timeout-ms', async (t) => {
  const server = await startFakeProvider(t);
  server.queue(async (req, res) => {
    startSse(res);
    // Until the server gives up: if keep-alives held the idle timer off, the turn would wait for the
    // overall deadline (ten minutes) and the test would end at its CTest timeout.
    const timer = setInterval(() => res.write(': keep-alive\n\n'), 50);
    await new Promise((r) => { res.on('close', r); });
    clearInterval(timer);
  });
  const { agent, ctx, sessionId } = await openSession(t, server.url, { extra: ['--idle-timeout-ms', '300'] });
  const started = performance.now();
  await assert.rejects(prompt(ctx, sessionId, 'x'), (e) => {
    assert.equal(e.code, -32603);
    assert.equal(e.data.code, 'PROVIDER_TIMEOUT');
    return true;
  });
  const elapsed = performance.now() - started;
  assert.ok(elapsed >= 250, `timed out after ${Math.round(elapsed)} ms (idle 300 ms)`);
  assert.equal(failureOf(logEvents(agent.storeDir, sessionId).at(-1).data.reason).code, 'PROVIDER_TIMEOUT');
  await agent.finish();
});

test('a connection dropped mid-stream: PROVIDER_NETWORK after the cut-off note, not retried', async (t) => {
  const server = await startFakeProvider(t);
  server.queue(async (req, res) => {
    startSse(res);
    res.write(chunkEvent({ content: 'half ' }));
    await session.agent.nextFrame(isChunk(session.sessionId), { what: 'the partial chunk' });
    res.socket.destroy();
  });
  const session = await openSession(t, server.url, { extra: ['--max-retries', '3'] });
  const { agent, ctx, sessionId } = session;
  await assert.rejects(prompt(ctx, sessionId, 'x'), (e) => {
    assert.equal(e.code, -32603);
    assert.equal(e.data.code, 'PROVIDER_NETWORK');
    return true;
  });
  assert.equal(server.requests.length, 1);
  assert.match(textOf(updatesOf(agent, sessionId, 'agent_message_chunk')), /^half [\s\S]*cut off/);
  await agent.finish();
});

// Issue 27: a tool result with bytes that are not UTF-8 made the next request body invalid UTF-8
// (the server refused it), and a model that streamed such bytes failed the turn. Both become U+FFFD.
test('bytes that are not UTF-8, from a command or from the model, reach the request, frames and log as U+FFFD', async (t) => {
  const server = await startFakeProvider(t);
  const call = { index: 0, id: 'call_1', type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command: "printf 'A\\377B'" }) } };
  server.queue(
    async (req, res) => {
      startSse(res);
      res.write(chunkEvent({ tool_calls: [call] }));
      res.write(chunkEvent({}, 'tool_calls'));
      res.end('data: [DONE]\n\n');
    },
    async (req, res) => {
      startSse(res);
      // A server that sends a raw byte inside a string (not JSON text as it stands).
      res.write(Buffer.concat([Buffer.from('data: {"choices":[{"index":0,"delta":{"content":"x'), Buffer.from([0xff]), Buffer.from('y"}}]}\n\n')]));
      res.write(chunkEvent({}, 'stop'));
      res.end('data: [DONE]\n\n');
    },
  );
  const { agent, ctx } = startSdkAgent(t, {
    args: providerArgs(server.url),
    env: NO_KEYS,
    client: { requestPermission: () => ({ outcome: { outcome: 'selected', optionId: 'allow_once' } }) },
  });
  await ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  const r = await prompt(ctx, sessionId, 'run it');
  assert.equal(r.stopReason, 'end_turn');
  assert.equal(server.requests.length, 2);
  const strict = new TextDecoder('utf-8', { fatal: true });
  for (const req of server.requests) strict.decode(req.raw);  // throws on a byte that is not UTF-8
  const toolMessage = server.requests[1].body.messages.find((m) => m.role === 'tool');
  assert.equal(toolMessage.content, 'A\uFFFDB');
  assert.equal(textOf(updatesOf(agent, sessionId, 'agent_message_chunk')), 'x\uFFFDy');
  agent.assertFramesOnly();
  strict.decode(readFileSync(logPath(agent.storeDir, sessionId)));  // --store-compression none
  strict.decode(readFileSync(agent.logFile));
  const events = logEvents(agent.storeDir, sessionId);
  assert.deepEqual(events.find((e) => e.type === 'tool/result').data.content, [{ type: 'text', text: 'A\uFFFDB' }]);
  assert.deepEqual(events.at(-1).data.reason, { kind: 'completed' });
  await agent.finish();
});
