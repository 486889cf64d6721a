// Process lifetime: stdin EOF and SIGTERM/SIGINT exit 0 (target 1 s, reported, not asserted: a
// loaded machine is slow, not wrong), in-flight prompts are answered "cancelled" first, no frame is
// lost, and stdout carries only frames while log lines go to the log file. The prompts in flight
// cannot end by themselves while the test runs (a minute's sleep, an hour between chunks), so an
// exit with them answered "cancelled" shows the shutdown cancelled them rather than waited.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startAgent, startSdkAgent, INIT_PARAMS, acp, isChunk } from './lib/agent.mjs';

// Same server bug as in cancel.test.mjs: a turn cancelled mid-stream (here by EOF) sometimes answers
// -32603 "co_await: Operation canceled" instead of "cancelled". Remove when fixed.

async function exitsCleanly(t, agent, since, what) {
  const { code, signal, at } = await agent.waitExit();
  assert.equal(signal, null, `${what}: killed by ${signal}`);
  assert.equal(code, 0, `${what}: exit code ${code}; stderr: ${agent.stderr}`);
  t.diagnostic(`${what}: exit after ${Math.round(at - since)} ms`);
  agent.assertFramesOnly();
}

test('stdin EOF on an idle connection exits 0', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  await ctx.request(acp.methods.agent.initialize, INIT_PARAMS);
  const since = performance.now();
  agent.closeStdin();
  await exitsCleanly(t, agent, since, 'EOF');
});

test('stdin EOF before anything was sent exits 0', async (t) => {
  const agent = startAgent(t);
  const since = performance.now();
  agent.closeStdin();
  await exitsCleanly(t, agent, since, 'EOF');
  assert.equal(agent.frames.length, 0);
});

test('stdin EOF during a sleeping prompt: the prompt is answered "cancelled" before exit', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  const sessionId = await agent.newSession();
  const from = agent.frames.length;
  await agent.send({ jsonrpc: '2.0', id: 'p', method: 'session/prompt', params: { sessionId, prompt: [{ type: 'text', text: 'zzz [[echo:sleep=60000]]' }] } });
  await agent.turnStarted(sessionId);
  const since = performance.now();
  agent.closeStdin();
  await exitsCleanly(t, agent, since, 'EOF during a prompt');
  const answers = agent.frames.filter((e) => e.index >= from && e.frame.id === 'p');
  assert.equal(answers.length, 1, 'the prompt was answered exactly once');
  assert.deepEqual(answers[0].frame.result, { stopReason: 'cancelled' });
});

test('stdin EOF during a streaming prompt: chunks so far, then "cancelled", then exit', async (t) => {
  const agent = startAgent(t, { args: ['--echo-delay-ms', '3600000'] });
  await agent.initialize();
  const sessionId = await agent.newSession();
  const from = agent.frames.length;
  await agent.send({ jsonrpc: '2.0', id: 7, method: 'session/prompt', params: { sessionId, prompt: [{ type: 'text', text: 'stream please' }] } });
  await agent.nextFrame(isChunk(), { from, what: 'first chunk' });
  const since = performance.now();
  agent.closeStdin();
  await exitsCleanly(t, agent, since, 'EOF while streaming');
  const after = agent.frames.slice(from);
  const last = after.at(-1);
  assert.equal(last.frame.id, 7, 'the prompt response is the last frame');
  assert.deepEqual(last.frame.result, { stopReason: 'cancelled' });
  assert.ok(after.slice(0, -1).every((e) => e.frame.method === 'session/update'));
});

test('requests written together with EOF are all answered before exit (no frame lost)', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  const sessionId = await agent.newSession();
  const from = agent.frames.length;
  const lines = [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1 } },
    { jsonrpc: '2.0', id: 2, method: 'session/new', params: { cwd: '/', mcpServers: [] } },
    { jsonrpc: '2.0', id: 3, method: 'session/prompt', params: { sessionId, prompt: [{ type: 'text', text: 'last words' }] } },
    { jsonrpc: '2.0', id: 4, method: 'no/such' },
  ].map((f) => JSON.stringify(f)).join('\n') + '\n';
  agent.child.stdin.end(lines);
  const since = performance.now();
  await exitsCleanly(t, agent, since, 'EOF after a burst');
  const ids = agent.frames.slice(from).filter((e) => !e.frame.method).map((e) => e.frame.id).sort();
  assert.deepEqual(ids, [1, 2, 3, 4]);
  const prompt = agent.frames.find((e) => e.frame.id === 3).frame;
  assert.ok(['end_turn', 'cancelled'].includes(prompt.result?.stopReason), JSON.stringify(prompt));
});

for (const sig of ['SIGTERM', 'SIGINT']) {
  test(`${sig} exits 0, answering an in-flight prompt "cancelled" first`, async (t) => {
    const agent = startAgent(t);
    await agent.initialize();
    const sessionId = await agent.newSession();
    await agent.send({ jsonrpc: '2.0', id: 'p', method: 'session/prompt', params: { sessionId, prompt: [{ type: 'text', text: '[[sleep:60000]] wait' }] } });
    await agent.turnStarted(sessionId);
    const since = performance.now();
    agent.signal(sig);
    await exitsCleanly(t, agent, since, sig);
    const answer = agent.frames.find((e) => e.frame.id === 'p');
    assert.ok(answer, 'the prompt was answered');
    assert.deepEqual(answer.frame.result, { stopReason: 'cancelled' });
  });

  test(`${sig} on an idle connection exits 0`, async (t) => {
    const agent = startAgent(t);
    await agent.initialize();
    const since = performance.now();
    agent.signal(sig);
    await exitsCleanly(t, agent, since, sig);
  });
}

test('stdout carries only frames; log lines go to the log file (0600), nothing to stderr', async (t) => {
  const agent = startAgent(t, { defaultPaths: true, args: ['--log-level', 'debug'] });
  await agent.initialize();
  const sessionId = await agent.newSession();
  await agent.call('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hello' }] });
  await agent.send('not a frame at all'); // a JSON string: answered -32600
  await agent.call('no/such', {});
  agent.closeStdin();
  await exitsCleanly(t, agent, performance.now(), 'EOF');
  // Every stdout line was a JSON-RPC frame (checked in exitsCleanly); stderr stayed empty.
  assert.equal(agent.stderr, '', 'nothing on stderr');
  // The default log file under DSH_ACP_HOME got the log lines, with the pid.
  const log = agent.log();
  assert.ok(log.length > 0, 'the log file has content');
  const lines = log.trimEnd().split('\n');
  assert.ok(lines.length >= 2, `several log lines: ${log}`);
  assert.ok(lines.every((l) => l.includes(String(agent.child.pid))), `each log line carries the pid ${agent.child.pid}:\n${log}`);
  assert.equal(statSync(agent.logFile).mode & 0o777, 0o600, 'log file mode 0600');
  assert.ok(!agent.frames.some((e) => e.line.includes(lines[0])), 'log lines never reach stdout');
});

test('a log file that is a symbolic link is refused: said on stderr, the link target untouched, the server runs', async (t) => {
  const home = mkdtempSync(path.join(tmpdir(), 'dsh-acp-loglink-'));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const target = path.join(home, 'someone-elses-file');
  writeFileSync(target, 'keep\n');
  symlinkSync(target, path.join(home, 'dsh-acp.log'));
  // The default log path, $DSH_ACP_HOME/dsh-acp.log.
  const agent = startAgent(t, { defaultPaths: true, env: { DSH_ACP_HOME: home } });
  await agent.initialize();
  assert.ok(await agent.newSession());
  await agent.finish();
  assert.equal(readFileSync(target, 'utf8'), 'keep\n');
  assert.match(agent.stderr, /dsh-acp\.log is a symbolic link: not logging/);
});
