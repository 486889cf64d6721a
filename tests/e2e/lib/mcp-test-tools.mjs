// The tools of the tests' MCP servers (built with the official MCP TypeScript SDK), whatever carries
// them: lib/mcp-test-server.mjs over stdio, lib/mcp-http-server.mjs over HTTP. They cover what a
// client must handle: text, arithmetic on typed arguments, a slow call that honours cancellation,
// an image, an error result, its own environment and working directory.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

// A 1x1 PNG.
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/** A server with the common tools; `onSlow(event)` hears 'started' and 'cancelled' of each slow call. */
export function testServer({ onSlow = () => {} } = {}) {
  const server = new McpServer({ name: 'dsh-acp-test-server', version: '1.0.0' });

  server.registerTool('echo', { description: 'Returns its text', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }));

  server.registerTool('add', { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } },
    async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }));

  server.registerTool('slow', { description: 'Waits, unless cancelled', inputSchema: { ms: z.number() } },
    async ({ ms }, extra) => {
      onSlow('started');
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, ms);
        extra.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          onSlow('cancelled');
          resolve();
        });
      });
      return { content: [{ type: 'text', text: 'slept' }] };
    });

  server.registerTool('picture', { description: 'Returns an image', inputSchema: {} },
    async () => ({ content: [{ type: 'text', text: 'a pixel:' }, { type: 'image', data: PIXEL, mimeType: 'image/png' }] }));

  server.registerTool('fail', { description: 'Fails', inputSchema: {} },
    async () => ({ isError: true, content: [{ type: 'text', text: 'it failed' }] }));

  server.registerTool('env', { description: 'Reads a variable', inputSchema: { name: z.string() } },
    async ({ name }) => ({ content: [{ type: 'text', text: process.env[name] ?? '(unset)' }] }));

  server.registerTool('cwd', { description: 'Its working directory', inputSchema: {} },
    async () => ({ content: [{ type: 'text', text: process.cwd() }] }));

  return server;
}
