// The client's MCP servers (mcpServers of session/new, load, resume): started before the answer in
// the session's cwd (a broken one is logged and left out, the session works), stopped with the
// session (close, delete) and with the process (stdin closed, SIGTERM): no server process outlives
// them. Malformed entries are -32602 with the entry's JSON Pointer (servers over HTTP:
// mcp-http.test.mjs). The model calls their tools through the tool loop (echo directives): results,
// a server dying mid-call, cancel.
// The working server is a real one, built with the official MCP TypeScript SDK (lib/mcp-test-server.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAgent, startSdkAgent, INIT_PARAMS, acp, until, processStarts, promptAllowing, finalCard } from './lib/agent.mjs';

const M = acp.methods.agent;
const here = path.dirname(fileURLToPath(import.meta.url));
const SDK_SERVER = path.join(here, 'lib', 'mcp-test-server.mjs');
const FAKE_SERVER = path.join(here, '..', 'tools', 'mcp_fake_server.py');

const sdkServer = (name) => ({ name, command: 'node', args: [SDK_SERVER], env: [{ name: 'DSH_E2E_MCP', value: name }] });
// Notes a graceful stop (its stdin closed, so it exited by itself) in `mark`: a kill leaves no note.
const tidyServer = (name, mark) => ({ name, command: 'python3', args: [FAKE_SERVER, 'tidy'], env: [{ name: 'DSH_MCP_FAKE_MARK', value: mark }] });
const stoppedGracefully = (mark) => existsSync(mark) && readFileSync(mark, 'utf8') === 'stdin closed\n';
const brokenServer = { name: 'broken', command: 'python3', args: [FAKE_SERVER, 'dies'], env: [] };

/** Process ids of the agent's children running `script` (zombies count as gone). */
function serversOf(agent, script) {
  const pids = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (rest[0] === 'Z' || Number(rest[1]) !== agent.child.pid) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(script)) pids.push(Number(entry));
    } catch { /* gone meanwhile */ }
  }
  return pids;
}

function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

async function newSessionWith(ctx, agent, mcpServers) {
  await ctx.request(M.initialize, INIT_PARAMS);
  return (await ctx.request(M.session.new, { cwd: agent.home, mcpServers })).sessionId;
}

test('session/new starts the servers before answering; a broken one is logged and left out', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  const sid = await newSessionWith(ctx, agent, [sdkServer('one'), brokenServer, sdkServer('two')]);
  assert.match(sid, /^[0-9a-f-]{36}$/);
  // Running when the answer came, each in a process of its own.
  const pids = serversOf(agent, 'mcp-test-server.mjs');
  assert.equal(pids.length, 2, `server processes: ${pids}`);
  const log = agent.log();
  assert.match(log, /MCP server "broken" exited with status 7; its stderr ends with: fatal: no configuration found/);
  assert.match(log, /2 of 3 MCP server\(s\) running, 16 tool\(s\)/);
  // The session works without the broken server.
  const r = await ctx.request(M.session.prompt, { sessionId: sid, prompt: [{ type: 'text', text: 'hi' }] });
  assert.equal(r.stopReason, 'end_turn');
  await ctx.request(M.session.close, { sessionId: sid });
  for (const pid of pids) assert.ok(!alive(pid), `server ${pid} gone after session/close`);
  await agent.finish();
});

test('session/close stops its servers gracefully (stdin closed) before answering', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  const mark = path.join(agent.home, 'mark');
  const sid = await newSessionWith(ctx, agent, [tidyServer('tidy', mark)]);
  const [pid] = serversOf(agent, 'mcp_fake_server.py');
  assert.ok(pid && alive(pid));
  assert.ok(!existsSync(mark));
  await ctx.request(M.session.close, { sessionId: sid });
  assert.ok(!alive(pid));
  assert.ok(stoppedGracefully(mark), 'the server saw its stdin close');
  await agent.finish();
});

test('session/delete stops the session\'s servers, other sessions keep theirs', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  const mark = path.join(agent.home, 'mark');
  const doomed = await newSessionWith(ctx, agent, [sdkServer('doomed'), tidyServer('tidy', mark)]);
  const doomedPids = serversOf(agent, 'mcp-test-server.mjs');
  const { sessionId: kept } = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [sdkServer('kept')] });
  const keptPids = serversOf(agent, 'mcp-test-server.mjs').filter((p) => !doomedPids.includes(p));
  assert.equal(doomedPids.length, 1);
  assert.equal(keptPids.length, 1);
  await ctx.request(M.session.delete, { sessionId: doomed });
  assert.ok(!alive(doomedPids[0]), 'the deleted session\'s server is gone');
  assert.ok(stoppedGracefully(mark));
  assert.ok(alive(keptPids[0]), 'the other session\'s server runs on');
  await ctx.request(M.session.close, { sessionId: kept });
  assert.ok(!alive(keptPids[0]));
  await agent.finish();
});

test('session/load of an attached session replaces its servers; resume without mcpServers keeps them', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  const sid = await newSessionWith(ctx, agent, [sdkServer('first')]);
  const [first] = serversOf(agent, 'mcp-test-server.mjs');
  await ctx.request(M.session.load, { sessionId: sid, cwd: agent.home, mcpServers: [sdkServer('second')] });
  assert.ok(!alive(first), 'the old set was stopped');
  const [second] = serversOf(agent, 'mcp-test-server.mjs');
  assert.ok(second && second !== first);
  await ctx.request(M.session.resume, { sessionId: sid, cwd: agent.home });
  assert.ok(alive(second), 'resume without mcpServers keeps the running set');
  await ctx.request(M.session.resume, { sessionId: sid, cwd: agent.home, mcpServers: [] });
  assert.ok(!alive(second), 'resume with none stops them');
  await agent.finish();
});

for (const how of ['stdin EOF', 'SIGTERM']) {
  test(`shutdown (${how}) stops every session's servers before the process exits`, async (t) => {
    const { agent, ctx } = startSdkAgent(t);
    const mark = path.join(agent.home, 'mark');
    await newSessionWith(ctx, agent, [sdkServer('a'), sdkServer('b')]);
    await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [sdkServer('c'), tidyServer('tidy', mark)] });
    const pids = serversOf(agent, 'mcp-test-server.mjs');
    assert.equal(pids.length, 3);
    if (how === 'SIGTERM') agent.signal('SIGTERM');
    else agent.closeStdin();
    const { code, signal } = await agent.waitExit();
    assert.equal(signal, null);
    assert.equal(code, 0, agent.stderr);
    for (const pid of pids) assert.ok(!alive(pid), `server ${pid} outlived the process`);
    assert.ok(stoppedGracefully(mark), 'stopped, not only killed when we went away');
    agent.assertFramesOnly();
  });
}

test('stdin EOF while a server is still starting: the start is given up, nothing is left', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  const silent = { name: 'hung', command: 'python3', args: [FAKE_SERVER, 'silent'], env: [] };
  const starts = processStarts();  // python3 opens the loader's cache as it starts
  t.after(() => starts.close());
  await starts.ready;
  await agent.send({ jsonrpc: '2.0', id: 'new', method: 'session/new', params: { cwd: agent.home, mcpServers: [silent] } });
  // Wait until the silent server runs, then hang up.
  const [pid] = await until(() => { const found = serversOf(agent, 'mcp_fake_server.py'); return found.length > 0 && found; },
    'the silent server to run', starts);
  agent.closeStdin();
  const { code } = await agent.waitExit();
  assert.equal(code, 0, agent.stderr);
  // Given up, not waited out: its 30 s start limit never passed.
  assert.doesNotMatch(agent.log(), /did not answer initialize in time/);
  assert.ok(!alive(pid), 'the starting server outlived the process');
  const answer = agent.frames.find((e) => e.frame.id === 'new');
  assert.ok(answer?.frame.result?.sessionId, `session/new was answered: ${JSON.stringify(answer?.frame)}`);
});

test('malformed entries are -32602 with the entry\'s pointer', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  const cases = [
    [[sdkServer('ok'), { type: 'websocket', name: 'x', command: 'x' }], '/mcpServers/1/type', /must be "stdio", "http" or "sse"/],
    [['node'], '/mcpServers/0', /must be an object/],
    [[{ command: 'node', args: [], env: [] }], '/mcpServers/0/name', /is required/],
    [[{ name: 'x', command: '', args: [], env: [] }], '/mcpServers/0/command', /must not be empty/],
    [[{ name: 'x', command: 'node', args: ['ok', 3], env: [] }], '/mcpServers/0/args/1', /must be a string/],
    [[{ name: 'x', command: 'node', args: [], env: [{ name: 'A' }] }], '/mcpServers/0/env/0/value', /is required/],
    [[{ name: 'x', command: 'node', args: [], env: [{ name: 'A=B', value: '1' }] }], '/mcpServers/0/env/0/name', /=/],
    [[{ name: 'x', command: 'node', args: [], env: {} }], '/mcpServers/0/env', /must be an array/],
  ];
  for (const [mcpServers, pointer, message] of cases) {
    for (const method of ['session/new', 'session/load', 'session/resume']) {
      const params = { cwd: agent.home, mcpServers };
      if (method !== 'session/new') params.sessionId = '00000000-0000-4000-8000-000000000000';
      const r = await agent.call(method, params);
      assert.equal(r.error?.code, -32602, `${method} ${JSON.stringify(mcpServers)}: ${JSON.stringify(r)}`);
      assert.equal(r.error.data?.path, pointer, JSON.stringify(r.error));
      assert.match(r.error.message, message);
    }
  }
  // Nothing was started and no session made.
  assert.deepEqual(serversOf(agent, 'mcp-test-server.mjs'), []);
  assert.deepEqual((await agent.call('session/list', {})).result.sessions, []);
  await agent.finish();
});

// ---- calls from the model (the echo model's [[echo:tool=...]] directives) ------------------------

test('the model calls an MCP tool: the server\'s answer is the tool result', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  const r = await agent.call('session/new', { cwd: agent.home, mcpServers: [sdkServer('test')] });
  const sid = r.result.sessionId;
  const { from, answer } = await promptAllowing(agent, sid, 'go [[echo:tool=mcp__test__echo {"text":"hello mcp"}]]', 'p1', /mcp__test__/);
  assert.equal(answer.result?.stopReason, 'end_turn', JSON.stringify(answer));
  const card = finalCard(agent, sid, from);
  assert.equal(card.status, 'completed');
  assert.match(card.text, /echo: hello mcp/);
  // A server that dies mid-call: an error result naming it, the turn goes on, its tools are gone.
  const crash = await promptAllowing(agent, sid, 'now [[echo:tool=mcp__test__crash {}]]', 'p2', /mcp__test__/);
  assert.equal(crash.answer.result?.stopReason, 'end_turn', JSON.stringify(crash.answer));
  const failed = finalCard(agent, sid, crash.from);
  assert.equal(failed.status, 'failed');
  assert.match(failed.text, /MCP server "test"/);
  assert.deepEqual(serversOf(agent, 'mcp-test-server.mjs'), []);
  await agent.finish();
});

test('session/cancel during an MCP call: the turn ends cancelled, the server stays usable', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  const sid = (await agent.call('session/new', { cwd: agent.home, mcpServers: [sdkServer('test')] })).result.sessionId;
  const from = agent.frames.length;
  // An hour's call (the call timeout is five minutes, past the test's CTest timeout): only the
  // cancel can end the turn while the test runs.
  await agent.send({ jsonrpc: '2.0', id: 'p', method: 'session/prompt', params: { sessionId: sid, prompt: [{ type: 'text', text: 'wait [[echo:tool=mcp__test__slow {"ms":3600000}]]' }] } });
  const asked = await agent.nextFrame((f) => f.method === 'session/request_permission', { from });
  await agent.send({ jsonrpc: '2.0', id: asked.frame.id, result: { outcome: { outcome: 'selected', optionId: 'allow_once' } } });
  await agent.nextFrame((f) => f.method === 'session/update' && f.params.update?.sessionUpdate === 'tool_call_update' &&
    f.params.update.status === 'in_progress', { from, what: 'the call running' });
  const since = performance.now();
  await agent.notify('session/cancel', { sessionId: sid });
  const answer = await agent.response('p', { from });
  assert.equal(answer.result?.stopReason, 'cancelled', JSON.stringify(answer));
  t.diagnostic(`cancel answered after ${Math.round(performance.now() - since)} ms`);
  // The server is still there and usable for the next turn.
  assert.equal(serversOf(agent, 'mcp-test-server.mjs').length, 1);
  const again = await promptAllowing(agent, sid, 'again [[echo:tool=mcp__test__echo {"text":"after"}]]', 'p2', /mcp__test__/);
  assert.equal(again.answer.result?.stopReason, 'end_turn');
  assert.match(finalCard(agent, sid, again.from).text, /echo: after/);
  await agent.finish();
});

test('--mcp-call-timeout-ms: a call not answered in time is an error result naming the server, which was told', async (t) => {
  const agent = startAgent(t, { args: ['--mcp-call-timeout-ms', '300'] });
  await agent.initialize();
  const hangs = { name: 'test', command: 'python3', args: [FAKE_SERVER, 'hangs'], env: [] };
  const sid = (await agent.call('session/new', { cwd: agent.home, mcpServers: [hangs] })).result.sessionId;
  const late = await promptAllowing(agent, sid, 'wait [[echo:tool=mcp__test__hang {}]]', 'p1', /mcp__test__/);
  assert.equal(late.answer.result?.stopReason, 'end_turn', JSON.stringify(late.answer));
  const card = finalCard(agent, sid, late.from);
  assert.equal(card.status, 'failed');
  assert.match(card.text, /MCP server "test" did not answer hang within 300 ms/);
  // The server read notifications/cancelled for that call (id 3, after initialize and tools/list).
  const next = await promptAllowing(agent, sid, 'then [[echo:tool=mcp__test__cancelled {}]]', 'p2', /mcp__test__/);
  assert.equal(finalCard(agent, sid, next.from).text, '[3]');
  await agent.finish();
});
