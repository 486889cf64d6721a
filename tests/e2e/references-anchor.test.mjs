// A mention that points at a place in a session (`dsh-session:<payload>#seq=N`,
// docs/session-references.md#anchors) through the official ACP SDK: the model (echo) receives a
// snapshot centred on that seq within the byte budget, the source record keeps the anchor, the live
// and replayed cards say "centred on seq N", malformed anchors are refused with nothing written, and
// deepseek-harness's own store code (tests/harness-check) still reads the log of a 0.1 root.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { echoAnswer, systemBytes, INIT_PARAMS, REPO_ROOT, startSdkAgent } from './lib/agent.mjs';
import {
  M, text, uriOf, makeHome, startIn, logPath, logBytes, readLog, events, rejectsWith, updatesOf, prompt,
  framesUntilResponse, snapshotData, REFERENCE_KEYS,
} from './lib/refs.mjs';
import { fileStoreOnly } from './lib/pgvariant.mjs';

const BUDGET = 3000;

/** The bytes the budget measures for one data object: its JSON with every `<` written as \u003c. */
const measured = (data) => {
  const json = JSON.stringify(data);
  return Buffer.byteLength(json, 'utf8') + 5 * (json.split('<').length - 1);
};

/** A source session of eight prompts; returns its id and the seq of each direct user message. */
async function makeSource(a, cwd) {
  const source = (await a.ctx.request(M.session.new, { cwd, mcpServers: [] })).sessionId;
  for (let k = 1; k <= 8; k++) {
    const r = await prompt(a, source, `note ${k}: ${'details of this step '.repeat(8)}`);
    assert.equal(r.response.stopReason, 'end_turn');
  }
  return source;
}

function userSeqs(evs) {
  return evs.filter((e) => e.type === 'user/message' && e.data.source?.kind === 'user')
    .map((e) => ({ seq: e.seq, text: e.data.content[0].text }));
}

test('a mention with #seq=N: the model receives the snapshot centred on N, the record keeps the anchor, the card says so live and on replay', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const a = await startIn(t, home, ['--max-reference-bytes', String(BUDGET)]);
  const source = await makeSource(a, home);
  const srcEvents = events(store, source);
  const notes = userSeqs(srcEvents);
  assert.equal(notes.length, 8);
  const anchor = notes[2].seq;  // "note 3"
  const target = (await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] })).sessionId;

  // The same session twice with different anchors: the first mention decides (label and anchor).
  const blocks = [
    { type: 'text', text: `what did we say at ${uriOf(source)}#seq=${anchor}, compared with ` },
    { type: 'resource_link', uri: `${uriOf(source)}#seq=${notes[6].seq}`, name: 'Later' },
  ];
  const direct = `what did we say at @${source}, compared with @Later`;
  const { response, updates, answer } = await prompt(a, target, blocks);
  assert.equal(response.stopReason, 'end_turn');

  // The log: the snapshot, with the anchor in its source record after the original keys.
  const evs = readLog(logPath(store, target)).slice(1);
  const snap = evs.find((e) => e.type === 'user/message' && e.data.source?.kind === 'session-reference');
  assert.ok(snap, 'a snapshot is logged');
  const [ref] = snap.data.source.references;
  assert.deepEqual(Object.keys(ref), [...REFERENCE_KEYS, 'anchor', 'anchorSeq']);
  assert.equal(ref.label, source);
  assert.equal(ref.anchor, anchor);
  assert.equal(ref.anchorSeq, anchor, 'the anchor is a message: centred on itself');
  assert.ok(ref.truncated && ref.omittedMessages > 0, 'the budget leaves messages out');
  const user = evs.find((e) => e.seq === snap.seq + 2);
  assert.deepEqual(user.data.content, text(direct));

  // The snapshot: centred on the anchored message, within the same budget and framing.
  const snapText = snap.data.content[0].text;
  const [data] = snapshotData(snapText);
  assert.deepEqual(Object.keys(data), ['sessionId', 'label', 'cwd', 'capturedThroughSeq', 'anchorSeq', 'conversation']);
  assert.equal(data.anchorSeq, anchor);
  assert.ok(measured(data) <= BUDGET, `${measured(data)} bytes within ${BUDGET}`);
  const marked = data.conversation.filter((m) => m.anchored === true);
  assert.equal(marked.length, 1);
  assert.deepEqual(Object.keys(marked[0]), ['role', 'anchored', 'text']);
  assert.equal(marked[0].text, notes[2].text);
  // Its neighbours on both sides, contiguous: the answer before it and the answer after it.
  const projected = srcEvents.filter((e) => (e.type === 'user/message' && e.data.source?.kind === 'user') ||
    e.type === 'assistant/message').map((e) => e.data.content.filter((b) => b.type === 'text').map((b) => b.text).join('\n'));
  const at = projected.indexOf(notes[2].text);
  const first = projected.indexOf(data.conversation[0].text);
  assert.ok(first > 0 && first < at, 'older neighbours kept, the oldest messages left out');
  assert.deepEqual(data.conversation.map((m) => m.text), projected.slice(first, first + data.conversation.length));
  assert.ok(first + data.conversation.length > at + 1, 'newer neighbours kept');
  assert.ok(first + data.conversation.length < projected.length, 'the newest messages left out');

  // The model received exactly that snapshot, then the direct message.
  assert.equal(answer, echoAnswer([{ role: 'system', bytes: systemBytes(answer) }, { role: 'user', text: snapText },
    { role: 'user', text: direct }]));

  // The live card names the place; its URI is the one the user could write again.
  const cards = updates.filter((u) => u.sessionUpdate === 'tool_call');
  assert.equal(cards.length, 1);
  const line = cards[0].content[0].content.text;
  assert.match(line, new RegExp(`; captured through seq ${ref.capturedThroughSeq}; centred on seq ${anchor}$`));
  assert.deepEqual(cards[0].rawInput, { references: [{ sessionId: source, label: source, uri: `${uriOf(source)}#seq=${anchor}` }] });
  assert.deepEqual(cards[0]._meta, { 'dsh-acp/sessionReference': snap.data.source });
  await a.agent.finish();

  // Replay after a restart shows the same card.
  const b = await startIn(t, home, ['--max-reference-bytes', String(BUDGET)]);
  const from = b.agent.frames.length;
  await b.ctx.request(M.session.load, { sessionId: target, cwd: home, mcpServers: [] });
  const { during } = framesUntilResponse(b.agent, target, from);
  const replayed = during.filter((u) => u.sessionUpdate === 'tool_call');
  assert.equal(replayed.length, 1);
  assert.deepEqual(replayed[0], cards[0], 'replayed card equals the live card');
  assert.match(replayed[0].content[0].content.text, new RegExp(`centred on seq ${anchor}$`));

  // A seq beyond the log: the nearest message, the newest.
  const past = await prompt(b, target, `and ${uriOf(source)}#seq=${srcEvents.at(-1).seq + 1000}`);
  assert.equal(past.response.stopReason, 'end_turn');
  const snaps = readLog(logPath(store, target)).slice(1)
    .filter((e) => e.type === 'user/message' && e.data.source?.kind === 'session-reference');
  const lastAnswer = srcEvents.filter((e) => e.type === 'assistant/message').at(-1);
  assert.equal(snaps.at(-1).data.source.references[0].anchorSeq, lastAnswer.seq);
  await b.agent.finish();
});

test('malformed anchors are refused before anything is written; other fragments stay malformed', async (t) => {
  const home = makeHome(t);
  const store = path.join(home, 'sessions');
  const a = await startIn(t, home);
  const source = (await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] })).sessionId;
  await prompt(a, source, 'source text');
  const target = (await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] })).sessionId;
  await prompt(a, target, 'first');
  const before = logBytes(store, target);
  const uri = uriOf(source);
  for (const blocks of [
    text(`see @[x](${uri}#seq=01)`), text(`see @[x](${uri}#frag)`), text(`see ${uri}#seq=007`),
    text(`see ${uri}#seq=9007199254740992`),
    [{ type: 'resource_link', uri: `${uri}#seq=-1`, name: 'x' }],
    [{ type: 'resource_link', uri: `${uri}#page=2`, name: 'x' }],
  ]) {
    const from = a.agent.sdkUpdates.length;
    await rejectsWith(a.ctx.request(M.session.prompt, { sessionId: target, prompt: blocks }), -32602,
      'SESSION_REFERENCE_INVALID_REFERENCE');
    assert.deepEqual(updatesOf(a.agent, target, from), []);
    assert.ok(before.equals(logBytes(store, target)), `${JSON.stringify(blocks)}: nothing written`);
  }
  // In bare text, a fragment that is no anchor stays text after the reference, as before anchors.
  const r = await prompt(a, target, `see ${uri}#notes`);
  const snap = readLog(logPath(store, target)).slice(1)
    .find((e) => e.type === 'user/message' && e.data.source?.kind === 'session-reference');
  assert.deepEqual(Object.keys(snap.data.source.references[0]), REFERENCE_KEYS, 'no anchor in the record');
  assert.match(r.answer, new RegExp(`see @${source}#notes$`));
  await a.agent.finish();
});

// ---- deepseek-harness's reader over a 0.1 root holding an anchored reference ----

const CHECK_DIR = path.join(REPO_ROOT, 'tests', 'harness-check');

function checkRoot(root, ...args) {
  assert.ok(existsSync(path.join(CHECK_DIR, 'node_modules', '@deepseek-ai', 'dsh-session-persistence-jsonl')),
    'tests/harness-check/node_modules is missing: run `npm ci --prefix tests/harness-check --ignore-scripts` (./dev does it)');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(CHECK_DIR, 'check-root.mjs'), root, '--compression', 'none', ...args],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

// File store only: the harness reads a root of files.
fileStoreOnly('the harness 0.1.1 store reader accepts a recall message whose reference carries an anchor', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dsh-acp-anchor-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cwd = path.join(dir, 'proj');
  mkdirSync(cwd);
  const root = path.join(dir, 'root');
  const { agent, ctx } = startSdkAgent(t, { args: ['--store', root, '--store-generation', '0.1', '--store-compression', 'none'] });
  await ctx.request(M.initialize, INIT_PARAMS);
  const a = { agent, ctx };
  const source = (await ctx.request(M.session.new, { cwd, mcpServers: [] })).sessionId;
  await prompt(a, source, 'the first thing');
  await prompt(a, source, 'the second thing');
  const target = (await ctx.request(M.session.new, { cwd, mcpServers: [] })).sessionId;
  const r = await prompt(a, target, `recall @[S](${uriOf(source)}#seq=1)`);
  assert.equal(r.response.stopReason, 'end_turn');
  await agent.finish();

  const logs = readdirSync(root).flatMap((p) => [path.join(root, p, target, 'session.jsonl')]).filter((f) => existsSync(f));
  assert.equal(logs.length, 1);
  const recall = readFileSync(logs[0], 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l))
    .find((e) => e.data?.source?.kind === 'session-reference');
  assert.ok(recall, 'a recall message');
  assert.equal(recall.data.source.form, 'recall');
  assert.equal(recall.data.source.references[0].anchor, 1);
  assert.equal(typeof recall.data.source.references[0].anchorSeq, 'number');

  const check = await checkRoot(root, '--strict', '--copy', '--expect', '2');
  assert.equal(check.code, 0, `the harness rejects the root:\n${check.out}${check.err}`);
  const lines = check.out.split('\n').filter((l) => l).map((l) => JSON.parse(l));
  assert.ok(lines.some((l) => l.id === target && l.ok === true), check.out);
});
