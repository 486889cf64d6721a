// session/new through the SDK: uuid v4 ids, absolute cwd required, mcpServers optional.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { INIT_PARAMS, UUID_V4, startSdkAgent, acp } from './lib/agent.mjs';

const M = acp.methods.agent;

test('session/new returns a distinct UUID v4 sessionId per session', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  await ctx.request(M.initialize, INIT_PARAMS);
  const a = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  const b = await ctx.request(M.session.new, { cwd: '/', mcpServers: [] });
  assert.match(a.sessionId, UUID_V4);
  assert.match(b.sessionId, UUID_V4);
  assert.notEqual(a.sessionId, b.sessionId);
  await agent.finish();
});

test('session/new with a relative cwd is -32602 with data.path "/cwd"', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  await ctx.request(M.initialize, INIT_PARAMS);
  await assert.rejects(ctx.request(M.session.new, { cwd: 'relative/dir', mcpServers: [] }), (err) => {
    assert.equal(err.code, -32602);
    assert.match(err.message, /^Invalid params/);
    assert.equal(err.data?.path, '/cwd');
    return true;
  });
  // The connection keeps serving.
  const ok = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  assert.match(ok.sessionId, UUID_V4);
  await agent.finish();
});

test('session/new without mcpServers is tolerated, and the session takes prompts', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  await ctx.request(M.initialize, INIT_PARAMS);
  const r = await ctx.request(M.session.new, { cwd: agent.home });
  assert.match(r.sessionId, UUID_V4);
  const p = await ctx.request(M.session.prompt, { sessionId: r.sessionId, prompt: [{ type: 'text', text: 'hi' }] });
  assert.equal(p.stopReason, 'end_turn');
  await agent.finish();
});

test('session/new with a cwd that is not a string is -32602 with data.path "/cwd"', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  await ctx.request(M.initialize, INIT_PARAMS);
  await assert.rejects(ctx.request(M.session.new, { cwd: 42, mcpServers: [] }), (err) => {
    assert.equal(err.code, -32602);
    assert.equal(err.data?.path, '/cwd');
    return true;
  });
  await agent.finish();
});

test('session/new accepts mcpServers entries, additionalDirectories, _meta and unknown fields', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  await ctx.request(M.initialize, INIT_PARAMS);
  const r = await ctx.request(M.session.new, {
    cwd: agent.home,
    mcpServers: [{ name: 'tool', command: '/bin/true', args: ['-x'], env: [{ name: 'A', value: 'b' }] }],
    additionalDirectories: ['/usr', '/opt'],
    _meta: { 'x-test': true },
    someFutureField: 1,
  });
  assert.match(r.sessionId, UUID_V4);
  await agent.finish();
});

test('session/new with a relative additional directory is -32602 with its JSON Pointer', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  await ctx.request(M.initialize, INIT_PARAMS);
  await assert.rejects(ctx.request(M.session.new, { cwd: agent.home, mcpServers: [], additionalDirectories: ['/ok', 'rel'] }), (err) => {
    assert.equal(err.code, -32602);
    assert.equal(err.data?.path, '/additionalDirectories/1');
    return true;
  });
  await agent.finish();
});

test('a cwd that does not exist is accepted (the client may create it later) and noted in the log file', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  await ctx.request(M.initialize, INIT_PARAMS);
  const missing = `${agent.home}/not-created-yet/deeper`;
  const r = await ctx.request(M.session.new, { cwd: missing, mcpServers: [] });
  assert.match(r.sessionId, UUID_V4);
  const p = await ctx.request(M.session.prompt, { sessionId: r.sessionId, prompt: [{ type: 'text', text: 'hi' }] });
  assert.equal(p.stopReason, 'end_turn');
  // Loading it again with that cwd is accepted and noted too.
  await ctx.request(M.session.load, { sessionId: r.sessionId, cwd: missing, mcpServers: [] });
  const existing = await ctx.request(M.session.new, { cwd: agent.home, mcpServers: [] });
  assert.match(existing.sessionId, UUID_V4);
  // Each note is written before the answer it belongs to, so the file holds both by now.
  const log = agent.log();
  const notes = log.split('\n').filter((l) => l.includes(`session cwd ${missing} does not exist`));
  assert.equal(notes.length, 2, `one note for session/new, one for session/load:\n${log}`);
  assert.ok(!log.includes(`session cwd ${agent.home} `), 'an existing cwd is not noted');
  await agent.finish();
});

test('a cwd holding NUL or a line break is -32602 "/cwd" alike for session/new and the session/list filter', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  await ctx.request(M.initialize, INIT_PARAMS);
  for (const cwd of ['/a\u0000b', '/a\nb', '/a\rb']) {
    const errors = [];
    for (const [method, params] of [[M.session.new, { cwd, mcpServers: [] }], [M.session.list, { cwd }]]) {
      await assert.rejects(ctx.request(method, params), (err) => {
        errors.push({ code: err.code, message: err.message, data: err.data });
        return true;
      });
    }
    assert.equal(errors[0].code, -32602, JSON.stringify(cwd));
    assert.deepEqual(errors[1], errors[0], `${JSON.stringify(cwd)}: the same error`);
    assert.equal(errors[1].data?.path, '/cwd');
  }
  assert.ok(await ctx.request(M.session.list, { cwd: agent.home }));
  await agent.finish();
});
