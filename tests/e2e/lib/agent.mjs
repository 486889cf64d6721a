// Test helper: runs the real dsh-acp binary as a child process and talks to it either through the
// official ACP SDK (@agentclientprotocol/sdk 2.4.0, the client app API) or frame by frame (raw mode),
// for the error-table cases the SDK cannot produce.
//
// Every line the binary writes to stdout is checked as it arrives: it must be valid UTF-8, parse as
// JSON and be one JSON-RPC 2.0 frame (request, notification, result or error response). Violations
// are recorded and fail `finish()` / `assertFramesOnly()`.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync, readFileSync, watch } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import * as acp from '@agentclientprotocol/sdk';
import { logFiles, logFilesRaw, segmentOfLog, encodeSegment, readLog, generationOf, pgServerStore } from './store.mjs';
import { PG_VARIANT, turnStarts } from './pgvariant.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(here, '..', '..', '..');
export const BIN = process.env.DSH_ACP_BIN || path.join(REPO_ROOT, 'build', 'dsh-acp');

export { acp };

const live = new Set();
const watchers = new Set();  // opensOf() children still running
process.on('exit', () => {
  for (const a of live) {
    try { a.child.kill('SIGKILL'); } catch { /* already gone */ }
    try { rmSync(a.home, { recursive: true, force: true }); } catch { /* best effort */ }
  }
  for (const w of watchers) {
    try { w.kill('SIGKILL'); } catch { /* already gone */ }
  }
});

/** Checks that `v` is one JSON-RPC 2.0 frame; returns a reason string or null. */
export function frameProblem(v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'not a JSON object';
  if (v.jsonrpc !== '2.0') return 'jsonrpc is not "2.0"';
  const hasId = Object.hasOwn(v, 'id');
  if (hasId && !(v.id === null || typeof v.id === 'string' || Number.isInteger(v.id))) return 'bad id type';
  if (Object.hasOwn(v, 'method')) {
    if (typeof v.method !== 'string') return 'method is not a string';
    if (Object.hasOwn(v, 'result') || Object.hasOwn(v, 'error')) return 'request carries result/error';
    if (Object.hasOwn(v, 'params') && (v.params === null || typeof v.params !== 'object')) return 'params not structured';
    return null;
  }
  if (!hasId) return 'response without id';
  const r = Object.hasOwn(v, 'result');
  const e = Object.hasOwn(v, 'error');
  if (r === e) return 'response needs exactly one of result/error';
  if (e) {
    if (v.error === null || typeof v.error !== 'object') return 'error is not an object';
    if (!Number.isInteger(v.error.code)) return 'error.code is not an integer';
    if (typeof v.error.message !== 'string') return 'error.message is not a string';
  }
  return null;
}

// How long a wait goes on before it says so on stderr. Only a diagnostic: a wait never fails by
// taking long (a loaded machine is slow, not wrong); a wait that never ends is caught by CTest's
// TIMEOUT, and this line then names what the test was waiting for.
const SLOW_WAIT_MS = 10_000;

/** `promise`, with a note on stderr (every SLOW_WAIT_MS) while it is still pending. */
export function waitNoting(promise, what) {
  const since = performance.now();
  const timer = setInterval(() => {
    process.stderr.write(`# still waiting for ${what} after ${Math.round(performance.now() - since)} ms\n`);
  }, SLOW_WAIT_MS);
  timer.unref();
  return promise.finally(() => clearInterval(timer));
}

/**
 * Re-checks `probe` each time one of `sources` signals that what it looks at may have changed,
 * until it returns something truthy (which it resolves to). A source is an object whose
 * `subscribe(fn)` calls `fn` on each such event and returns the unsubscribe function: an agent's
 * frames (`framesOf`), a directory tree's changes (`fileChanges`), a file's opens (`opensOf`), a
 * process's end (`goneOf`). There is no timed re-check: a probe needs an event that can change it.
 */
export async function until(probe, what, ...sources) {
  assert.ok(sources.length > 0, `until(${what}) needs an event source`);
  let pending = false;
  let wake = null;
  const unsubscribe = sources.map((s) => s.subscribe(() => { pending = true; wake?.(); }));
  try {
    for (;;) {
      pending = false;
      const v = await probe();
      if (v) return v;
      if (!pending) await waitNoting(new Promise((r) => { wake = r; }), what);
      wake = null;
    }
  } finally {
    for (const u of unsubscribe) u();
  }
}

/** An event source (for `until`) from an emitter's `event`. */
export function emitterSource(emitter, event) {
  return {
    subscribe(fn) {
      emitter.on(event, fn);
      return () => emitter.off(event, fn);
    },
  };
}

/** Every frame `agent` reads from the server's stdout (and each update the SDK delivers), and its end. */
export function framesOf(agent) {
  return {
    subscribe(fn) {
      agent.frameListeners.add(fn);
      return () => agent.frameListeners.delete(fn);
    },
  };
}

/** Changes under directory `dir` (fs.watch, recursive: inotify on Linux). Made before the change. */
export function fileChanges(dir) {
  return {
    subscribe(fn) {
      const w = watch(dir, { recursive: true }, () => fn());
      return () => w.close();
    },
  };
}

/**
 * A re-check every `ms`: only for state nothing announces, a PostgreSQL row read with psql in the
 * `.pg` variants (lib/pgvariant.mjs). A test on files or processes never uses it.
 */
export function everyMs(ms) {
  return {
    subscribe(fn) {
      const timer = setInterval(fn, ms);
      return () => clearInterval(timer);
    },
  };
}

/**
 * Changes of the sessions under store root `dir`: its files' changes (`fileChanges`), or, in the
 * `.pg` variants, where the sessions are rows that announce nothing, a re-check every 10 ms.
 */
export function storeChanges(dir) {
  return PG_VARIANT ? everyMs(10) : fileChanges(dir);
}

const EVENTS = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'common', 'events.py');

/**
 * Opens of `files` (inotify IN_OPEN, through tests/common/events.py: Node has no IN_OPEN). Await
 * `ready` before the action that opens them; `close()` when done. Watching /etc/ld.so.cache sees
 * every dynamically linked program start (`processStarts`).
 */
export function opensOf(...files) {
  const child = spawn('python3', [EVENTS, 'opens', ...files], { stdio: ['pipe', 'pipe', 'inherit'] });
  watchers.add(child);
  child.on('exit', () => watchers.delete(child));
  const listeners = new Set();
  let signalReady;
  const ready = new Promise((r) => { signalReady = r; });
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (text) => {
    if (text.includes('ready')) signalReady();
    if (text.includes('open')) for (const fn of listeners) fn();
  });
  return {
    ready: waitNoting(ready, `an inotify watch of ${files.join(', ')}`),
    subscribe(fn) {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    close() { child.stdin.end(); },
  };
}

/** Starts of dynamically linked programs (each opens the loader's cache): a process to appear. */
export const processStarts = () => opensOf('/etc/ld.so.cache');

/** Resolves once every process of `pids` has exited (pidfds, through tests/common/events.py). */
export function goneOf(pids) {
  const child = spawn('python3', [EVENTS, 'gone', ...pids.map(String)], { stdio: ['ignore', 'ignore', 'inherit'] });
  const done = new Promise((resolve) => child.on('exit', resolve));
  return waitNoting(done, `processes ${pids.join(', ')} to exit`);
}

/** The client methods a test may answer (connectSdk's `handlers`), by the SDK's method names. */
export const CLIENT_HANDLERS = {
  requestPermission: acp.methods.client.session.requestPermission,
  readTextFile: acp.methods.client.fs.readTextFile,
  writeTextFile: acp.methods.client.fs.writeTextFile,
  createTerminal: acp.methods.client.terminal.create,
  terminalOutput: acp.methods.client.terminal.output,
  waitForTerminalExit: acp.methods.client.terminal.waitForExit,
  killTerminal: acp.methods.client.terminal.kill,
  releaseTerminal: acp.methods.client.terminal.release,
  createElicitation: acp.methods.client.elicitation.create,
};

export class Agent {
  /**
   * @param {object} [opts]
   * @param {string[]} [opts.args] extra command-line arguments (after `--provider echo`)
   * @param {object} [opts.env] extra environment variables
   * @param {boolean} [opts.defaultPaths] leave out --store/--log-file (they then default under DSH_ACP_HOME)
   * @param {boolean} [opts.bare] run with `args` only: no --provider echo, --store or --log-file
   */
  constructor({ args = [], env = {}, defaultPaths = false, bare = false } = {}) {
    this.home = mkdtempSync(path.join(tmpdir(), 'dsh-acp-e2e-'));
    // --store may be repeated (every root is listed): a test that names its own root gets only that one.
    const ownStore = args.indexOf('--store');
    // With defaultPaths the server's root is under DSH_ACP_HOME (the test's, when it names one).
    this.storeDir = ownStore >= 0 ? args[ownStore + 1]
      : path.join(defaultPaths ? (env.DSH_ACP_HOME ?? this.home) : this.home, 'sessions');
    this.logFile = path.join(this.home, 'dsh-acp.log');
    const paths = defaultPaths ? [] : [...(ownStore >= 0 ? [] : ['--store', this.storeDir]), '--log-file', this.logFile];
    this.args = bare ? [...args] : ['--provider', 'echo', ...paths, ...args];
    if (PG_VARIANT && !bare) this.args = pgArgs(this.args, defaultPaths ? path.join(env.DSH_ACP_HOME ?? this.home, 'sessions') : null);
    this.frames = [];          // {frame, line, at} in arrival order
    this.violations = [];      // stdout lines that are not JSON-RPC frames
    this.stderr = '';
    this.waiters = [];         // pending nextFrame() calls
    this.frameListeners = new Set();  // framesOf(): told of each frame and of stdout's end
    this.nextId = 1000;
    this.sdkReadable = null;   // controller for the SDK's input, when connected
    this.child = spawn(BIN, this.args, {
      // DSH_HOME points into the test's home: a developer's own ~/.dsh/sessions is never listed.
      env: { ...process.env, DSH_ACP_HOME: this.home, DSH_HOME: path.join(this.home, 'dsh'), ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    live.add(this);
    this.spawnedAt = performance.now();
    this.exitInfo = null;
    // 'exit' gives the time the process ended; 'close' comes once its stdout is fully read, so
    // waiting for it means every frame the process wrote has been seen.
    this.child.on('exit', (code, signal) => { this.exitAt = performance.now(); });
    this.exited = new Promise((resolve) => {
      this.child.on('close', (code, signal) => {
        this.exitInfo = { code, signal, at: this.exitAt ?? performance.now() };
        resolve(this.exitInfo);
      });
    });
    this.child.on('error', (err) => this.violations.push(`spawn error: ${err.message}`));
    this.child.stdin.on('error', () => { /* EPIPE after exit: the tests check exit status instead */ });
    this.child.stderr.on('data', (d) => { this.stderr += d.toString('utf8'); });

    let pending = Buffer.alloc(0);
    const decoder = new TextDecoder('utf-8', { fatal: true });
    this.child.stdout.on('data', (chunk) => {
      if (this.sdkReadable) {
        try { this.sdkReadable.enqueue(new Uint8Array(chunk)); } catch { /* the SDK side already closed */ }
      }
      pending = Buffer.concat([pending, chunk]);
      let nl;
      while ((nl = pending.indexOf(0x0a)) >= 0) {
        const bytes = pending.subarray(0, nl);
        pending = pending.subarray(nl + 1);
        this.#onLine(bytes, decoder);
      }
    });
    this.child.stdout.on('end', () => {
      if (pending.length > 0) this.violations.push(`unterminated last stdout line: ${pending.toString('utf8').slice(0, 200)}`);
      if (this.sdkReadable) { try { this.sdkReadable.close(); } catch { /* already closed */ } }
      this.stdoutEnded = true;
      for (const fn of this.frameListeners) fn();
      for (const w of this.waiters.splice(0)) w.reject(new Error(`stdout ended while waiting for ${w.what}`));
    });
  }

  #onLine(bytes, decoder) {
    let text;
    try {
      text = decoder.decode(bytes);
    } catch {
      this.violations.push(`stdout line is not valid UTF-8: ${bytes.toString('hex').slice(0, 200)}`);
      return;
    }
    let frame;
    try {
      frame = JSON.parse(text);
    } catch {
      this.violations.push(`stdout line is not JSON: ${text.slice(0, 200)}`);
      return;
    }
    const problem = frameProblem(frame);
    if (problem) {
      this.violations.push(`stdout line is not a JSON-RPC frame (${problem}): ${text.slice(0, 200)}`);
      return;
    }
    const entry = { frame, line: text, at: performance.now(), index: this.frames.length };
    this.frames.push(entry);
    for (const fn of this.frameListeners) fn();
    for (let i = 0; i < this.waiters.length;) {
      const w = this.waiters[i];
      if (entry.index >= w.from && w.pred(frame)) {
        this.waiters.splice(i, 1);
        w.resolve(entry);
      } else {
        i++;
      }
    }
  }

  // ---- raw mode -------------------------------------------------------------------------------

  /** Writes bytes or a string to stdin as is. */
  writeRaw(data) {
    return new Promise((resolve, reject) => this.child.stdin.write(data, (err) => (err ? reject(err) : resolve())));
  }

  /** Writes one JSON value as a frame (newline appended). */
  send(value) {
    return this.writeRaw(JSON.stringify(value) + '\n');
  }

  /**
   * Waits for the first frame (at or after frame index `from`) matching `pred`; resolves to the entry.
   * Rejects only when stdout ends first.
   */
  nextFrame(pred, { from = 0, what = 'a frame' } = {}) {
    const found = this.frames.find((e) => e.index >= from && pred(e.frame));
    if (found) return Promise.resolve(found);
    if (this.stdoutEnded) return Promise.reject(new Error(`stdout ended before ${what}`));
    const p = new Promise((resolve, reject) => this.waiters.push({ pred, from, resolve, reject, what }));
    return waitNoting(p, what);
  }

  /** Waits for the response with the given id (frames at or after `from`). Resolves to the frame. */
  async response(id, opts = {}) {
    const e = await this.nextFrame(
      (f) => !Object.hasOwn(f, 'method') && Object.hasOwn(f, 'id') && f.id === id,
      { what: `response to id ${JSON.stringify(id)}`, ...opts },
    );
    return e.frame;
  }

  /** Sends a request in raw mode without waiting for its answer; resolves to its id. */
  async request(method, params, { id = this.nextId++ } = {}) {
    const msg = { jsonrpc: '2.0', id, method };
    if (params !== undefined) msg.params = params;
    await this.send(msg);
    return id;
  }

  /** Sends a request in raw mode and waits for its response frame. */
  async call(method, params, opts = {}) {
    const from = this.frames.length;
    return this.response(await this.request(method, params, opts), { from });
  }

  /** Answers a request of the server in raw mode. */
  respond(id, result) {
    return this.send({ jsonrpc: '2.0', id, result });
  }

  /** Sends a notification in raw mode. */
  notify(method, params) {
    const msg = { jsonrpc: '2.0', method };
    if (params !== undefined) msg.params = params;
    return this.send(msg);
  }

  /** Raw initialize; asserts success. */
  async initialize() {
    const r = await this.call('initialize', { protocolVersion: 1, clientCapabilities: {} });
    assert.ok(r.result, `initialize failed: ${JSON.stringify(r)}`);
    return r.result;
  }

  /** Raw session/new; asserts success and returns the session id. */
  async newSession(cwd = this.home) {
    const r = await this.call('session/new', { cwd, mcpServers: [] });
    assert.ok(r.result, `session/new failed: ${JSON.stringify(r)}`);
    return r.result.sessionId;
  }

  /** session/update notifications received so far (optionally for one session, from frame index). */
  updates({ sessionId, from = 0 } = {}) {
    return this.frames
      .filter((e) => e.index >= from && e.frame.method === 'session/update' && (!sessionId || e.frame.params?.sessionId === sessionId));
  }

  /** agent_message_chunk notifications received so far (optionally for one session, from frame index). */
  chunks(opts = {}) {
    return this.updates(opts).filter((e) => e.frame.params.update?.sessionUpdate === 'agent_message_chunk');
  }

  /** Concatenated agent_message_chunk text of the given update entries. */
  static chunkText(entries) {
    return entries
      .map((e) => e.frame.params.update)
      .filter((u) => u.sessionUpdate === 'agent_message_chunk' && u.content?.type === 'text')
      .map((u) => u.content.text)
      .join('');
  }

  // ---- SDK mode -------------------------------------------------------------------------------

  /**
   * Connects the official SDK client app to the child's stdio. Returns the `ClientConnection`
   * (`.agent` is the ClientContext used to call agent methods). All session/update notifications
   * the SDK delivers are collected in `this.sdkUpdates` (params objects, arrival order).
   * `handlers` answers the agent's requests, by the names of CLIENT_HANDLERS; each is called
   * with the SDK's request context ({params, signal, requestId, ...}; `signal` aborts when the agent
   * withdraws the request with $/cancel_request) and returns the result. Without one,
   * requestPermission answers `cancelled` and the other methods are unknown to the client.
   * `onUpdate(params)`, if given, sees each update as it is delivered (the demo prints them).
   */
  connectSdk(handlers = {}, { onUpdate } = {}) {
    assert.equal(this.sdkReadable, null, 'SDK already connected');
    this.sdkUpdates = [];
    const readable = new ReadableStream({
      start: (controller) => { this.sdkReadable = controller; },
    });
    const child = this.child;
    const writable = new WritableStream({
      write(chunk) {
        return new Promise((resolve, reject) => child.stdin.write(chunk, (err) => (err ? reject(err) : resolve())));
      },
    });
    const app = acp.client({ name: 'dsh-acp-e2e' })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        this.sdkUpdates.push({ params, at: performance.now() });
        onUpdate?.(params);
        for (const fn of this.frameListeners) fn();
      });
    const unknown = Object.keys(handlers).filter((k) => !Object.hasOwn(CLIENT_HANDLERS, k));
    assert.deepEqual(unknown, [], `unknown client handlers (known: ${Object.keys(CLIENT_HANDLERS)})`);
    const all = { requestPermission: () => ({ outcome: { outcome: 'cancelled' } }), ...handlers };
    for (const [name, handler] of Object.entries(all)) app.onRequest(CLIENT_HANDLERS[name], handler);
    this.connection = app.connect(acp.ndJsonStream(writable, readable));
    return this.connection;
  }

  /** SDK-delivered updates for one session. */
  sdkUpdatesFor(sessionId) {
    return this.sdkUpdates.filter((u) => u.params.sessionId === sessionId);
  }

  /** Concatenated agent_message_chunk text of SDK-delivered updates. */
  static sdkText(updates) {
    return updates
      .map((u) => u.params.update)
      .filter((u) => u.sessionUpdate === 'agent_message_chunk' && u.content?.type === 'text')
      .map((u) => u.content.text)
      .join('');
  }

  // ---- lifetime -------------------------------------------------------------------------------

  /** Ends stdin, after `data` if given (written as is; a server that already exited is no error). */
  closeStdin(data) {
    this.child.stdin.end(data);
  }

  signal(sig) {
    this.child.kill(sig);
  }

  /** turn/start events in the session's log now (0 before it exists or while a line is being written). */
  turnCount(sessionId) {
    if (PG_VARIANT) return turnStarts(this.storeDir, sessionId);
    const file = logFiles(this.storeDir).find((f) => segmentOfLog(f) === encodeSegment(sessionId));
    if (!file) return 0;
    try {
      return readLog(file).filter((e) => e.type === 'turn/start').length;
    } catch {
      return 0;
    }
  }

  /**
   * Resolves once the session's log holds `count` turn/start events: that prompt is running (its
   * turn is logged before the model is called). The event a test waits for instead of a fixed
   * sleep; the log is re-read as the store's files change.
   */
  async turnStarted(sessionId, count = 1) {
    await until(() => this.turnCount(sessionId) >= count, `turn ${count} of ${sessionId} to start`, storeChanges(this.storeDir));
  }

  /** Waits for the process to exit and its stdout to be read to the end. */
  waitExit() {
    return waitNoting(this.exited, 'the process to exit');
  }

  log() {
    return existsSync(this.logFile) ? readFileSync(this.logFile, 'utf8') : '';
  }

  /** Asserts that stdout carried nothing but JSON-RPC frames so far. */
  assertFramesOnly() {
    assert.deepEqual(this.violations, [], 'stdout must carry only JSON-RPC frames');
  }

  /**
   * Normal end of a test: closes stdin, expects exit code 0, checks stdout carried only frames,
   * then removes the temp home.
   */
  async finish() {
    try {
      if (this.connection) { try { this.connection.close(); } catch { /* closed */ } }
      this.closeStdin();
      const { code, signal } = await this.waitExit();
      assert.equal(signal, null, `exited by signal ${signal}; stderr: ${this.stderr}`);
      assert.equal(code, 0, `exit code ${code}; stderr: ${this.stderr}`);
      this.assertFramesOnly();
    } finally {
      this.dispose();
    }
  }

  /** Kills the child (if still running) and removes the temp home. Safe to call twice. */
  dispose() {
    if (!this.exitInfo) { try { this.child.kill('SIGKILL'); } catch { /* gone */ } }
    if (this.connection) { try { this.connection.close(); } catch { /* closed */ } }
    for (const w of this.waiters.splice(0)) w.reject(new Error('agent disposed'));
    rmSync(this.home, { recursive: true, force: true });
    live.delete(this);
  }
}

/**
 * The server arguments of the PostgreSQL variant (lib/pgvariant.mjs): each `--store DIR` (and the
 * default store `defaultStore`, when the server would take it) becomes the URL of the database standing
 * for DIR, its files copied in. A server keeps the layout a root holds, so a directory with logs names
 * its generation (new sessions take the shapes of the logs beside them).
 */
function pgArgs(args, defaultStore) {
  const valueOf = (flag) => {
    const i = args.findIndex((a) => a === flag || a.startsWith(`${flag}=`));
    return i < 0 ? undefined : args[i].includes('=') ? args[i].slice(flag.length + 1) : args[i + 1];
  };
  const dirs = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--store' && i + 1 < args.length && !/^postgres(ql)?:/.test(args[i + 1])) dirs.push(args[++i]);
  }
  if (defaultStore && dirs.length === 0 && !args.includes('--store')) dirs.push(defaultStore);
  // A server keeps the layout a root holds: a root with logs names its generation.
  let generation = valueOf('--store-generation');
  const extra = [];
  if (!generation && dirs.length > 0 && logFilesRaw(dirs[0]).length > 0) {
    generation = generationOf(dirs[0]);
    extra.push('--store-generation', generation);
  }
  const opts = { generation, compression: valueOf('--store-compression') };
  const out = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--store' && dirs.includes(args[i + 1])) out.push('--store', pgServerStore(args[++i], opts));
    else out.push(args[i]);
  }
  if (defaultStore && dirs[0] === defaultStore && !args.includes('--store')) out.push('--store', pgServerStore(defaultStore, opts));
  return [...out, ...extra];
}

/**
 * Starts an agent and registers its disposal with the node:test context `t`, so a failing test
 * never leaves a child or temp dir behind.
 */
export function startAgent(t, opts) {
  const a = new Agent(opts);
  t.after(() => a.dispose());
  return a;
}

/**
 * Starts an agent and connects the SDK client: returns {agent, ctx} where `ctx` is the SDK's
 * ClientContext (ctx.request(method, params), ctx.notify(method, params)). `opts.client` holds the
 * client's request handlers (connectSdk's `handlers`).
 */
export function startSdkAgent(t, opts = {}) {
  const { client, ...agentOpts } = opts;
  const agent = startAgent(t, agentOpts);
  const conn = agent.connectSdk(client);
  return { agent, ctx: conn.agent };
}

// ---- calls of tools from the model (the echo model's [[echo:tool=...]] directives) --------------

/**
 * Sends a prompt in raw mode, allowing the permission request of its tool call, whose title must
 * match `title`; resolves to { from, answer } (the frame index it started at, its answer frame).
 */
export async function promptAllowing(agent, sessionId, text, id, title = /mcp__/) {
  const from = agent.frames.length;
  await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] }, { id });
  const asked = await agent.nextFrame((f) => f.method === 'session/request_permission', { from, what: 'a permission request' });
  assert.match(asked.frame.params.toolCall.title ?? '', title);
  await agent.respond(asked.frame.id, { outcome: { outcome: 'selected', optionId: 'allow_once' } });
  return { from, answer: await agent.response(id, { from }) };
}

/** The one completed or failed tool_call_update of the session since `from`: its status and text. */
export function finalCard(agent, sessionId, from) {
  const updates = agent.updates({ sessionId, from }).map((e) => e.frame.params.update)
    .filter((u) => u.sessionUpdate === 'tool_call_update' && (u.status === 'completed' || u.status === 'failed'));
  assert.equal(updates.length, 1, JSON.stringify(updates));
  const u = updates[0];
  return { status: u.status, text: (u.content ?? []).map((c) => c.content?.text ?? '').join('') };
}

/** The initialize params a typical editor sends. */
export const INIT_PARAMS = {
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  clientInfo: { name: 'dsh-acp-e2e', version: '0.0.0' },
};

// ---- the echo model's answer (docs/decisions.md#the-echo-model) ---------------------------------

const PREVIEW_CHARS = 48;

function oneLine(text, maxChars = Infinity) {
  const chars = Array.from(text); // code points
  const shown = chars.slice(0, maxChars).map((c) => (c === '\n' ? '\u23CE' : c)).join('');
  return { shown, cut: chars.length > maxChars };
}

/**
 * The exact echo answer for a request of `messages` ({role, text} or, for the system message,
 * {role: 'system', bytes: N} since its text is not ours to know).
 */
export function echoAnswer(messages) {
  let out = `echo: received ${messages.length} messages\n`;
  let lastUser = null;
  messages.forEach((m, i) => {
    const bytes = m.bytes ?? Buffer.byteLength(m.text, 'utf8');
    out += `[${i + 1}] ${m.role} ${bytes} bytes`;
    if (m.role !== 'system') {
      const { shown, cut } = oneLine(m.text, PREVIEW_CHARS);
      out += `: ${shown}${cut ? '\u2026' : ''}`;
    }
    out += '\n';
    if (m.role === 'user') lastUser = m;
  });
  out += `last user message: ${lastUser ? oneLine(lastUser.text).shown : ''}`;
  return out;
}

/** The chunks the echo answer streams in: each ends after a space. */
export function echoChunks(answer) {
  return answer.match(/[^ ]* |[^ ]+$/g) ?? [];
}

/** The system message size the echo answer reports (the system prompt is not ours to fix). */
export function systemBytes(answer) {
  const m = /^\[1\] system (\d+) bytes$/m.exec(answer);
  assert.ok(m, `no system line in echo answer: ${JSON.stringify(answer)}`);
  return Number(m[1]);
}

/** The "last user message:" line of an echo answer. */
export function lastUserLine(answer) {
  const m = /^last user message: (.*)$/ms.exec(answer);
  assert.ok(m, `no last user message line in ${JSON.stringify(answer)}`);
  return m[1];
}

/** Frame predicate: an agent_message_chunk notification (of one session, if given). */
export const isChunk = (sessionId) => (f) =>
  f.method === 'session/update' && f.params?.update?.sessionUpdate === 'agent_message_chunk' &&
  (!sessionId || f.params.sessionId === sessionId);

export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
