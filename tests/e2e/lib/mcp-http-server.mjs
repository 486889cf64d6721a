// An MCP server over HTTP for the tests, in the test's own process, built with the official MCP
// TypeScript SDK: streamable HTTP at /mcp (StreamableHTTPServerTransport, a session per client;
// answers as event streams, or as JSON at /mcp-json) and
// the legacy HTTP+SSE transport at /sse, posting to /messages (SSEServerTransport). Besides the tools
// of lib/mcp-test-tools.mjs: `header` (a request header as the server received it) and `big` (an
// answer of the given size). Every request is noted (`requests`) and announced on `events`
// ('request', 'slow' with 'started' or 'cancelled', 'deleted' when a session is deleted).
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { z } from 'zod';
import { testServer } from './mcp-test-tools.mjs';

export async function startHttpMcpServer() {
  const events = new EventEmitter();
  const requests = [];
  const streamable = new Map();  // Mcp-Session-Id -> transport
  const legacy = new Map();      // sessionId (query) -> transport

  const mcpServer = () => {
    const server = testServer({ onSlow: (event) => events.emit('slow', event) });
    server.registerTool('header', { description: 'A request header as the server received it', inputSchema: { name: z.string() } },
      async ({ name }, extra) => ({ content: [{ type: 'text', text: String(extra.requestInfo?.headers?.[name.toLowerCase()] ?? '(none)') }] }));
    server.registerTool('big', { description: 'An answer of `bytes` bytes', inputSchema: { bytes: z.number() } },
      async ({ bytes }) => ({ content: [{ type: 'text', text: 'x'.repeat(bytes) }] }));
    return server;
  };

  const httpServer = http.createServer(async (req, res) => {
    const note = { method: req.method, path: req.url, headers: req.headers };
    requests.push(note);
    events.emit('request', note);
    try {
      const { pathname, searchParams } = new URL(req.url, 'http://localhost');
      if (pathname === '/mcp' || pathname === '/mcp-json') {
        const sid = req.headers['mcp-session-id'];
        let transport = sid ? streamable.get(sid) : undefined;
        if (!transport) {
          if (sid || req.method !== 'POST') return res.writeHead(404).end('no such session');
          transport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            enableJsonResponse: pathname === '/mcp-json',
            onsessioninitialized: (id) => streamable.set(id, transport),
            onsessionclosed: (id) => { streamable.delete(id); events.emit('deleted', id); },
          });
          await mcpServer().connect(transport);
        }
        await transport.handleRequest(req, res);
      } else if (pathname === '/sse' && req.method === 'GET') {
        const transport = new SSEServerTransport('/messages', res);
        legacy.set(transport.sessionId, transport);
        res.on('close', () => legacy.delete(transport.sessionId));
        await mcpServer().connect(transport);
      } else if (pathname === '/messages' && req.method === 'POST') {
        const transport = legacy.get(searchParams.get('sessionId'));
        if (!transport) return res.writeHead(404).end('no such session');
        await transport.handlePostMessage(req, res);
      } else {
        res.writeHead(404).end('not here');
      }
    } catch (e) {
      if (!res.headersSent) res.writeHead(500).end(String(e));
    }
  });
  await new Promise((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const { port } = httpServer.address();
  return {
    port,
    url: (path) => `http://127.0.0.1:${port}${path}`,
    requests,
    events,
    close: () => new Promise((resolve) => {
      httpServer.closeAllConnections();
      httpServer.close(resolve);
    }),
  };
}

/** A port nothing listens on (one that was just free). */
export async function closedPort() {
  const s = http.createServer();
  await new Promise((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return port;
}
