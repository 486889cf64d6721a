// session/fork (issue 28; unstable in ACP, gated by agentCapabilities.sessionCapabilities.fork):
// a new session of one's own that continues from another's history, through the official SDK and
// the echo model, whose answer lists the messages it was sent (so a prompt in the fork shows what
// history it saw). The fork is durable and replayable (a load in another process), may start at an
// earlier message (`_meta["dsh-acp/forkAtMessage"]`, a messageId the source's chunks carried), may
// come from a read-only source (the harness's own root), and never modifies its source. Its log
// names its source in the header (`parentSession`, `seedLength`) and in a `dsh-acp/fork` event
// marked ignorable, which harness 0.1.1's own reader accepts (tests/harness-check).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import * as unstable from '@agentclientprotocol/sdk/unstable';
import { INIT_PARAMS, REPO_ROOT, startSdkAgent, until, storeChanges } from './lib/agent.mjs';
import { M, prompt, updatesOf, echoLines, rejectsWith, logPath, readLog, readRawLog } from './lib/refs.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
// session/fork is in the SDK's unstable surface (and in schema.unstable.json), not its stable one.
const FORK = unstable.methods.agent.session.fork;
const FORK_AT = 'dsh-acp/forkAtMessage';
const CHUNKS = new Set(['user_message_chunk', 'agent_message_chunk', 'agent_thought_chunk']);

function tempDir(t, name) {
  const dir = mkdtempSync(path.join(tmpdir(), `dsh-acp-fork-${name}-`));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function start(t, args, env = {}) {
  const { agent, ctx } = startSdkAgent(t, { args, env });
  const init = await ctx.request(M.initialize, INIT_PARAMS);
  return { agent, ctx, init };
}

/** The message chunks among `updates`, consecutive chunks of one id joined: [kind, messageId, text]. */
function messages(updates) {
  const out = [];
  for (const u of updates) {
    if (!CHUNKS.has(u.sessionUpdate)) continue;
    if (out.length && out.at(-1)[1] === u.messageId) out.at(-1)[2] += u.content.text ?? '';
    else out.push([u.sessionUpdate, u.messageId, u.content.text ?? '']);
  }
  return out;
}

async function replay(a, sessionId, cwd) {
  const from = a.agent.sdkUpdates.length;
  await a.ctx.request(M.session.load, { sessionId, cwd, mcpServers: [] });
  return updatesOf(a.agent, sessionId, from);
}

/** The previews of the non-system messages an echo answer lists: [role, preview]. */
const seen = (answer) => echoLines(answer).map((l) => /^\[\d+\] (\w+) \d+ bytes(?:: (.*))?$/.exec(l))
  .filter((m) => m[1] !== 'system').map((m) => [m[1], m[2]]);

// ACP's unstable schema: the fork's request and answer, the capability.
const require = createRequire(import.meta.url);
const acpAjv = new Ajv2020({ strict: false, allErrors: true });
addFormats(acpAjv);
for (const f of ['int32', 'int64', 'uint16', 'uint32', 'uint64', 'double', 'float']) acpAjv.addFormat(f, { type: 'number', validate: Number.isFinite });
acpAjv.addSchema(JSON.parse(readFileSync(require.resolve('@agentclientprotocol/sdk/schema/v1/schema.unstable.json'), 'utf8')), 'acp');
function conforms(def, value) {
  const v = acpAjv.getSchema(`acp#/$defs/${def}`);
  assert.ok(v(value), `${def}: ${acpAjv.errorsText(v.errors)}\n${JSON.stringify(value)}`);
}

// The schema of the lines we write (schemas/session-event.schema.json, with the rule schema it refers to).
const logAjv = new Ajv2020({ strict: false, allErrors: true });
logAjv.addSchema(JSON.parse(readFileSync(path.join(REPO_ROOT, 'schemas', 'permission-rule.schema.json'), 'utf8')));
const validateLine = logAjv.compile(JSON.parse(readFileSync(path.join(REPO_ROOT, 'schemas', 'session-event.schema.json'), 'utf8')));

test('initialize advertises session/fork', async (t) => {
  const a = await start(t, ['--store', tempDir(t, 'store')]);
  assert.deepEqual(a.init.agentCapabilities.sessionCapabilities.fork, {});
  conforms('InitializeResponse', a.init);
  await a.agent.finish();
});

test('a fork of one\'s own session continues its history, is durable, replays in another process, and leaves the source as it was', async (t) => {
  const store = tempDir(t, 'store');
  const a = await start(t, ['--store', store]);
  const cwd = a.agent.home;
  const { sessionId: source } = await a.ctx.request(M.session.new, { cwd, mcpServers: [] });
  await prompt(a, source, 'alpha question');
  await prompt(a, source, 'beta question');
  const sourceBytes = readFileSync(logPath(store, source));

  const request = { sessionId: source, cwd, mcpServers: [] };
  conforms('ForkSessionRequest', request);
  const forked = await a.ctx.request(FORK, request);
  conforms('ForkSessionResponse', forked);
  assert.notEqual(forked.sessionId, source);
  assert.ok(forked.modes && forked.configOptions, 'the answer has session/new\'s members');
  const { answer } = await prompt(a, forked.sessionId, 'gamma question');
  const history = seen(answer);
  // The echo model saw the source's two exchanges, then the new prompt.
  assert.deepEqual(history.map(([role]) => role), ['user', 'assistant', 'user', 'assistant', 'user']);
  assert.deepEqual([history[0][1], history[2][1], history[4][1]], ['alpha question', 'beta question', 'gamma question']);
  assert.deepEqual(readFileSync(logPath(store, source)), sourceBytes, 'the source is never modified');
  // The source goes on without the fork's prompt.
  const { answer: inSource } = await prompt(a, source, 'delta question');
  assert.ok(!inSource.includes('gamma'), inSource);

  // Provenance: the harness's header fields, and our own event (ignorable) after the seed.
  const sourceEvents = readLog(logPath(store, source)).length - 1;
  const [header, ...evs] = readLog(logPath(store, forked.sessionId));
  assert.equal(header.parentSession, source);
  assert.equal(header.cwd, cwd);
  const seed = header.seedLength;
  assert.ok(Number.isInteger(seed) && seed > 0 && seed < sourceEvents, `seedLength ${seed}`);
  const mark = evs[seed];
  assert.equal(mark.type, 'dsh-acp/fork');
  assert.equal(mark.ignorable, true);
  assert.deepEqual(mark.data, { source: { sessionId: source }, throughSeq: seed - 1, seedLength: seed, inheritsChoices: true });
  for (const line of readRawLog(logPath(store, forked.sessionId))) assert.ok(validateLine(line), logAjv.errorsText(validateLine.errors));
  // The seed is the source's prefix, event for event.
  const sourceLog = readLog(logPath(store, source)).slice(1, seed + 1);
  assert.deepEqual(evs.slice(0, seed), sourceLog);
  await a.agent.finish();

  // Listed, and loaded in another process: the source's history, then the fork's own turn.
  const b = await start(t, ['--store', store]);
  const { sessions } = await b.ctx.request(M.session.list, {});
  assert.ok(sessions.some((s) => s.sessionId === forked.sessionId && !s._meta?.['dsh-acp/readOnly']));
  const replayed = messages(await replay(b, forked.sessionId, cwd));
  assert.deepEqual(replayed.map(([kind]) => kind), ['user_message_chunk', 'agent_message_chunk', 'user_message_chunk',
    'agent_message_chunk', 'user_message_chunk', 'agent_message_chunk']);
  assert.deepEqual(replayed.filter(([k]) => k === 'user_message_chunk').map(([, , text]) => text),
    ['alpha question', 'beta question', 'gamma question']);
  const sourceReplay = messages(await replay(b, source, cwd));
  assert.deepEqual(replayed.slice(0, 4).map(([k, , text]) => [k, text]), sourceReplay.slice(0, 4).map(([k, , text]) => [k, text]),
    'the same history as the source shows');
  assert.equal(new Set([...replayed, ...sourceReplay].map(([, id]) => id)).size, replayed.length + sourceReplay.length,
    'message ids are the fork\'s own');
  // And it takes prompts there too.
  const { answer: again } = await prompt(b, forked.sessionId, 'epsilon');
  assert.equal(seen(again).length, 7);
  // Referenceable like any session: a mention of the fork brings its history, the copied part included.
  const { sessionId: other } = await b.ctx.request(M.session.new, { cwd, mcpServers: [] });
  const uri = `dsh-session:${Buffer.from(JSON.stringify(forked.sessionId)).toString('base64url')}`;
  await prompt(b, other, `what did the fork say? @[fork](${uri})`);
  const snapshot = JSON.stringify(readRawLog(logPath(store, other)));
  for (const said of ['alpha question', 'beta question', 'gamma question', 'epsilon']) assert.ok(snapshot.includes(said), said);
  assert.ok(!snapshot.includes('delta question'), 'the source\'s later prompt is not the fork\'s');
  await b.agent.finish();
});

test('a fork at an earlier message holds the history through it; an unknown id and an unknown source are refused', async (t) => {
  const store = tempDir(t, 'store');
  const a = await start(t, ['--store', store]);
  const cwd = a.agent.home;
  const { sessionId: source } = await a.ctx.request(M.session.new, { cwd, mcpServers: [] });
  const first = await prompt(a, source, 'alpha question');
  await prompt(a, source, 'beta question');
  await prompt(a, source, 'gamma question');
  const [, firstAnswerId] = messages(first.updates).find(([k]) => k === 'agent_message_chunk');
  const sourceBytes = readFileSync(logPath(store, source));

  // At the first answer (the id the live turn streamed): the first exchange, and nothing after it.
  const atAnswer = await a.ctx.request(FORK, { sessionId: source, cwd, mcpServers: [], _meta: { [FORK_AT]: firstAnswerId } });
  const r1 = await prompt(a, atAnswer.sessionId, 'after the first answer');
  assert.deepEqual(seen(r1.answer).map(([role, text]) => role === 'user' ? text : role),
    ['alpha question', 'assistant', 'after the first answer']);
  const [, ...evs1] = readLog(logPath(store, atAnswer.sessionId));
  const mark = evs1.find((e) => e.type === 'dsh-acp/fork');
  assert.equal(mark.data.messageId, firstAnswerId);
  // A fork point at a turn's last answer takes the turn through its end: nothing to close.
  assert.equal(evs1[mark.data.seedLength - 1].type, 'turn/end');
  assert.deepEqual(evs1[mark.data.seedLength - 1].data.reason, { kind: 'completed' });

  // At a user message (its id from a replay): that message without its answer. The turn it opened is
  // closed as an interrupted one is.
  const replayed = messages(await replay(a, source, cwd));
  const [, betaId] = replayed.find(([k, , text]) => k === 'user_message_chunk' && text === 'beta question');
  const atUser = await a.ctx.request(FORK, { sessionId: source, cwd, mcpServers: [], _meta: { [FORK_AT]: betaId } });
  const [, ...evs2] = readLog(logPath(store, atUser.sessionId));
  const seed2 = evs2.find((e) => e.type === 'dsh-acp/fork').data.seedLength;
  assert.equal(evs2[seed2 - 2].type, 'user/message');
  assert.deepEqual(evs2[seed2 - 1].data.reason, { kind: 'interrupted' });
  const r2 = await prompt(a, atUser.sessionId, 'instead of an answer');
  const users = seen(r2.answer).filter(([role]) => role === 'user').map(([, text]) => text);
  assert.deepEqual(users, ['alpha question', 'beta question', 'instead of an answer']);
  assert.ok(!r2.answer.includes('gamma'), r2.answer);

  // A messageId no message of the source has: -32602 naming the _meta key.
  const unknown = await rejectsWith(a.ctx.request(FORK, { sessionId: source, cwd, mcpServers: [], _meta: { [FORK_AT]: 'no-such-message' } }), -32602);
  assert.match(JSON.stringify([unknown.message, unknown.data]), /dsh-acp~1forkAtMessage/);
  assert.match(JSON.stringify([unknown.message, unknown.data]), new RegExp(`names no message of session ${source}`));
  // An id of another session's message is no message of this one.
  await rejectsWith(a.ctx.request(FORK, { sessionId: atAnswer.sessionId, cwd, mcpServers: [], _meta: { [FORK_AT]: betaId } }), -32602);
  await rejectsWith(a.ctx.request(FORK, { sessionId: source, cwd, mcpServers: [], _meta: { [FORK_AT]: 7 } }), -32602);

  // A source that does not exist: the error session/load gives.
  const missing = '00000000-0000-4000-8000-000000000000';
  const forkErr = await rejectsWith(a.ctx.request(FORK, { sessionId: missing, cwd, mcpServers: [] }), -32002);
  const loadErr = await rejectsWith(a.ctx.request(M.session.load, { sessionId: missing, cwd, mcpServers: [] }), -32002);
  assert.deepEqual([forkErr.message, forkErr.data], [loadErr.message, loadErr.data]);
  assert.deepEqual(readFileSync(logPath(store, source)), sourceBytes, 'the source is never modified');
  await a.agent.finish();
});

test('a fork of a session whose turn is running holds that turn so far, closed as interrupted; the source\'s turn goes on', async (t) => {
  const store = tempDir(t, 'store');
  const a = await start(t, ['--store', store]);
  const cwd = a.agent.home;
  const { sessionId: source } = await a.ctx.request(M.session.new, { cwd, mcpServers: [] });
  await prompt(a, source, 'alpha question');
  // The echo model waits (up to a minute) before it answers; the prompt is in the log by then.
  const running = prompt(a, source, '[[echo:sleep=60000]] slow question');
  await until(() => readLog(logPath(store, source)).some((e) => e.type === 'user/message' &&
    JSON.stringify(e.data).includes('slow question')), 'the running prompt in the log', storeChanges(store));
  const forked = await a.ctx.request(FORK, { sessionId: source, cwd, mcpServers: [] });
  const [header, ...evs] = readLog(logPath(store, forked.sessionId));
  assert.deepEqual(evs[header.seedLength - 1].data.reason, { kind: 'interrupted' });
  const { answer } = await prompt(a, forked.sessionId, 'in the fork');
  assert.deepEqual(seen(answer).filter(([role]) => role === 'user').map(([, text]) => text),
    ['alpha question', '[[echo:sleep=60000]] slow question', 'in the fork']);
  // The source's turn was not touched: cancelled here, it ends as a cancelled turn does.
  await a.ctx.notify(M.session.cancel, { sessionId: source });
  assert.equal((await running).response.stopReason, 'cancelled');
  assert.equal(readLog(logPath(store, source)).at(-1).type, 'turn/end');
  await a.agent.finish();
});

// ---- a read-only source: the harness's own 0.1 root ----------------------------------------------

const GENERATOR = path.join(here, '..', 'data', 'harness01', 'generate.py');
const CHECK_DIR = path.join(REPO_ROOT, 'tests', 'harness-check');

/** Every file under `dir`. */
const filesUnder = (dir) => readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
  e.isDirectory() ? filesUnder(path.join(dir, e.name)) : [path.join(dir, e.name)]);

/** harness 0.1.1's own store code (tests/harness-check/check-root.mjs) must accept every log of `root`. */
function harnessAccepts(root, compression) {
  assert.ok(existsSync(path.join(CHECK_DIR, 'node_modules', '@deepseek-ai', 'dsh-session-persistence-jsonl')),
    'tests/harness-check/node_modules is missing: run `npm ci --prefix tests/harness-check --ignore-scripts` (./dev does it)');
  const r = spawnSync(process.execPath, [path.join(CHECK_DIR, 'check-root.mjs'), root, '--compression', compression], { encoding: 'utf8' });
  const shown = `check-root → exit ${r.status}\n${r.stdout}${r.stderr}`;
  assert.equal(r.status, 0, shown);
  const lines = r.stdout.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
  assert.ok(lines.length > 0 && lines.every((l) => l.ok === true), shown);
  return lines;
}

for (const generation of ['45fc', '0.1']) {
  test(`a read-only source (the harness's own root) forks into a writable ${generation} session of one's own`, async (t) => {
    const dir = tempDir(t, 'ro');
    const cwd = path.join(dir, 'proj');
    mkdirSync(cwd);
    const dshHome = path.join(dir, 'dsh');
    execFileSync('python3', [GENERATOR, path.join(dir, 'stores'), cwd, '--dsh-home', dshHome, '--harness-valid']);
    execFileSync('cp', ['-r', path.join(dir, 'stores', 'v01-zstd'), path.join(dshHome, 'sessions')]);
    // No --store: the harness's own root ($DSH_HOME/sessions) is discovered beside ours.
    const home = path.join(dir, 'home');
    const own = path.join(home, 'sessions');
    const { agent, ctx } = startSdkAgent(t, { defaultPaths: true, args: ['--store-generation', generation],
      env: { DSH_ACP_HOME: home, DSH_HOME: dshHome, DSH_ACP_STORE_GENERATION: '' } });
    await ctx.request(M.initialize, INIT_PARAMS);
    const a = { agent, ctx };
    const { sessions } = await a.ctx.request(M.session.list, {});
    const source = sessions.find((s) => s.sessionId === '01-tools');
    assert.equal(source?._meta?.['dsh-acp/readOnly'], true, 'the source is read-only here');
    const harnessFiles = filesUnder(path.join(dshHome, 'sessions'));
    const before = harnessFiles.map((f) => readFileSync(f));

    const sourceReplay = messages(await replay(a, '01-tools', cwd));
    const forked = await a.ctx.request(FORK, { sessionId: '01-tools', cwd, mcpServers: [] });
    const listed = (await a.ctx.request(M.session.list, {})).sessions.find((s) => s.sessionId === forked.sessionId);
    assert.ok(listed && !listed._meta?.['dsh-acp/readOnly'], 'the fork is one\'s own and writable');
    const { answer } = await prompt(a, forked.sessionId, 'continue from the harness');
    const history = seen(answer);
    assert.equal(history.at(-1)[1], 'continue from the harness');
    assert.ok(history.length > 2, answer);
    assert.deepEqual(filesUnder(path.join(dshHome, 'sessions')).map((f) => readFileSync(f)), before, 'the source is never modified');

    // In our root, in that root's generation; replayed as the source was, then the new turn.
    const file = filesUnder(own).find((f) => f.includes(forked.sessionId) && /\.jsonl(\.zstd)?$/.test(f));
    assert.ok(file, `the fork's log in ${own}`);
    assert.equal(/(^|\/)session\.jsonl\.zstd$/.test(file), generation === '0.1');
    const [header, ...lines] = readRawLog(file);
    assert.equal(header.parentSession, '01-tools');
    const mark = lines[header.seedLength];
    assert.equal(mark.type, 'dsh-acp/fork');
    assert.equal(mark.ignorable, true);
    // The harness's root is read-only here, but its sessions are the same person's: their choices carry over
    // (someone else's PostgreSQL session's do not: postgres-fork.test.mjs).
    assert.equal(mark.data.inheritsChoices, true);
    if (generation === '0.1') assert.equal(lines[header.seedLength + 1].type, 'session/end-seed');
    const replayed = messages(await replay(a, forked.sessionId, cwd));
    assert.deepEqual(replayed.slice(0, sourceReplay.length).map(([k, , text]) => [k, text]),
      sourceReplay.map(([k, , text]) => [k, text]));
    assert.equal(replayed.at(-2)[2], 'continue from the harness');
    await a.agent.finish();
    // The harness's own reader takes the fork (and the rest of the root) as it is.
    if (generation === '0.1') harnessAccepts(own, 'zstd');
  });
}
