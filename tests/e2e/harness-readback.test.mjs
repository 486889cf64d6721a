// Issue 15, read back by the harness itself: what dsh-acp writes into a 0.1 root is listed, loaded,
// resumed and continued by deepseek-harness's own published store code (tests/harness-check/, pinned
// by its package-lock.json and run as a separate program: check-root.mjs), and dsh-acp continues what
// the harness appended. After a kill -9 mid-turn, the harness's repair and ours close the log with
// the same bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { INIT_PARAMS, REPO_ROOT, startSdkAgent, until, fileChanges } from './lib/agent.mjs';
import { M, text, uriOf, prompt, updatesOf, answerOf, zstdFrames } from './lib/refs.mjs';

const CHECK_DIR = path.join(REPO_ROOT, 'tests', 'harness-check');
const CHECK_ROOT = path.join(CHECK_DIR, 'check-root.mjs');

// ---- the harness's reader ---------------------------------------------------------------------

/**
 * Runs check-root.mjs (the harness's own store code) on `root`; resolves to {code, lines, stderr},
 * `lines` the parsed JSON lines it printed (one per session, per append, per root-level failure).
 */
function checkRoot(root, enc, ...args) {
  assert.ok(existsSync(path.join(CHECK_DIR, 'node_modules', '@deepseek-ai', 'dsh-session-persistence-jsonl')),
    'tests/harness-check/node_modules is missing: run `npm ci --prefix tests/harness-check --ignore-scripts` (./dev does it)');
  const argv = [CHECK_ROOT, root, '--compression', enc === 'raw' ? 'none' : 'zstd', ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('error', reject);
    child.on('close', (code) => {
      const lines = out.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
      resolve({ code, lines, stderr: err, shown: `check-root ${args.join(' ')} → exit ${code}\n${out}${err}` });
    });
  });
}

/** check-root must exit 0 with every line ok; returns the session lines of the (last) validation by id. */
async function harnessAccepts(root, enc, ...args) {
  const r = await checkRoot(root, enc, ...args);
  assert.equal(r.code, 0, `the harness rejects what is in the root:\n${r.shown}`);
  assert.ok(r.lines.length > 0 && r.lines.every((l) => l.ok === true), r.shown);
  const byId = new Map();
  for (const l of r.lines) if (l.op === undefined) byId.set(l.id, l);
  return { ...r, byId };
}

// ---- roots and logs ---------------------------------------------------------------------------

function makeDir(t) {
  const dir = mkdtempSync(path.join(tmpdir(), 'dsh-acp-hrb-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cwd = path.join(dir, 'proj');
  mkdirSync(cwd);
  return { dir, cwd, root: path.join(dir, 'root') };
}

const rootArgs = (root, enc) => ['--store', root, '--store-generation', '0.1', ...(enc === 'raw' ? ['--store-compression', 'none'] : [])];

async function start(t, root, enc, args = []) {
  const { agent, ctx } = startSdkAgent(t, { args: [...rootArgs(root, enc), ...args] });
  await ctx.request(M.initialize, INIT_PARAMS);
  return { agent, ctx };
}

/** `<root>/--<projectKey>--/<id>/session.jsonl[.zstd]`: the one log of `id`. */
function logOf(root, id) {
  const found = readdirSync(root).flatMap((p) => ['session.jsonl', 'session.jsonl.zstd']
    .map((n) => path.join(root, p, id, n)).filter((f) => existsSync(f)));
  assert.equal(found.length, 1, `one log for ${id} in ${root}: ${found}`);
  return found[0];
}

/**
 * A log's plaintext (zstd through the zstd CLI). `torn`: the log of a killed writer, whose last zstd
 * frame may be cut short; the frames before it are kept.
 */
function plaintext(file, { torn = false } = {}) {
  if (!file.endsWith('.zstd')) return readFileSync(file, 'utf8');
  const r = spawnSync('zstd', ['-dcq', file], { encoding: 'utf8' });
  assert.ok(r.status === 0 || torn, `zstd -dc ${file}: ${r.stderr}`);
  return r.stdout;
}

/** The log's complete lines as text (a torn last line, without its newline, is left out). */
const textLines = (file, opts) => plaintext(file, opts).split('\n').slice(0, -1);

const eventsOf = (root, id) => textLines(logOf(root, id)).slice(1).map((l) => JSON.parse(l));

/**
 * Cuts `id`'s log after its last event matching `pred` (the harness crashed there). A zstd log keeps
 * its whole frames before the cut and gets the rest of the cut frame as a new frame.
 */
function cutAfter(root, id, pred) {
  const file = logOf(root, id);
  const lines = textLines(file);
  let keep = -1;
  lines.forEach((l, i) => { if (i > 0 && pred(JSON.parse(l))) keep = i + 1; });
  assert.ok(keep > 0, `${id}: nothing to cut after`);
  if (!file.endsWith('.zstd')) {
    truncateSync(file, Buffer.byteLength(lines.slice(0, keep).map((l) => `${l}\n`).join('')));
    return;
  }
  const kept = [];
  let count = 0;
  for (const frame of zstdFrames(readFileSync(file))) {
    const n = execFileSync('zstd', ['-dcq'], { input: frame }).toString('utf8').split('\n').length - 1;
    if (count + n > keep) break;
    kept.push(frame);
    count += n;
  }
  const rest = lines.slice(count, keep).map((l) => `${l}\n`).join('');
  if (rest.length > 0) kept.push(execFileSync('zstd', ['-q', '--check', '-c'], { input: rest }));
  writeFileSync(file, Buffer.concat(kept));
}

// ---- readback: the harness reads and continues our sessions, we continue its -------------------

const WINDOW = 2500; // small enough that session C compacts on its own after a few prompts

for (const enc of ['raw', 'zstd']) {
  test(`${enc}: the harness lists, loads, resumes and continues every session dsh-acp wrote; dsh-acp continues the harness's turn`, async (t) => {
    const { cwd, root } = makeDir(t);
    const a = await start(t, root, enc, ['--context-window', String(WINDOW)]);
    const newSession = async () => (await a.ctx.request(M.session.new, { cwd, mcpServers: [] })).sessionId;

    // A: prompts, /compact, more prompts, a refusal and a cancelled prompt.
    const A = await newSession();
    for (const p of ['hello there', 'a second prompt', 'a third prompt', '/compact keep the names', 'after the compaction']) {
      assert.equal((await prompt(a, A, p)).response.stopReason, 'end_turn', p);
    }
    assert.equal((await prompt(a, A, 'refuse this [[echo:stop=refusal]]')).response.stopReason, 'refusal');
    const turns = a.agent.turnCount(A);
    const slow = prompt(a, A, 'a slow one [[echo:sleep=2000]]');
    await a.agent.turnStarted(A, turns + 1);
    await a.ctx.notify(M.session.cancel, { sessionId: A });
    assert.equal((await slow).response.stopReason, 'cancelled');
    assert.equal((await prompt(a, A, 'and after the cancel')).response.stopReason, 'end_turn');

    // B: references A (a snapshot of A's conversation in B's log).
    const B = await newSession();
    const ref = await prompt(a, B, [...text('what happened in '), { type: 'resource_link', uri: uriOf(A), name: 'A' }]);
    assert.equal(ref.response.stopReason, 'end_turn');
    assert.match(ref.answer, /## Referenced sessions/);

    // C: long prompts until an automatic compaction.
    const C = await newSession();
    for (let turn = 1; turn <= 8; turn++) {
      assert.equal((await prompt(a, C, `turn ${turn}: ${'words to fill the context '.repeat(24)}`)).response.stopReason, 'end_turn');
    }
    await a.agent.finish();

    // The scenario happened as intended (otherwise the harness would check less than it seems).
    const types = (id) => eventsOf(root, id).map((e) => e.type);
    const reasons = eventsOf(root, A).filter((e) => e.type === 'turn/end').map((e) => e.data.reason.kind);
    assert.ok(types(A).includes('compaction/start'), 'A: /compact compacted');
    assert.ok(reasons.includes('error') && reasons.includes('aborted'), `A: refused and cancelled turns: ${reasons}`);
    assert.ok(eventsOf(root, B).some((e) => e.type === 'user/message' && e.data.source?.kind === 'session-reference'), 'B: a snapshot');
    assert.ok(types(C).includes('compaction/start'), 'C: compacted automatically');

    // 1. The harness reads every session as a clean 0.1.1 log (no migration, no repair).
    let r = await harnessAccepts(root, enc, '--strict', '--copy', '--expect', '3');
    assert.deepEqual([...r.byId.keys()].sort(), [A, B, C].sort());

    // 2. The harness resumes each session and appends a turn of its own (a tool call, its result, an answer).
    const said = `harness turn (${enc})`;
    r = await harnessAccepts(root, enc, '--strict', '--expect', '3', '--text', said, '--append', A, '--append', B, '--append', C);
    const appended = r.lines.filter((l) => l.op === 'append');
    assert.equal(appended.length, 3, r.shown);

    // 3. A new dsh-acp process loads the sessions (replaying the harness's turn) and prompts each again.
    const b = await start(t, root, enc, ['--context-window', String(WINDOW)]);
    for (const id of [A, B, C]) {
      const from = b.agent.sdkUpdates.length;
      await b.ctx.request(M.session.load, { sessionId: id, cwd, mcpServers: [] });
      const replay = updatesOf(b.agent, id, from);
      const users = replay.filter((u) => u.sessionUpdate === 'user_message_chunk').map((u) => u.content.text);
      assert.equal(users.at(-1), said, `${id}: the harness's user message is replayed last`);
      assert.ok(replay.some((u) => u.sessionUpdate === 'tool_call' && /^probe-call-/.test(u.toolCallId)), `${id}: the harness's tool call`);
      assert.ok(answerOf(replay).endsWith('done'), `${id}: the harness's answer is replayed`);
      const next = await prompt(b, id, `dsh-acp again (${enc})`);
      assert.equal(next.response.stopReason, 'end_turn');
      assert.ok(next.answer.includes(`: ${said}`), `${id}: the model sees the harness's message: ${next.answer}`);
    }
    assert.doesNotMatch(b.agent.log(), / (warn|error) /, 'dsh-acp reads the harness\'s events without a complaint');
    await b.agent.finish();

    // 4. And the harness reads all of it again.
    r = await harnessAccepts(root, enc, '--strict', '--copy', '--expect', '3');
    for (const id of [A, B, C]) assert.ok(r.byId.get(id).turns >= 2, r.shown);
  });
}

// ---- tool turns: the harness reads the calls, approvals and rules dsh-acp logs ------------------

for (const enc of ['raw', 'zstd']) {
  test(`${enc}: tool turns dsh-acp writes (calls, results, approvals, an "always" rule, a plan) are read and continued by the harness`, async (t) => {
    const { cwd, root } = makeDir(t);
    writeFileSync(path.join(cwd, 'config.txt'), 'mode=DEBUG\nlevel=info\n');
    // The client allows the edit always, rejects the write once and allows the command once.
    const answers = ['allow_always', 'reject_once', 'allow_once'];
    const client = { requestPermission: () => ({ outcome: { outcome: 'selected', optionId: answers.shift() ?? 'reject_once' } }) };
    const { agent, ctx } = startSdkAgent(t, { args: rootArgs(root, enc), client });
    await ctx.request(M.initialize, INIT_PARAMS);
    const id = (await ctx.request(M.session.new, { cwd, mcpServers: [] })).sessionId;
    const tool = (name, args) => `[[echo:tool=${name} ${JSON.stringify(args)}]]`;
    const steps = [
      tool('read', { file_path: 'config.txt' }) + ' ' + tool('glob', { pattern: '*.txt' }),
      tool('edit', { file_path: 'config.txt', old_string: 'DEBUG', new_string: 'RELEASE' }),
      tool('write', { file_path: 'new.txt', content: 'x' }) + ' ' + tool('bash', { command: 'ls', description: 'list' }),
      tool('todo_write', { todos: [{ content: 'check', status: 'pending', id: '1' }] }) + ' ' + tool('nope', {}),
    ];
    for (const p of steps) assert.equal((await prompt({ agent, ctx }, id, p)).response.stopReason, 'end_turn', p);
    await agent.finish();
    assert.equal(readFileSync(path.join(cwd, 'config.txt'), 'utf8'), 'mode=RELEASE\nlevel=info\n');
    assert.ok(!existsSync(path.join(cwd, 'new.txt')), 'the rejected write did not happen');
    const types = eventsOf(root, id).map((e) => e.type);
    for (const type of ['tool/call', 'tool/result', 'approval/asked', 'approval/decided', 'dsh-acp/permission-rule', 'todo/write'])
      assert.ok(types.includes(type), `the log has ${type}: ${types}`);

    // The harness reads it as a clean 0.1.1 log, resumes it and appends a turn of its own; we go on.
    await harnessAccepts(root, enc, '--strict', '--copy', '--expect', '1');
    await harnessAccepts(root, enc, '--strict', '--expect', '1', '--text', 'harness turn', '--append', id);
    const b = await start(t, root, enc);
    await b.ctx.request(M.session.load, { sessionId: id, cwd, mcpServers: [] });
    assert.equal((await prompt(b, id, tool('edit', { file_path: 'config.txt', old_string: 'info', new_string: 'debug' }))).response.stopReason, 'end_turn');
    await b.agent.finish();
    // The rule survived the harness's turn and the reload: the second edit was not asked, and happened.
    assert.equal(readFileSync(path.join(cwd, 'config.txt'), 'utf8'), 'mode=RELEASE\nlevel=debug\n');
    await harnessAccepts(root, enc, '--strict', '--copy', '--expect', '1');
  });
}

// ---- images: a prompt's image block is read and continued by the harness -----------------------

test('raw: a prompt with an image (its attachment block) is read and continued by the harness', async (t) => {
  const { cwd, root } = makeDir(t);
  const a = await start(t, root, 'raw');
  const id = (await a.ctx.request(M.session.new, { cwd, mcpServers: [] })).sessionId;
  // A 1x1 RGBA PNG.
  const data = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
  const r = await a.ctx.request(M.session.prompt, { sessionId: id, prompt: [text('what is this?')[0], { type: 'image', data, mimeType: 'image/png' }] });
  assert.equal(r.stopReason, 'end_turn');
  await a.agent.finish();
  const user = eventsOf(root, id).find((e) => e.type === 'user/message');
  assert.equal(user.data.content[1].type, 'image');
  assert.deepEqual(Object.keys(user.data.content[1].attachment), ['attachmentId', 'mediaType', 'width', 'height', 'bytes']);
  await harnessAccepts(root, 'raw', '--strict', '--copy', '--expect', '1');
  await harnessAccepts(root, 'raw', '--strict', '--expect', '1', '--text', 'harness turn', '--append', id);
});

for (const enc of ['raw', 'zstd']) {
  test(`${enc}: a session the agent referenced through recall (its snapshot after a tool result) is read and continued by the harness`, async (t) => {
    const { cwd, root } = makeDir(t);
    const a = await start(t, root, enc);
    const source = (await a.ctx.request(M.session.new, { cwd, mcpServers: [] })).sessionId;
    assert.equal((await prompt(a, source, 'the retry policy is three attempts')).response.stopReason, 'end_turn');
    const id = (await a.ctx.request(M.session.new, { cwd, mcpServers: [] })).sessionId;
    const call = JSON.stringify({ sessions: [source] });
    assert.equal((await prompt(a, id, `recall it [[echo:tool=recall ${call}]]`)).response.stopReason, 'end_turn');
    await a.agent.finish();
    const events = eventsOf(root, id);
    const at = events.findIndex((e) => e.type === 'user/message' && e.data.source?.kind === 'session-reference');
    assert.ok(at > 0, 'the recall snapshot is logged');
    assert.equal(events[at - 1].type, 'tool/result');
    assert.equal(events[at].data.source.form, 'recall', 'in the 0.1.1 shape');
    await harnessAccepts(root, enc, '--strict', '--expect', '2');
    await harnessAccepts(root, enc, '--strict', '--expect', '2', '--text', 'harness turn', '--append', id);
  });
}

// ---- crash: the harness's repair and ours write the same closers -------------------------------

for (const enc of ['raw', 'zstd']) {
  test(`${enc}: after kill -9 mid-turn, dsh-acp closes the log with exactly the harness's closers`, async (t) => {
    const { dir, cwd, root } = makeDir(t);

    // Two sessions with a turn the harness writes, each then cut as if the harness had been killed
    // in its tool step: T1 after its tool/call (a call started, no result), T2 after the assistant
    // message requesting the call (never started).
    const a = await start(t, root, enc);
    const T1 = (await a.ctx.request(M.session.new, { cwd, mcpServers: [] })).sessionId;
    const T2 = (await a.ctx.request(M.session.new, { cwd, mcpServers: [] })).sessionId;
    for (const id of [T1, T2]) assert.equal((await prompt(a, id, 'first')).response.stopReason, 'end_turn');
    await a.agent.finish();
    await harnessAccepts(root, enc, '--strict', '--append', T1, '--append', T2);
    cutAfter(root, T1, (e) => e.type === 'tool/call');
    cutAfter(root, T2, (e) => e.type === 'assistant/message' && e.data.message.content.some((b) => b.type === 'tool-call'));

    // K: dsh-acp killed while an answer streams (chunk batches on disk, no assistant/message yet).
    // The kill must land before the answer ends; on a loaded machine it may not, and a session whose
    // turn ended first is left aside for another with the chunks spaced out four times as much.
    let K;
    for (let delayMs = 20; ; delayMs *= 4) {
      const k = await start(t, root, enc, ['--echo-delay-ms', String(delayMs)]);
      const id = (await k.ctx.request(M.session.new, { cwd, mcpServers: [] })).sessionId;
      prompt(k, id, `a long answer: ${'word '.repeat(100)}`).catch(() => { /* killed */ });
      const file = logOf(root, id);
      const has = (type) => textLines(file, { torn: true }).filter((l) => l.includes(`"type":"${type}"`)).length;
      await until(() => has('assistant/chunk') >= 3 || has('turn/end') > 0, 'chunks in the log', fileChanges(root));
      k.agent.signal('SIGKILL');
      assert.equal((await k.agent.waitExit()).signal, 'SIGKILL');
      if (has('turn/end') === 0) { K = id; break; }
      t.diagnostic(`the answer ended before the kill; again with --echo-delay-ms ${delayMs * 4}`);
      rmSync(path.dirname(file), { recursive: true, force: true }); // the session's directory: listed no more
    }

    const copyA = path.join(dir, 'A');
    const copyB = path.join(dir, 'B');
    cpSync(root, copyA, { recursive: true });
    cpSync(root, copyB, { recursive: true });

    // Copy A: the harness repairs in place (its load() commits the closers).
    const h = await harnessAccepts(copyA, enc);
    const expected = { [T1]: 3, [T2]: 3, [K]: 2 }; // tool/result (T1, T2), step/end, turn/end
    for (const [id, n] of Object.entries(expected)) {
      const line = h.byId.get(id);
      assert.equal(line.closers, n, `${id}: ${JSON.stringify(line)}`);
      assert.equal(line.repaired, true, `${id}: repaired in place`);
    }

    // Copy B: dsh-acp repairs under its lock before it appends the next turn.
    const b = await start(t, copyB, enc);
    for (const id of [T1, T2, K]) {
      await b.ctx.request(M.session.load, { sessionId: id, cwd, mcpServers: [] });
      assert.equal((await prompt(b, id, 'after the crash')).response.stopReason, 'end_turn', id);
    }
    assert.doesNotMatch(b.agent.log(), / (warn|error) /);
    await b.agent.finish();

    // Up to the harness's last closer, both logs are the same bytes; then our next turn begins.
    for (const id of [T1, T2, K]) {
      const theirs = textLines(logOf(copyA, id));
      const ours = textLines(logOf(copyB, id));
      const closers = theirs.slice(-expected[id]);
      const at = theirs.findIndex((line, i) => ours[i] !== line);
      assert.equal(at, -1, `${id}: line ${at + 1} differs between the harness's repair and dsh-acp's\n` +
        `harness: ${theirs[at]}\ndsh-acp: ${ours[at]}\nthe harness's closers:\n${closers.join('\n')}`);
      assert.equal(JSON.parse(ours[theirs.length]).type, 'turn/start', `${id}: our turn follows the closers`);
      const kinds = closers.map((l) => JSON.parse(l).type);
      assert.deepEqual(kinds, [...(id === K ? [] : ['tool/result']), 'step/end', 'turn/end']);
      assert.deepEqual(JSON.parse(closers.at(-1)).data.reason, { kind: 'interrupted' });
    }
    // The harness reads what dsh-acp repaired and continued as a clean log.
    await harnessAccepts(copyB, enc, '--strict', '--copy', '--expect', '3');
  });
}
