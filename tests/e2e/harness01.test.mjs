// The harness 0.1.1 store generation (issue 15), through the real binary and the ACP SDK.
// tests/data/harness01/generate.py writes the same conversations twice, in 0.1.1 shapes and layout
// and in 45fc shapes and layout (raw, and zstd with 0.1.1's packed chunk rows): everything dsh-acp
// derives from them — listing, replay, the model's conversation, a reference snapshot — must be the
// same for both, and what it writes into a 0.1 root must be 0.1.1's shapes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { INIT_PARAMS, startSdkAgent } from './lib/agent.mjs';
import { M, text, uriOf, prompt, echoLines, updatesOf, snapshotData, zstdFrameLines, rejectsWith } from './lib/refs.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const GENERATOR = path.join(here, '..', 'data', 'harness01', 'generate.py');

function makeStores(t) {
  const dir = mkdtempSync(path.join(tmpdir(), 'dsh-acp-h01-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cwd = path.join(dir, 'proj');
  mkdirSync(cwd);
  const dshHome = path.join(dir, 'dsh');
  execFileSync('python3', [GENERATOR, path.join(dir, 'stores'), cwd, '--dsh-home', dshHome]);
  return { dir, cwd, dshHome, root: (name) => path.join(dir, 'stores', name) };
}

async function start(t, s, roots, args = []) {
  const storeArgs = roots.flatMap((r) => ['--store', s.root(r)]);
  // The roots are generated before the server starts, in both layouts: each keeps the layout it
  // holds, so no generation is asked for (DSH_ACP_STORE_GENERATION, when the suite runs with it,
  // would refuse the roots of the other layout).
  const { agent, ctx } = startSdkAgent(t, { args: [...storeArgs, ...args], env: { DSH_HOME: s.dshHome, DSH_ACP_STORE_GENERATION: '' } });
  await ctx.request(M.initialize, INIT_PARAMS);
  return { agent, ctx };
}

/** The replay of a session/load, with the session id taken out. */
async function replay(a, sid, cwd) {
  const from = a.agent.sdkUpdates.length;
  await a.ctx.request(M.session.load, { sessionId: sid, cwd, mcpServers: [] });
  return updatesOf(a.agent, sid, from);
}

const logFile = (root) => {
  // The single log under a root's session directory (0.1) for the given id.
  const find = (dir) => readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? find(path.join(dir, e.name)) : [path.join(dir, e.name)]);
  return find(root);
};
const linesOf = (file) => (file.endsWith('.zstd') ? zstdFrameLines(file).flat()
  : readFileSync(file, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l)));

for (const enc of ['raw', 'zstd']) {
  test(`${enc}: 0.1 sessions list, replay and converse exactly as their 45fc twins`, async (t) => {
    const s = makeStores(t);
    const a = await start(t, s, [`v45-${enc}`, `v01-${enc}`]);
    const { sessions } = await a.ctx.request(M.session.list, {});
    const byId = Object.fromEntries(sessions.map((x) => [x.sessionId, x]));
    for (const id of ['01-tools', '45-tools', '01-recall', '45-recall']) assert.ok(byId[id], `${id} is listed`);
    assert.equal(byId['01-tools'].title, 'Read the config and fix');
    assert.equal(byId['01-tools'].title, byId['45-tools'].title);
    assert.equal(byId['01-tools'].cwd, s.cwd);
    // Newest first across both roots: the recall sessions were created a second later.
    assert.deepEqual(sessions.map((x) => x.sessionId).slice(0, 2).sort(), ['01-recall', '45-recall']);

    const r01 = await replay(a, '01-tools', s.cwd);
    const r45 = await replay(a, '45-tools', s.cwd);
    // Message ids derive from the session id, which the twins do not share: their grouping must agree.
    const grouped = (updates) => {
      const ids = new Map();
      return updates.map((u) => (u.messageId === undefined ? u
        : { ...u, messageId: ids.get(u.messageId) ?? ids.set(u.messageId, `message ${ids.size}`).get(u.messageId) }));
    };
    assert.deepEqual(grouped(r01), grouped(r45), 'replay of the 0.1 log equals the replay of its 45fc twin');
    const said = r01.filter((u) => u.sessionUpdate === 'agent_message_chunk').map((u) => u.content.text).join('');
    assert.match(said, /Let me read it\.Fixing the typo\.Running the tests\.Fixed the typo\./, 'assistant text from streamed (and packed) chunks');
    assert.ok(r01.some((u) => u.sessionUpdate === 'agent_thought_chunk' && u.content.text === 'Looking '), 'reasoning replayed');
    const users = r01.filter((u) => u.sessionUpdate === 'user_message_chunk').map((u) => u.content.text);
    assert.ok(users.some((x) => x.startsWith('Read the config and fix the typo in it.')), `user text replayed: ${JSON.stringify(users)}`);
    const calls = r01.filter((u) => u.sessionUpdate === 'tool_call').map((u) => u.toolCallId);
    for (const id of ['call-read', 'call-edit', 'call-bash']) assert.ok(calls.includes(id), `tool call ${id} has a card`);
    const results = r01.filter((u) => u.sessionUpdate === 'tool_call_update');
    assert.equal(results.find((u) => u.toolCallId === 'call-bash')?.status, 'failed');
    assert.equal(results.find((u) => u.toolCallId === 'call-edit')?.status, 'completed');
    const card = (id) => r01.find((u) => u.sessionUpdate === 'tool_call' && u.toolCallId === id);
    assert.equal(card('call-read').kind, 'read');
    assert.equal(card('call-read').locations[0].path, path.join(s.cwd, 'src/config.ts'));
    assert.equal(card('call-edit').kind, 'edit');
    assert.equal(card('call-bash').kind, 'execute');
    const diff = results.find((u) => u.toolCallId === 'call-edit').content.find((c) => c.type === 'diff');
    assert.ok(diff && diff.oldText.includes('nmae') && diff.newText.includes('name'), JSON.stringify(diff));
    const shown = JSON.stringify(r01);
    assert.match(shown, /\[image screenshot\.png \(image\/png, 152 bytes\)\]/, 'a present image is a placeholder with name and size');
    assert.match(shown, /\[image gone\.png \(image\/png, 4096 bytes\) — attachment missing\]/, 'a missing one says so');
    assert.ok(r01.some((u) => u.sessionUpdate === 'plan' && u.entries.length === 3), 'todo/write is a plan');
    assert.ok(r01.some((u) => u.sessionUpdate === 'tool_call' && u.kind === 'think'), 'the compaction has its card');
    assert.ok(!JSON.stringify(r01).includes('not marked ignorable'), 'an unknown event is shown nowhere');

    // Resumed (no replay) in a second process, a 0.1 session takes a prompt the same way.
    const b = await start(t, s, [`v45-${enc}`, `v01-${enc}`]);
    const from = b.agent.sdkUpdates.length;
    await b.ctx.request(M.session.resume, { sessionId: '01-tools', cwd: s.cwd, mcpServers: [] });
    assert.equal(updatesOf(b.agent, '01-tools', from).filter((u) => u.sessionUpdate !== 'available_commands_update' &&
      u.sessionUpdate !== 'session_info_update').length, 0, 'resume replays nothing');
    const resumed = await prompt(b, '01-tools', 'what is left?');
    await b.ctx.request(M.session.resume, { sessionId: '45-tools', cwd: s.cwd, mcpServers: [] });
    assert.deepEqual(echoLines(resumed.answer), echoLines((await prompt(b, '45-tools', 'what is left?')).answer));

    // The model receives the same conversation (the echo model lists it), in either root.
    const p01 = await prompt(a, '01-tools', 'what is left?');
    const p45 = await prompt(a, '45-tools', 'what is left?');
    assert.equal(p01.response.stopReason, 'end_turn');
    assert.deepEqual(echoLines(p01.answer), echoLines(p45.answer));
    assert.ok(echoLines(p01.answer).length >= 4, p01.answer);
    assert.match(p01.answer, /\[2\] user \d+ bytes: This is an automatically generated checkpoint/,
      `the compaction checkpoint is on the surface: ${p01.answer}`);
    assert.ok(!p01.answer.includes('Read the config and fix the typo'), 'the compacted turn is not');
  });

  test(`${enc}: what dsh-acp writes into a 0.1 root is 0.1.1's shapes and layout`, async (t) => {
    const s = makeStores(t);
    const a = await start(t, s, [`v01-${enc}`]);
    await replay(a, '01-tools', s.cwd);
    const before = linesOf(logFile(s.root(`v01-${enc}`)).find((f) => f.includes('/01-tools/session.jsonl'))).length;
    await prompt(a, '01-tools', 'one more thing');
    const compact = await prompt(a, '01-tools', '/compact');
    assert.equal(compact.response.stopReason, 'end_turn');
    const { sessionId: fresh } = await a.ctx.request(M.session.new, { cwd: s.cwd, mcpServers: [] });
    await prompt(a, fresh, 'a new session');

    const files = logFile(s.root(`v01-${enc}`));
    assert.ok(files.every((f) => /\/--[^/]+--\/[^/]+\/(session\.jsonl(\.zstd)?|dsh-acp\.lock)$/.test(f)), files.join('\n'));
    const newLog = files.find((f) => f.includes(`/${fresh}/session.jsonl`));
    assert.ok(newLog, 'a new session in a 0.1 root is a session directory');
    for (const file of [newLog, files.find((f) => f.includes('/01-tools/session.jsonl'))]) {
      const lines = linesOf(file);
      const mine = file === newLog ? lines.slice(1) : lines.slice(before);
      assert.ok(mine.length > 0);
      for (const e of mine) {
        assert.ok(!e.type.startsWith('compact/'), `no 45fc compaction records: ${e.type}`);
        if (e.type === 'turn/start') assert.deepEqual(Object.keys(e.data), ['turn']);
        if (e.type === 'user/message') {
          assert.equal(e.data.role, 'user');
          assert.match(e.data.id, /^[0-9a-f-]{36}$/);
        }
        if (e.type === 'assistant/message') {
          assert.deepEqual(Object.keys(e.data.message), ['role', 'content', 'source', 'id']);
          assert.equal(e.data.message.source.kind, 'model');
          assert.ok(!('content' in e.data));
        }
        if (e.type === 'turn/end') assert.deepEqual(Object.keys(e.data), ['turn', 'reason']);
      }
    }
    const tail = linesOf(files.find((f) => f.includes('/01-tools/session.jsonl'))).slice(before);
    const opened = tail.find((e) => e.type === 'compaction/start');
    assert.ok(opened, 'the compaction is logged as compaction/*');
    const id = opened.data.compactionId;
    assert.match(id, /^[0-9a-f-]{36}$/);
    assert.equal(tail.find((e) => e.type === 'compaction/summary').data.compactionId, id);
    assert.equal(tail.find((e) => e.type === 'compaction/end').data.compactionId, id);
    const checkpoint = tail.find((e) => e.type === 'user/message' && e.data.source.plugin === 'compact');
    assert.equal(checkpoint.data.source.compactionId, id);

    // A second process reads back everything the first wrote (normalised again).
    const b = await start(t, s, [`v01-${enc}`]);
    const again = await replay(b, '01-tools', s.cwd);
    assert.ok(again.some((u) => u.sessionUpdate === 'agent_message_chunk' && u.content.text.includes('echo:')));
  });

  test(`${enc}: references across generations, both ways`, async (t) => {
    const s = makeStores(t);
    const a = await start(t, s, [`v45-${enc}`, `v01-${enc}`]);
    const snap = async (target) => {
      const { sessionId } = await a.ctx.request(M.session.new, { cwd: s.cwd, mcpServers: [] });
      const link = { type: 'resource_link', uri: uriOf(target), name: 'Typo' };
      const p = await prompt(a, sessionId, [...text('see '), link]);
      const line = echoLines(p.answer).find((l) => l.includes('## Referenced sessions'));
      assert.ok(line, p.answer);
      // The snapshot itself, from the new session's log (in the first root: the 45fc one).
      const log = logFile(s.root(`v45-${enc}`)).filter((f) => f.includes(sessionId) && /\.jsonl(\.zstd)?$/.test(f)).map(linesOf)[0];
      const snapshot = log.find((e) => e.type === 'user/message' && e.data.source.kind === 'session-reference');
      return snapshotData(snapshot.data.content[0].text);
    };
    const from01 = await snap('01-tools');
    const from45 = await snap('45-tools');
    const strip = (d) => d.map(({ sessionId, ...rest }) => rest);
    assert.deepEqual(strip(from01), strip(from45), 'a 0.1 session snapshots exactly as its 45fc twin');
    assert.equal(from01[0].sessionId, '01-tools');
    assert.ok(JSON.stringify(from01).includes('compacted-summary'), 'the checkpoint is in the snapshot');
  });
}

test('a discovered harness root is listed read-only; a newer format version is refused, never modified', async (t) => {
  const s = makeStores(t);
  // The harness's own root ($DSH_HOME/sessions) holds the 0.1 sessions; no --store names it.
  execFileSync('cp', ['-r', s.root('v01-zstd'), path.join(s.dshHome, 'sessions')]);
  const home = path.join(s.dir, 'home');
  const { agent, ctx } = startSdkAgent(t, { defaultPaths: true, env: { DSH_ACP_HOME: home, DSH_HOME: s.dshHome } });
  await ctx.request(M.initialize, INIT_PARAMS);
  const a = { agent, ctx };
  const { sessions } = await ctx.request(M.session.list, {});
  assert.ok(sessions.some((x) => x.sessionId === '01-tools'), 'the harness root is listed');
  // ... marked read-only, so a client knows before a prompt fails.
  for (const x of sessions) assert.equal(x._meta['dsh-acp/readOnly'], true, JSON.stringify(x));
  await replay(a, '01-tools', s.cwd);
  const file = path.join(s.dshHome, 'sessions', readdirSync(path.join(s.dshHome, 'sessions'))[0], '01-tools', 'session.jsonl.zstd');
  const bytes = readFileSync(file);
  const err = await rejectsWith(prompt(a, '01-tools', 'hello'), -32602);
  assert.match(err.message + JSON.stringify(err.data), /read-only/);
  assert.deepEqual(readFileSync(file), bytes, 'nothing written');
  // New sessions go to our own root.
  const { sessionId } = await ctx.request(M.session.new, { cwd: s.cwd, mcpServers: [] });
  await prompt(a, sessionId, 'hi');
  assert.ok(logFile(path.join(home, 'sessions')).some((f) => f.includes(sessionId)));
  const listed = (await ctx.request(M.session.list, {})).sessions;
  const own = listed.find((x) => x.sessionId === sessionId);
  assert.ok(own && !('dsh-acp/readOnly' in own._meta), JSON.stringify(own));
  assert.equal(listed.find((x) => x.sessionId === '01-tools')._meta['dsh-acp/readOnly'], true);

  // A log of a newer format version: a clear error naming the version, the file untouched.
  const raw = s.root('v01-raw');
  const v1 = logFile(raw).find((f) => f.includes('/01-recall/'));
  const lines = readFileSync(v1, 'utf8').split('\n');
  lines[0] = lines[0].replace('"version":0', '"version":1');
  writeFileSync(v1, lines.join('\n'));
  const before = readFileSync(v1);
  const b = await start(t, s, ['v01-raw']);
  const e = await rejectsWith(b.ctx.request(M.session.load, { sessionId: '01-recall', cwd: s.cwd, mcpServers: [] }),
    -32603, 'SESSION_LOG_CORRUPT');
  assert.match(e.message, /version 1/);
  assert.deepEqual(readFileSync(v1), before);
});

test('the golden 0.1 logs are 0.1.1 logs: the harness\'s own reader accepts them (strict)', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dsh-acp-h01v-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // Without the one event 0.1.1 refuses on purpose (an unknown type not marked ignorable).
  execFileSync('python3', [GENERATOR, path.join(dir, 'stores'), path.join(dir, 'proj'), '--harness-valid']);
  const check = path.join(here, '..', 'harness-check', 'check-root.mjs');
  for (const [root, compression] of [['v01-raw', 'none'], ['v01-zstd', 'zstd']]) {
    const out = execFileSync(process.execPath, [check, path.join(dir, 'stores', root), '--compression', compression,
      '--copy', '--strict', '--expect', '2'], { encoding: 'utf8' });
    const rows = out.trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(rows.map((r) => [r.id, r.ok, r.migrated]).sort(), [['01-recall', true, 0], ['01-tools', true, 0]], out);
    assert.equal(rows.find((r) => r.id === '01-tools').events, 136);
  }
});
