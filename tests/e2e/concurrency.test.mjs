// Requests are handled concurrently: while one session's prompt waits, a second prompt on that
// session waits in line behind it, and other sessions' prompts, session/new and initialize still answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, INIT_PARAMS, startSdkAgent, acp, echoAnswer, systemBytes } from './lib/agent.mjs';

const M = acp.methods.agent;

test('a long prompt blocks neither other sessions nor initialize; a second prompt on it runs after it', async (t) => {
  // The long prompt waits for its permission request, which the client answers only after the
  // checks below: it is certainly still running while they are made, however slow the machine.
  let asked;
  const question = new Promise((resolve) => { asked = resolve; });
  let release;
  const decision = new Promise((resolve) => { release = resolve; });
  const client = { requestPermission: ({ params }) => { asked(params); return decision; } };
  const { agent, ctx } = startSdkAgent(t, { client });
  await ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId: busy } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  const { sessionId: other } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });

  let longDone = false;
  const slow = `slow [[echo:tool=write ${JSON.stringify({ file_path: 'slow.txt', content: 'slow\n' })}]]`;
  const long = ctx.request(M.session.prompt, { sessionId: busy, prompt: [{ type: 'text', text: slow }] })
    .finally(() => { longDone = true; });
  assert.equal((await question).sessionId, busy);

  // Same session, while the first is in flight: queued behind it, the running prompt unaffected.
  let secondDone = false;
  const second = ctx.request(M.session.prompt, { sessionId: busy, prompt: [{ type: 'text', text: 'me too' }] })
    .finally(() => { secondDone = true; });
  // Another session answers in full.
  const r2 = await ctx.request(M.session.prompt, { sessionId: other, prompt: [{ type: 'text', text: 'quick' }] });
  assert.equal(r2.stopReason, 'end_turn');
  // initialize and session/new still answer.
  const init = await ctx.request(M.initialize, INIT_PARAMS);
  assert.equal(init.protocolVersion, 1);
  const { sessionId: third } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  assert.ok(third);
  assert.equal(longDone, false, 'all of the above answered while the long prompt was still running');
  assert.equal(secondDone, false, 'the queued prompt waits for the long one');

  release({ outcome: { outcome: 'selected', optionId: 'allow_once' } });
  const r1 = await long;
  assert.equal(r1.stopReason, 'end_turn');
  assert.equal((await second).stopReason, 'end_turn');
  // The long one's answer (a tool step, then the echo of the four messages) came first; the queued
  // prompt ran next and saw it.
  const text = Agent.chunkText(agent.chunks({ sessionId: busy }));
  assert.match(text, /^echo: calling write[^]*echo: received 4 messages\n[^]*last user message: slow [^]*echo: received 6 messages\n[^]*last user message: me too$/);
  await agent.finish();
});

test('two sessions stream in parallel', async (t) => {
  const { agent, ctx } = startSdkAgent(t, { args: ['--echo-delay-ms', '40'] });
  await ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId: a } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  const { sessionId: b } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  const [ra, rb] = await Promise.all([
    ctx.request(M.session.prompt, { sessionId: a, prompt: [{ type: 'text', text: 'first' }] }),
    ctx.request(M.session.prompt, { sessionId: b, prompt: [{ type: 'text', text: 'second' }] }),
  ]);
  assert.equal(ra.stopReason, 'end_turn');
  assert.equal(rb.stopReason, 'end_turn');
  // Chunks of the two sessions interleave on the wire: each started before the other finished, and
  // the stream switches sessions many times (serial streaming switches once). How much faster that
  // is than serial is a figure of bench/isolation_bench.py (parallel streams), not asserted here.
  const order = agent.chunks().map((e) => e.frame.params.sessionId);
  const firstB = order.indexOf(b);
  const firstA = order.indexOf(a);
  assert.ok(firstB >= 0 && firstB < order.lastIndexOf(a), 'b started before a finished');
  assert.ok(firstA >= 0 && firstA < order.lastIndexOf(b), 'a started before b finished');
  const switches = order.filter((s, i) => i > 0 && s !== order[i - 1]).length;
  const shorter = Math.min(order.filter((s) => s === a).length, order.filter((s) => s === b).length);
  assert.ok(switches >= shorter / 2, `${switches} switches between sessions for ${order.length} chunks`);
  await agent.finish();
});

test('16 sessions prompting at once each get their own exact answer (one writer, no torn frames)', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  await ctx.request(M.initialize, INIT_PARAMS);
  const sessions = [];
  for (let i = 0; i < 16; i++) sessions.push((await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] })).sessionId);
  const textOf = (i) => `parallel ${i} ` + 'word '.repeat(40 + i);
  const results = await Promise.all(sessions.map((sessionId, i) =>
    ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: textOf(i) }] })));
  assert.deepEqual(results.map((r) => r.stopReason), sessions.map(() => 'end_turn'));
  sessions.forEach((sessionId, i) => {
    const text = Agent.chunkText(agent.updates({ sessionId }));
    assert.equal(text, echoAnswer([{ role: 'system', bytes: systemBytes(text) }, { role: 'user', text: textOf(i) }]), `session ${i}`);
  });
  await agent.finish();
});
