// Recall by content between two people on one PostgreSQL store (issue 29): a search answers only
// what the searching role may read. Bob's agent, his candidates and his session/list never find
// Alice's private session, whatever words it holds, and do once she shares it; her unsharing hides it
// again. Bob's model is a scripted server on loopback, so the recall results it reads are checked
// whole. Two server processes on the suite's cluster (lib/postgres.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { acp } from './lib/agent.mjs';
import { prompt } from './lib/refs.mjs';
import { listedEventually, newSession, person } from './lib/pgpeople.mjs';
import { freshStore } from './lib/postgres.mjs';
import { startFakeProvider, answer, providerArgs, startSse, chunkEvent } from './lib/fake-provider.mjs';

const M = acp.methods.agent;

function callRecall(args) {
  return async (req, res) => {
    startSse(res);
    res.write(chunkEvent({ tool_calls: [{ index: 0, id: 'call_r', type: 'function', function: { name: 'recall', arguments: JSON.stringify(args) } }] }));
    res.write(chunkEvent({}, 'tool_calls'));
    res.end('data: [DONE]\n\n');
  };
}
const toolText = (record) => record.body.messages.filter((m) => m.role === 'tool').at(-1).content;

test('nothing crosses row security: bob finds alice\'s session by content only while she shares it', async (t) => {
  const store = freshStore(t);
  const server = await startFakeProvider(t);
  const alice = await person(t, store.url('alice'));
  const bob = await person(t, store.url('bob'), providerArgs(server.url).filter((a, i, all) => a !== '--store-compression' && all[i - 1] !== '--store-compression'));

  const secret = await newSession(alice);
  await prompt(alice, secret, 'The zanzibar budget is 40000 for the quokka launch.');
  const mine = await newSession(bob);
  server.queue(answer({ content: ['ok'] }));
  await prompt(bob, mine, 'bob wonders about the zanzibar quokka plans');

  // Bob's own session is the only one with those words that he may read.
  const search = async () => {
    const asking = await newSession(bob);
    server.queue(callRecall({ query: 'zanzibar budget quokka' }), answer({ content: ['done'] }));
    await prompt(bob, asking, 'search');
    return toolText(server.requests.at(-1));
  };
  const hidden = await search();
  assert.ok(!hidden.includes(JSON.stringify(secret)), hidden);
  assert.ok(!hidden.includes('40000'), 'no snippet of her session');
  assert.ok(hidden.includes(JSON.stringify(mine)), hidden);
  const asking = await newSession(bob);
  const candidates = await bob.ctx.request('_dsh/sessionReference/candidates', { sessionId: asking, query: 'zanzibar budget', matchContent: true });
  assert.ok(!candidates.candidates.some((c) => c.sessionId === secret));
  const listedHidden = await bob.ctx.request(M.session.list, { _meta: { 'dsh-acp/query': 'zanzibar budget' } });
  assert.ok(!listedHidden.sessions.some((s) => s.sessionId === secret));
  // Referencing it by id is refused as a mention of it is: not found.
  server.queue(callRecall({ sessions: [secret] }), answer({ content: ['done'] }));
  await prompt(bob, asking, 'reference it');
  assert.match(toolText(server.requests.at(-1)), /^Error: recall: .*does not exist/);

  assert.equal((await prompt(alice, secret, '/share')).response.stopReason, 'end_turn');
  await listedEventually(bob, secret);
  const shared = await search();
  assert.ok(shared.includes(JSON.stringify(secret)), shared);
  assert.ok(shared.includes('40000'), 'her words, now that she shares them');
  const listedShared = await bob.ctx.request(M.session.list, { _meta: { 'dsh-acp/query': 'zanzibar budget' } });
  const row = listedShared.sessions.find((s) => s.sessionId === secret);
  assert.ok(row, 'listed by content now');
  assert.match(row._meta['dsh-acp/match'].snippet, /zanzibar budget/);
  assert.equal(row._meta['dsh-acp/readOnly'], true, 'hers: read-only to bob');

  assert.equal((await prompt(alice, secret, '/unshare')).response.stopReason, 'end_turn');
  await listedEventually(bob, secret, false);
  const again = await search();
  assert.ok(!again.includes(JSON.stringify(secret)), again);
});
