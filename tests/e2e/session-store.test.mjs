// The session store through the official ACP SDK (issue 3): session/load after a restart, list,
// resume, close, delete, the error cases, hostile ids, file modes, titles, and every written log
// line validated against schemas/session-event.schema.json.
//
// Stores outlive one process here: each test makes its own DSH_ACP_HOME and starts agents with
// `defaultPaths`, so the store is $DSH_ACP_HOME/sessions for every process of the test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  mkdtempSync, rmSync, readFileSync, writeFileSync, readdirSync, statSync, mkdirSync, copyFileSync, chmodSync, existsSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import { INIT_PARAMS, REPO_ROOT, startAgent, startSdkAgent, acp, Agent } from './lib/agent.mjs';
import { generationOf, isV01Log, logFiles, logPath, logPathFor, readLog, readRawLog, writeLog } from './lib/store.mjs';
import { fileStoreOnly } from './lib/pgvariant.mjs';

const M = acp.methods.agent;

// ---- helpers ---------------------------------------------------------------------------------

const ajv = new Ajv2020({ strict: false, allErrors: true });
// session-event refers to our own types' schemas by $id.
ajv.addSchema(JSON.parse(readFileSync(path.join(REPO_ROOT, 'schemas', 'permission-rule.schema.json'), 'utf8')));
const validateLine = ajv.compile(JSON.parse(readFileSync(path.join(REPO_ROOT, 'schemas', 'session-event.schema.json'), 'utf8')));

function makeHome(t) {
  const home = mkdtempSync(path.join(tmpdir(), 'dsh-acp-store-'));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  return home;
}

/** An agent whose store is `home`/sessions (shared by every agent started with the same home). */
async function startIn(t, home, args = []) {
  const { agent, ctx } = startSdkAgent(t, { defaultPaths: true, env: { DSH_ACP_HOME: home }, args });
  await ctx.request(M.initialize, INIT_PARAMS);
  return { agent, ctx };
}

const text = (s) => [{ type: 'text', text: s }];

/** Every file under `dir` (relative paths). */
function walk(dir, base = dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(path.relative(base, p) + '/', ...walk(p, base));
    else out.push(path.relative(base, p));
  }
  return out;
}

/** Schema (each line as stored), seqs 0..n-1, and turns 1, 2, 3 … each closed. Returns the events, normalised (lib/store.mjs). */
function checkLog(file) {
  const stored = readRawLog(file);
  for (const [i, line] of stored.entries()) {
    assert.ok(validateLine(line), `${file} line ${i + 1} fails the schema: ${ajv.errorsText(validateLine.errors)}\n${JSON.stringify(line).slice(0, 300)}`);
  }
  const [header, ...events] = readLog(file);
  assert.equal(header.type, 'session');
  events.forEach((e, i) => assert.equal(e.seq, i, `${file}: seq ${e.seq} at event ${i}`));
  let open = null;
  let last = 0;
  for (const e of events) {
    if (e.type === 'turn/start') {
      assert.equal(open, null, 'turn started inside a turn');
      assert.equal(e.data.turn, last + 1, 'turn numbers continue');
      open = last = e.data.turn;
    } else if (e.type === 'turn/end') {
      assert.equal(e.data.turn, open);
      open = null;
    }
  }
  assert.equal(open, null, `${file}: a turn is left open`);
  return { header, events, turns: last };
}

const userTexts = (events) => events
  .filter((e) => e.type === 'user/message' && e.data.source?.kind === 'user')
  .map((e) => e.data.content.map((b) => b.text ?? '').join(''));

function checkModes(store) {
  assert.equal(statSync(store).mode & 0o777, 0o700, 'store root is 0700');
  for (const f of walk(store)) {
    const p = path.join(store, f);
    const mode = statSync(p).mode & 0o777;
    if (f.endsWith('/')) assert.equal(mode, 0o700, `${f} is ${mode.toString(8)}`);
    else if (f.endsWith('.jsonl') || f.endsWith('.jsonl.zstd')) assert.equal(mode, 0o600, `${f} is ${mode.toString(8)}`);
  }
}

/**
 * Writes a small valid harness log (one completed turn with a fallback title) straight into a raw
 * store, in the layout and shapes the root holds (lib/store.mjs writeLog).
 */
function writeRawLog(store, { id, cwd, createdAt, title, prompt = title, time = createdAt + 5 }) {
  const header = { type: 'session', version: 0, id, createdAt, ...(cwd === undefined ? {} : { cwd }), delegationDepth: 0 };
  return writeLog(store, [
    header,
    { type: 'turn/start', seq: 0, time, data: { turn: 1, trigger: { kind: 'message', source: { kind: 'user' } } } },
    { type: 'user/message', seq: 1, time, data: { content: text(prompt), source: { kind: 'user' } }, surfaceOp: 'append' },
    { type: 'session/title', seq: 2, time, data: { title, messageSeqs: [1], source: { kind: 'fallback' } } },
    { type: 'turn/end', seq: 3, time, data: { turn: 1, reason: { kind: 'completed' } } },
  ]);
}

/**
 * A harness fixture placed where the root's layout puts it: copied byte for byte into a 45fc root;
 * into a 0.1 root with its events in 0.1.1's shapes (a header-only fixture is the same bytes).
 */
function placeFixture(store, name) {
  const src = path.join(REPO_ROOT, 'tests', 'data', 'fixtures', 'harness', name);
  const lines = readFileSync(src, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const header = lines[0];
  const generation = generationOf(store);
  if (generation === '0.1') {
    writeLog(store, lines, { generation });
    return header;
  }
  const target = logPathFor(store, header, { generation });
  mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
  copyFileSync(src, target);
  chmodSync(target, 0o600);
  return header;
}

async function rejectsWith(promise, code, check = () => {}) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.code, code, `expected ${code}, got ${err.code}: ${err.message} ${JSON.stringify(err.data)}`);
    check(err);
    return true;
  });
}

/** Sends one request through the SDK and returns the raw response frame the agent wrote for it. */
async function wireResponse({ agent, ctx }, method, params) {
  const from = agent.frames.length;
  await ctx.request(method, params).catch(() => {});
  const e = agent.frames.find((x) => x.index >= from && !Object.hasOwn(x.frame, 'method') && Object.hasOwn(x.frame, 'id'));
  assert.ok(e, `response to ${method}`);
  return e.frame;
}

/** History-carrying session/update payloads of `sid` between frame indexes [from, to); session-level
 * announcements (available_commands_update after new/load/resume) are not history. */
const updatesBetween = (agent, sid, from, to = Infinity) => agent.frames
  .filter((e) => e.index >= from && e.index < to && e.frame.method === 'session/update' && e.frame.params.sessionId === sid)
  .map((e) => e.frame.params.update)
  .filter((u) => u.sessionUpdate !== 'available_commands_update');

function responseIndex(agent, from, pred = () => true) {
  const e = agent.frames.find((x) => x.index >= from && !Object.hasOwn(x.frame, 'method') && pred(x.frame));
  assert.ok(e, 'response frame seen');
  return e.index;
}

// ---- tests -----------------------------------------------------------------------------------

test('session/load after a restart replays before the response; new prompts continue seqs and turns', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const cwd = path.join(home, 'project');
  mkdirSync(cwd);

  const a = await startIn(t, home);
  const { sessionId: sid } = await a.ctx.request(M.session.new, { cwd, mcpServers: [] });
  const r1 = await a.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('alpha one two three four five six') });
  assert.equal(r1.stopReason, 'end_turn');
  // The fallback title (first five words) reaches the client as session_info_update in turn 1.
  const info = a.agent.sdkUpdatesFor(sid).map((u) => u.params.update).filter((u) => u.sessionUpdate === 'session_info_update');
  assert.deepEqual(info.map((u) => u.title), ['alpha one two three four']);
  await a.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('beta') });
  const answered = Agent.chunkText(a.agent.chunks({ sessionId: sid }));
  await a.agent.finish();
  const before = checkLog(logPath(store, sid));
  assert.equal(before.turns, 2);

  const b = await startIn(t, home);
  const from = b.agent.frames.length;
  const loaded = await b.ctx.request(M.session.load, { sessionId: sid, cwd: cwd + '/', mcpServers: [] });
  assert.ok(loaded !== undefined);
  const at = responseIndex(b.agent, from);
  const replay = updatesBetween(b.agent, sid, from, at);
  assert.deepEqual(updatesBetween(b.agent, sid, at), [], 'no replay after the response');
  const users = replay.filter((u) => u.sessionUpdate === 'user_message_chunk').map((u) => u.content.text);
  assert.deepEqual(users, ['alpha one two three four five six', 'beta']);
  assert.ok(replay.some((u) => u.sessionUpdate === 'session_info_update' && u.title === 'alpha one two three four'));
  const agentText = replay.filter((u) => u.sessionUpdate === 'agent_message_chunk').map((u) => u.content.text).join('');
  assert.equal(agentText, answered, 'assistant answers replayed as streamed');
  // The first update of the replay is the first user message (history order).
  assert.equal(replay[0].sessionUpdate, 'user_message_chunk');

  const r3 = await b.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('gamma') });
  assert.equal(r3.stopReason, 'end_turn');
  const answer = Agent.chunkText(b.agent.chunks({ sessionId: sid, from: at + 1 }));
  assert.match(answer, /^echo: received 6 messages\n/, 'the request is assembled from the stored surface');
  await b.agent.finish();

  const after = checkLog(logPath(store, sid));
  assert.equal(after.turns, 3);
  assert.deepEqual(after.events.slice(0, before.events.length), before.events, 'earlier events untouched');
  assert.deepEqual(userTexts(after.events), ['alpha one two three four five six', 'beta', 'gamma']);
  assert.equal(after.events.filter((e) => e.type === 'session/title').length, 1, 'the title is written once, in turn 1');
  checkModes(store);
});

test('session/load of a session already open on this connection replays again', async (t) => {
  const home = makeHome(t);
  const a = await startIn(t, home);
  const { sessionId: sid } = await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] });
  await a.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('once') });
  const from = a.agent.frames.length;
  await a.ctx.request(M.session.load, { sessionId: sid, cwd: home, mcpServers: [] });
  const users = updatesBetween(a.agent, sid, from).filter((u) => u.sessionUpdate === 'user_message_chunk');
  assert.deepEqual(users.map((u) => u.content.text), ['once']);
  await a.agent.finish();
});

test('session/list: newest first, cwd filter with normalisation, titles, updatedAt, cursor paging', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const base = 1_700_000_000_000;
  const written = [];
  // 130 sessions in /x/a (two pairs share a createdAt: ties go by id), 5 in /x/b, one cwd-less.
  for (let i = 0; i < 130; i++) {
    const createdAt = base + (i === 7 || i === 8 ? 7 : i === 60 || i === 61 ? 60 : i) * 1000;
    const id = `s-${String(i).padStart(3, '0')}`;
    written.push({ id, cwd: '/x/a', createdAt, title: `title ${i}`, time: createdAt + 1234 });
  }
  for (let i = 0; i < 5; i++) written.push({ id: `b-${i}`, cwd: '/x/b', createdAt: base + 500_000 + i, title: `b ${i}`, time: base + 600_000 });
  for (const w of written) writeRawLog(store, w);
  const cwdless = placeFixture(store, 'handshake.session.jsonl');

  const a = await startIn(t, home);
  const expectA = written.filter((w) => w.cwd === '/x/a')
    .sort((p, q) => q.createdAt - p.createdAt || (p.id < q.id ? -1 : 1));
  const page1 = await a.ctx.request(M.session.list, { cwd: '/x/a/../a/' });
  assert.equal(page1.sessions.length, 100);
  assert.equal(typeof page1.nextCursor, 'string');
  // A session created between two pages is newer than every row: the keyset cursor is not disturbed.
  const { sessionId: between } = await a.ctx.request(M.session.new, { cwd: '/x/a', mcpServers: [] });
  await a.ctx.request(M.session.prompt, { sessionId: between, prompt: text('created between pages') });
  const page2 = await a.ctx.request(M.session.list, { cwd: '/x//a/.', cursor: page1.nextCursor });
  assert.equal(page2.sessions.length, 30);
  assert.ok(page2.nextCursor === undefined || page2.nextCursor === null, 'last page has no cursor');
  const got = [...page1.sessions, ...page2.sessions];
  assert.deepEqual(got.map((s) => s.sessionId), expectA.map((w) => w.id));
  assert.equal((await a.ctx.request(M.session.list, { cwd: '/x/a' })).sessions[0].sessionId, between);
  await a.ctx.request(M.session.delete, { sessionId: between });
  for (const [i, s] of got.entries()) {
    assert.equal(s.cwd, '/x/a');
    assert.equal(s.title, expectA[i].title);
    assert.equal(s.updatedAt, new Date(expectA[i].time).toISOString());
  }

  // Without a filter: every session with a cwd, never the cwd-less one.
  const all = [];
  let cursor;
  do {
    const page = await a.ctx.request(M.session.list, cursor ? { cursor } : {});
    assert.ok(page.sessions.length <= 100);
    all.push(...page.sessions);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  assert.equal(all.length, 135);
  assert.ok(!all.some((s) => s.sessionId === cwdless.id), 'cwd-less session not listed');
  assert.deepEqual(all.slice(0, 5).map((s) => s.sessionId), ['b-4', 'b-3', 'b-2', 'b-1', 'b-0']);

  // A session created and prompted now is the newest, with its fallback title.
  const made = Date.now();
  const { sessionId: fresh } = await a.ctx.request(M.session.new, { cwd: '/x/b', mcpServers: [] });
  await a.ctx.request(M.session.prompt, { sessionId: fresh, prompt: text('fresh session title words here and more') });
  const b = await a.ctx.request(M.session.list, { cwd: '/x/b/' });
  const listed = Date.now();
  assert.equal(b.sessions.length, 6);
  assert.equal(b.sessions[0].sessionId, fresh);
  assert.equal(b.sessions[0].title, 'fresh session title words here');
  // Stamped while the test ran (both clocks are the system's wall clock, in whole milliseconds).
  const updated = Date.parse(b.sessions[0].updatedAt);
  assert.ok(made <= updated && updated <= listed, `updatedAt ${b.sessions[0].updatedAt} within [${made}, ${listed}]`);
  assert.match(b.sessions[0].updatedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

  // Unknown cwd: empty. Bad cursor / relative cwd: -32602.
  assert.deepEqual((await a.ctx.request(M.session.list, { cwd: '/nowhere' })).sessions, []);
  await rejectsWith(a.ctx.request(M.session.list, { cwd: 'x/a' }), -32602, (e) => assert.equal(e.data?.path, '/cwd'));
  await rejectsWith(a.ctx.request(M.session.list, { cursor: 'not-a-cursor' }), -32602, (e) => assert.equal(e.data?.path, '/cursor'));
  await a.agent.finish();

  // A new process (index cache present) lists the same.
  const c = await startIn(t, home);
  const again = await c.ctx.request(M.session.list, { cwd: '/x/b' });
  assert.deepEqual(again.sessions.map((s) => s.sessionId), b.sessions.map((s) => s.sessionId));
  await c.agent.finish();
});

test('session/list pages stay under 64 KiB (fewer items when cwds, ids and titles are long); the cursor still pages through all', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const ids = [];
  // 2 KB of cwd and a 150-byte id per item: 100 such items would make a 200 KB frame.
  for (let i = 0; i < 170; i++) {
    const id = `long-${String(i).padStart(3, '0')}-${'i'.repeat(140)}`;
    const cwd = `/not/there/${'d'.repeat(2000)}/${i % 5}`;
    // Ties on createdAt (three per millisecond) page by id; the 6,000-character titles are cut when listed.
    writeRawLog(store, { id, cwd, createdAt: 1_700_000_000_000 + Math.floor(i / 3), title: `Title ${i} ${'t'.repeat(6000)}` });
    ids.push(id);
  }
  const a = await startIn(t, home);
  const seen = [];
  const counts = [];
  let cursor;
  do {
    const from = a.agent.frames.length;
    const page = await a.ctx.request(M.session.list, cursor ? { cursor } : {});
    const e = a.agent.frames.find((x) => x.index >= from && !Object.hasOwn(x.frame, 'method') && x.frame.result?.sessions);
    const bytes = Buffer.byteLength(e.line, 'utf8') + 1;  // with its newline
    assert.ok(bytes <= 64 * 1024, `page ${counts.length + 1} frame is ${bytes} bytes`);
    assert.ok(page.sessions.length >= 1);
    for (const s of page.sessions) assert.ok(Buffer.byteLength(s.title, 'utf8') <= 40, 'titles are cut when listed');
    seen.push(...page.sessions.map((s) => s.sessionId));
    counts.push(page.sessions.length);
    cursor = page.nextCursor ?? undefined;
  } while (cursor && counts.length < 200);
  assert.ok(counts.length >= 6 && counts.every((n) => n < 100), `fewer items per page: ${counts}`);
  assert.equal(new Set(seen).size, seen.length, 'no session twice');
  assert.deepEqual([...seen].sort(), [...ids].sort(), 'every session once');
  await a.agent.finish();
});

// File store only (lib/pgvariant.mjs): a root directory removed and made again (0700).
fileStoreOnly('a store root deleted while the agent runs is created again (0700) by the next write; a new process loads what was written', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const a = await startIn(t, home);
  const { sessionId: before } = await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] });
  await a.ctx.request(M.session.prompt, { sessionId: before, prompt: text('before the removal') });
  assert.ok(existsSync(store));
  rmSync(store, { recursive: true, force: true });

  const { sessionId: sid } = await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] });
  assert.equal(statSync(store).mode & 0o777, 0o700, 'the root is private again');
  const r = await a.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('after the removal') });
  assert.equal(r.stopReason, 'end_turn');
  assert.ok(statSync(logPath(store, sid)).isFile());
  // Removed once more: again the next session/new and its prompt work on a fresh root.
  rmSync(store, { recursive: true, force: true });
  const { sessionId: sid2 } = await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] });
  await a.ctx.request(M.session.prompt, { sessionId: sid2, prompt: text('second root') });
  assert.equal(statSync(store).mode & 0o777, 0o700);
  assert.match(readFileSync(path.join(home, 'dsh-acp.log'), 'utf8'), /session store root .* had been removed: created it again/);
  await a.agent.finish();

  const b = await startIn(t, home);
  await b.ctx.request(M.session.load, { sessionId: sid2, cwd: home, mcpServers: [] });
  const replayed = b.agent.sdkUpdatesFor(sid2).map((u) => u.params.update)
    .filter((u) => u.sessionUpdate === 'user_message_chunk').map((u) => u.content.text).join('');
  assert.equal(replayed, 'second root');
  const { sessions } = await b.ctx.request(M.session.list, {});
  assert.deepEqual(sessions.map((s) => s.sessionId), [sid2], 'only what the current root holds is listed');
  await b.agent.finish();
});

test('session/resume attaches without replay; prompts continue the conversation', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const a = await startIn(t, home);
  const { sessionId: sid } = await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] });
  await a.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('before resume') });
  await a.agent.finish();

  const b = await startIn(t, home);
  const from = b.agent.frames.length;
  await b.ctx.request(M.session.resume, { sessionId: sid, cwd: home, mcpServers: [] });
  assert.deepEqual(updatesBetween(b.agent, sid, from), [], 'resume sends no history');
  await b.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('after resume') });
  assert.match(Agent.chunkText(b.agent.chunks({ sessionId: sid })), /^echo: received 4 messages\n/);
  await rejectsWith(b.ctx.request(M.session.resume, { sessionId: 'no-such-session', cwd: home, mcpServers: [] }), -32002);
  await b.agent.finish();
  const { turns, events } = checkLog(logPath(store, sid));
  assert.equal(turns, 2);
  assert.deepEqual(userTexts(events), ['before resume', 'after resume']);
});

test('session/close releases the session: a later prompt is -32002; load attaches it again', async (t) => {
  const home = makeHome(t);
  const a = await startIn(t, home);
  const { sessionId: sid } = await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] });
  await a.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('x') });
  await a.ctx.request(M.session.close, { sessionId: sid });
  await rejectsWith(a.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('y') }), -32002,
    (e) => assert.equal(e.data?.sessionId, sid));
  await a.ctx.request(M.session.load, { sessionId: sid, cwd: home, mcpServers: [] });
  const r = await a.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('z') });
  assert.equal(r.stopReason, 'end_turn');
  await a.agent.finish();
  assert.deepEqual(userTexts(checkLog(logPath(path.join(home, 'sessions'), sid)).events), ['x', 'z']);
});

test('session/delete removes the log and the listing entry; load is then -32002; deleting again is {}', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const a = await startIn(t, home);
  const { sessionId: sid } = await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] });
  const { sessionId: keep } = await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] });
  await a.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('doomed') });
  await a.ctx.request(M.session.prompt, { sessionId: keep, prompt: text('kept') });
  const file = logPath(store, sid);
  assert.deepEqual((await a.ctx.request(M.session.list, {})).sessions.map((s) => s.sessionId).sort(), [sid, keep].sort());
  await a.ctx.request(M.session.delete, { sessionId: sid });
  assert.ok(!logFiles(store).includes(file), 'log file removed');
  assert.deepEqual((await a.ctx.request(M.session.list, {})).sessions.map((s) => s.sessionId), [keep]);
  await rejectsWith(a.ctx.request(M.session.load, { sessionId: sid, cwd: home, mcpServers: [] }), -32002,
    (e) => assert.equal(e.data?.sessionId, sid));
  // Deleting an already deleted session or one that never existed succeeds silently
  // (https://agentclientprotocol.com/protocol/v1/session-delete#semantics). The SDK would report
  // -32002 on session/delete as success too: check the wire.
  for (const id of [sid, 'never-existed']) {
    const wire = await wireResponse(a, M.session.delete, { sessionId: id });
    assert.deepEqual(wire.result, {}, `${id}: ${JSON.stringify(wire)}`);
  }
  assert.deepEqual((await a.ctx.request(M.session.list, {})).sessions.map((s) => s.sessionId), [keep]);
  await a.agent.finish();
  // Gone for a new process too (the index cache must not resurrect it).
  const b = await startIn(t, home);
  assert.deepEqual((await b.ctx.request(M.session.list, {})).sessions.map((s) => s.sessionId), [keep]);
  await rejectsWith(b.ctx.request(M.session.load, { sessionId: sid, cwd: home, mcpServers: [] }), -32002);
  await b.agent.finish();
});

fileStoreOnly('a log removed behind an open session: its load is -32002, as a session not there, never an internal error', async (t) => {
  const home = makeHome(t);
  const a = await startIn(t, home);
  const { sessionId: sid } = await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] });
  await a.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('soon gone') });
  rmSync(logPath(path.join(home, 'sessions'), sid));  // another process deleted it
  // Still open on this connection, so the load gets as far as reading the log, which the store lacks.
  await rejectsWith(a.ctx.request(M.session.load, { sessionId: sid, cwd: home, mcpServers: [] }), -32002,
    (e) => assert.equal(e.data?.sessionId, sid));
  await a.agent.finish();
});

test('session/delete params that break its schema are still -32602 with their pointer', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  for (const [params, pointer] of [[{ sessionId: 7 }, '/sessionId'], [{}, '/sessionId'], [[], '']]) {
    const r = await agent.call('session/delete', params);
    assert.equal(r.error?.code, -32602, JSON.stringify(r));
    if (pointer) assert.equal(r.error.data?.path, pointer);
  }
  await agent.finish();
});

test('session/load errors: unknown id -32002, relative or mismatched cwd -32602, cwd-less session -32602', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const cwdless = placeFixture(store, 'handshake.session.jsonl');
  const a = await startIn(t, home);
  const { sessionId: sid } = await a.ctx.request(M.session.new, { cwd: '/p/q', mcpServers: [] });
  await a.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('hello') });

  await rejectsWith(a.ctx.request(M.session.load, { sessionId: 'unknown-id', cwd: '/p/q', mcpServers: [] }), -32002,
    (e) => { assert.match(e.message, /^Resource not found/); assert.equal(e.data?.sessionId, 'unknown-id'); });
  await rejectsWith(a.ctx.request(M.session.load, { sessionId: sid, cwd: 'p/q', mcpServers: [] }), -32602,
    (e) => assert.equal(e.data?.path, '/cwd'));
  await rejectsWith(a.ctx.request(M.session.load, { sessionId: sid, cwd: '/p/other', mcpServers: [] }), -32602,
    (e) => assert.equal(e.data?.path, '/cwd'));
  // Normalised forms of the same directory are accepted.
  await a.ctx.request(M.session.load, { sessionId: sid, cwd: '/p/x/../q/./', mcpServers: [] });
  await rejectsWith(a.ctx.request(M.session.load, { sessionId: cwdless.id, cwd: '/', mcpServers: [] }), -32602);
  await rejectsWith(a.ctx.request(M.session.resume, { sessionId: cwdless.id, cwd: '/', mcpServers: [] }), -32602);
  const listed = (await a.ctx.request(M.session.list, {})).sessions.map((s) => s.sessionId);
  assert.deepEqual(listed, [sid], 'the cwd-less session is not listed');
  await a.agent.finish();
  // The fixture is left byte-for-byte as it was.
  assert.equal(readFileSync(logPath(store, cwdless.id), 'utf8'),
    readFileSync(path.join(REPO_ROOT, 'tests', 'data', 'fixtures', 'harness', 'handshake.session.jsonl'), 'utf8'));
});

const HOSTILE = ['../../etc/passwd', 'a/b', '.', '..', '/abs', 'x\u0000y', '~002E', 'a'.repeat(300)];

// File store only (lib/pgvariant.mjs): ids no file name can hold (-32602) and nothing created outside the root.
fileStoreOnly('hostile session ids never escape the store and never give an internal error', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const outside = () => walk(home).filter((f) => !f.startsWith('sessions/') && !f.startsWith('cache/') && f !== 'dsh-acp.log');
  const a = await startIn(t, home);
  const before = outside();
  for (const id of HOSTILE) {
    for (const [method, params] of [
      [M.session.load, { sessionId: id, cwd: home, mcpServers: [] }],
      [M.session.resume, { sessionId: id, cwd: home, mcpServers: [] }],
      [M.session.delete, { sessionId: id }],
      [M.session.close, { sessionId: id }],
      [M.session.prompt, { sessionId: id, prompt: text('hi') }],
    ]) {
      // On the wire (the SDK turns -32002 to session/close and session/delete into success).
      const { error: err, result } = await wireResponse(a, method, params);
      // Deleting a session that does not exist succeeds; an id no file name can hold is still -32602.
      if (method === M.session.delete && !err) {
        assert.deepEqual(result, {});
        continue;
      }
      assert.ok(err && [-32002, -32602].includes(err.code), `${method} ${JSON.stringify(id).slice(0, 40)}: ${JSON.stringify(err)}`);
      if (err.code === -32602) assert.equal(err.data?.path, '/sessionId');
    }
  }
  // An id too long for a file name is -32602 on /sessionId (not "not found", not an internal error).
  await rejectsWith(a.ctx.request(M.session.load, { sessionId: 'a'.repeat(300), cwd: home, mcpServers: [] }), -32602,
    (e) => assert.equal(e.data?.path, '/sessionId'));
  await a.agent.finish();
  assert.deepEqual(outside(), before, 'nothing created outside the store');
});

// File store only (lib/pgvariant.mjs): file names and buckets of logs another program wrote.
fileStoreOnly('sessions with hostile ids written by another program load, prompt and stay inside their bucket', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const cwd = path.join(home, 'w');
  const ids = ['../../etc/passwd', 'a/b', '.', '..', '~002E'];
  ids.forEach((id, i) => writeRawLog(store, { id, cwd, createdAt: 1_700_000_000_000 + i, title: `hostile ${i}` }));
  const files = walk(home).sort();
  const a = await startIn(t, home);
  for (const [i, id] of ids.entries()) {
    const from = a.agent.frames.length;
    await a.ctx.request(M.session.load, { sessionId: id, cwd, mcpServers: [] });
    const users = updatesBetween(a.agent, id, from).filter((u) => u.sessionUpdate === 'user_message_chunk');
    assert.deepEqual(users.map((u) => u.content.text), [`hostile ${i}`]);
    const r = await a.ctx.request(M.session.prompt, { sessionId: id, prompt: text(`more ${i}`) });
    assert.equal(r.stopReason, 'end_turn');
  }
  const listed = (await a.ctx.request(M.session.list, { cwd })).sessions.map((s) => s.sessionId).sort();
  assert.deepEqual(listed, [...ids].sort());
  // The id equal to the escaped name of "." is a different session than ".".
  await a.ctx.request(M.session.delete, { sessionId: '~002E' });
  assert.ok(existsSync(logPathFor(store, { id: '.', cwd })), '"." survives deleting "~002E"');
  await a.agent.finish();
  const now = walk(home).filter((f) => !f.startsWith('cache/') && f !== 'dsh-acp.log' && !f.endsWith('.lock')).sort();
  // Gone: the deleted session's log (and in a 0.1 root its session directory).
  const deleted = path.relative(home, logPathFor(store, { id: '~002E', cwd }));
  const expected = files.filter((f) => f !== deleted && !(isV01Log(deleted) && f === `${path.dirname(deleted)}/`));
  assert.deepEqual(now.filter((f) => !f.includes('.lock')), expected, 'no file but the logs themselves');
  for (const [i, id] of ids.slice(0, 4).entries()) {
    const { events, turns } = checkLog(logPath(store, id));
    assert.equal(turns, 2);
    assert.deepEqual(userTexts(events), [`hostile ${i}`, `more ${i}`]);
  }
  checkModes(store);
});

// File store only (lib/pgvariant.mjs): the files' compression (--store-compression is a file root's).
fileStoreOnly('raw stores stay raw; zstd and raw logs written by the agent validate against the schema', async (t) => {
  for (const args of [[], ['--store-compression', 'none']]) {
    const home = makeHome(t);
    const store = path.join(home, 'sessions');
    const a = await startIn(t, home, args);
    const { sessionId: sid } = await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] });
    await a.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('one two three four five six seven') });
    await a.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('stop here [[echo:stop=max_tokens]]') });
    await a.agent.finish();
    const file = logPath(store, sid);
    assert.equal(file.endsWith('.zstd'), args.length === 0, `encoding of ${file}`);
    const { events } = checkLog(file);
    const types = new Set(events.map((e) => e.type));
    for (const ty of ['turn/start', 'user/message', 'session/title', 'step/start', 'assistant/chunk', 'assistant/message', 'step/end', 'turn/end'])
      assert.ok(types.has(ty), `${ty} written`);
    assert.deepEqual(events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason.kind), ['completed', 'max-tokens']);
    checkModes(store);
  }
});

// File store only (lib/pgvariant.mjs): logs written and removed behind the server.
fileStoreOnly('session/list notices logs created and removed by other programs while the agent runs', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const base = 1_700_000_000_000;
  writeRawLog(store, { id: 'ext-1', cwd: '/e/one', createdAt: base + 1, title: 'first external' });
  const a = await startIn(t, home);
  const ids = async () => (await a.ctx.request(M.session.list, {})).sessions.map((s) => s.sessionId);
  assert.deepEqual(await ids(), ['ext-1']);
  // Same bucket (its directory mtime changes), then a new bucket (the root's mtime changes), at once.
  writeRawLog(store, { id: 'ext-2', cwd: '/e/one', createdAt: base + 2, title: 'second external' });
  assert.deepEqual(await ids(), ['ext-2', 'ext-1']);
  writeRawLog(store, { id: 'ext-3', cwd: '/e/two', createdAt: base + 3, title: 'third external' });
  assert.deepEqual(await ids(), ['ext-3', 'ext-2', 'ext-1']);
  rmSync(logPath(store, 'ext-1'));
  assert.deepEqual(await ids(), ['ext-3', 'ext-2']);
  const listed = (await a.ctx.request(M.session.list, { cwd: '/e/one' })).sessions;
  assert.deepEqual(listed.map((s) => [s.sessionId, s.title]), [['ext-2', 'second external']]);
  // The external session loads and takes prompts like our own.
  await a.ctx.request(M.session.load, { sessionId: 'ext-3', cwd: '/e/two', mcpServers: [] });
  await a.ctx.request(M.session.prompt, { sessionId: 'ext-3', prompt: text('continue it') });
  await a.agent.finish();
  const { turns } = checkLog(logPath(store, 'ext-3'));
  assert.equal(turns, 2);
});

// File store only (lib/pgvariant.mjs): corrupt files, which PostgreSQL cannot hold.
fileStoreOnly('corrupt logs (raw garbage line, zstd checksum error) give SESSION_LOG_CORRUPT naming the file and are never modified', async (t) => {
  for (const args of [['--store-compression', 'none'], []]) {
    const home = makeHome(t);
    const store = path.join(home, 'sessions');
    const a = await startIn(t, home, args);
    const { sessionId: sid } = await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] });
    for (const p of ['one', 'two', 'three']) await a.ctx.request(M.session.prompt, { sessionId: sid, prompt: text(p) });
    await a.agent.finish();
    const file = logPath(store, sid);
    const bytes = readFileSync(file);
    let bad;
    if (file.endsWith('.zstd')) {
      // Flip one byte inside the second frame's payload: its content checksum no longer matches.
      const second = bytes.indexOf(Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), 4);
      const third = bytes.indexOf(Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), second + 4);
      bad = Buffer.from(bytes);
      const at = second + Math.floor((third - second) / 2);
      bad[at] ^= 0x01;
    } else {
      const lines = bytes.toString('utf8').split('\n');
      lines[3] = '{"type":"user/message", this is not JSON';
      bad = Buffer.from(lines.join('\n'));
    }
    writeFileSync(file, bad);
    const b = await startIn(t, home, args);
    await rejectsWith(b.ctx.request(M.session.load, { sessionId: sid, cwd: home, mcpServers: [] }), -32603, (e) => {
      assert.equal(e.data?.code, 'SESSION_LOG_CORRUPT');
      assert.match(e.message, /^Session log unreadable: /);
      assert.ok(e.message.includes(path.basename(file)), e.message);
    });
    // Attaching without replay and prompting must not "repair" it either.
    const attached = await b.ctx.request(M.session.resume, { sessionId: sid, cwd: home, mcpServers: [] }).then(() => true, () => false);
    if (attached) {
      await rejectsWith(b.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('four') }), -32603,
        (e) => assert.equal(e.data?.code, 'SESSION_LOG_CORRUPT'));
    }
    await b.agent.finish();
    assert.ok(readFileSync(file).equals(bad), `${path.basename(file)} was modified`);
  }
});

test('a cancelled turn and a turn cut by stdin EOF are closed "aborted" in a valid log', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  // An hour between chunks, then a minute's sleep: neither turn can end by itself while the test runs.
  const a = await startIn(t, home, ['--echo-delay-ms', '3600000']);
  const { sessionId: sid } = await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] });
  const running = a.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('to be cancelled') });
  await a.agent.nextFrame((f) => f.method === 'session/update' && f.params?.update?.sessionUpdate === 'agent_message_chunk',
    { what: 'first chunk' });
  await a.ctx.notify(M.session.cancel, { sessionId: sid });
  assert.equal((await running).stopReason, 'cancelled');
  const second = a.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('cut by EOF [[echo:sleep=60000]]') });
  await a.agent.turnStarted(sid, 2);
  a.agent.closeStdin();
  assert.equal((await second).stopReason, 'cancelled');
  const { code } = await a.agent.waitExit();
  assert.equal(code, 0);
  const { events, turns } = checkLog(logPath(store, sid));
  assert.equal(turns, 2);
  assert.deepEqual(events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason.kind), ['aborted', 'aborted']);
  assert.deepEqual(userTexts(events), ['to be cancelled', 'cut by EOF [[echo:sleep=60000]]']);
});
