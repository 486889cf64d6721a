// The ask_user tool (docs/tools.md): offered only to a client that renders elicitation forms, asked
// through elicitation/create on the session and the asking tool call, the user's answer (or refusal)
// read back as the call's result, withdrawn with the turn, and shown again on session/load.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { INIT_PARAMS, startSdkAgent, acp, lastUserLine, waitNoting } from './lib/agent.mjs';
import { startFakeProvider, answer, providerArgs } from './lib/fake-provider.mjs';
import { readLog, logPath } from './lib/store.mjs';

const M = acp.methods.agent;
const ELICITING = { ...INIT_PARAMS, clientCapabilities: { ...INIT_PARAMS.clientCapabilities, elicitation: { form: {} } } };
const NO_KEYS = { OPENAI_API_KEY: '', DEEPSEEK_API_KEY: '' };

const ask = (question, choices) =>
  `[[echo:tool=ask_user ${JSON.stringify(choices ? { question, choices } : { question })}]]`;
const updatesOf = (agent, sessionId, kind) =>
  agent.sdkUpdatesFor(sessionId).map((u) => u.params.update).filter((u) => u.sessionUpdate === kind);
const answerText = (agent, sessionId) => updatesOf(agent, sessionId, 'agent_message_chunk').map((u) => u.content.text).join('');

async function session(t, { init = ELICITING, client = {}, args = [] } = {}) {
  const { agent, ctx } = startSdkAgent(t, { args, client });
  await ctx.request(M.initialize, init);
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  return { agent, ctx, sessionId };
}

const toolNames = (request) => (request.body.tools ?? []).map((tool) => tool.function.name);

test('ask_user is offered to the model only when the client renders elicitation forms', async (t) => {
  const server = await startFakeProvider(t);
  server.queue(answer({ content: ['a'] }), answer({ content: ['b'] }));
  for (const init of [ELICITING, INIT_PARAMS]) {
    const { ctx, sessionId } = await session(t, { init, args: providerArgs(server.url) });
    await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'hello' }] });
  }
  assert.equal(server.requests.length, 2);
  const [withForms, without] = server.requests.map(toolNames);
  assert.ok(withForms.includes('ask_user'), `offered: ${withForms}`);
  assert.ok(withForms.includes('read'), 'beside the built-in tools');
  assert.ok(!without.includes('ask_user'), `not offered: ${without}`);
  const definition = server.requests[0].body.tools.find((tool) => tool.function.name === 'ask_user').function;
  assert.deepEqual(definition.parameters.required, ['question']);
  assert.deepEqual(Object.keys(definition.parameters.properties), ['question', 'choices']);
});

test('a choice goes out as elicitation/create; the answer is the call result, on the card, in the log and on replay', async (t) => {
  const asked = [];
  const client = {
    createElicitation: ({ params }) => { asked.push(params); return { action: 'accept', content: { answer: 'blue' } }; },
  };
  const { agent, ctx, sessionId } = await session(t, { client });
  const r = await ctx.request(M.session.prompt, {
    sessionId, prompt: [{ type: 'text', text: `pick one ${ask('Which colour?', ['red', 'blue'])}` }],
  });
  assert.equal(r.stopReason, 'end_turn');
  assert.equal(asked.length, 1);
  const [q] = asked;
  const card = updatesOf(agent, sessionId, 'tool_call')[0];
  assert.ok(card, 'a tool_call card');
  assert.equal(q.sessionId, sessionId);
  assert.equal(q.toolCallId, card.toolCallId, 'scoped to the asking call');
  assert.equal(q.mode, 'form');
  assert.equal(q.message, 'Which colour?');
  assert.deepEqual(q.requestedSchema.required, ['answer']);
  assert.deepEqual(q.requestedSchema.properties.answer.enum, ['red', 'blue']);
  assert.equal(q.requestedSchema.properties.answer.type, 'string');
  assert.equal(card.title, 'Ask: Which colour?');
  const done = updatesOf(agent, sessionId, 'tool_call_update').find((u) => u.status === 'completed');
  assert.ok(done, 'the card completes');
  assert.ok(JSON.stringify(done.content).includes('The user answered: blue'));
  // The model's next request carries the answer as the tool message.
  assert.ok(answerText(agent, sessionId).includes(`] tool ${Buffer.byteLength("The user answered: blue")} bytes: The user answered: blue`));

  const result = readLog(logPath(agent.storeDir, sessionId)).find((e) => e.type === 'tool/result');
  assert.equal(JSON.stringify(result.data.content).includes('The user answered: blue'), true);

  // Another process replays the same card.
  const again = startSdkAgent(t, { args: ['--store', agent.storeDir] });
  await again.ctx.request(M.initialize, INIT_PARAMS);
  await again.ctx.request(M.session.load, { sessionId, cwd: agent.home, mcpServers: [] });
  const replayed = updatesOf(again.agent, sessionId, 'tool_call')[0];
  assert.equal(replayed.title, 'Ask: Which colour?');
  const replayedDone = updatesOf(again.agent, sessionId, 'tool_call_update').find((u) => u.status === 'completed');
  assert.ok(JSON.stringify(replayedDone.content).includes('The user answered: blue'));
});

test('a free-text question has no choices; decline and dismissal reach the model as such', async (t) => {
  const asked = [];
  const replies = [{ action: 'decline' }, { action: 'cancel' }, { action: 'accept', content: { answer: 'forty-two' } }];
  const client = { createElicitation: ({ params }) => { asked.push(params); return replies.shift(); } };
  const { agent, ctx, sessionId } = await session(t, { client });
  const expected = ['The user declined to answer.', 'The user closed the question without answering.', 'The user answered: forty-two'];
  for (const want of expected) {
    const before = answerText(agent, sessionId).length;
    await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: ask('What is the answer?') }] });
    const text = answerText(agent, sessionId).slice(before);
    assert.ok(text.includes(`tool ${Buffer.byteLength(want)} bytes: ${want.slice(0, 48)}`), text);
  }
  assert.equal(asked.length, 3);
  assert.equal(asked[0].requestedSchema.properties.answer.enum, undefined, 'free text');
});

test('without elicitation the model calling ask_user gets an error result and the client is asked nothing', async (t) => {
  let asked = 0;
  const { agent, ctx, sessionId } = await session(t, {
    init: INIT_PARAMS, client: { createElicitation: () => { asked += 1; return { action: 'decline' }; } },
  });
  await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: ask('Anyone there?') }] });
  assert.equal(asked, 0);
  assert.match(answerText(agent, sessionId), /tool \d+ bytes: Error: there is no tool named "ask_user"/);
});

test('bad arguments are the model\'s error, not a question', async (t) => {
  let asked = 0;
  const { agent, ctx, sessionId } = await session(t, { client: { createElicitation: () => { asked += 1; return { action: 'decline' }; } } });
  const tooMany = Array.from({ length: 21 }, (_, i) => `c${i}`);
  for (const [args, error] of [
    [{ question: '' }, '`question` must be a non-empty string'],
    [{ question: 'q', choices: tooMany }, 'at most 20 choices'],
    [{ question: 'q', choices: ['a', 'a'] }, 'is given twice'],
    [{ question: 'x'.repeat(4097) }, 'longer than 4096 bytes'],
  ]) {
    const before = answerText(agent, sessionId).length;
    await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: `[[echo:tool=ask_user ${JSON.stringify(args)}]]` }] });
    const results = readLog(logPath(agent.storeDir, sessionId)).filter((e) => e.type === 'tool/result');
    const last = JSON.stringify(results.at(-1).data);
    assert.ok(last.includes(error), `${error} in ${last}`);
    assert.ok(answerText(agent, sessionId).length > before);
  }
  assert.equal(asked, 0);
});

test('a cancelled turn withdraws the question', async (t) => {
  let withdrawn;
  const aborted = new Promise((resolve) => { withdrawn = resolve; });
  let arrived;
  const asking = new Promise((resolve) => { arrived = resolve; });
  const client = {
    createElicitation: ({ signal }) => new Promise((resolve) => {
      arrived();
      signal.addEventListener('abort', () => { withdrawn(); resolve({ action: 'cancel' }); });
    }),
  };
  const { agent, ctx, sessionId } = await session(t, { client });
  const running = ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: ask('Still there?') }] });
  await waitNoting(asking, 'the question');
  await ctx.notify(M.session.cancel, { sessionId });
  assert.equal((await running).stopReason, 'cancelled');
  await waitNoting(aborted, 'the withdrawal');
  const result = readLog(logPath(agent.storeDir, sessionId)).find((e) => e.type === 'tool/result');
  assert.equal(result.data.error?.code, 'TOOL_ABORTED');
});
