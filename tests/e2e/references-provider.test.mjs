// Session references through a real provider (the openai provider against the loopback fake,
// docs/decisions.md#references-on-the-wire): the request carries the snapshot and the direct message as two
// consecutive user messages; a provider that refuses consecutive user messages (HTTP 400 naming them) gets
// the same request once more with them joined by a blank line, and is remembered as needing that; the log
// keeps the two messages apart either way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { INIT_PARAMS, startSdkAgent } from './lib/agent.mjs';
import { startFakeProvider, providerArgs, answer, httpError, logEvents } from './lib/fake-provider.mjs';
import { M, text, uriOf, PROMPT_PREFIX, updatesOf, answerOf } from './lib/refs.mjs';

const NO_KEYS = { OPENAI_API_KEY: '', DEEPSEEK_API_KEY: '' };
const contentText = (m) => (typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join(''));

test('the provider request has the snapshot then the direct message; a refusal of consecutive user messages is retried joined, once, and remembered', async (t) => {
  const server = await startFakeProvider(t);
  const { agent, ctx } = startSdkAgent(t, { args: providerArgs(server.url), env: NO_KEYS });
  await ctx.request(M.initialize, INIT_PARAMS);
  const newSession = async () => (await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] })).sessionId;
  const ask = async (sid, s) => {
    const from = agent.sdkUpdates.length;
    const r = await ctx.request(M.session.prompt, { sessionId: sid, prompt: text(s) });
    return { ...r, updates: updatesOf(agent, sid, from) };
  };

  const source = await newSession();
  server.queue(answer({ content: ['source ', 'answer'] }));
  await ask(source, 'source question');
  const target = await newSession();

  // 1. Accepted as is: system, snapshot, direct message.
  server.queue(answer({ content: ['first ', 'reply'] }));
  let n = server.requests.length;
  const first = await ask(target, `use @[Src](${uriOf(source)})`);
  assert.equal(first.stopReason, 'end_turn');
  assert.equal(answerOf(first.updates), 'first reply');
  assert.equal(server.requests.length, n + 1);
  const msgs1 = server.requests[n].body.messages;
  assert.deepEqual(msgs1.map((m) => m.role), ['system', 'user', 'user']);
  assert.ok(contentText(msgs1[1]).startsWith(PROMPT_PREFIX));
  assert.equal(contentText(msgs1[2]), 'use @Src');
  const snapshot1 = contentText(msgs1[1]);
  assert.ok(snapshot1.includes('source question') && snapshot1.includes('source answer'));

  // 2. Refused for consecutive user messages: retried once with each run of user messages joined.
  server.queue(httpError(400, 'deepseek-reasoner does not support successive user or assistant messages'),
    answer({ content: ['second ', 'reply'] }));
  n = server.requests.length;
  const second = await ask(target, `again ${uriOf(source)}`);
  assert.equal(second.stopReason, 'end_turn');
  assert.equal(answerOf(second.updates), 'second reply');
  assert.equal(server.requests.length, n + 2, 'one retry');
  const [refused, retried] = server.requests.slice(n).map((r) => r.body.messages);
  assert.deepEqual(refused.map((m) => m.role), ['system', 'user', 'user', 'assistant', 'user', 'user']);
  assert.deepEqual(retried.map((m) => m.role), ['system', 'user', 'assistant', 'user']);
  assert.equal(contentText(retried[1]), `${snapshot1}\n\nuse @Src`);
  assert.equal(contentText(retried[3]), `${contentText(refused[4])}\n\nagain @${source}`);
  assert.ok(second.updates.some((u) => u.sessionUpdate === 'tool_call'), 'the card is still sent');

  // 3. Remembered for the rest of the process: the next request is joined from the start.
  server.queue(answer({ content: ['third'] }));
  n = server.requests.length;
  await ask(target, 'plain');
  assert.equal(server.requests.length, n + 1);
  assert.deepEqual(server.requests[n].body.messages.map((m) => m.role), ['system', 'user', 'assistant', 'user', 'assistant', 'user']);

  // The log never changes: each snapshot and its direct message stay two user/message events.
  const users = logEvents(agent.storeDir, target).filter((e) => e.type === 'user/message');
  assert.deepEqual(users.map((e) => e.data.source.kind), ['session-reference', 'user', 'session-reference', 'user', 'user']);
  assert.deepEqual(users.filter((e) => e.data.source.kind === 'user').map((e) => e.data.content[0].text),
    ['use @Src', `again @${source}`, 'plain']);
  await agent.finish();
});
