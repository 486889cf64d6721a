#!/usr/bin/env node
// An MCP server for the tests, built with the official MCP TypeScript SDK and spoken to over stdio.
// Its tools cover what a client must handle: text, arithmetic on typed arguments, a slow call that
// honours cancellation (and says so on stderr), an image, an error result, a crash, its own
// environment and working directory.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'dsh-acp-test-server', version: '1.0.0' });

server.registerTool('echo', { description: 'Returns its text', inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }));

server.registerTool('add', { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } },
  async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }));

server.registerTool('slow', { description: 'Waits, unless cancelled', inputSchema: { ms: z.number() } },
  async ({ ms }, extra) => {
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      extra.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        process.stderr.write('slow: cancelled\n');
        resolve();
      });
    });
    return { content: [{ type: 'text', text: 'slept' }] };
  });

// A 1x1 PNG.
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
server.registerTool('picture', { description: 'Returns an image', inputSchema: {} },
  async () => ({ content: [{ type: 'text', text: 'a pixel:' }, { type: 'image', data: PIXEL, mimeType: 'image/png' }] }));

server.registerTool('fail', { description: 'Fails', inputSchema: {} },
  async () => ({ isError: true, content: [{ type: 'text', text: 'it failed' }] }));

server.registerTool('crash', { description: 'Exits mid-call', inputSchema: {} },
  async () => {
    process.stderr.write('crashing now\n');
    process.exit(3);
  });

server.registerTool('env', { description: 'Reads a variable', inputSchema: { name: z.string() } },
  async ({ name }) => ({ content: [{ type: 'text', text: process.env[name] ?? '(unset)' }] }));

server.registerTool('cwd', { description: 'Its working directory', inputSchema: {} },
  async () => ({ content: [{ type: 'text', text: process.cwd() }] }));

process.stderr.write('test server ready\n');
await server.connect(new StdioServerTransport());
