// MCP servers over HTTP (mcpServers entries of type http and sse): a real server built with the
// official MCP TypeScript SDK (lib/mcp-http-server.mjs, in this process) on 127.0.0.1, spoken to over
// streamable HTTP and over the legacy HTTP+SSE transport. The model calls its tools through the tool
// loop (echo directives): the result reaches the client and the session's log, the session/new
// headers reach the server, a server that is down is a clear error, a cancelled turn withdraws its
// HTTP call, an answer past the bound is cut off, malformed entries are -32602.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startAgent, promptAllowing, finalCard } from './lib/agent.mjs';
import { events } from './lib/store.mjs';
import { startHttpMcpServer, closedPort } from './lib/mcp-http-server.mjs';

const httpServer = (name, url, headers = []) => ({ type: 'http', name, url, headers });
const sseServer = (name, url, headers = []) => ({ type: 'sse', name, url, headers });

async function sessionWith(agent, mcpServers) {
  await agent.initialize();
  const r = await agent.call('session/new', { cwd: agent.home, mcpServers });
  assert.ok(r.result?.sessionId, JSON.stringify(r));
  return r.result.sessionId;
}

/** Resolves when `emitter` emits `name` with an argument satisfying `pred`. */
const heard = (emitter, name, pred = () => true) => new Promise((resolve) => {
  const on = (...args) => {
    if (!pred(...args)) return;
    emitter.off(name, on);
    resolve(args);
  };
  emitter.on(name, on);
});

test('initialize advertises MCP servers over http and sse', async (t) => {
  const agent = startAgent(t);
  const caps = (await agent.initialize()).agentCapabilities;
  assert.deepEqual(caps.mcpCapabilities, { http: true, sse: true });
  await agent.finish();
});

for (const [kind, make, path] of [['streamable HTTP', httpServer, '/mcp'], ['streamable HTTP, JSON answers', httpServer, '/mcp-json'],
  ['HTTP+SSE', sseServer, '/sse']]) {
  test(`${kind}: the model calls the server's tool; the answer reaches the client and the log, the headers the server`, async (t) => {
    const server = await startHttpMcpServer();
    t.after(server.close);
    const agent = startAgent(t);
    const sid = await sessionWith(agent, [make('web', server.url(path), [{ name: 'X-Dsh-Test', value: 'token 1' }])]);
    assert.match(agent.log(), /1 of 1 MCP server\(s\) running, 9 tool\(s\)/);

    const { from, answer } = await promptAllowing(agent, sid, 'go [[echo:tool=mcp__web__echo {"text":"hello http"}]]', 'p1');
    assert.equal(answer.result?.stopReason, 'end_turn', JSON.stringify(answer));
    const card = finalCard(agent, sid, from);
    assert.equal(card.status, 'completed');
    assert.match(card.text, /echo: hello http/);
    assert.match(JSON.stringify(events(agent.storeDir, sid)), /echo: hello http/);

    // The header as the tool's request carried it, and on every request we made.
    const h = await promptAllowing(agent, sid, 'which [[echo:tool=mcp__web__header {"name":"X-Dsh-Test"}]]', 'p2');
    assert.equal(finalCard(agent, sid, h.from).text, 'token 1');
    const ours = server.requests.filter((r) => r.method === 'POST' || r.method === 'GET');
    assert.ok(ours.length >= 4, JSON.stringify(ours.map((r) => r.method + ' ' + r.path)));
    for (const r of ours) assert.equal(r.headers['x-dsh-test'], 'token 1', `${r.method} ${r.path}`);
    if (path !== '/sse') {
      // After initialize: the session id the server gave, and the negotiated protocol version.
      const later = ours.slice(1);
      for (const r of later) {
        assert.match(r.headers['mcp-session-id'] ?? '', /^[0-9a-f-]{36}$/, `${r.method} ${r.path}`);
        assert.match(r.headers['mcp-protocol-version'] ?? '', /^\d{4}-\d{2}-\d{2}$/);
      }
      // session/close ends the server's session (DELETE) before it answers.
      const deleted = heard(server.events, 'deleted');
      await agent.call('session/close', { sessionId: sid });
      const [id] = await deleted;
      assert.equal(id, later[0].headers['mcp-session-id']);
    }
    await agent.finish();
  });
}

test('a server that is down: session/new works, the log says why it is left out', async (t) => {
  const port = await closedPort();
  const agent = startAgent(t);
  const sid = await sessionWith(agent, [httpServer('down', `http://127.0.0.1:${port}/mcp`), sseServer('gone', `http://127.0.0.1:${port}/sse`)]);
  const log = agent.log();
  assert.match(log, new RegExp(`MCP server "down" could not be reached at http://127.0.0.1:${port}/mcp: cannot connect to 127.0.0.1:${port}: Connection refused`));
  assert.match(log, new RegExp(`MCP server "gone" could not be reached at http://127.0.0.1:${port}/sse`));
  assert.match(log, /0 of 2 MCP server\(s\) running/);
  const r = await agent.call('session/prompt', { sessionId: sid, prompt: [{ type: 'text', text: 'hi' }] });
  assert.equal(r.result?.stopReason, 'end_turn');
  await agent.finish();
});

test('a server that goes away after starting: the call is an error naming it, its tools are withdrawn', async (t) => {
  const server = await startHttpMcpServer();
  const agent = startAgent(t);
  const sid = await sessionWith(agent, [httpServer('web', server.url('/mcp'))]);
  await server.close();
  const { from, answer } = await promptAllowing(agent, sid, 'go [[echo:tool=mcp__web__echo {"text":"anyone?"}]]', 'p1');
  assert.equal(answer.result?.stopReason, 'end_turn', JSON.stringify(answer));
  const card = finalCard(agent, sid, from);
  assert.equal(card.status, 'failed');
  assert.match(card.text, /MCP server "web" could not be reached at .*: cannot connect to/);
  assert.match(card.text, /Its tools are withdrawn: mcp__web__/);
  await agent.finish();
});

for (const [kind, make, path] of [['streamable HTTP', httpServer, '/mcp'], ['HTTP+SSE', sseServer, '/sse']]) {
  test(`${kind}: session/cancel during a slow call ends the turn cancelled and the server hears it`, async (t) => {
    const server = await startHttpMcpServer();
    t.after(server.close);
    const agent = startAgent(t);
    const sid = await sessionWith(agent, [make('web', server.url(path))]);
    const started = heard(server.events, 'slow', (e) => e === 'started');
    const cancelled = heard(server.events, 'slow', (e) => e === 'cancelled');
    const from = agent.frames.length;
    // An hour's call: only the cancel can end the turn while the test runs.
    await agent.send({ jsonrpc: '2.0', id: 'p', method: 'session/prompt', params: { sessionId: sid, prompt: [{ type: 'text', text: 'wait [[echo:tool=mcp__web__slow {"ms":3600000}]]' }] } });
    const asked = await agent.nextFrame((f) => f.method === 'session/request_permission', { from });
    await agent.send({ jsonrpc: '2.0', id: asked.frame.id, result: { outcome: { outcome: 'selected', optionId: 'allow_once' } } });
    await started;
    await agent.notify('session/cancel', { sessionId: sid });
    const answer = await agent.response('p', { from });
    assert.equal(answer.result?.stopReason, 'cancelled', JSON.stringify(answer));
    await cancelled;  // notifications/cancelled reached the server's tool
    const again = await promptAllowing(agent, sid, 'again [[echo:tool=mcp__web__echo {"text":"after"}]]', 'p2');
    assert.match(finalCard(agent, sid, again.from).text, /echo: after/);
    await agent.finish();
  });
}

test('an answer past 16 MiB is cut off with an error naming the bound; the server stays usable', async (t) => {
  const server = await startHttpMcpServer();
  t.after(server.close);
  const agent = startAgent(t);
  const sid = await sessionWith(agent, [httpServer('web', server.url('/mcp'))]);
  const big = await promptAllowing(agent, sid, 'flood [[echo:tool=mcp__web__big {"bytes":17000000}]]', 'p1');
  assert.equal(big.answer.result?.stopReason, 'end_turn', JSON.stringify(big.answer));
  const card = finalCard(agent, sid, big.from);
  assert.equal(card.status, 'failed');
  assert.match(card.text, /MCP server "web" sent more than 16 MiB in answer to one request/);
  const again = await promptAllowing(agent, sid, 'again [[echo:tool=mcp__web__echo {"text":"still here"}]]', 'p2');
  assert.match(finalCard(agent, sid, again.from).text, /echo: still here/);
  await agent.finish();
});

test('malformed http and sse entries are -32602 with the entry\'s pointer', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  const cases = [
    [[{ type: 'http', name: 'web', headers: [] }], '/mcpServers/0/url', /is required/],
    [[{ type: 'http', name: 'web', url: 'ftp://example.com/mcp', headers: [] }], '/mcpServers/0/url', /http:\/\/ or https:\/\//],
    [[{ type: 'sse', name: 'web', url: 'http://user:pw@example.com/sse', headers: [] }], '/mcpServers/0/url', /user info/],
    [[httpServer('web', 'http://127.0.0.1:1/mcp', [{ name: 'X-A', value: 'one\r\nX-B: two' }])], '/mcpServers/0/headers/0/value', /CR, LF/],
    [[httpServer('web', 'http://127.0.0.1:1/mcp', [{ name: 'X-A\nB', value: 'v' }])], '/mcpServers/0/headers/0/name', /HTTP field name/],
    [[httpServer('web', 'http://127.0.0.1:1/mcp', [{ name: 'X A', value: 'v' }])], '/mcpServers/0/headers/0/name', /HTTP field name/],
    [[httpServer('web', 'http://127.0.0.1:1/mcp', [{ name: 'X-A' }])], '/mcpServers/0/headers/0/value', /is required/],
    [[{ type: 'http', name: 'web', url: 'http://127.0.0.1:1/mcp', headers: {} }], '/mcpServers/0/headers', /must be an array/],
  ];
  for (const [mcpServers, pointer, message] of cases) {
    const r = await agent.call('session/new', { cwd: agent.home, mcpServers });
    assert.equal(r.error?.code, -32602, `${JSON.stringify(mcpServers)}: ${JSON.stringify(r)}`);
    assert.equal(r.error.data?.path, pointer, JSON.stringify(r.error));
    assert.match(r.error.message, message);
  }
  await agent.finish();
});

/**
 * A bare streamable-HTTP MCP server, not the SDK's: it answers initialize and tools/list with one
 * tool, `flood`, whose call is answered by `flood(res)` (a stream or a body that never ends).
 */
async function floodingServer(flood) {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      if (req.method !== 'POST') return res.writeHead(405).end();
      const msg = JSON.parse(body);
      if (msg.id === undefined) return res.writeHead(202).end();
      const answer = (result) => res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's1' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
      if (msg.method === 'initialize') return answer({ protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'flood', version: '1' } });
      if (msg.method === 'tools/list') return answer({ tools: [{ name: 'flood', inputSchema: { type: 'object' } }] });
      flood(res);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}/mcp`, close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) };
}

/** Writes `piece` to `res` for as long as the other side reads. */
function forever(res, piece) {
  const more = () => { while (res.write(piece)) { /* until the socket pushes back */ } };
  res.on('drain', more);
  res.on('error', () => {});
  more();
}

for (const [kind, flood] of [
  ['an event stream of keep-alive comments that never ends', (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    forever(res, ': keep-alive\n\n'.repeat(1000));
  }],
  ['a JSON body of a gigabyte', (res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(1 << 30) });
    forever(res, ' '.repeat(65536));
  }],
]) {
  test(`a call answered with ${kind} is cut off at 16 MiB with an error result`, async (t) => {
    const server = await floodingServer(flood);
    t.after(server.close);
    const agent = startAgent(t);
    const sid = await sessionWith(agent, [httpServer('flood', server.url)]);
    const { from, answer } = await promptAllowing(agent, sid, 'go [[echo:tool=mcp__flood__flood {}]]', 'p1');
    assert.equal(answer.result?.stopReason, 'end_turn', JSON.stringify(answer));
    const card = finalCard(agent, sid, from);
    assert.equal(card.status, 'failed');
    assert.match(card.text, /MCP server "flood" sent more than 16 MiB in answer to one request/);
    await agent.finish();
  });
}
