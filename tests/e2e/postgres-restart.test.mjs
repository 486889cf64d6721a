// PostgreSQL itself stopped and started again mid-turn (issue 17, Faults), through the official ACP
// SDK. The suite's shared cluster serves other tests at the same time, so this file starts a
// cluster of its own (lib/postgres.mjs privateCluster) and stops it with a fast shutdown, as an
// administrator's restart does. The model is the loopback fake provider, which holds the second
// turn's stream open until PostgreSQL is down.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { INIT_PARAMS, startSdkAgent, acp, until, waitNoting, framesOf } from './lib/agent.mjs';
import { answerOf, prompt, text, updatesOf } from './lib/refs.mjs';
import { answer, chunkEvent, providerArgs, startFakeProvider, startSse, usageEvent } from './lib/fake-provider.mjs';
import { freshStore, privateCluster, runBin, storedEvents, turnStarted } from './lib/postgres.mjs';

const M = acp.methods.agent;

const cluster = privateCluster();
after(() => cluster.remove());

const PROJECT = mkdtempSync(path.join(tmpdir(), 'dsh-acp-pgr-project-'));
after(() => rmSync(PROJECT, { recursive: true, force: true }));

// A call that never answers is the failure looked for: it ends the test at its CTest timeout, and
// the note waitNoting() writes meanwhile names the call.
/** `promise`'s outcome: {value} or {error}. */
function settled(promise, what = 'an answer') {
  return waitNoting(promise.then((value) => ({ value }), (error) => ({ error })), what);
}

/** Asserts `outcome` ({value}|{error}) is a JSON-RPC internal error whose message names the store. */
function assertStoreError(outcome, storeUrl, what) {
  assert.ok(outcome.error, `${what}: an error expected, got ${JSON.stringify(outcome.value)}`);
  const err = outcome.error;
  const said = `${err.message} ${JSON.stringify(err.data ?? null)}`;
  assert.equal(err.code, -32603, `${what}: ${said}`);
  assert.ok(said.includes(storeUrl), `${what}: the error names the store ${storeUrl}: ${said}`);
  return said;
}

/** A model answer that streams `first`, then waits for release() before it finishes with `rest`. */
function heldAnswer(first, rest) {
  let release;
  const released = new Promise((r) => { release = r; });
  let streaming;
  const started = new Promise((r) => { streaming = r; });
  const handler = async (req, res) => {
    startSse(res);
    res.write(chunkEvent({ content: first }));
    streaming();
    await released;
    res.write(chunkEvent({ content: rest }));
    res.write(chunkEvent({}, 'stop'));
    res.write(usageEvent());
    res.end('data: [DONE]\n\n');
  };
  return { handler, started, release };
}

test('PostgreSQL stopped mid-turn: the turn fails naming the store, the server keeps serving, and after the restart the session goes on with nothing acknowledged lost', async (t) => {
  // The cluster is up again at the end whatever failed: registered first, so it runs before the
  // store is dropped.
  let halted = false;
  t.after(() => { if (halted) cluster.resume(); });
  const store = freshStore(t, ['alice']);
  const url = store.url('alice');
  const model = await startFakeProvider(t);

  const { agent, ctx } = startSdkAgent(t, { args: [...providerArgs(model.url), '--store', url] });
  await ctx.request(M.initialize, INIT_PARAMS);
  const sid = (await ctx.request(M.session.new, { cwd: PROJECT, mcpServers: [] })).sessionId;

  // 1. An acknowledged turn.
  model.queue(answer({ content: ['the first ', 'answer'] }));
  const first = await prompt({ agent, ctx }, sid, 'first: remember the invoice number 4711');
  assert.equal(first.response.stopReason, 'end_turn');
  assert.equal(first.answer, 'the first answer');
  const acknowledged = storedEvents(store.db, sid);

  // 2. A turn held mid-stream while PostgreSQL stops (fast shutdown: its connections are ended).
  const held = heldAnswer('partial ', 'rest of the answer');
  model.queue(held.handler);
  const from = agent.sdkUpdates.length;
  const interrupted = settled(ctx.request(M.session.prompt, { sessionId: sid, prompt: text('second: a long answer please') }),
    'the interrupted prompt');
  await held.started;
  await turnStarted(store.db, sid, 2);
  await until(() => answerOf(updatesOf(agent, sid, from)) === 'partial ', 'the partial answer reaches the client', framesOf(agent));
  cluster.halt();
  halted = true;
  held.release();
  const said = assertStoreError(await interrupted, url, 'the interrupted prompt');
  assert.match(said, /connection lost/i, `says what happened: ${said}`);

  // 3. While PostgreSQL is down the server keeps answering, each call with an error naming the
  // store (a prompt in the same session, and session/new too), and no model call is made.
  for (const [what, call] of [
    ['session/list', () => ctx.request(M.session.list, {})],
    ['a prompt', () => ctx.request(M.session.prompt, { sessionId: sid, prompt: text('while down') })],
    ['session/new', () => ctx.request(M.session.new, { cwd: PROJECT, mcpServers: [] })],
  ]) {
    const down = assertStoreError(await settled(call(), what), url, `${what} while PostgreSQL is down`);
    assert.match(down, /connect/i, `${what}: says the store cannot be reached: ${down}`);
  }
  assert.equal(model.requests.length, 2, 'no model call for a prompt the store could not take');

  // 4. PostgreSQL back: the very next prompt in the same session works (no retry by the client).
  cluster.resume();
  halted = false;
  model.queue(answer({ content: ['back ', 'again'] }));
  const third = await prompt({ agent, ctx }, sid, 'third: after the restart');
  assert.equal(third.response.stopReason, 'end_turn');
  assert.equal(third.answer, 'back again');
  assert.ok((await ctx.request(M.session.list, {})).sessions.some((s) => s.sessionId === sid), 'listed again');
  await agent.finish();

  // 5. Nothing acknowledged was lost: the first turn's rows as they were, seqs contiguous, the
  // interrupted turn closed (as interrupted) before the next one started.
  const events = storedEvents(store.db, sid);
  assert.deepEqual(events.slice(0, acknowledged.length), acknowledged, 'the acknowledged turn unchanged');
  assert.deepEqual(events.map((e) => e.seq), events.map((_, i) => i), 'seqs contiguous');
  const turns = [];
  for (const e of events) {
    if (e.type === 'turn/start') turns.push({ ended: null });
    else if (e.type === 'turn/end') turns.at(-1).ended = e.line;
  }
  assert.equal(turns.length, 3, `three turns: ${events.map((e) => e.type)}`);
  assert.ok(turns.every((x) => x !== null && x.ended), 'every turn closed before the next started');
  assert.match(turns[1].ended, /interrupted/, `the interrupted turn: ${turns[1].ended}`);
  assert.doesNotMatch(turns[0].ended + turns[2].ended, /interrupted/);

  // A fresh process replays it: the first turn complete, the interrupted prompt, the last turn.
  const { agent: other, ctx: otherCtx } = startSdkAgent(t, { args: [...providerArgs(model.url), '--store', url] });
  await otherCtx.request(M.initialize, INIT_PARAMS);
  await otherCtx.request(M.session.load, { sessionId: sid, cwd: PROJECT, mcpServers: [] });
  const replay = updatesOf(other, sid);
  const users = replay.filter((u) => u.sessionUpdate === 'user_message_chunk').map((u) => u.content?.text ?? '');
  assert.deepEqual(users, ['first: remember the invoice number 4711', 'second: a long answer please', 'third: after the restart'],
    'the user messages replayed');
  const replayed = answerOf(replay);
  assert.ok(replayed.startsWith('the first answer'), `the acknowledged answer replayed: ${replayed}`);
  assert.ok(replayed.endsWith('back again'), `the answer after the restart replayed: ${replayed}`);
  assert.ok(!replayed.includes('rest of the answer'), 'nothing the store did not take');
  await other.finish();

  const verify = runBin(['store', 'verify', store.admin]);
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
});
