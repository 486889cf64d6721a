// session/fork of another person's shared session in a PostgreSQL store (issue 28): the fork is the
// caller's own and writable, its log names the source's store and owner, the source's "always"
// choices and mode do not come with it (they were someone else's), and the source is never modified.
// A source the caller may not see is not found, as session/load says. Two server processes, one per
// person, on the suite's cluster (lib/postgres.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { acp } from './lib/agent.mjs';
import { prompt, rejectsWith, echoLines } from './lib/refs.mjs';
import { listed, listedEventually, load, newSession, person } from './lib/pgpeople.mjs';
import { freshStore, psql, storedEvents } from './lib/postgres.mjs';

const M = acp.methods.agent;
const lineOf = (e) => (typeof e.line === 'string' ? JSON.parse(e.line) : e.line);

test('a fork of someone else\'s shared session is one\'s own, names its source, and leaves it as it was', async (t) => {
  const store = freshStore(t);
  const alice = await person(t, store.url('alice'));
  const bob = await person(t, store.url('bob'));

  const source = await newSession(alice);
  await alice.ctx.request(M.session.setMode, { sessionId: source, modeId: 'auto' });
  await prompt(alice, source, 'alpha question');
  const cwd = psql(store.db, `SELECT cwd FROM dsh_acp.sessions WHERE id = '${source}'`);

  // Unshared: bob's fork is refused exactly as his load is.
  const hidden = await rejectsWith(bob.ctx.request('session/fork', { sessionId: source, cwd, mcpServers: [] }), -32002);
  const hiddenLoad = await rejectsWith(load(bob, source), -32002);
  assert.deepEqual([hidden.message, hidden.data], [hiddenLoad.message, hiddenLoad.data]);

  assert.equal((await prompt(alice, source, '/share')).response.stopReason, 'end_turn');
  assert.equal((await listedEventually(bob, source))._meta['dsh-acp/readOnly'], true);
  const before = storedEvents(store.db, source);

  const forked = await bob.ctx.request('session/fork', { sessionId: source, cwd, mcpServers: [] });
  // Alice's mode is hers: bob's fork starts in the default one.
  assert.equal(forked.modes.currentModeId, 'ask');
  const { answer } = await prompt(bob, forked.sessionId, 'bob continues');
  const users = echoLines(answer).filter((l) => / user /.test(l)).map((l) => l.replace(/^.*bytes: /, ''));
  assert.deepEqual(users, ['alpha question', 'bob continues']);
  const mine = (await listed(bob)).find((s) => s.sessionId === forked.sessionId);
  assert.ok(mine && !mine._meta?.['dsh-acp/readOnly'], 'bob\'s own, writable');
  assert.deepEqual(storedEvents(store.db, source), before, 'the source is never modified');

  // Provenance: the header's parentSession and seedLength, and the store and owner in the fork event.
  const row = psql(store.db, `SELECT owner || ' ' || parent_session || ' ' || seed_length FROM dsh_acp.sessions WHERE id = '${forked.sessionId}'`);
  const [owner, parent, seed] = row.split(' ');
  assert.equal(owner, store.roles.bob);
  assert.equal(parent, source);
  const events = storedEvents(store.db, forked.sessionId).map(lineOf);
  const mark = events[Number(seed)];
  assert.equal(mark.type, 'dsh-acp/fork');
  assert.equal(mark.ignorable, true);
  assert.equal(mark.data.source.sessionId, source);
  assert.equal(mark.data.source.owner, store.roles.alice);
  assert.match(mark.data.source.store, /^postgres/);
  assert.ok(!mark.data.source.store.includes('password'), 'the store is named without credentials');
  assert.equal(mark.data.inheritsChoices, false);

  // Alice's own fork of the same session keeps her mode.
  const hers = await alice.ctx.request('session/fork', { sessionId: source, cwd, mcpServers: [] });
  assert.equal(hers.modes.currentModeId, 'auto');
  // bob's fork loads in a new process of his, in the mode it started in.
  await bob.agent.finish();
  const bob2 = await person(t, store.url('bob'));
  const loaded = await load(bob2, forked.sessionId);
  assert.equal(loaded.modes.currentModeId, 'ask');
  await bob2.agent.finish();
  await alice.agent.finish();
});
