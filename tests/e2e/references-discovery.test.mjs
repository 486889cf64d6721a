// Discovering sessions to reference (issue 4): the capability in initialize, `_meta` URIs in
// session/list, `_dsh/sessionReference/candidates`, and the `/ref` slash command (advertised after
// new, load and resume; answers without a model request and without writing).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import { REPO_ROOT } from './lib/agent.mjs';
import {
  M, text, uriOf, makeHome, startIn, RAW, logBytes, logPath, writeRawLog, rejectsWith, prompt, events,
  snapshotData,
} from './lib/refs.mjs';

const CANDIDATES = '_dsh/sessionReference/candidates';
// schemas/session-reference-candidates.schema.json: every params object we send and result we get.
const candidatesSchema = JSON.parse(readFileSync(path.join(REPO_ROOT, 'schemas', 'session-reference-candidates.schema.json'), 'utf8'));
const ajv = new Ajv2020({ strict: false });
ajv.addSchema(candidatesSchema, 'candidates');
const validParams = ajv.getSchema('candidates#/$defs/params');
const validResult = ajv.getSchema('candidates#/$defs/result');

/** A store with a target (on disk, cwd A) and four hand-written sessions of known createdAt. */
async function setup(t, args = []) {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const cwdA = path.join(home, 'proj-a');
  const cwdB = path.join(home, 'other-proj-dir');
  mkdirSync(cwdA);
  mkdirSync(cwdB);
  writeRawLog(store, { id: 'cand-a1', cwd: cwdA, createdAt: 1000, title: 'Alpha one' });
  writeRawLog(store, { id: 'cand-a2', cwd: cwdA, createdAt: 2000, title: 'Alpha: two' });
  writeRawLog(store, { id: 'cand-none', cwd: undefined, createdAt: 3000, title: null });
  writeRawLog(store, { id: 'cand-other', cwd: cwdB, createdAt: 4000, title: 'Other work' });
  const a = await startIn(t, home, [...RAW, ...args]);
  const target = (await a.ctx.request(M.session.new, { cwd: cwdA, mcpServers: [] })).sessionId;
  await prompt(a, target, 'the target turn');
  return { home, store, cwdA, cwdB, a, target };
}

const expected = (id, label, cwd, createdAt) => ({
  sessionId: id, label, ...(cwd === undefined ? {} : { cwd }), createdAt, uri: uriOf(id),
  mention: `@[${label.replaceAll('\\', '\\\\').replaceAll(']', '\\]')}](${uriOf(id)})`,
});

test('initialize advertises session references; ref is advertised after new, load and resume', async (t) => {
  const home = makeHome(t);
  const a = await startIn(t, home, RAW);
  assert.deepEqual(a.init.agentCapabilities._meta?.['dsh-acp/sessionReferences'], { version: 1 });

  const isCommands = (sid) => (f) => f.method === 'session/update' && f.params.sessionId === sid &&
    f.params.update.sessionUpdate === 'available_commands_update';
  const checkRef = (entry) => {
    const ref = entry.frame.params.update.availableCommands.find((c) => c.name === 'ref');
    assert.ok(ref, 'ref is advertised');
    assert.equal(typeof ref.description, 'string');
    assert.equal(typeof ref.input?.hint, 'string', 'ref takes an optional argument');
  };
  const sid = (await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] })).sessionId;
  checkRef(await a.agent.nextFrame(isCommands(sid), { what: 'commands after session/new' }));
  await prompt(a, sid, 'hello');
  await a.agent.finish();

  const b = await startIn(t, home, RAW);
  await b.ctx.request(M.session.load, { sessionId: sid, cwd: home, mcpServers: [] });
  checkRef(await b.agent.nextFrame(isCommands(sid), { what: 'commands after session/load' }));
  await b.agent.finish();

  const c = await startIn(t, home, RAW);
  await c.ctx.request(M.session.resume, { sessionId: sid, cwd: home, mcpServers: [] });
  checkRef(await c.agent.nextFrame(isCommands(sid), { what: 'commands after session/resume' }));
  await c.agent.finish();
});

test('_dsh/sessionReference/candidates: same cwd, cwd-less, other cwd; query; limit; errors', async (t) => {
  const { home, cwdA, cwdB, a, target } = await setup(t);
  const all = [
    expected('cand-a2', 'Alpha: two', cwdA, 2000),
    expected('cand-a1', 'Alpha one', cwdA, 1000),
    expected('cand-none', 'cand-none', undefined, 3000),
    expected('cand-other', 'Other work', cwdB, 4000),
  ];
  const ask = async (params, { valid = true } = {}) => {
    const full = { sessionId: target, ...params };
    assert.equal(validParams(full), valid, `params ${JSON.stringify(full)} valid: ${JSON.stringify(validParams.errors)}`);
    const result = await a.ctx.request(CANDIDATES, full);
    assert.ok(validResult(result), `result matches the schema: ${JSON.stringify(validResult.errors)}`);
    return result;
  };
  const got = await ask({});
  assert.deepEqual(got, { candidates: all }, 'ranked same-cwd, cwd-less, other-cwd; newest first within each; the target left out');
  assert.deepEqual(Object.keys(got.candidates[0]), ['sessionId', 'label', 'cwd', 'createdAt', 'uri', 'mention']);
  assert.ok(!Object.hasOwn(got.candidates[2], 'cwd'), 'no cwd key for a cwd-less session');

  // The query filters by id or cwd, case-insensitively; titles are not searched.
  assert.deepEqual((await ask({ query: 'CAND-A' })).candidates, all.slice(0, 2));
  assert.deepEqual((await ask({ query: 'Other-Proj' })).candidates, [all[3]]);
  assert.deepEqual((await ask({ query: 'Alpha' })).candidates, []);
  assert.deepEqual((await ask({ query: 'Alpha', matchTitles: false })).candidates, []);
  // matchTitles: true searches titles too (case-insensitively), as /ref does.
  assert.deepEqual((await ask({ query: 'ALPHA', matchTitles: true })).candidates, all.slice(0, 2));
  assert.deepEqual((await ask({ query: 'a: T', matchTitles: true })).candidates, [all[0]]);
  assert.deepEqual((await ask({ query: 'other W', matchTitles: true })).candidates, [all[3]]);
  assert.deepEqual((await ask({ query: 'cand-a1', matchTitles: true })).candidates, [all[1]], 'ids still match');
  assert.deepEqual((await ask({ query: '' })).candidates, all);
  // The limit cuts after ranking.
  assert.deepEqual((await ask({ limit: 2 })).candidates, all.slice(0, 2));
  assert.deepEqual((await ask({ limit: 1, query: 'cand-' })).candidates, all.slice(0, 1));
  assert.deepEqual((await ask({ limit: 50 })).candidates, all);
  // Every -32602 names the bad param in data.path.
  for (const limit of [0, -1, 1.5, '2', 2 ** 53, true]) {
    assert.equal(validParams({ sessionId: target, limit }), false, `the schema refuses limit ${limit}`);
    const err = await rejectsWith(a.ctx.request(CANDIDATES, { sessionId: target, limit }), -32602, 'SESSION_REFERENCE_INVALID_REFERENCE');
    assert.match(err.message, /Invalid params/);
    assert.equal(err.data?.path, '/limit', `data.path for limit ${JSON.stringify(limit)}`);
  }
  for (const [params, pointer] of [
    [{ sessionId: target, query: 7 }, '/query'],
    [{ sessionId: target, matchTitles: 'yes' }, '/matchTitles'],
    [{ sessionId: 42 }, '/sessionId'],
    [{}, '/sessionId'],
  ]) {
    assert.equal(validParams(params), false, `the schema refuses ${JSON.stringify(params)}`);
    const err = await rejectsWith(a.ctx.request(CANDIDATES, params), -32602);
    assert.equal(err.data?.path, pointer, `data.path for ${JSON.stringify(params)}: ${err.message}`);
  }
  // Unknown target, and one that is stored but not open on this connection.
  const unknown = await rejectsWith(a.ctx.request(CANDIDATES, { sessionId: 'no-such-session' }), -32002);
  assert.equal(unknown.data?.sessionId, 'no-such-session');
  await rejectsWith(a.ctx.request(CANDIDATES, { sessionId: 'cand-a1' }), -32002);
  // A target in another cwd ranks its own cwd first.
  const other = (await a.ctx.request(M.session.new, { cwd: cwdB, mcpServers: [] })).sessionId;
  assert.deepEqual((await a.ctx.request(CANDIDATES, { sessionId: other })).candidates.map((c) => c.sessionId),
    ['cand-other', 'cand-none', target, 'cand-a2', 'cand-a1']);
  await a.agent.finish();

  // --candidate-limit sets the default limit.
  const b = await startIn(t, home, [...RAW, '--candidate-limit', '1']);
  await b.ctx.request(M.session.load, { sessionId: target, cwd: cwdA, mcpServers: [] });
  assert.deepEqual((await b.ctx.request(CANDIDATES, { sessionId: target })).candidates, all.slice(0, 1));
  assert.deepEqual((await b.ctx.request(CANDIDATES, { sessionId: target, limit: 3 })).candidates, all.slice(0, 3));
  await b.agent.finish();
});

test('/ref and /ref <query> answer with candidates and mentions, without a model request, writing nothing', async (t) => {
  const { store, cwdA, a, target } = await setup(t);
  const before = logBytes(store, target);

  const ref = await prompt(a, target, '/ref');
  assert.equal(ref.response.stopReason, 'end_turn');
  assert.ok(ref.updates.length > 0 && ref.updates.every((u) => u.sessionUpdate === 'agent_message_chunk'), JSON.stringify(ref.updates));
  assert.ok(!ref.answer.includes('echo:'), 'no model request');
  const mentions = [...ref.answer.matchAll(/@\[((?:\\.|[^\\\]])*)\]\((dsh-session:[A-Za-z0-9_-]+)\)/g)];
  assert.deepEqual(mentions.map((m) => [m[1], m[2]]), [
    ['Alpha: two', uriOf('cand-a2')], ['Alpha one', uriOf('cand-a1')], ['cand-none', uriOf('cand-none')], ['Other work', uriOf('cand-other')],
  ]);
  assert.ok(ref.answer.includes(cwdA), 'names the working directory');
  assert.ok(ref.answer.includes('1970-01-01T00:00:02.000Z'), 'names the creation time');
  assert.ok(!ref.answer.includes(uriOf(target)), 'the target itself is not offered');

  const filtered = await prompt(a, target, '  /ref other-PROJ  ');
  assert.ok(!filtered.answer.includes('echo:'));
  assert.deepEqual([...filtered.answer.split('Sessions whose conversation matches')[0].matchAll(/\((dsh-session:[A-Za-z0-9_-]+)\)/g)].map((m) => m[1]), [uriOf('cand-other')]);
  const none = await prompt(a, target, '/ref zzz');
  assert.equal(none.answer, 'No other session\'s id, working directory, title or conversation matches "zzz".');
  // /ref matches titles too, case-insensitively (sessions found by their conversation follow in a
  // section of their own: e2e.recall).
  const byTitle = await prompt(a, target, '/ref ALPHA: t');
  assert.deepEqual([...byTitle.answer.split('Sessions whose conversation matches')[0].matchAll(/\((dsh-session:[A-Za-z0-9_-]+)\)/g)].map((m) => m[1]), [uriOf('cand-a2')]);
  const byTitles = await prompt(a, target, '/ref OTHER W');
  assert.deepEqual([...byTitles.answer.split('Sessions whose conversation matches')[0].matchAll(/\((dsh-session:[A-Za-z0-9_-]+)\)/g)].map((m) => m[1]), [uriOf('cand-other')]);
  assert.ok(before.equals(logBytes(store, target)), '/ref writes nothing to the log');

  // A session never prompted keeps its header-only log (session/new is durable) after /ref.
  const fresh = (await a.ctx.request(M.session.new, { cwd: cwdA, mcpServers: [] })).sessionId;
  const freshLog = logPath(store, fresh);
  const freshBefore = readFileSync(freshLog);
  const freshRef = await prompt(a, fresh, '/ref cand-a1');
  assert.match(freshRef.answer, /Alpha one/);
  assert.equal(freshBefore.toString('utf8').trimEnd().split('\n').length, 1, 'the header alone');
  assert.ok(freshBefore.equals(readFileSync(freshLog)), '/ref writes nothing to the fresh log');

  // The model history holds no /ref exchange: the next prompt's request is system, turn one, its answer, this.
  const next = await prompt(a, target, 'next');
  assert.match(next.answer, /^echo: received 4 messages\n/);

  // A mention pasted from /ref references that session.
  const pasted = await prompt(a, target, `see ${mentions[0][0]}`);
  const card = pasted.updates.find((u) => u.sessionUpdate === 'tool_call');
  assert.equal(card.title, 'Referenced sessions \u00b7 Alpha - two');
  assert.deepEqual(card.rawInput.references, [{ sessionId: 'cand-a2', label: 'Alpha: two', uri: uriOf('cand-a2') }]);
  assert.ok(logPath(store, target));
  await a.agent.finish();
});

test('session/list items carry the canonical URI of each session', async (t) => {
  const { a, target, cwdA } = await setup(t);
  const { sessions } = await a.ctx.request(M.session.list, {});
  assert.deepEqual(sessions.map((s) => s.sessionId), [target, 'cand-other', 'cand-a2', 'cand-a1'], 'cwd-less sessions are not listed');
  for (const s of sessions) {
    const { uri } = s._meta['deepseek-harness/sessionReference'];
    assert.equal(uri, uriOf(s.sessionId));
    const id = JSON.parse(Buffer.from(uri.slice('dsh-session:'.length), 'base64url').toString('utf8'));
    assert.equal(id, s.sessionId);
  }
  const inA = await a.ctx.request(M.session.list, { cwd: cwdA });
  assert.ok(inA.sessions.every((s) => s._meta['deepseek-harness/sessionReference'].uri === uriOf(s.sessionId)));
  await a.agent.finish();
});

test('a hostile session id: canonical URI in candidates and list, bare-URI mention, one-line card title', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const id = 'unicode/\u5f15\u53f7"/slash\\/line\n';
  const uri = 'dsh-session:InVuaWNvZGUv5byV5Y-3XCIvc2xhc2hcXC9saW5lXG4i';  // docs/session-references.md#uris
  assert.equal(uriOf(id), uri);
  writeRawLog(store, { id, cwd: home, createdAt: 1000, title: 'Hostile: one' });
  const a = await startIn(t, home, RAW);
  const target = (await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] })).sessionId;
  const { candidates } = await a.ctx.request(CANDIDATES, { sessionId: target });
  assert.deepEqual(candidates, [expected(id, 'Hostile: one', home, 1000)]);
  const listed = (await a.ctx.request(M.session.list, {})).sessions.find((s) => s.sessionId === id);
  assert.equal(listed._meta['deepseek-harness/sessionReference'].uri, uri);

  // A bare URI reads as the id; the card's title shows it on one line.
  const { response, updates, answer } = await prompt(a, target, `about ${uri} today`);
  assert.equal(response.stopReason, 'end_turn');
  assert.match(answer, /^last user message: about @unicode\/\u5f15\u53f7"\/slash\\\/line\u23CE today$/m);
  const card = updates.find((u) => u.sessionUpdate === 'tool_call');
  assert.equal(card.title, 'Referenced sessions \u00b7 unicode/\u5f15\u53f7"/slash\\/line ');
  assert.deepEqual(card.rawInput.references, [{ sessionId: id, label: id, uri }]);
  assert.ok(!card.content[0].content.text.includes('\n'), 'one line per source');
  await a.agent.finish();
});

test('a cwd-less session (not loadable over ACP) can be referenced: cwd null in its snapshot data', async (t) => {
  const { store, a, target } = await setup(t);
  const { response, updates } = await prompt(a, target, `see ${uriOf('cand-none')}`);
  assert.equal(response.stopReason, 'end_turn');
  await a.agent.finish();
  const snap = events(store, target).find((e) => e.data?.source?.kind === 'session-reference');
  const [data] = snapshotData(snap.data.content[0].text);
  assert.deepEqual(data, { sessionId: 'cand-none', label: 'cand-none', cwd: null, capturedThroughSeq: 2, conversation: [{ role: 'user', text: 'hello' }] });
  assert.equal(updates.find((u) => u.sessionUpdate === 'tool_call').content[0].content.text,
    'cand-none (cand-none): retained 1 of 1 messages; captured through seq 2');
});
