// Test helper: a scripted OpenAI-compatible chat-completions server on loopback (node:http on
// 127.0.0.1, port 0). Each POST /chat/completions is recorded ({body, raw, headers, closedAt}) and
// answered by the next scripted handler (or the default one). Handlers get (req, res, record) and
// use the SSE helpers below.

import http from 'node:http';
import { EventEmitter } from 'node:events';
import assert from 'node:assert/strict';
import { logPath, readLog } from './store.mjs';

// A pause between chunks: a scenario's input (a slow model), not a wait.
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One SSE data event carrying a chat.completion.chunk. */
export function chunkEvent(delta, finish = null, extra = {}) {
  return `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'served-model', choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
}

export function usageEvent(prompt = 11, completion = 7) {
  return `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } })}\n\n`;
}

export function startSse(res) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
}

/** A whole streamed answer: optional reasoning pieces, content pieces, finish reason, usage, [DONE]. */
export function answer({ reasoning = [], content = [], finish = 'stop', usage = true, delayMs = 0 } = {}) {
  return async (req, res) => {
    startSse(res);
    for (const r of reasoning) { res.write(chunkEvent({ reasoning_content: r })); if (delayMs) await sleep(delayMs); }
    for (const c of content) { res.write(chunkEvent({ content: c })); if (delayMs) await sleep(delayMs); }
    res.write(chunkEvent({}, finish));
    if (usage) res.write(usageEvent());
    res.end('data: [DONE]\n\n');
  };
}

/** A JSON error answer with this HTTP status (OpenAI/DeepSeek error shape). */
export function httpError(status, message, headers = {}) {
  return async (req, res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify({ error: { message, type: 'test_error', code: null } }));
  };
}

export class FakeProvider {
  constructor() {
    this.requests = [];
    this.events = new EventEmitter();  // 'closed': a request's connection closed (its closedAt set)
    this.script = [];
    this.fallback = answer({ content: ['default answer'] });
    this.server = http.createServer((req, res) => this.#handle(req, res));
  }

  async start() {
    await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${this.server.address().port}`;
    return this;
  }

  /** Queues handlers for the next requests, in order. */
  queue(...handlers) {
    this.script.push(...handlers);
    return this;
  }

  #handle(req, res) {
    const parts = [];
    req.on('data', (d) => parts.push(d));
    req.on('end', () => {
      const raw = Buffer.concat(parts);
      let body = null;
      try { body = JSON.parse(raw.toString('utf8')); } catch { /* recorded as null */ }
      // `raw`: the bytes as sent (toString would hide bytes that are not UTF-8 behind U+FFFD).
      const record = { method: req.method, url: req.url, headers: req.headers, body, raw, at: performance.now(), closedAt: null };
      res.on('close', () => { record.closedAt = performance.now(); this.events.emit('closed'); });
      this.requests.push(record);
      const handler = this.script.shift() ?? this.fallback;
      Promise.resolve(handler(req, res, record)).catch(() => { try { res.destroy(); } catch { /* gone */ } });
    });
  }

  async stop() {
    this.server.closeAllConnections?.();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

export async function startFakeProvider(t) {
  const p = await new FakeProvider().start();
  t.after(() => p.stop());
  return p;
}

/** dsh-acp arguments for the openai provider against `url` (uncompressed logs, no retries). */
export function providerArgs(url, extra = []) {
  return ['--provider', 'openai', '--base-url', url, '--model', 'm1', '--store-compression', 'none',
    '--max-retries', '0', '--retry-base-ms', '1', ...extra];
}

/** Every line of the session's log, parsed: the header, then the events in the normalised model (lib/store.mjs; either layout). */
export function logEvents(storeDir, sessionId) {
  return readLog(logPath(storeDir, sessionId));
}

