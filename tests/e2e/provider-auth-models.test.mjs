// Authentication (docs/models.md: one agent-type auth method, -32000 until a key is found,
// authenticate re-reads environment and config file) and the per-session model option
// (configOptions on new/load/resume, session/set_config_option, the request's model, request/header
// events in the log, restored on load), through the official SDK against a loopback provider.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { Agent, INIT_PARAMS, startSdkAgent, acp } from './lib/agent.mjs';
import { startFakeProvider, answer, providerArgs, logEvents } from './lib/fake-provider.mjs';

const M = acp.methods.agent;
const NO_KEYS = { OPENAI_API_KEY: '', DEEPSEEK_API_KEY: '' };

const require = createRequire(import.meta.url);
const schema = JSON.parse(readFileSync(require.resolve('@agentclientprotocol/sdk/schema/v1/schema.json'), 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
for (const f of ['int32', 'int64', 'uint16', 'uint32', 'uint64', 'double', 'float']) ajv.addFormat(f, { type: 'number', validate: Number.isFinite });
ajv.addSchema(schema, 'acp');
function checkSchema(def, value) {
  const v = ajv.getSchema(`acp#/$defs/${def}`);
  assert.ok(v(value), `${def}: ${ajv.errorsText(v.errors)}\n${JSON.stringify(value)}`);
}

const rejectsWith = (promise, code, check = () => {}) => assert.rejects(promise, (e) => {
  assert.equal(e.code, code, `${e.code} ${e.message} ${JSON.stringify(e.data)}`);
  check(e);
  return true;
});

function deepseekArgs(url) {
  return ['--provider', 'deepseek', '--base-url', url, '--store-compression', 'none', '--max-retries', '0'];
}

test('deepseek without a key: auth method advertised, sessions gated, authenticate picks up the config-file key', async (t) => {
  const server = await startFakeProvider(t);
  server.queue(answer({ content: ['authorised'] }));
  const { agent, ctx } = startSdkAgent(t, { args: deepseekArgs(server.url), env: NO_KEYS });
  const init = await ctx.request(M.initialize, INIT_PARAMS);
  checkSchema('InitializeResponse', init);
  assert.equal(init.authMethods.length, 1);
  const [method] = init.authMethods;
  assert.equal(method.id, 'dsh-acp-api-key');
  assert.ok(method.name);
  assert.match(method.description, /DEEPSEEK_API_KEY/);
  assert.match(method.description, /config/);
  assert.ok(method.type === undefined || method.type === 'agent', 'agent type (the default)');

  await rejectsWith(ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] }), -32000,
    (e) => assert.deepEqual(e.data, { provider: 'deepseek' }));
  await rejectsWith(ctx.request(M.session.load, { sessionId: 'whatever', cwd: agent.home, mcpServers: [] }), -32000);
  await rejectsWith(ctx.request(M.session.prompt, { sessionId: 'whatever', prompt: [{ type: 'text', text: 'x' }] }), -32000);
  await rejectsWith(ctx.request(M.authenticate, { methodId: 'dsh-acp-api-key' }), -32000);
  await rejectsWith(ctx.request(M.authenticate, { methodId: 'password' }), -32602,
    (e) => assert.equal(e.data.path, '/methodId'));
  // Listing still works without a key.
  await ctx.request(M.session.list, {});

  writeFileSync(path.join(agent.home, 'config.json'), JSON.stringify({ deepseekApiKey: 'sk-from-file' }));
  assert.deepEqual(await ctx.request(M.authenticate, { methodId: 'dsh-acp-api-key' }), {});
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  const r = await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'hi' }] });
  assert.equal(r.stopReason, 'end_turn');
  assert.equal(server.requests[0].headers.authorization, 'Bearer sk-from-file');
  assert.equal(server.requests[0].body.model, 'deepseek-flash', 'deepseek default model');
  await agent.finish();
});

test('a key in the environment: authenticated from the start; echo and loopback openai advertise a method needing nothing', async (t) => {
  const server = await startFakeProvider(t);
  const keyed = startSdkAgent(t, { args: deepseekArgs(server.url), env: { ...NO_KEYS, DEEPSEEK_API_KEY: 'sk-env' } });
  assert.equal((await keyed.ctx.request(M.initialize, INIT_PARAMS)).authMethods.length, 1);
  const { sessionId } = await keyed.ctx.request(M.session.new, { cwd: keyed.agent.home, mcpServers: [] });
  await keyed.ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'hi' }] });
  assert.equal(server.requests[0].headers.authorization, 'Bearer sk-env');
  await keyed.agent.finish();

  const echo = startSdkAgent(t, { env: NO_KEYS });
  // The ACP registry lists only agents naming an auth method: one that needs no key still names one.
  const noKey = (methods) => assert.deepEqual(methods.map((m) => [m.id, m.type, m.name]), [['dsh-acp-api-key', 'agent', 'No sign-in needed']]);
  noKey((await echo.ctx.request(M.initialize, INIT_PARAMS)).authMethods);
  assert.deepEqual(await echo.ctx.request(M.authenticate, { methodId: 'dsh-acp-api-key' }), {});
  const created = await echo.ctx.request(M.session.new, { cwd: echo.agent.home, mcpServers: [] });
  assert.deepEqual(created.configOptions.map((o) => o.id), ['mode'], 'echo offers no model option (only the mode)');
  await echo.agent.finish();

  const local = startSdkAgent(t, { args: providerArgs(server.url), env: NO_KEYS });
  noKey((await local.ctx.request(M.initialize, INIT_PARAMS)).authMethods);
  await local.ctx.request(M.session.new, { cwd: local.agent.home, mcpServers: [] });
  await local.agent.finish();
});

test('the model option: listed, set, used by the next request, logged as request/header, restored on load', async (t) => {
  const server = await startFakeProvider(t);
  const store = mkdtempSync(path.join(tmpdir(), 'dsh-acp-models-store-'));
  const cwd = mkdtempSync(path.join(tmpdir(), 'dsh-acp-models-cwd-'));
  const configDir = mkdtempSync(path.join(tmpdir(), 'dsh-acp-models-config-'));
  t.after(() => [store, cwd, configDir].forEach((d) => rmSync(d, { recursive: true, force: true })));
  const configFile = path.join(configDir, 'config.json');
  writeFileSync(configFile, JSON.stringify({ models: ['m2', 'm1', 'm3', 'm2'] }));
  const args = providerArgs(server.url, ['--store', store, '--config', configFile]);

  const first = startSdkAgent(t, { args, env: NO_KEYS });
  await first.ctx.request(M.initialize, INIT_PARAMS);
  const created = await first.ctx.request(M.session.new, { cwd, mcpServers: [] });
  checkSchema('NewSessionResponse', created);
  const { sessionId } = created;
  assert.deepEqual(created.configOptions[0], {
    id: 'model', name: 'Model', description: created.configOptions[0].description, category: 'model', type: 'select',
    currentValue: 'm1',
    options: [{ value: 'm1', name: 'm1' }, { value: 'm2', name: 'm2' }, { value: 'm3', name: 'm3' }],
  });
  assert.deepEqual(created.configOptions.map((o) => o.id), ['model', 'mode'], 'the mode option beside it (modes.test.mjs)');

  const prompt = (ctx, text) => ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });
  await prompt(first.ctx, 'one');
  assert.equal(server.requests.at(-1).body.model, 'm1');

  const set = await first.ctx.request(M.session.setConfigOption, { sessionId, configId: 'model', value: 'm2' });
  checkSchema('SetSessionConfigOptionResponse', set);
  assert.equal(set.configOptions[0].currentValue, 'm2');
  assert.equal(set.configOptions[0].options.length, 3);
  await rejectsWith(first.ctx.request(M.session.setConfigOption, { sessionId, configId: 'model', value: 'gpt-9' }), -32602,
    (e) => assert.equal(e.data.path, '/value'));
  await rejectsWith(first.ctx.request(M.session.setConfigOption, { sessionId, configId: 'effort', value: 'm1' }), -32602,
    (e) => assert.equal(e.data.path, '/configId'));
  await rejectsWith(first.ctx.request(M.session.setConfigOption, { sessionId, configId: 'mode', value: 'm1' }), -32602,
    (e) => assert.equal(e.data.path, '/value'));
  await rejectsWith(first.ctx.request(M.session.setConfigOption, { sessionId: 'no-such', configId: 'model', value: 'm1' }), -32002);

  await prompt(first.ctx, 'two');
  assert.equal(server.requests.at(-1).body.model, 'm2');
  await first.ctx.request(M.session.setConfigOption, { sessionId, configId: 'model', value: 'm3' });
  await prompt(first.ctx, 'three');
  await prompt(first.ctx, 'four');
  assert.deepEqual(server.requests.map((r) => r.body.model), ['m1', 'm2', 'm3', 'm3']);

  const events = logEvents(store, sessionId);
  const headers = events.filter((e) => e.type === 'request/header');
  assert.deepEqual(headers.map((e) => e.data), [
    { header: { config: { provider: 'openai', model: 'm1' } }, reason: 'initial' },
    { header: { config: { provider: 'openai', model: 'm2' } }, reason: 'change' },
    { header: { config: { provider: 'openai', model: 'm3' } }, reason: 'change' },
  ]);
  for (const h of headers) {
    const before = events[events.indexOf(h) - 1];
    assert.equal(before.type, 'step/start', 'request/header follows step/start as the harness writes it');
  }
  const messages = events.filter((e) => e.type === 'assistant/message');
  assert.deepEqual(messages.map((e) => e.data.provenance.model), ['m1', 'm2', 'm3', 'm3']);
  await first.agent.finish();

  const second = startSdkAgent(t, { args, env: NO_KEYS });
  await second.ctx.request(M.initialize, INIT_PARAMS);
  const loaded = await second.ctx.request(M.session.load, { sessionId, cwd, mcpServers: [] });
  checkSchema('LoadSessionResponse', loaded);
  assert.equal(loaded.configOptions[0].currentValue, 'm3', 'restored from the latest request/header');
  await prompt(second.ctx, 'five');
  assert.equal(server.requests.at(-1).body.model, 'm3');
  assert.equal(logEvents(store, sessionId).filter((e) => e.type === 'request/header').length, 3, 'no new header: unchanged');
  await second.agent.finish();

  const third = startSdkAgent(t, { args, env: NO_KEYS });
  await third.ctx.request(M.initialize, INIT_PARAMS);
  const resumed = await third.ctx.request(M.session.resume, { sessionId, cwd, mcpServers: [] });
  assert.equal(resumed.configOptions[0].currentValue, 'm3', 'resume restores it too');
  await third.agent.finish();
});

/** Runs the binary with `args` only (no --provider echo); resolves to {code, stderr, frames}. */
async function runRaw(args, input, env = {}) {
  const agent = new Agent({ bare: true, args, env: { ...NO_KEYS, ...env } });
  try {
    agent.closeStdin(input);
    const { code } = await agent.waitExit();
    agent.assertFramesOnly();
    return { code, stderr: agent.stderr, frames: agent.frames.map((e) => e.frame) };
  } finally {
    agent.dispose();
  }
}

test('with no arguments the provider is deepseek: initialize advertises the key method, session/new answers -32000', async () => {
  const input = [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1 } },
    { jsonrpc: '2.0', id: 2, method: 'session/new', params: { cwd: '/', mcpServers: [] } },
  ].map((f) => JSON.stringify(f) + '\n').join('');
  const { code, stderr, frames } = await runRaw([], input);
  assert.equal(code, 0, stderr);
  assert.equal(stderr, '');
  assert.equal(frames[0].result.authMethods[0].id, 'dsh-acp-api-key');
  assert.equal(frames[1].error.code, -32000);
  assert.deepEqual(frames[1].error.data, { provider: 'deepseek' });
});

for (const [args, pattern] of [
  [['--provider', 'openai', '--model', 'm', '--base-url', 'ftp://example.com'], /base/i],
  [['--provider', 'openai', '--model', 'm', '--base-url', 'http://example.com'], /insecure|http/i],
  [['--provider', 'openai', '--base-url', 'http://127.0.0.1:1'], /--model/],
  [['--provider', 'deepseek', '--ca-file', '/nonexistent/ca.pem'], /ca/i],
]) {
  test(`configuration error exits 2 with a message on stderr: ${args.join(' ')}`, async () => {
    const { code, stderr, frames } = await runRaw(args, '');
    assert.equal(code, 2);
    assert.match(stderr, /^dsh-acp: /);
    assert.match(stderr, pattern);
    assert.deepEqual(frames, []);
  });
}
