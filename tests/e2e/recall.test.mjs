// Recall by content (docs/recall.md): the agent finds an earlier session by what was said in it,
// references it through the recall tool, and the client sees the reference card, live and after a
// reload in another process; people find sessions by content through /ref, the candidates
// extension and session/list. The model here is a scripted OpenAI-compatible server on loopback
// that acts as a model would: it reads the search results it is sent and picks the session.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { INIT_PARAMS, startSdkAgent, acp } from './lib/agent.mjs';
import { startFakeProvider, answer, providerArgs, startSse, chunkEvent, logEvents } from './lib/fake-provider.mjs';
import { snapshotData } from './lib/refs.mjs';

const M = acp.methods.agent;
const text = (s) => [{ type: 'text', text: s }];
const updatesOf = (agent, sessionId, kind) =>
  agent.sdkUpdatesFor(sessionId).map((u) => u.params.update).filter((u) => u.sessionUpdate === kind);
const toolNames = (request) => (request.body.tools ?? []).map((tool) => tool.function.name);

/** A streamed answer that calls `recall` with `args` (a function of the request, or an object). */
function callRecall(args, id = 'call_recall') {
  return async (req, res, record) => {
    const a = typeof args === 'function' ? args(record) : args;
    startSse(res);
    res.write(chunkEvent({ tool_calls: [{ index: 0, id, type: 'function', function: { name: 'recall', arguments: JSON.stringify(a) } }] }));
    res.write(chunkEvent({}, 'tool_calls'));
    res.end('data: [DONE]\n\n');
  };
}

const lastToolMessage = (record) => record.body.messages.filter((m) => m.role === 'tool').at(-1).content;

async function agentWith(t, server, storeArgs = []) {
  const { agent, ctx } = startSdkAgent(t, { args: [...providerArgs(server.url), ...storeArgs] });
  await ctx.request(M.initialize, INIT_PARAMS);
  return { agent, ctx };
}

async function sessionSaying(ctx, agent, words) {
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  const r = await ctx.request(M.session.prompt, { sessionId, prompt: text(words) });
  assert.equal(r.stopReason, 'end_turn');
  return sessionId;
}

test('the agent finds a session by its content, references it, and the card shows live and on replay', async (t) => {
  const server = await startFakeProvider(t);
  server.queue(answer({ content: ['Noted: three attempts, exponential backoff.'] }), answer({ content: ['Teal it is.'] }));
  const { agent, ctx } = await agentWith(t, server);
  const retry = await sessionSaying(ctx, agent, 'For the upload client we settled the retry policy: 3 attempts with exponential backoff starting at 200 ms.');
  const logo = await sessionSaying(ctx, agent, 'The logo colour is teal; the banner stays grey.');

  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  let found;
  server.queue(
    callRecall({ query: 'what did we decide about the retry policy' }),
    callRecall((record) => {
      found = lastToolMessage(record);
      const id = /id ("[^"]+")/.exec(found)?.[1];
      const seq = Number(/matched at seq (\d+)/.exec(found)?.[1]);
      return { sessions: [{ sessionId: JSON.parse(id), seq }] };
    }, 'call_ref'),
    answer({ content: ['We decided on 3 attempts with exponential backoff.'] }),
  );
  const r = await ctx.request(M.session.prompt, { sessionId, prompt: text('What did we decide about the retry policy last week?') });
  assert.equal(r.stopReason, 'end_turn');

  const [first, second, third] = server.requests.slice(-3);
  assert.ok(toolNames(first).includes('recall'), `recall offered: ${toolNames(first)}`);
  // The search ranked the retry session first, with the passage that matched.
  assert.ok(found.startsWith('1 session matches') || found.startsWith('2 sessions match'), found);
  assert.ok(found.indexOf(JSON.stringify(retry)) >= 0 && found.indexOf(JSON.stringify(retry)) < (found.indexOf(JSON.stringify(logo)) >>> 0), found);
  assert.ok(found.includes('retry policy'), found);
  assert.ok(!found.includes(JSON.stringify(sessionId)), 'the asking session is never a result');
  // The reference reached the model as a person's mention does: a snapshot message after the results.
  const messages = third.body.messages;
  const toolAt = messages.findLastIndex((m) => m.role === 'tool');
  const snapshot = messages[toolAt + 1];
  assert.equal(snapshot.role, 'user');
  const data = snapshotData(snapshot.content);
  assert.equal(data[0].sessionId, retry);
  assert.ok(JSON.stringify(data).includes('3 attempts with exponential backoff'));
  assert.ok(JSON.parse(JSON.stringify(second.body.messages)).some((m) => m.role === 'tool'));

  // Live: a reference card (completed read card) for the snapshot.
  const cards = updatesOf(agent, sessionId, 'tool_call').filter((u) => u.toolCallId.startsWith('dsh-ref-'));
  assert.equal(cards.length, 1, 'one reference card');
  assert.equal(cards[0].status, 'completed');
  assert.deepEqual(cards[0].rawInput.references.map((x) => x.sessionId), [retry]);

  // The log holds it with its provenance, after the recall's result.
  const events = logEvents(agent.storeDir, sessionId);
  const refAt = events.findIndex((e) => e.type === 'user/message' && e.data.source?.kind === 'session-reference');
  assert.ok(refAt > 0);
  assert.equal(events[refAt - 1].type, 'tool/result');
  assert.equal(events[refAt].data.source.references[0].sessionId, retry);
  // Centred on the place the search matched (the anchor a search hit names).
  const matchedSeq = Number(/matched at seq (\d+)/.exec(found)[1]);
  assert.equal(events[refAt].data.source.references[0].anchor, matchedSeq);
  assert.equal(data[0].anchorSeq, matchedSeq);
  assert.equal(`dsh-ref-${events[refAt].seq}`, cards[0].toolCallId);

  // Another process replays the same card where it stood: after the recall call's result.
  const again = startSdkAgent(t, { args: ['--store', agent.storeDir] });
  await again.ctx.request(M.initialize, INIT_PARAMS);
  await again.ctx.request(M.session.load, { sessionId, cwd: agent.home, mcpServers: [] });
  const replayed = again.agent.sdkUpdatesFor(sessionId).map((u) => u.params.update);
  const cardAt = replayed.findIndex((u) => u.sessionUpdate === 'tool_call' && u.toolCallId === cards[0].toolCallId);
  assert.ok(cardAt > 0, 'the card is replayed');
  assert.deepEqual(replayed[cardAt].rawInput, cards[0].rawInput);
  const refResult = replayed.findIndex((u) => u.sessionUpdate === 'tool_call_update' && u.toolCallId === 'call_ref' && u.status === 'completed');
  assert.ok(refResult >= 0 && refResult < cardAt, 'after the recall call that made it');
});

test('recall is offered only when another session exists, and checks its arguments', async (t) => {
  const server = await startFakeProvider(t);
  const { agent, ctx } = await agentWith(t, server);
  server.queue(answer({ content: ['first'] }));
  await sessionSaying(ctx, agent, 'the only session');
  assert.ok(!toolNames(server.requests[0]).includes('recall'), 'no other session: not offered');

  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  server.queue(callRecall({ query: 'x', sessions: ['y'] }), callRecall({ sessions: ['no-such-session'] }, 'call_2'), answer({ content: ['done'] }));
  await ctx.request(M.session.prompt, { sessionId, prompt: text('go') });
  const [, second, third] = server.requests.slice(-3);
  assert.ok(toolNames(second).includes('recall'));
  assert.match(lastToolMessage(second), /either `query`.*or `sessions`/);
  assert.match(lastToolMessage(third), /^Error: recall: .*no-such-session does not exist/);
  assert.ok(!logEvents(agent.storeDir, sessionId).some((e) => e.data?.source?.kind === 'session-reference'), 'nothing referenced');
});

test('people find sessions by content: /ref, the candidates extension with matchContent, and session/list _meta', async (t) => {
  const server = await startFakeProvider(t);
  server.queue(answer({ content: ['ok'] }), answer({ content: ['ok'] }));
  const { agent, ctx } = await agentWith(t, server);
  const pg = await sessionSaying(ctx, agent, 'Migrating the billing tables to PostgreSQL partitions next sprint.');
  await sessionSaying(ctx, agent, 'Unrelated chat about lunch.');
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });

  const r = await ctx.request('_dsh/sessionReference/candidates', { sessionId, query: 'billing partitions', matchContent: true });
  assert.equal(r.candidates.length, 1, JSON.stringify(r));
  assert.equal(r.candidates[0].sessionId, pg);
  assert.equal(r.candidates[0].match.kind, 'user');
  assert.ok(r.candidates[0].match.snippet.includes('billing'));
  assert.ok(Number.isInteger(r.candidates[0].match.seq));
  const idOnly = await ctx.request('_dsh/sessionReference/candidates', { sessionId, query: 'billing partitions' });
  assert.equal(idOnly.candidates.length, 0, 'without matchContent the query matches ids and cwds only');

  const listed = await ctx.request(M.session.list, { _meta: { 'dsh-acp/query': 'postgresql billing' } });
  assert.deepEqual(listed.sessions.map((s) => s.sessionId), [pg]);
  assert.ok(listed.sessions[0]._meta['dsh-acp/match'].snippet.includes('PostgreSQL'));
  await assert.rejects(ctx.request(M.session.list, { _meta: { 'dsh-acp/query': 7 } }), (e) => e.code === -32602);
  // At most 1024 bytes, and one page: the bound and the refused cursor docs/recall.md states.
  const badQuery = (e, path) => e.code === -32602 && e.data?.path === path;
  await assert.rejects(ctx.request(M.session.list, { _meta: { 'dsh-acp/query': 'é'.repeat(512) + 'x' } }),
    (e) => badQuery(e, '/_meta/dsh-acp/query'));
  await ctx.request(M.session.list, { _meta: { 'dsh-acp/query': 'é'.repeat(512) } });
  await assert.rejects(ctx.request(M.session.list, { cursor: 'x', _meta: { 'dsh-acp/query': 'billing' } }),
    (e) => badQuery(e, '/cursor'));

  await ctx.request(M.session.prompt, { sessionId, prompt: text('/ref billing partitions') });
  const said = updatesOf(agent, sessionId, 'agent_message_chunk').map((u) => u.content.text).join('');
  assert.match(said, /conversation matches "billing partitions"/);
  assert.match(said, /matched at seq \d+ \(user\): .*billing/);
  // Its mention points at the match, so a pasted mention centres the snapshot there.
  const seq = /matched at seq (\d+)/.exec(said)[1];
  assert.ok(said.includes(`#seq=${seq})`), said);
  assert.ok(r.candidates[0].mention.endsWith(`#seq=${r.candidates[0].match.seq})`), r.candidates[0].mention);
});
