#!/usr/bin/env node
// An MCP server for the tests, built with the official MCP TypeScript SDK and spoken to over stdio:
// the tools of lib/mcp-test-tools.mjs (a slow call says on stderr that it was cancelled), and a
// crash.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { testServer } from './mcp-test-tools.mjs';

const server = testServer({ onSlow: (event) => { if (event === 'cancelled') process.stderr.write('slow: cancelled\n'); } });

server.registerTool('crash', { description: 'Exits mid-call', inputSchema: {} },
  async () => {
    process.stderr.write('crashing now\n');
    process.exit(3);
  });

process.stderr.write('test server ready\n');
await server.connect(new StdioServerTransport());
