// Signing in and out (issue 28): `dsh-acp --setup` stores the DeepSeek key (mode 0600, config
// directory) and the server uses it when DEEPSEEK_API_KEY is not set; initialize always names an auth
// method of type agent or terminal, as the ACP registry's check requires, the terminal one
// (`args: ["--setup"]`) to clients that run it; the stored key is never logged and never reaches a
// command we start; `logout` (advertised as auth.logout) forgets the key and removes the stored one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { BIN, INIT_PARAMS, startAgent, startSdkAgent, acp } from './lib/agent.mjs';
import { startFakeProvider, answer, startSse, chunkEvent } from './lib/fake-provider.mjs';

const M = acp.methods.agent;
const NO_KEYS = { OPENAI_API_KEY: '', DEEPSEEK_API_KEY: '' };
const TERMINAL_CLIENT = { ...INIT_PARAMS, clientCapabilities: { ...INIT_PARAMS.clientCapabilities, auth: { terminal: true } } };

const require = createRequire(import.meta.url);
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
for (const f of ['int32', 'int64', 'uint16', 'uint32', 'uint64', 'double', 'float']) ajv.addFormat(f, { type: 'number', validate: Number.isFinite });
ajv.addSchema(JSON.parse(readFileSync(require.resolve('@agentclientprotocol/sdk/schema/v1/schema.json'), 'utf8')), 'acp');
function checkSchema(def, value) {
  const v = ajv.getSchema(`acp#/$defs/${def}`);
  assert.ok(v(value), `${def}: ${ajv.errorsText(v.errors)}\n${JSON.stringify(value)}`);
}

function deepseekArgs(url) {
  return ['--provider', 'deepseek', '--base-url', url, '--store-compression', 'none', '--max-retries', '0'];
}

function tempHome(t) {
  const home = mkdtempSync(path.join(tmpdir(), 'dsh-acp-auth-'));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  return home;
}

/** Runs `dsh-acp --setup` with `input` on a pipe; resolves {code, stdout, stderr}. */
function runSetup(env, input, args = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(BIN, ['--setup', ...args], { env: { ...process.env, ...NO_KEYS, ...env }, stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

// The registry's check (agentclientprotocol/registry, verify_agents.py --auth-check): a raw
// initialize with its capabilities, then at least one method whose type is agent or terminal.
function registryCheck(init) {
  const types = (init.authMethods ?? []).map((m) => m.type ?? 'agent');
  assert.ok(types.some((type) => type === 'agent' || type === 'terminal'), `auth method types: ${JSON.stringify(types)}`);
}
const REGISTRY_INIT = {
  protocolVersion: 1,
  clientInfo: { name: 'ACP Registry Validator', version: '1.0.0' },
  clientCapabilities: { terminal: true, fs: { readTextFile: true, writeTextFile: true }, _meta: { terminal_output: true, 'terminal-auth': true } },
};

test('--setup reads the key from a pipe and stores it 0600 in the config directory; never shows it', async (t) => {
  const home = tempHome(t);
  const r = await runSetup({ DSH_ACP_HOME: home }, 'sk-piped-key\n');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '', 'stdout stays empty');
  const file = path.join(home, 'deepseek-api-key');
  assert.equal(readFileSync(file, 'utf8'), 'sk-piped-key\n');
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.ok(!r.stderr.includes('sk-piped-key'), r.stderr);
  assert.ok(r.stderr.includes(file), 'it says where the key went');
  assert.ok(!existsSync(path.join(home, 'dsh-acp.log')), 'no process log is written');

  // Under XDG_CONFIG_HOME without DSH_ACP_HOME; nothing or garbage stores nothing (exit 1).
  const xdg = tempHome(t);
  assert.equal((await runSetup({ DSH_ACP_HOME: '', XDG_CONFIG_HOME: xdg }, 'sk-xdg')).code, 0);
  assert.equal(readFileSync(path.join(xdg, 'dsh-acp', 'deepseek-api-key'), 'utf8'), 'sk-xdg\n');
  const empty = tempHome(t);
  assert.equal((await runSetup({ DSH_ACP_HOME: empty }, '')).code, 1);
  const bad = await runSetup({ DSH_ACP_HOME: empty }, 'two words\n');
  assert.equal(bad.code, 1);
  assert.ok(!bad.stderr.includes('two words'));
  assert.ok(!existsSync(path.join(empty, 'deepseek-api-key')));
});

test('initialize names an agent method with and without a key, a terminal one to clients that run it', async (t) => {
  const server = await startFakeProvider(t);
  for (const env of [NO_KEYS, { ...NO_KEYS, DEEPSEEK_API_KEY: 'sk-env' }]) {
    const { agent, ctx } = startSdkAgent(t, { args: deepseekArgs(server.url), env });
    const plain = await ctx.request(M.initialize, INIT_PARAMS);
    checkSchema('InitializeResponse', plain);
    registryCheck(plain);
    assert.deepEqual(plain.authMethods.map((m) => [m.id, m.type]), [['dsh-acp-api-key', 'agent']]);
    assert.match(plain.authMethods[0].description, /DEEPSEEK_API_KEY/);
    assert.match(plain.authMethods[0].description, /--setup/);
    const terminal = await ctx.request(M.initialize, TERMINAL_CLIENT);
    checkSchema('InitializeResponse', terminal);
    assert.deepEqual(terminal.authMethods.map((m) => [m.id, m.type]), [['dsh-acp-api-key', 'agent'], ['dsh-acp-setup', 'terminal']]);
    assert.deepEqual(terminal.authMethods[1].args, ['--setup']);
    assert.ok(terminal.authMethods[1].description.includes(path.join(agent.home, 'deepseek-api-key')));
    // The terminal method is the client's to run: authenticate does not take it.
    await assert.rejects(ctx.request(M.authenticate, { methodId: 'dsh-acp-setup' }), (e) => e.code === -32602);
    await agent.finish();
  }
  // The registry's own initialize, against the default provider (no key) and the echo model.
  for (const args of [deepseekArgs(server.url), []]) {
    const agent = startAgent(t, { args, env: NO_KEYS });
    const reply = await agent.call('initialize', REGISTRY_INIT);
    registryCheck(reply.result);
    await agent.finish();
  }
  // A model that needs no key: its method says so and authenticate succeeds at once.
  const { agent, ctx } = startSdkAgent(t, { env: NO_KEYS });
  const echo = await ctx.request(M.initialize, TERMINAL_CLIENT);
  assert.deepEqual(echo.authMethods.map((m) => [m.id, m.type]), [['dsh-acp-api-key', 'agent']]);
  assert.deepEqual(await ctx.request(M.authenticate, { methodId: 'dsh-acp-api-key' }), {});
  await agent.finish();
});

test('the stored key is used without DEEPSEEK_API_KEY, never logged, and hidden from commands', async (t) => {
  const home = tempHome(t);
  assert.equal((await runSetup({ DSH_ACP_HOME: home }, 'sk-stored-key\n')).code, 0);
  const server = await startFakeProvider(t);
  const call = { index: 0, id: 'call_1', type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command: 'env; cat /proc/$PPID/environ | tr "\\0" "\\n"; true' }) } };
  server.queue(async (req, res) => {
    startSse(res);
    res.write(chunkEvent({ tool_calls: [call] }));
    res.write(chunkEvent({}, 'tool_calls'));
    res.end('data: [DONE]\n\n');
  }, answer({ content: ['ran it'] }));
  const { agent, ctx } = startSdkAgent(t, {
    args: deepseekArgs(server.url),
    env: { ...NO_KEYS, DSH_ACP_HOME: home },
    client: { requestPermission: () => ({ outcome: { outcome: 'selected', optionId: 'allow_once' } }) },
  });
  await ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId } = await ctx.request(M.session.new, { cwd: home, mcpServers: [] });
  const r = await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'show the environment' }] });
  assert.equal(r.stopReason, 'end_turn');
  assert.equal(server.requests[0].headers.authorization, 'Bearer sk-stored-key');
  const toolMessage = server.requests[1].body.messages.find((m) => m.role === 'tool');
  assert.match(toolMessage.content, /PATH=/, 'the command ran and printed its environment');
  assert.ok(!toolMessage.content.includes('sk-stored-key'), 'the command does not see the key');
  assert.ok(!readFileSync(agent.logFile, 'utf8').includes('sk-stored-key'), 'the log never holds it');
  await agent.finish();
});

test('logout forgets the key: the stored file goes, sessions answer -32000 until authenticate finds one', async (t) => {
  const home = tempHome(t);
  assert.equal((await runSetup({ DSH_ACP_HOME: home }, 'sk-stored-key\n')).code, 0);
  const server = await startFakeProvider(t);
  const { agent, ctx } = startSdkAgent(t, { args: deepseekArgs(server.url), env: { ...NO_KEYS, DSH_ACP_HOME: home } });
  const init = await ctx.request(M.initialize, INIT_PARAMS);
  assert.deepEqual(init.agentCapabilities.auth, { logout: {} });
  const { sessionId } = await ctx.request(M.session.new, { cwd: home, mcpServers: [] });
  assert.deepEqual(await ctx.request(M.logout, {}), {});
  assert.ok(!existsSync(path.join(home, 'deepseek-api-key')), 'the stored key is removed');
  const authRequired = (e) => e.code === -32000;
  await assert.rejects(ctx.request(M.session.new, { cwd: home, mcpServers: [] }), authRequired);
  await assert.rejects(ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'x' }] }), authRequired);
  await assert.rejects(ctx.request(M.authenticate, { methodId: 'dsh-acp-api-key' }), authRequired, 'no key is left anywhere');
  assert.deepEqual(await ctx.request(M.logout, {}), {}, 'a second logout is fine');
  // A new key (set up again) is found by authenticate, and used.
  assert.equal((await runSetup({ DSH_ACP_HOME: home }, 'sk-second-key\n')).code, 0);
  assert.deepEqual(await ctx.request(M.authenticate, { methodId: 'dsh-acp-api-key' }), {});
  server.queue(answer({ content: ['back'] }));
  const r = await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'again' }] });
  assert.equal(r.stopReason, 'end_turn');
  assert.equal(server.requests.at(-1).headers.authorization, 'Bearer sk-second-key');
  const log = readFileSync(agent.logFile, 'utf8');
  assert.ok(!log.includes('sk-stored-key') && !log.includes('sk-second-key'), 'no key in the log');
  assert.match(log, /logout: provider deepseek forgot its key; the stored key file was removed/);
  await agent.finish();
});

test('logout with the key in the environment: forgotten until authenticate, which finds it again', async (t) => {
  const server = await startFakeProvider(t);
  const { agent, ctx } = startSdkAgent(t, { args: deepseekArgs(server.url), env: { ...NO_KEYS, DEEPSEEK_API_KEY: 'sk-env' } });
  await ctx.request(M.initialize, INIT_PARAMS);
  await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  await ctx.request(M.logout, {});
  await assert.rejects(ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] }), (e) => e.code === -32000);
  assert.deepEqual(await ctx.request(M.authenticate, { methodId: 'dsh-acp-api-key' }), {});
  await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  await agent.finish();
});
