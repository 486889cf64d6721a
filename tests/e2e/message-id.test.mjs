// messageId on every message chunk (issue 28): the chunks of one message share an id, a new message
// gets a new one, and session/load — in another process, or again in the same one — sends the same
// id for the same message as the live turn did (the ids derive from the log, not from memory).
// Through the official SDK (which validates every update), with the echo model and a loopback
// provider that streams reasoning, text and a tool call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { INIT_PARAMS, startSdkAgent, acp } from './lib/agent.mjs';
import { startFakeProvider, answer, providerArgs, startSse, chunkEvent, usageEvent } from './lib/fake-provider.mjs';

const M = acp.methods.agent;
const NO_KEYS = { OPENAI_API_KEY: '', DEEPSEEK_API_KEY: '' };
const CHUNKS = new Set(['user_message_chunk', 'agent_message_chunk', 'agent_thought_chunk']);

/** The message chunks among `updates` as [kind, messageId, text]. */
function messages(updates) {
  return updates.map((u) => u.params?.update ?? u.frame.params.update)
    .filter((u) => CHUNKS.has(u.sessionUpdate))
    .map((u) => [u.sessionUpdate, u.messageId, u.content.text]);
}

/** Consecutive chunks of one id joined: [kind, messageId, text] per message. */
function joined(chunks) {
  const out = [];
  for (const [kind, id, text] of chunks) {
    if (out.length && out.at(-1)[1] === id) {
      assert.equal(out.at(-1)[0], kind, 'one message, one kind');
      out.at(-1)[2] += text;
    } else out.push([kind, id, text]);
  }
  return out;
}

function tempDir(t, name) {
  const dir = mkdtempSync(path.join(tmpdir(), `dsh-acp-msgid-${name}-`));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function load(t, args, env, sessionId, cwd) {
  const { agent, ctx } = startSdkAgent(t, { args, env });
  await ctx.request(M.initialize, INIT_PARAMS);
  const from = agent.frames.length;
  await ctx.request(M.session.load, { sessionId, cwd, mcpServers: [] });
  const replayed = messages(agent.updates({ sessionId, from }));
  return { agent, ctx, replayed };
}

test('echo: one id per answer, every chunk carries it, and a load in another process sends the same ids', async (t) => {
  const store = tempDir(t, 'store');
  const args = ['--store', store];
  const { agent, ctx } = startSdkAgent(t, { args });
  await ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  const live = [];
  for (const text of ['first question', 'second question']) {
    const from = agent.frames.length;
    await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });
    const chunks = messages(agent.updates({ sessionId, from }));
    assert.ok(chunks.length > 3, 'the echo answer streams word by word');
    assert.ok(chunks.every(([kind, id]) => kind === 'agent_message_chunk' && typeof id === 'string' && id.length > 0));
    assert.equal(new Set(chunks.map(([, id]) => id)).size, 1, 'one answer, one message id');
    live.push(...joined(chunks));
  }
  assert.notEqual(live[0][1], live[1][1], 'the next answer is a new message');
  // The SDK took the ids (it validates updates against the schema and delivers them as sent).
  assert.deepEqual(joined(messages(agent.sdkUpdatesFor(sessionId))).map(([, id]) => id), live.map(([, id]) => id));
  await agent.finish();

  const other = await load(t, args, {}, sessionId, agent.home);
  const replayed = joined(other.replayed);
  assert.deepEqual(replayed.map(([kind]) => kind),
    ['user_message_chunk', 'agent_message_chunk', 'user_message_chunk', 'agent_message_chunk']);
  assert.deepEqual([replayed[1], replayed[3]], live, 'the same ids (and texts) as live');
  assert.equal(new Set(replayed.map(([, id]) => id)).size, 4, 'every message its own id');
  // Loaded again, in the same process: the same ids again.
  const from = other.agent.frames.length;
  await other.ctx.request(M.session.load, { sessionId, cwd: agent.home, mcpServers: [] });
  assert.deepEqual(joined(messages(other.agent.updates({ sessionId, from }))), replayed);
  await other.agent.finish();
});

test('reasoning, text, a tool call and the next step: a message each, the same ids on load', async (t) => {
  const server = await startFakeProvider(t);
  const store = tempDir(t, 'store');
  const call = { index: 0, id: 'call_1', type: 'function', function: { name: 'glob', arguments: '{"pattern":"*.none"}' } };
  server.queue(async (req, res) => {
    startSse(res);
    for (const r of ['let me ', 'look']) res.write(chunkEvent({ reasoning_content: r }));
    for (const c of ['I will ', 'search']) res.write(chunkEvent({ content: c }));
    res.write(chunkEvent({ tool_calls: [call] }));
    res.write(chunkEvent({}, 'tool_calls'));
    res.write(usageEvent());
    res.end('data: [DONE]\n\n');
  }, answer({ reasoning: ['nothing ', 'found'], content: ['no ', 'such ', 'files'] }));
  const args = providerArgs(server.url, ['--store', store]);
  const { agent, ctx } = startSdkAgent(t, { args, env: NO_KEYS });
  await ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  const from = agent.frames.length;
  await ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'find it' }] });
  const live = joined(messages(agent.updates({ sessionId, from })));
  assert.deepEqual(live.map(([kind, , text]) => [kind, text]), [
    ['agent_thought_chunk', 'let me look'],
    ['agent_message_chunk', 'I will search'],
    ['agent_thought_chunk', 'nothing found'],
    ['agent_message_chunk', 'no such files'],
  ]);
  assert.equal(new Set(live.map(([, id]) => id)).size, 4, 'four messages, four ids');
  await agent.finish();

  const other = await load(t, args, NO_KEYS, sessionId, agent.home);
  const replayed = joined(other.replayed);
  assert.equal(replayed[0][0], 'user_message_chunk');
  assert.equal(replayed[0][2], 'find it');
  assert.deepEqual(replayed.slice(1), live);
  await other.agent.finish();
});
