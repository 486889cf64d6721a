// Sessions in PostgreSQL (issue 17), through the official ACP SDK: two server processes connected
// as two people stand for two machines. Sharing and row-level security, references across people,
// one session written from two processes, a killed server mid-turn, a lost database connection
// mid-turn, and `store copy` round trips. One person's psql against another's, and store URLs with
// passwords: postgres-trust.test.mjs. The PostgreSQL is the suite's own (lib/postgres.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { INIT_PARAMS, startSdkAgent, acp } from './lib/agent.mjs';
import { listed, listedEventually, load, newSession, person } from './lib/pgpeople.mjs';
import { answerOf, prompt, rejectsWith, text, uriOf, updatesOf } from './lib/refs.mjs';
import { generationOf, logFiles } from './lib/store.mjs';
import { freshStore, psql, runBin, storedEvents, turnStarted } from './lib/postgres.mjs';

const M = acp.methods.agent;

/** session/delete's response as it is on the wire, without its id (the SDK would read -32002 as success). */
async function deleteOnTheWire(p, sessionId) {
  const from = p.agent.frames.length;
  await p.ctx.request(M.session.delete, { sessionId }).catch(() => {});
  const e = p.agent.frames.find((x) => x.index >= from && !Object.hasOwn(x.frame, 'method') && Object.hasOwn(x.frame, 'id'));
  assert.ok(e, 'the delete is answered');
  const { jsonrpc, id, ...rest } = e.frame;
  return rest;
}

/** The error of a prompt that references `id`, with the id blanked (to compare two outcomes). */
async function referenceError(p, sid, id) {
  const err = await rejectsWith(p.ctx.request(M.session.prompt, { sessionId: sid, prompt: text(`see ${uriOf(id)}`) }), -32602);
  return { code: err.code, data: JSON.stringify(err.data ?? null).replaceAll(id, 'ID'), message: err.message.replaceAll(id, 'ID') };
}

test('two people: unshared sessions are invisible, /share lets the other list, load and reference them read-only', async (t) => {
  const store = freshStore(t);
  const alice = await person(t, store.url('alice'));
  const bob = await person(t, store.url('bob'));

  const billing = await newSession(alice);
  const first = await prompt(alice, billing, 'billing: we decided to invoice monthly');
  assert.equal(first.response.stopReason, 'end_turn');

  // Bob cannot see it, and a reference to it reads exactly as one to a session that never existed.
  assert.ok(!(await listed(bob)).some((s) => s.sessionId === billing), 'not listed for bob');
  const bobs = await newSession(bob);
  const hidden = await referenceError(bob, bobs, billing);
  const missing = await referenceError(bob, bobs, '0b9f6c1e-0000-4000-8000-000000000000');
  assert.deepEqual(hidden, missing, 'no existence leak');
  assert.equal(storedEvents(store.db, bobs).length, 0, 'the failed prompts wrote nothing');
  // Deleting it answers {} exactly as deleting a session that never existed, and leaves it be.
  const stored = storedEvents(store.db, billing).length;
  const deleteHidden = await deleteOnTheWire(bob, billing);
  const deleteMissing = await deleteOnTheWire(bob, '0b9f6c1e-0000-4000-8000-000000000000');
  assert.deepEqual(deleteHidden, { result: {} });
  assert.deepEqual(deleteMissing, deleteHidden, 'no existence leak');
  assert.equal(storedEvents(store.db, billing).length, stored, 'alice\'s session untouched');
  assert.equal(psql(store.db, `SELECT count(*) FROM dsh_acp.sessions WHERE id = '${billing}'`), '1');

  // Alice shares it.
  const shared = await prompt(alice, billing, '/share');
  assert.equal(shared.response.stopReason, 'end_turn');
  assert.match(shared.answer, /shared/i);
  assert.equal(psql(store.db, `SELECT shared FROM dsh_acp.sessions WHERE id = '${billing}'`), 't');

  const row = await listedEventually(bob, billing);
  assert.ok(row, 'listed for bob once shared');
  assert.ok(JSON.stringify(row._meta ?? {}).includes(store.roles.alice), `the listing says whose it is: ${JSON.stringify(row._meta)}`);

  // Bob references it: the model gets alice's words in the snapshot.
  const ref = await prompt(bob, bobs, [{ type: 'text', text: 'what did we decide? ' }, { type: 'resource_link', uri: uriOf(billing), name: 'billing' }]);
  assert.equal(ref.response.stopReason, 'end_turn');
  assert.match(ref.answer, /## Referenced sessions/);
  const snapshot = storedEvents(store.db, bobs).find((e) => e.type === 'user/message' && e.line.includes('Referenced sessions'));
  assert.ok(snapshot, 'the snapshot is logged in bob\'s session');
  assert.match(snapshot.line, /invoice monthly/, 'with alice\'s words');

  // Bob loads it (replay) but cannot write in it.
  const from = bob.agent.sdkUpdates.length;
  await load(bob, billing);
  assert.match(JSON.stringify(updatesOf(bob.agent, billing, from)), /invoice monthly/);
  const before = storedEvents(store.db, billing).length;
  const ro = await rejectsWith(bob.ctx.request(M.session.prompt, { sessionId: billing, prompt: text('I disagree') }), -32602);
  assert.match(ro.message, new RegExp(store.roles.alice));
  assert.equal(storedEvents(store.db, billing).length, before, 'nothing written by bob');
  // Row security holds below the server too: bob's role cannot change alice's rows.
  assert.equal(psql(store.db, `SET ROLE ${store.roles.bob}; UPDATE dsh_acp.sessions SET title = 'x' WHERE id = '${billing}' RETURNING id`), '');

  // Unshared again: back to invisible, the same outcome as a missing session.
  const unshared = await prompt(alice, billing, '/unshare');
  assert.match(unshared.answer, /no longer shared/i);
  assert.deepEqual(await referenceError(bob, bobs, billing), missing);
  assert.ok(!(await listedEventually(bob, billing, false)));

  await alice.agent.finish();
  await bob.agent.finish();
});

test('one session from two processes: the second prompt gets SESSION_BUSY while the first holds it', async (t) => {
  const store = freshStore(t, ['alice']);
  const laptop = await person(t, store.url('alice'));
  const devbox = await person(t, store.url('alice'));
  const sid = await newSession(laptop);
  await prompt(laptop, sid, 'one');
  await load(devbox, sid);

  const long = laptop.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('slow [[echo:sleep=4000]]') });
  await turnStarted(store.db, sid, 2);
  const busy = await rejectsWith(devbox.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('me too') }), -32603, 'SESSION_BUSY');
  assert.match(busy.message, /busy/i);
  assert.equal((await long).stopReason, 'end_turn');

  // Once free, the other machine continues the same session.
  const next = await prompt(devbox, sid, 'continued on the devbox');
  assert.equal(next.response.stopReason, 'end_turn');
  const seqs = storedEvents(store.db, sid).map((e) => e.seq);
  assert.deepEqual(seqs, seqs.map((_, i) => i), 'seqs contiguous');
  assert.equal(storedEvents(store.db, sid).filter((e) => e.type === 'turn/start').length, 3);
  await laptop.agent.finish();
  await devbox.agent.finish();
});

test('kill -9 of the server mid-turn leaves no partial batch; the next process closes the turn and goes on', async (t) => {
  const store = freshStore(t, ['alice']);
  const first = await person(t, store.url('alice'), ['--echo-delay-ms', '30']);
  const sid = await newSession(first);
  await prompt(first, sid, 'before');
  first.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('a long answer [[echo:sleep=3000]] '.repeat(5)) }).catch(() => {});
  await turnStarted(store.db, sid, 2);
  first.agent.signal('SIGKILL');
  await first.agent.waitExit();

  const events = storedEvents(store.db, sid);
  assert.deepEqual(events.map((e) => e.seq), events.map((_, i) => i), 'whole batches only, seqs contiguous');
  for (const e of events) JSON.parse(e.line);

  const second = await person(t, store.url('alice'));
  await load(second, sid);
  const after = await prompt(second, sid, 'after');
  assert.equal(after.response.stopReason, 'end_turn');
  const types = storedEvents(store.db, sid).map((e) => e.type);
  assert.equal(types.filter((x) => x === 'turn/start').length, 3);
  assert.equal(types.filter((x) => x === 'turn/end').length, 3, 'the interrupted turn was closed by the next writer');
  await second.agent.finish();
});

test('a lost database connection mid-turn ends the turn with an error naming the store; the next prompt works', async (t) => {
  const store = freshStore(t, ['alice']);
  const alice = await person(t, store.url('alice'), ['--echo-delay-ms', '20']);
  const sid = await newSession(alice);
  await prompt(alice, sid, 'before');
  const failing = alice.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('stream this slowly '.repeat(40)) });
  await turnStarted(store.db, sid, 2);
  // With a timeout, pg_terminate_backend returns once each backend has ended, having told its client:
  // the pool then sees every killed connection as gone before it hands one out (without it, a
  // connection idle in the pool could be taken by the next prompt before its FATAL arrived).
  psql(store.db, `SELECT pg_terminate_backend(pid, 600000) FROM pg_stat_activity WHERE usename = '${store.roles.alice}'`);
  let outcome;
  try {
    outcome = await failing;
  } catch (err) {
    outcome = err;
  }
  if (outcome.code !== undefined) {
    assert.equal(outcome.code, -32603);
    const said = outcome.message + JSON.stringify(outcome.data ?? null);
    assert.match(said, /postgresql:\/\//, `the error names the store: ${said}`);
  } else {
    // The turn may have finished before the kill reached its connection: then it was whole.
    assert.equal(outcome.stopReason, 'end_turn');
  }
  const again = await prompt(alice, sid, 'after the reconnect');
  assert.equal(again.response.stopReason, 'end_turn');
  const events = storedEvents(store.db, sid);
  assert.deepEqual(events.map((e) => e.seq), events.map((_, i) => i));
  const ends = events.filter((e) => e.type === 'turn/end').length;
  assert.equal(ends, events.filter((e) => e.type === 'turn/start').length, 'every turn closed');
  await alice.agent.finish();
});

test('store copy: a JSONL root into PostgreSQL and back is byte-identical, and a second copy copies nothing', async (t) => {
  const store = freshStore(t, ['alice']);
  const home = mkdtempSync(path.join(tmpdir(), 'dsh-acp-pgcopy-'));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const root = path.join(home, 'a');
  const files = await (async () => {
    const { agent, ctx } = startSdkAgent(t, { args: ['--store', root, '--store-compression', 'none'] });
    await ctx.request(M.initialize, INIT_PARAMS);
    const p = { agent, ctx };
    for (let i = 0; i < 3; i++) {
      const sid = await newSession(p);
      await prompt(p, sid, `session ${i} says ${'ü'.repeat(i + 1)} \u2028 "quoted"`);
      await prompt(p, sid, '/title copied ' + i);
    }
    await agent.finish();
    return logFiles(root);
  })();
  assert.equal(files.length, 3);

  const into = runBin(['store', 'copy', root, store.url('alice')]);
  assert.equal(into.status, 0, into.stderr);
  assert.equal(Number(psql(store.db, 'SELECT count(*) FROM dsh_acp.sessions')), 3);
  const again = runBin(['store', 'copy', root, store.url('alice')]);
  assert.equal(again.status, 0, again.stderr);
  assert.equal(Number(psql(store.db, 'SELECT count(*) FROM dsh_acp.events')),
    files.reduce((n, f) => n + readFileSync(f, 'utf8').split('\n').filter(Boolean).length - 1, 0), 'no event copied twice');

  const back = path.join(home, 'b');
  // A new root's layout is the source store's; a database holds both shapes, so name the one these
  // sessions have (the suite's second pass writes 0.1 roots).
  const out = runBin(['store', 'copy', store.url('alice'), back, '--store-compression', 'none',
    '--store-generation', generationOf(root)]);
  assert.equal(out.status, 0, out.stderr);
  const copies = logFiles(back);
  assert.equal(copies.length, 3);
  const rel = (f, base) => path.relative(base, f);
  for (const f of files) {
    const twin = copies.find((c) => rel(c, back) === rel(f, root));
    assert.ok(twin, `copied back: ${rel(f, root)}`);
    assert.ok(readFileSync(f).equals(readFileSync(twin)), `byte-identical: ${rel(f, root)}`);
  }
  const verify = runBin(['store', 'verify', store.url('alice')]);
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
});

