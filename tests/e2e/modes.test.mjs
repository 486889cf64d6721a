// Session modes and "always" rules through the official ACP SDK: `modes` and the `mode` config option
// in the session/new, load and resume answers (checked against the ACP schema), session/set_mode with
// its current_mode_update, the mode set through session/set_config_option, the errors; the
// dsh-acp/permission-rule log record against its JSON Schema, read by deepseek-harness's own store
// code in a 0.1 root (ignorable: skipped, not refused) and by dsh-acp in either generation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { BIN, INIT_PARAMS, REPO_ROOT, startSdkAgent, acp, until, framesOf } from './lib/agent.mjs';
import { logPath, readRawLog } from './lib/store.mjs';

const M = acp.methods.agent;
const require = createRequire(import.meta.url);

const acpAjv = new Ajv2020({ strict: false, allErrors: true });
addFormats(acpAjv);
for (const f of ['int32', 'int64', 'uint16', 'uint32', 'uint64', 'double', 'float']) acpAjv.addFormat(f, { type: 'number', validate: Number.isFinite });
acpAjv.addSchema(JSON.parse(readFileSync(require.resolve('@agentclientprotocol/sdk/schema/v1/schema.json'), 'utf8')), 'acp');
function checkSchema(def, value) {
  const v = acpAjv.getSchema(`acp#/$defs/${def}`);
  assert.ok(v(value), `${def}: ${acpAjv.errorsText(v.errors)}\n${JSON.stringify(value)}`);
}

const rejectsWith = (promise, code, pointer) => assert.rejects(promise, (e) => {
  assert.equal(e.code, code, `${e.code} ${e.message} ${JSON.stringify(e.data)}`);
  if (pointer) assert.equal(e.data?.path, pointer, JSON.stringify(e.data));
  return true;
});

function makeDir(t) {
  const dir = mkdtempSync(path.join(tmpdir(), 'dsh-acp-modes-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cwd = path.join(dir, 'proj');
  mkdirSync(cwd);
  return { dir, cwd, store: path.join(dir, 'store') };
}

async function start(t, args) {
  const { agent, ctx } = startSdkAgent(t, { args });
  await ctx.request(M.initialize, INIT_PARAMS);
  return { agent, ctx };
}

const MODE_IDS = ['ask', 'read-only', 'auto'];

function assertModes(answer, current) {
  assert.equal(answer.modes.currentModeId, current);
  assert.deepEqual(answer.modes.availableModes.map((m) => m.id), MODE_IDS);
  for (const m of answer.modes.availableModes) assert.ok(m.name && m.description, JSON.stringify(m));
  const option = answer.configOptions.find((o) => o.id === 'mode');
  assert.ok(option, 'a mode config option');
  assert.equal(option.category, 'mode');
  assert.equal(option.type, 'select');
  assert.equal(option.currentValue, current);
  assert.deepEqual(option.options.map((o) => o.value), MODE_IDS);
}

/** The session's updates of one kind (SDK-delivered), once there are at least `count`. */
async function updatesOfKind(agent, sessionId, kind, count) {
  const pick = () => agent.sdkUpdatesFor(sessionId).map((u) => u.params.update).filter((u) => u.sessionUpdate === kind);
  await until(() => pick().length >= count, `${count} ${kind} of ${sessionId}`, framesOf(agent));
  return pick();
}

test('modes: in every session answer, switched by set_mode and by the mode option, announced, per attached session', async (t) => {
  const { cwd, store } = makeDir(t);
  const args = ['--store', store];
  const a = await start(t, args);
  const created = await a.ctx.request(M.session.new, { cwd, mcpServers: [] });
  checkSchema('NewSessionResponse', created);
  assertModes(created, 'ask');
  assert.deepEqual(created.configOptions.map((o) => o.id), ['mode'], 'echo offers no model option; the mode option is always there');
  const { sessionId } = created;

  const set = await a.ctx.request(M.session.setMode, { sessionId, modeId: 'read-only' });
  assert.deepEqual(set, {});
  checkSchema('SetSessionModeResponse', set);
  const [modeUpdate] = await updatesOfKind(a.agent, sessionId, 'current_mode_update', 1);
  assert.deepEqual(modeUpdate, { sessionUpdate: 'current_mode_update', currentModeId: 'read-only' });
  const [optionUpdate] = await updatesOfKind(a.agent, sessionId, 'config_option_update', 1);
  assert.equal(optionUpdate.configOptions.find((o) => o.id === 'mode').currentValue, 'read-only');
  for (const u of a.agent.sdkUpdatesFor(sessionId)) checkSchema('SessionNotification', u.params);

  const viaOption = await a.ctx.request(M.session.setConfigOption, { sessionId, configId: 'mode', value: 'auto' });
  checkSchema('SetSessionConfigOptionResponse', viaOption);
  assert.equal(viaOption.configOptions.find((o) => o.id === 'mode').currentValue, 'auto');
  const modeUpdates = await updatesOfKind(a.agent, sessionId, 'current_mode_update', 2);
  assert.deepEqual(modeUpdates.map((u) => u.currentModeId), ['read-only', 'auto']);

  // Errors leave the mode as it is.
  await rejectsWith(a.ctx.request(M.session.setMode, { sessionId, modeId: 'yolo' }), -32602, '/modeId');
  await rejectsWith(a.ctx.request(M.session.setMode, { sessionId: 'no-such-session', modeId: 'ask' }), -32002);
  await rejectsWith(a.ctx.request(M.session.setConfigOption, { sessionId, configId: 'mode', value: 'yolo' }), -32602, '/value');
  await rejectsWith(a.ctx.request(M.session.setConfigOption, { sessionId, configId: 'mode', type: 'boolean', value: true }), -32602, '/value');
  await rejectsWith(a.ctx.request(M.session.setConfigOption, { sessionId, configId: 'effort', value: 'high' }), -32602, '/configId');
  // The mode holds in this connection: resuming the attached session answers it.
  const again = await a.ctx.request(M.session.resume, { sessionId, cwd, mcpServers: [] });
  assertModes(again, 'auto');
  // No update for an error: each would precede its answer on stdout, so the frames read so far hold it.
  const modeFrames = a.agent.updates({ sessionId }).filter((e) => e.frame.params.update.sessionUpdate === 'current_mode_update');
  assert.equal(modeFrames.length, 2, 'no update for an error');
  await a.agent.finish();

  // The choice is logged: a new connection (another process) comes back in it, on load and on resume.
  const b = await start(t, args);
  const loaded = await b.ctx.request(M.session.load, { sessionId, cwd, mcpServers: [] });
  checkSchema('LoadSessionResponse', loaded);
  assertModes(loaded, 'auto');
  await b.agent.finish();
  const c = await start(t, args);
  const resumed = await c.ctx.request(M.session.resume, { sessionId, cwd, mcpServers: [] });
  checkSchema('ResumeSessionResponse', resumed);
  assertModes(resumed, 'auto');
  await c.agent.finish();
  const modeLines = readRawLog(logPath(store, sessionId)).filter((l) => l.type === 'dsh-acp/mode');
  assert.deepEqual(modeLines.map((l) => [l.data, l.ignorable]), [[{ mode: 'read-only' }, true], [{ mode: 'auto' }, true]]);
  for (const line of modeLines) assert.ok(validateLine(line), logAjv.errorsText(validateLine.errors));
});

// As acpx uses it: every command a new process that resumes the session. A mode chosen while a prompt runs
// is answered at once and logged when the prompt is over; --default-mode is the mode of sessions that never
// chose one.
test('modes across processes: chosen during a prompt, restored by resume; --default-mode for the rest', async (t) => {
  const { cwd, store } = makeDir(t);
  const a = await start(t, ['--store', store]);
  const { sessionId } = await a.ctx.request(M.session.new, { cwd, mcpServers: [] });
  const { sessionId: untouched } = await a.ctx.request(M.session.new, { cwd, mcpServers: [] });
  await a.agent.finish();

  const b = await start(t, ['--store', store]);
  assertModes(await b.ctx.request(M.session.resume, { sessionId, cwd, mcpServers: [] }), 'ask');
  let settled = false;
  const running = b.ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'nap [[echo:sleep=60000]]' }] });
  running.finally(() => { settled = true; }).catch(() => {});
  await b.agent.turnStarted(sessionId);
  assert.deepEqual(await b.ctx.request(M.session.setMode, { sessionId, modeId: 'auto' }), {});
  assert.equal(settled, false, 'set_mode is answered while the prompt still runs (it sleeps a minute)');
  await b.ctx.notify(M.session.cancel, { sessionId });
  assert.equal((await running).stopReason, 'cancelled');
  await b.agent.finish();
  const lines = readRawLog(logPath(store, sessionId));
  const modeAt = lines.findIndex((l) => l.type === 'dsh-acp/mode');
  assert.ok(modeAt > lines.findIndex((l) => l.type === 'turn/end'), 'logged after the turn it ran in');
  assert.deepEqual(lines[modeAt].data, { mode: 'auto' });

  const c = await start(t, ['--store', store, '--default-mode', 'read-only']);
  assertModes(await c.ctx.request(M.session.resume, { sessionId, cwd, mcpServers: [] }), 'auto');
  assertModes(await c.ctx.request(M.session.load, { sessionId: untouched, cwd, mcpServers: [] }), 'read-only');
  assertModes(await c.ctx.request(M.session.new, { cwd, mcpServers: [] }), 'read-only');
  await c.agent.finish();
});

// ---- the log record of an "always" choice ------------------------------------------------------

const ruleSchema = JSON.parse(readFileSync(path.join(REPO_ROOT, 'schemas', 'permission-rule.schema.json'), 'utf8'));
const logAjv = new Ajv2020({ strict: false, allErrors: true });
logAjv.addSchema(ruleSchema);
const validateRule = logAjv.getSchema(ruleSchema.$id);
const validateLine = logAjv.compile(JSON.parse(readFileSync(path.join(REPO_ROOT, 'schemas', 'session-event.schema.json'), 'utf8')));

test('the permission-rule record: its schema and the session-event schema accept it only marked ignorable', () => {
  assert.ok(ruleSchema.examples.length >= 2);
  for (const line of ruleSchema.examples) {
    assert.ok(validateRule(line), logAjv.errorsText(validateRule.errors));
    assert.ok(validateLine(line), logAjv.errorsText(validateLine.errors));
    const { ignorable, ...unmarked } = line;
    assert.equal(ignorable, true);
    assert.ok(!validateRule(unmarked) && !validateLine(unmarked), 'refused without ignorable');
  }
  const bad = [
    { tool: 'bash', decision: 'allow' },                          // bash needs its prefix or command
    { tool: 'edit', commandPrefix: 'x', decision: 'allow' },      // only bash has one
    { tool: 'edit', command: 'x', decision: 'allow' },
    { tool: 'bash', commandPrefix: 'rm', command: 'rm x', decision: 'allow' },  // one or the other
    { tool: 'edit', decision: 'allow_always' },                   // not the ACP option id
    { tool: 'edit', decision: 'allow', extra: 1 },
  ];
  for (const data of bad) {
    const line = { ...ruleSchema.examples[0], data };
    assert.ok(!validateRule(line) && !validateLine(line), JSON.stringify(data));
  }
});

/** Runs deepseek-harness's own store code on a raw 0.1 root (tests/harness-check); resolves to {code, out}. */
function harnessCheck(root) {
  const dir = path.join(REPO_ROOT, 'tests', 'harness-check');
  assert.ok(existsSync(path.join(dir, 'node_modules', '@deepseek-ai', 'dsh-session-persistence-jsonl')),
    'tests/harness-check/node_modules is missing: run `npm ci --prefix tests/harness-check --ignore-scripts` (./dev does it)');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(dir, 'check-root.mjs'), root, '--compression', 'none', '--strict', '--copy', '--expect', '1'],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

/** Appends rule lines (the shape permission_log.cpp writes, unit-tested there) to a raw log. */
function appendRules(file, rules, { ignorable = true } = {}) {
  const lines = readRawLog(file);
  let seq = lines.length - 1;
  const time = lines.at(-1).time ?? 0;
  appendFileSync(file, rules.map((data) => JSON.stringify({
    type: 'dsh-acp/permission-rule', seq: seq++, time, data, ...(ignorable ? { ignorable: true } : {}),
  }) + '\n').join(''));
}

for (const generation of ['0.1', '45fc']) {
  test(`${generation} root: a log with permission rules loads and resumes in dsh-acp${generation === '0.1' ? ' and is read by the harness' : ''}`, async (t) => {
    const { cwd, store } = makeDir(t);
    const args = ['--store', store, '--store-generation', generation, '--store-compression', 'none'];
    const a = await start(t, args);
    const { sessionId } = await a.ctx.request(M.session.new, { cwd, mcpServers: [] });
    assert.equal((await a.ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'hello' }] })).stopReason, 'end_turn');
    await a.agent.finish();
    const file = logPath(store, sessionId);
    const rules = [{ tool: 'bash', commandPrefix: 'npm test', decision: 'allow' }, { tool: 'bash', command: 'rm old.log', decision: 'allow' },
      { tool: 'edit', decision: 'reject' }];
    appendRules(file, rules);
    for (const line of readRawLog(file).slice(1)) {
      if (line.type === 'dsh-acp/permission-rule') assert.ok(validateLine(line), logAjv.errorsText(validateLine.errors));
    }

    if (generation === '0.1') {
      const accepted = await harnessCheck(store);
      assert.equal(accepted.code, 0, `the harness refuses a log with ignorable rules:\n${accepted.out}`);
      // The marker is what makes it acceptable: unmarked, the harness refuses the same log.
      const { store: other } = makeDir(t);
      const b0 = await start(t, ['--store', other, '--store-generation', '0.1', '--store-compression', 'none']);
      const { sessionId: other_id } = await b0.ctx.request(M.session.new, { cwd, mcpServers: [] });
      await b0.ctx.request(M.session.prompt, { sessionId: other_id, prompt: [{ type: 'text', text: 'hello' }] });
      await b0.agent.finish();
      appendRules(logPath(other, other_id), rules, { ignorable: false });
      const refused = await harnessCheck(other);
      assert.notEqual(refused.code, 0, 'an unmarked unknown type is refused by the harness');
      assert.match(refused.out, /not marked ignorable/);
    }

    // dsh-acp reads the rules without showing them and without a complaint, on load and on resume.
    const b = await start(t, args);
    const loaded = await b.ctx.request(M.session.load, { sessionId, cwd, mcpServers: [] });
    assertModes(loaded, 'ask');
    const kinds = b.agent.sdkUpdatesFor(sessionId).map((u) => u.params.update.sessionUpdate);
    assert.ok(kinds.includes('user_message_chunk') && kinds.includes('agent_message_chunk'), kinds.join());
    assert.ok(!JSON.stringify(b.agent.sdkUpdatesFor(sessionId)).includes('npm test'), 'the rules are shown nowhere');
    assert.equal((await b.ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'again' }] })).stopReason, 'end_turn');
    assert.doesNotMatch(b.agent.log(), /unknown type|permission-rule/, b.agent.log());
    await b.agent.finish();
    const c = await start(t, args);
    assertModes(await c.ctx.request(M.session.resume, { sessionId, cwd, mcpServers: [] }), 'ask');
    assert.doesNotMatch(c.agent.log(), /unknown type|permission-rule/, c.agent.log());
    await c.agent.finish();
  });
}

// Releases before wrote the rules into 45fc roots without the marker: such logs load, resume, copy and
// verify without a warning about our own type (what is written now is marked: permission_log_test).
test('45fc root: rules written without ignorable by an older release load, resume, copy and verify without a warning', async (t) => {
  const { dir, cwd, store } = makeDir(t);
  const args = ['--store', store, '--store-generation', '45fc', '--store-compression', 'none'];
  const a = await start(t, args);
  const { sessionId } = await a.ctx.request(M.session.new, { cwd, mcpServers: [] });
  assert.equal((await a.ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'hello' }] })).stopReason, 'end_turn');
  await a.agent.finish();
  const file = logPath(store, sessionId);
  appendRules(file, [{ tool: 'bash', commandPrefix: 'npm test', decision: 'allow' }, { tool: 'edit', decision: 'reject' }],
    { ignorable: false });

  const b = await start(t, args);
  assertModes(await b.ctx.request(M.session.load, { sessionId, cwd, mcpServers: [] }), 'ask');
  await b.agent.finish();
  assert.doesNotMatch(b.agent.log(), /unknown type|permission-rule/, b.agent.log());
  const c = await start(t, args);
  assertModes(await c.ctx.request(M.session.resume, { sessionId, cwd, mcpServers: [] }), 'ask');
  await c.agent.finish();
  assert.doesNotMatch(c.agent.log(), /unknown type|permission-rule/, c.agent.log());
  for (const command of [['verify', store], ['copy', store, path.join(dir, 'copy')]]) {
    const run = spawnSync(BIN, ['store', ...command], { encoding: 'utf8' });
    assert.equal(run.status, 0, `store ${command[0]}: ${run.stdout}${run.stderr}`);
    assert.doesNotMatch(run.stderr, /unknown type|permission-rule/, `store ${command[0]}: ${run.stderr}`);
  }
  assert.deepEqual(readFileSync(logPath(path.join(dir, 'copy'), sessionId)), readFileSync(file), 'copied as it is');
});
