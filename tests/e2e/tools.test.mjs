// The agent's tools end to end (issue 16), driven by the official SDK client: the echo model calls
// them through [[echo:tool=NAME {JSON}]] directives. Through the editor when the client offers
// fs/terminal (an in-memory file system, real child processes per terminal), else in the server;
// permission before writes, edits and commands; confinement to the session's directory; live cards
// against session/load's replay; cancel at each stage; timeouts; bad calls; a kill -9 while a
// command runs. Processes a command starts are found by a marker in their command line (/proc).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { Agent, BIN, INIT_PARAMS, acp, startSdkAgent, until, emitterSource, goneOf, processStarts } from './lib/agent.mjs';
import { events, logPath } from './lib/store.mjs';

const M = acp.methods.agent;

const selected = (optionId) => ({ outcome: { outcome: 'selected', optionId } });
const OPTION_IDS = ['allow_once', 'allow_always', 'reject_once', 'reject_always'];

/** One [[echo:tool=...]] directive; `args` an object, or a string passed as written. */
const tool = (name, args) => `[[echo:tool=${name} ${typeof args === 'string' ? args : JSON.stringify(args)}]]`;

const promptText = (ctx, sessionId, text) =>
  ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });

/** A temp directory removed when the test ends (for a store or cwd shared by two processes). */
function scratch(t) {
  const dir = mkdtempSync(path.join(tmpdir(), 'dsh-acp-tools-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * An agent with the SDK client, initialized with `caps` (merged over "no fs, no terminal"), and a
 * session in `cwd` (default: <home>/work, created). `client`: the SDK handlers (agent.mjs).
 */
async function toolSession(t, { caps = {}, client = {}, store, cwd } = {}) {
  const { agent, ctx } = startSdkAgent(t, { client, args: store ? ['--store', store] : [] });
  const clientCapabilities = { fs: { readTextFile: false, writeTextFile: false }, terminal: false, ...caps };
  await ctx.request(M.initialize, { ...INIT_PARAMS, clientCapabilities });
  const dir = cwd ?? path.join(agent.home, 'work');
  mkdirSync(dir, { recursive: true });
  const { sessionId } = await ctx.request(M.session.new, { cwd: dir, mcpServers: [] });
  return { agent, ctx, sessionId, cwd: dir };
}

/**
 * The tool cards in session/update params, by toolCallId in first-seen order: `statuses` (every
 * status sent, in order, and `at`, when each arrived), `updates` (the raw updates) and `card` (all
 * fields merged, the last value of each winning: what a client shows once the call is over).
 */
function toolCards(updates) {
  const cards = new Map();
  for (const { params, at } of updates) {
    const u = params.update;
    if (u.sessionUpdate !== 'tool_call' && u.sessionUpdate !== 'tool_call_update') continue;
    let c = cards.get(u.toolCallId);
    if (!c) cards.set(u.toolCallId, (c = { statuses: [], updates: [], card: {}, at: [] }));
    c.updates.push(u);
    if (u.status) {
      c.statuses.push(u.status);
      c.at.push(at);
    }
    const { sessionUpdate, ...fields } = u;
    Object.assign(c.card, fields);
  }
  return cards;
}

/** The text of a card's content blocks of type "content". */
const cardText = (card) =>
  (card.content ?? []).filter((b) => b.type === 'content').map((b) => b.content?.text ?? '').join('\n');

/** The text of a tool/result event. */
const resultText = (e) => (e.data.content ?? []).map((b) => b.text ?? '').join('\n');

const byType = (evs, type) => evs.filter((e) => e.type === type);
const resultOf = (evs, callId) => {
  const found = evs.filter((e) => e.type === 'tool/result' && e.data.callId === callId);
  assert.equal(found.length, 1, `one tool/result for ${callId}: ${JSON.stringify(found)}`);
  return found[0];
};

/** Waits for the first frame the agent wrote (from frame index `from`) that is a status update of a card. */
const cardStatus = (agent, toolCallId, status, from = 0) =>
  agent.nextFrame((f) => f.method === 'session/update' && f.params?.update?.toolCallId === toolCallId &&
    f.params.update.status === status, { from, what: `${toolCallId} ${status}` });

// ---- processes -------------------------------------------------------------------------------

/** {pid, ppid, state} of a process, or null once it is gone. */
function procStat(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { pid, state: rest[0], ppid: Number(rest[1]) };
  } catch {
    return null;
  }
}

const pids = () => readdirSync('/proc').filter((n) => /^\d+$/.test(n)).map(Number);

/** Live processes whose command line holds `marker`. */
function processesWith(marker) {
  return pids().filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
    } catch {
      return false;
    }
  });
}

const childrenOf = (ppid) => pids().filter((pid) => procStat(pid)?.ppid === ppid);

/** Running: present and not a zombie. */
const running = (pid) => {
  const s = procStat(pid);
  return s !== null && s.state !== 'Z' && s.state !== 'X';
};

// ---- the editor: an in-memory file system and real terminals ---------------------------------

/** fs/read_text_file and fs/write_text_file over a Map (path -> text); every request recorded. */
function memoryFs(files, calls) {
  return {
    readTextFile: ({ params }) => {
      calls.push({ method: 'read', path: params.path, at: performance.now() });
      if (!files.has(params.path)) throw acp.RequestError.resourceNotFound(params.path);
      return { content: files.get(params.path) };
    },
    writeTextFile: ({ params }) => {
      calls.push({ method: 'write', path: params.path, content: params.content, at: performance.now() });
      files.set(params.path, params.content);
      return {};
    },
  };
}

/**
 * terminal/* with one real child process (its own process group) per terminal. `calls` records
 * every request ({method, terminalId, params}); `aborted` the requests the agent withdrew.
 */
class Terminals {
  constructor(t) {
    this.calls = [];
    // Each recorded request is an event (a test's until() re-checks `calls` on it).
    this.events = new EventEmitter();
    this.calls.push = (...entries) => {
      const n = Array.prototype.push.apply(this.calls, entries);
      this.events.emit('call');
      return n;
    };
    this.aborted = [];
    this.terms = new Map();
    this.created = new Promise((resolve) => { this.onCreate = resolve; });
    t.after(() => { for (const term of this.terms.values()) this.#kill(term); });
  }

  #kill(term) {
    if (term.exit) return;
    try { process.kill(-term.child.pid, 'SIGKILL'); } catch { /* gone */ }
  }

  #get(params) {
    const term = this.terms.get(params.terminalId);
    if (!term) throw acp.RequestError.invalidParams(`unknown terminal ${params.terminalId}`);
    return term;
  }

  handlers() {
    return {
      createTerminal: ({ params }) => {
        const terminalId = `term-${this.terms.size + 1}`;
        this.calls.push({ method: 'create', terminalId, params });
        const env = { ...process.env };
        for (const v of params.env ?? []) env[v.name] = v.value;
        const child = spawn(params.command, params.args ?? [], {
          cwd: params.cwd ?? undefined, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true,
        });
        const term = { child, output: '', exit: null, limit: params.outputByteLimit ?? Infinity };
        const add = (d) => {
          term.output += d.toString('utf8');
          if (Buffer.byteLength(term.output) > term.limit) term.output = term.output.slice(-term.limit);
        };
        child.stdout.on('data', add);
        child.stderr.on('data', add);
        term.exited = new Promise((resolve) => child.on('close', (exitCode, signal) => {
          term.exit = { exitCode, signal };
          resolve(term.exit);
        }));
        this.terms.set(terminalId, term);
        this.onCreate(terminalId);
        return { terminalId };
      },
      terminalOutput: ({ params }) => {
        this.calls.push({ method: 'output', terminalId: params.terminalId });
        const term = this.#get(params);
        return { output: term.output, truncated: false, ...(term.exit ? { exitStatus: term.exit } : {}) };
      },
      waitForTerminalExit: ({ params, signal }) => {
        this.calls.push({ method: 'wait_for_exit', terminalId: params.terminalId });
        const term = this.#get(params);
        return new Promise((resolve, reject) => {
          term.exited.then(resolve);
          signal.addEventListener('abort', () => {
            this.aborted.push({ method: 'wait_for_exit', terminalId: params.terminalId });
            reject(acp.RequestError.requestCancelled());
          });
        });
      },
      killTerminal: ({ params }) => {
        this.calls.push({ method: 'kill', terminalId: params.terminalId });
        this.#kill(this.#get(params));
        return {};
      },
      releaseTerminal: ({ params }) => {
        this.calls.push({ method: 'release', terminalId: params.terminalId });
        const term = this.#get(params);
        this.#kill(term);
        this.terms.delete(params.terminalId);
        return {};
      },
    };
  }
}

// ---- 1. the editor's file system ---------------------------------------------------------------

test('editor fs: read goes to fs/read_text_file, edit asks (allow_once) then goes to fs/write_text_file', async (t) => {
  const files = new Map();
  const fsCalls = [];
  const asked = [];
  const client = {
    ...memoryFs(files, fsCalls),
    requestPermission: ({ params }) => {
      asked.push({ params, at: performance.now() });
      return selected('allow_once');
    },
  };
  const { agent, ctx, sessionId, cwd } = await toolSession(t, { caps: { fs: { readTextFile: true, writeTextFile: true } }, client });
  // ghost.txt exists only in the editor; notes.txt differs on disk and in the editor's buffer.
  const ghost = path.join(cwd, 'ghost.txt');
  const notes = path.join(cwd, 'notes.txt');
  writeFileSync(notes, 'on disk\n');
  files.set(ghost, 'ghost line\n');
  files.set(notes, 'one\ntwo\nthree\n');

  const r = await promptText(ctx, sessionId,
    `look ${tool('read', { file_path: 'ghost.txt' })} ${tool('edit', { file_path: 'notes.txt', old_string: 'two', new_string: 'TWO' })}`);
  assert.equal(r.stopReason, 'end_turn');

  // The editor saw: the read, then (after the permission) the edit's read and write.
  assert.deepEqual(fsCalls.map((c) => [c.method, c.path]), [['read', ghost], ['read', notes], ['write', notes]]);
  assert.equal(files.get(notes), 'one\nTWO\nthree\n');
  assert.equal(readFileSync(notes, 'utf8'), 'on disk\n', 'the server never wrote the disk');
  assert.ok(!existsSync(ghost), 'nor created the editor-only file');

  // One question, for the edit only, with the four options and the change it asks about.
  assert.equal(asked.length, 1, 'reads are free; the edit is asked for');
  const q = asked[0].params;
  assert.equal(q.sessionId, sessionId);
  assert.equal(q.toolCall.toolCallId, 'echo_0_1');
  assert.equal(q.toolCall.kind, 'edit');
  assert.deepEqual(q.options.map((o) => o.optionId), OPTION_IDS);
  assert.ok(q.toolCall.content?.some((b) => b.type === 'diff' && b.path === notes), JSON.stringify(q.toolCall));
  assert.ok(fsCalls[1].at > asked[0].at, 'the edit ran only once allowed');

  // Cards: pending -> in_progress -> completed, the read's text and the edit's diff.
  const cards = toolCards(agent.sdkUpdatesFor(sessionId));
  assert.deepEqual([...cards.keys()], ['echo_0_0', 'echo_0_1']);
  const read = cards.get('echo_0_0');
  const edit = cards.get('echo_0_1');
  assert.deepEqual(read.statuses, ['pending', 'in_progress', 'completed']);
  assert.deepEqual(edit.statuses, ['pending', 'in_progress', 'completed']);
  assert.ok(edit.at[0] < asked[0].at && asked[0].at < edit.at[1], 'the card is pending while the user is asked');
  // The change is on the card from its first tool_call, as on the question.
  assert.equal(edit.updates[0].sessionUpdate, 'tool_call');
  assert.deepEqual(edit.updates[0].content, [{ type: 'diff', path: notes, oldText: 'two', newText: 'TWO' }]);
  assert.deepEqual(q.toolCall.content, edit.updates[0].content);
  assert.equal(read.updates[0].content, undefined, 'a read has nothing to show before it runs');
  assert.equal(read.card.kind, 'read');
  assert.match(cardText(read.card), /1: ghost line/);
  const diff = edit.card.content.find((b) => b.type === 'diff');
  assert.ok(diff, `the edit's card shows a diff: ${JSON.stringify(edit.card)}`);
  assert.equal(diff.path, notes);
  assert.match(diff.oldText, /two/);
  assert.match(diff.newText, /TWO/);
  assert.ok(!diff.newText.includes('on disk'), 'the diff is of the editor\'s text');

  // The log: both calls and results (the edit's with meta.diffs), the question and the answer.
  const evs = events(agent.storeDir, sessionId);
  assert.deepEqual(byType(evs, 'tool/call').map((e) => [e.data.callId, e.data.name]), [['echo_0_0', 'read'], ['echo_0_1', 'edit']]);
  const readResult = resultOf(evs, 'echo_0_0');
  assert.equal(readResult.data.isError, false);
  assert.match(resultText(readResult), /1: ghost line/);
  const editResult = resultOf(evs, 'echo_0_1');
  assert.equal(editResult.data.isError, false);
  assert.equal(editResult.data.meta.diffs[0].path, notes);
  assert.match(editResult.data.meta.diffs[0].newText, /TWO/);
  assert.deepEqual(byType(evs, 'approval/asked').map((e) => [e.data.toolName, e.data.callId]), [['edit', 'echo_0_1']]);
  assert.deepEqual(byType(evs, 'approval/decided').map((e) => e.data.outcome), ['allowed-once']);
  // The model got both results.
  assert.match(Agent.sdkText(agent.sdkUpdatesFor(sessionId)), /\[4\] tool \d+ bytes: <path>.*\n\[5\] tool \d+ bytes: Edited notes\.txt/);
  await agent.finish();
});

// ---- 2. the editor's terminal ------------------------------------------------------------------

test('editor terminal: bash runs in terminal/create\'s process, the card embeds the terminal, the result has its output', async (t) => {
  const terms = new Terminals(t);
  const client = { ...terms.handlers(), requestPermission: () => selected('allow_once') };
  const { agent, ctx, sessionId, cwd } = await toolSession(t, { caps: { terminal: true }, client });
  const command = 'echo out-$((6*7)); pwd; echo err >&2; exit 3';
  const r = await promptText(ctx, sessionId, `run ${tool('bash', { command, description: 'print things' })}`);
  assert.equal(r.stopReason, 'end_turn');

  const create = terms.calls[0];
  assert.equal(create.method, 'create');
  assert.equal(create.params.sessionId, sessionId);
  assert.equal(create.params.command, 'bash');
  assert.deepEqual(create.params.args, ['-c', command]);
  assert.equal(create.params.cwd, cwd);
  assert.ok(create.params.outputByteLimit > 0);
  assert.deepEqual(terms.calls.map((c) => c.method), ['create', 'wait_for_exit', 'output', 'release']);
  assert.ok(terms.calls.every((c) => c.terminalId === 'term-1'));

  // pending, in_progress (dispatched), in_progress with the terminal once it exists, then failed
  // (it exited 3) with the terminal still there and a line saying how the command ended.
  const card = toolCards(agent.sdkUpdatesFor(sessionId)).get('echo_0_0');
  assert.deepEqual(card.statuses, ['pending', 'in_progress', 'in_progress', 'failed']);
  assert.equal(card.card.kind, 'execute');
  const embedding = card.updates.filter((u) => u.content?.some((b) => b.type === 'terminal'));
  assert.equal(embedding.length, 2, `the terminal is embedded from its creation to the end: ${JSON.stringify(card.updates)}`);
  assert.equal(embedding[0].status, 'in_progress');
  assert.deepEqual(embedding[0].content, [{ type: 'terminal', terminalId: 'term-1' }]);
  assert.equal(embedding[1], card.updates.at(-1));
  assert.deepEqual(card.card.content, [{ type: 'terminal', terminalId: 'term-1' },
    { type: 'content', content: { type: 'text', text: 'Exited with code 3.' } }]);
  assert.deepEqual(card.card._meta, { 'dsh-acp/exitStatus': { exitCode: 3, signal: null } });

  const result = resultOf(events(agent.storeDir, sessionId), 'echo_0_0');
  const text = resultText(result);
  // The output itself is in rawOutput, as the model read it.
  assert.deepEqual(card.updates.at(-1).rawOutput, { output: text, isError: false, exitStatus: { exitCode: 3, signal: null } });
  assert.match(text, /out-42[\s\S]*\[exit code: 3\]/);
  assert.ok(text.includes(cwd), 'ran in the session\'s cwd');
  assert.match(text, /err/);
  assert.deepEqual(result.data.meta, { exitStatus: { exitCode: 3, signal: null } });

  // A reload has no terminal to show (released; the client may be another): the output as the
  // model read it, with the same status and _meta.
  const from = agent.sdkUpdatesFor(sessionId).length;
  await ctx.request(M.session.load, { sessionId, cwd, mcpServers: [] });
  const replayed = toolCards(agent.sdkUpdatesFor(sessionId).slice(from)).get('echo_0_0');
  assert.equal(replayed.card.status, 'failed');
  assert.deepEqual(replayed.card._meta, card.card._meta);
  assert.equal(cardText(replayed.card), text);
  assert.ok(!replayed.card.content.some((b) => b.type === 'terminal'));
  await agent.finish();
});

// rawOutput on every result's final update: the text the model read, whether it was an error, a
// command's end; at most 32 KiB of output, cut on a code point with a note, in a frame within 32 KiB.
test('rawOutput: every final card update carries the output, bounded, valid UTF-8', async (t) => {
  const { agent, ctx, sessionId } = await toolSession(t, { client: { requestPermission: () => selected('allow_once') } });
  const r = await promptText(ctx, sessionId, [
    tool('bash', { command: "head -c 40000 /dev/zero | tr '\\0' x; printf '\\342\\202\\254\\377 end'", description: 'big' }),
    tool('read', { file_path: 'missing.txt' }),
    tool('glob', { pattern: '*.none' }),
  ].join(' '));
  assert.equal(r.stopReason, 'end_turn');
  const cards = toolCards(agent.sdkUpdatesFor(sessionId));
  const evs = events(agent.storeDir, sessionId);
  for (const [id, c] of cards) {
    const last = c.updates.at(-1);
    assert.ok(last.rawOutput, `${id} has rawOutput`);
    assert.ok(c.updates.slice(0, -1).every((u) => u.rawOutput === undefined), `${id}: only on the final update`);
    assert.equal(last.rawOutput.isError, resultOf(evs, id).data.isError);
  }
  const big = cards.get('echo_0_0').updates.at(-1).rawOutput;
  assert.deepEqual(big.exitStatus, { exitCode: 0, signal: null });
  assert.ok(Buffer.byteLength(big.output) <= 32 * 1024);
  assert.match(big.output, /^x{4096}/);
  const note = big.output.match(/\n\u2026 \((\d+) more bytes not shown\)$/);
  assert.ok(note, `the cut is noted: ${big.output.slice(-80)}`);
  const whole = resultText(resultOf(evs, 'echo_0_0'));
  assert.ok(whole.endsWith('x\u20ac\ufffd end'), 'the model read the bad byte as U+FFFD');
  const kept = big.output.slice(0, note.index);
  assert.ok(whole.startsWith(kept));
  assert.equal(Buffer.byteLength(kept) + Number(note[1]), Buffer.byteLength(whole), 'the note counts the bytes left out');
  assert.equal(cards.get('echo_0_1').updates.at(-1).rawOutput.isError, true);
  assert.match(cards.get('echo_0_1').updates.at(-1).rawOutput.output, /^Error: /);
  for (const { line } of agent.frames.filter((f) => f.frame.method === 'session/update'))
    assert.ok(Buffer.byteLength(line) <= 32 * 1024);
  assert.deepEqual(agent.violations, []);
  await agent.finish();
});

// ---- 3. the server's own tools -------------------------------------------------------------------

test('no client capabilities: read, write, edit and bash run in the server; reject_once and allow_always', async (t) => {
  const asked = [];
  let answer = () => 'allow_once';
  const client = { requestPermission: ({ params }) => { asked.push(params); return selected(answer(params)); } };
  const { agent, ctx, sessionId, cwd } = await toolSession(t, { client });
  const a = path.join(cwd, 'a.txt');
  writeFileSync(a, 'alpha\n');

  // Rejected: the file is untouched, the result an error, the turn goes on to its answer.
  answer = () => 'reject_once';
  let r = await promptText(ctx, sessionId, tool('edit', { file_path: 'a.txt', old_string: 'alpha', new_string: 'beta' }));
  assert.equal(r.stopReason, 'end_turn');
  assert.equal(readFileSync(a, 'utf8'), 'alpha\n');
  assert.equal(asked.length, 1);
  let cards = toolCards(agent.sdkUpdatesFor(sessionId));
  assert.equal(cards.get('echo_0_0').card.status, 'failed');
  assert.match(cardText(cards.get('echo_0_0').card), /rejected/);
  let evs = events(agent.storeDir, sessionId);
  assert.equal(resultOf(evs, 'echo_0_0').data.isError, true);
  assert.deepEqual(byType(evs, 'approval/decided').map((e) => e.data.outcome), ['rejected']);
  assert.deepEqual(byType(evs, 'turn/end').at(-1).data.reason, { kind: 'completed' });
  assert.match(Agent.sdkText(agent.sdkUpdatesFor(sessionId)), /tool \d+ bytes: Error: the user rejected/);

  // A write allowed always, a free read, a command allowed once: all run on the disk.
  answer = (p) => (p.toolCall.kind === 'edit' ? 'allow_always' : 'allow_once');
  r = await promptText(ctx, sessionId, [
    tool('write', { file_path: 'sub/c.txt', content: 'made\n' }),
    tool('read', { file_path: 'a.txt' }),
    tool('bash', { command: 'cat a.txt sub/c.txt', description: 'show' }),
    tool('bash', { command: 'cat a.txt | tr a-z A-Z', description: 'shout' }),
  ].join(' '));
  assert.equal(r.stopReason, 'end_turn');
  assert.equal(readFileSync(path.join(cwd, 'sub/c.txt'), 'utf8'), 'made\n');
  assert.deepEqual(asked.slice(1).map((p) => p.toolCall.toolCallId), ['echo_2_0', 'echo_2_2', 'echo_2_3'], 'the read was not asked for');
  // A simple command may be allowed always; a compound one is only ever allowed once.
  assert.deepEqual(asked[2].options.map((o) => o.optionId), OPTION_IDS);
  assert.deepEqual(asked[3].options.map((o) => o.optionId), ['allow_once', 'reject_once']);
  cards = toolCards(agent.sdkUpdatesFor(sessionId));
  assert.equal(cards.get('echo_2_0').card.status, 'completed');
  assert.ok(cards.get('echo_2_0').card.content.some((b) => b.type === 'diff' && b.oldText == null && b.newText === 'made\n'),
    JSON.stringify(cards.get('echo_2_0').card));
  assert.match(cardText(cards.get('echo_2_1').card), /1: alpha/);
  assert.equal(cardText(cards.get('echo_2_2').card), 'alpha\nmade\n');
  assert.equal(cardText(cards.get('echo_2_3').card), 'ALPHA\n');

  // The next write is not asked for; an edit is (the "always" was for write).
  r = await promptText(ctx, sessionId, tool('write', { file_path: 'd.txt', content: 'again\n' }));
  assert.equal(r.stopReason, 'end_turn');
  assert.equal(asked.length, 4, 'allow_always: the same tool is not asked again');
  assert.equal(readFileSync(path.join(cwd, 'd.txt'), 'utf8'), 'again\n');
  r = await promptText(ctx, sessionId, tool('edit', { file_path: 'd.txt', old_string: 'again', new_string: 'once more' }));
  assert.equal(asked.length, 5, 'another tool is still asked for');
  assert.equal(readFileSync(path.join(cwd, 'd.txt'), 'utf8'), 'once more\n');
  evs = events(agent.storeDir, sessionId);
  assert.deepEqual(byType(evs, 'approval/decided').map((e) => e.data.outcome),
    ['rejected', 'allowed-once', 'allowed-once', 'allowed-once', 'allowed-once']);
  await agent.finish();
});

// Issue 27's probe: an "always" covers exactly the command its option names, so each of these,
// allowed always, leaves the next, different command to be asked for (and rejected here).
test('allow_always covers the command its option names: rm, find and bash are asked again for another command', async (t) => {
  const asked = [];
  let answer = 'allow_always';
  const client = { requestPermission: ({ params }) => { asked.push(params); return selected(answer); } };
  const { agent, ctx, sessionId, cwd } = await toolSession(t, { client });
  for (const name of ['old.log', 'important.txt', 'a.txt', 'victim1.txt']) writeFileSync(path.join(cwd, name), 'x\n');
  writeFileSync(path.join(cwd, 'build.sh'), 'echo built\n');
  const bash = (command) => tool('bash', { command, description: 'probe' });

  const allowed = ['rm old.log', 'find . -name a.txt', 'bash build.sh'];
  let r = await promptText(ctx, sessionId, allowed.map(bash).join(' '));
  assert.equal(r.stopReason, 'end_turn');
  assert.equal(asked.length, 3);
  assert.deepEqual(asked.map((p) => p.options.find((o) => o.optionId === 'allow_always').name),
    allowed.map((c) => `Always allow \`${c}\``), 'the option names the rule');
  assert.deepEqual(asked.map((p) => p.options.find((o) => o.optionId === 'reject_always').name),
    allowed.map((c) => `Always reject \`${c}\``));
  assert.ok(!existsSync(path.join(cwd, 'old.log')), 'the allowed command ran');
  let evs = events(agent.storeDir, sessionId);
  assert.deepEqual(byType(evs, 'dsh-acp/permission-rule').map((e) => e.data),
    allowed.map((command) => ({ tool: 'bash', command, decision: 'allow' })));

  answer = 'reject_once';
  const probes = ['rm -f important.txt', "find . -name 'victim*' -delete", "bash -c 'rm -f a.txt'"];
  r = await promptText(ctx, sessionId, probes.map(bash).join(' '));
  assert.equal(r.stopReason, 'end_turn');
  assert.deepEqual(asked.slice(3).map((p) => p.toolCall.rawInput.command), probes, 'each is asked again');
  for (const name of ['important.txt', 'a.txt', 'victim1.txt']) assert.ok(existsSync(path.join(cwd, name)), `${name} is still there`);

  // The very command allowed runs without a question.
  r = await promptText(ctx, sessionId, bash('find . -name a.txt'));
  assert.equal(asked.length, 6, 'the allowed command is not asked again');
  evs = events(agent.storeDir, sessionId);
  assert.match(resultText(byType(evs, 'tool/result').at(-1)), /\.\/a\.txt/);
  await agent.finish();
});

// ---- 4. confinement --------------------------------------------------------------------------

for (const editor of [false, true]) {
  test(`confinement${editor ? ' (editor fs)' : ''}: .., absolute and symlinked paths outside cwd fail and touch nothing`, async (t) => {
    const files = new Map();
    const fsCalls = [];
    const client = { ...memoryFs(files, fsCalls), requestPermission: () => selected('allow_once') };
    const caps = editor ? { fs: { readTextFile: true, writeTextFile: true } } : {};
    const { agent, ctx, sessionId, cwd } = await toolSession(t, { caps, client });
    const outside = path.join(agent.home, 'outside');
    mkdirSync(outside);
    const secret = path.join(outside, 'secret.txt');
    writeFileSync(secret, 's3cret\n');
    symlinkSync(outside, path.join(cwd, 'link'));
    symlinkSync(secret, path.join(cwd, 'secret-link.txt'));
    const calls = [
      tool('read', { file_path: '../outside/secret.txt' }),
      tool('read', { file_path: secret }),
      tool('read', { file_path: 'link/secret.txt' }),
      tool('read', { file_path: 'secret-link.txt' }),
      tool('grep', { pattern: 's3cret', path: '../outside' }),
      tool('glob', { pattern: '*', path: 'link' }),
      tool('write', { file_path: '../outside/new.txt', content: 'x' }),
      tool('write', { file_path: path.join(outside, 'abs.txt'), content: 'x' }),
      tool('write', { file_path: 'link/via-link.txt', content: 'x' }),
      tool('write', { file_path: 'secret-link.txt', content: 'x' }),
      tool('edit', { file_path: 'link/secret.txt', old_string: 's3cret', new_string: 'x' }),
      tool('bash', { command: 'touch escaped.txt', description: 'x', workdir: '../outside' }),
    ];
    const r = await promptText(ctx, sessionId, calls.join(' '));
    assert.equal(r.stopReason, 'end_turn');

    const evs = events(agent.storeDir, sessionId);
    const results = byType(evs, 'tool/result');
    assert.equal(results.length, calls.length);
    for (const res of results) {
      assert.equal(res.data.isError, true, `${res.data.callId} fails: ${resultText(res)}`);
      assert.match(resultText(res), /outside the session's directories/, res.data.callId);
      assert.ok(!resultText(res).includes('s3cret\n'), 'nothing of the file leaks');
    }
    const cards = toolCards(agent.sdkUpdatesFor(sessionId));
    assert.ok([...cards.values()].every((c) => c.card.status === 'failed'));
    assert.deepEqual(readdirSync(outside), ['secret.txt'], 'nothing written outside');
    assert.equal(readFileSync(secret, 'utf8'), 's3cret\n');
    assert.deepEqual(fsCalls, [], 'the editor is never asked for a path outside');
    await agent.finish();
  });
}

// ---- 5. replay -----------------------------------------------------------------------------------

test('session/load in a new process replays the tool cards as they were seen live', async (t) => {
  const dir = scratch(t);
  const store = path.join(dir, 'store');
  const cwd = path.join(dir, 'work');
  mkdirSync(cwd);
  writeFileSync(path.join(cwd, 'a.txt'), 'alpha\nbeta\n');
  const live = await toolSession(t, { store, cwd, client: { requestPermission: () => selected('allow_once') } });
  const todos = [{ content: 'look', status: 'completed' }, { content: 'change', status: 'in_progress' }];
  const r = await promptText(live.ctx, live.sessionId, [
    tool('read', { file_path: 'a.txt' }),
    tool('read', { file_path: 'missing.txt' }),
    tool('edit', { file_path: 'a.txt', old_string: 'beta', new_string: 'gamma' }),
    tool('write', { file_path: 'b.txt', content: 'new\n' }),
    tool('bash', { command: 'echo ran', description: 'say' }),
    tool('glob', { pattern: '*.txt' }),
    tool('todo_write', { todos }),
    tool('bash', { command: 'echo bad; exit 3', description: 'fail' }),
  ].join(' '));
  assert.equal(r.stopReason, 'end_turn');
  const liveUpdates = live.agent.sdkUpdatesFor(live.sessionId);
  const liveCards = toolCards(liveUpdates);
  assert.equal(liveCards.size, 8);
  assert.equal(liveCards.get('echo_0_1').card.status, 'failed');
  // A command in the server: its card shows what the model read, a non-zero exit fails it.
  assert.equal(liveCards.get('echo_0_4').card.status, 'completed');
  assert.deepEqual(liveCards.get('echo_0_4').card._meta, { 'dsh-acp/exitStatus': { exitCode: 0, signal: null } });
  assert.equal(liveCards.get('echo_0_7').card.status, 'failed');
  assert.equal(cardText(liveCards.get('echo_0_7').card), 'bad\n[exit code: 3]');
  assert.deepEqual(liveCards.get('echo_0_7').card._meta, { 'dsh-acp/exitStatus': { exitCode: 3, signal: null } });
  const livePlans = liveUpdates.filter((u) => u.params.update.sessionUpdate === 'plan').map((u) => u.params.update);
  assert.equal(livePlans.length, 1);
  assert.deepEqual(livePlans[0].entries.map((e) => [e.content, e.status]), todos.map((d) => [d.content, d.status]));
  await live.agent.finish();

  const { agent, ctx } = startSdkAgent(t, { args: ['--store', store] });
  await ctx.request(M.initialize, INIT_PARAMS);
  await ctx.request(M.session.load, { sessionId: live.sessionId, cwd, mcpServers: [] });
  const replayUpdates = agent.sdkUpdatesFor(live.sessionId);
  const replayCards = toolCards(replayUpdates);
  assert.deepEqual([...replayCards.keys()], [...liveCards.keys()], 'the same calls, in the same order');
  for (const [id, c] of liveCards) {
    const replayed = replayCards.get(id);
    assert.ok(['completed', 'failed'].includes(c.card.status));
    assert.deepEqual(replayed.card, c.card, `card ${id}: replayed ${JSON.stringify(replayed.updates)} live ${JSON.stringify(c.updates)}`);
    // The first card as live (diff included) but for its status (live asks `pending` before it
    // runs), the final update exactly (status, content, rawOutput, _meta).
    const { status: liveStatus, ...liveFirst } = c.updates[0];
    const { status: replayStatus, ...replayFirst } = replayed.updates[0];
    assert.equal(liveStatus, 'pending');
    assert.deepEqual(replayFirst, liveFirst, `card ${id}'s first update`);
    assert.deepEqual(replayed.updates.at(-1), c.updates.at(-1), `card ${id}'s final update`);
    assert.ok(c.updates.at(-1).rawOutput, `card ${id} has rawOutput`);
  }
  assert.equal(liveCards.get('echo_0_2').updates[0].content[0].type, 'diff', 'the edit\'s first card shows its change');
  const replayPlans = replayUpdates.filter((u) => u.params.update.sessionUpdate === 'plan').map((u) => u.params.update);
  assert.deepEqual(replayPlans, livePlans);
  await agent.finish();
});

// ---- 6. cancel -------------------------------------------------------------------------------------

test('cancel during a permission request: the request is withdrawn, the prompt answers cancelled, nothing runs', async (t) => {
  let asked;
  const question = new Promise((resolve) => { asked = resolve; });
  let withdrawn = false;
  const client = {
    // Answered only once withdrawn: the prompt cannot end any other way.
    requestPermission: ({ params, signal }) => new Promise((resolve) => {
      asked(params);
      signal.addEventListener('abort', () => {
        withdrawn = true;
        resolve({ outcome: { outcome: 'cancelled' } });
      });
    }),
  };
  const { agent, ctx, sessionId, cwd } = await toolSession(t, { client });
  const prompt = promptText(ctx, sessionId, tool('write', { file_path: 'never.txt', content: 'x' }));
  const params = await question;
  assert.equal(params.toolCall.toolCallId, 'echo_0_0');
  await ctx.notify(M.session.cancel, { sessionId });
  const r = await prompt;
  assert.equal(r.stopReason, 'cancelled');
  assert.ok(withdrawn, 'the client saw its permission request withdrawn ($/cancel_request)');
  assert.ok(!existsSync(path.join(cwd, 'never.txt')));
  const evs = events(agent.storeDir, sessionId);
  assert.deepEqual(byType(evs, 'approval/decided').map((e) => e.data.outcome), ['cancelled']);
  assert.equal(resultOf(evs, 'echo_0_0').data.isError, true);
  assert.deepEqual(byType(evs, 'turn/end').at(-1).data.reason, { kind: 'aborted' });
  assert.equal(toolCards(agent.sdkUpdatesFor(sessionId)).get('echo_0_0').card.status, 'failed');
  // The session goes on.
  assert.equal((await promptText(ctx, sessionId, 'next')).stopReason, 'end_turn');
  await agent.finish();
});

test('cancel during an editor fs/read_text_file: the request is withdrawn, the prompt answers cancelled', async (t) => {
  let reading;
  const started = new Promise((resolve) => { reading = resolve; });
  let withdrawn = false;
  const client = {
    // Answered only once withdrawn: the prompt cannot end any other way.
    readTextFile: ({ params, signal }) => new Promise((resolve, reject) => {
      reading(params);
      signal.addEventListener('abort', () => { withdrawn = true; reject(acp.RequestError.requestCancelled()); });
    }),
  };
  const { agent, ctx, sessionId, cwd } = await toolSession(t, { caps: { fs: { readTextFile: true, writeTextFile: true } }, client });
  const prompt = promptText(ctx, sessionId, tool('read', { file_path: 'slow.txt' }));
  assert.equal((await started).path, path.join(cwd, 'slow.txt'));
  await ctx.notify(M.session.cancel, { sessionId });
  const r = await prompt;
  assert.equal(r.stopReason, 'cancelled');
  assert.ok(withdrawn, 'the client saw fs/read_text_file withdrawn ($/cancel_request)');
  const result = resultOf(events(agent.storeDir, sessionId), 'echo_0_0');
  assert.equal(result.data.isError, true);
  assert.equal(result.data.error?.code, 'TOOL_ABORTED');
  await agent.finish();
});

// The commands cancelled below sleep for an hour with the longest timeoutMs (ten minutes, past the
// test's CTest timeout): only the cancel can end them while the test runs.
test('cancel during a server-side command: answered cancelled, the command\'s processes gone', async (t) => {
  const marker = `tools-e2e-${randomUUID()}`;
  const { agent, ctx, sessionId } = await toolSession(t, { client: { requestPermission: () => selected('allow_once') } });
  t.after(() => { for (const pid of processesWith(marker)) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } });
  const starts = processStarts();  // the shell and its sleep each open the loader's cache as they start
  t.after(() => starts.close());
  await starts.ready;
  const prompt = promptText(ctx, sessionId, tool('bash', { command: `sleep 3600; echo ${marker}`, description: 'wait', timeoutMs: 600000 }));
  await cardStatus(agent, 'echo_0_0', 'in_progress');
  const [shell] = await until(() => processesWith(marker).length > 0 && processesWith(marker), 'the command\'s shell', starts);
  const [sleeper] = await until(() => childrenOf(shell).length > 0 && childrenOf(shell), 'its sleep', starts);
  const cancelledAt = performance.now();
  await ctx.notify(M.session.cancel, { sessionId });
  const r = await prompt;
  t.diagnostic(`answered ${Math.round(performance.now() - cancelledAt)} ms after session/cancel`);
  assert.equal(r.stopReason, 'cancelled');
  assert.ok(!running(shell), 'the shell is gone when the prompt is answered');
  // The sleep was killed with its group; reparented to the server, which reaps it, a moment later.
  await goneOf([sleeper]);
  const result = resultOf(events(agent.storeDir, sessionId), 'echo_0_0');
  assert.equal(result.data.isError, true);
  assert.equal(result.data.error?.code, 'TOOL_ABORTED');
  assert.match(resultText(result), /cancelled/);
  await agent.finish();
});

test('cancel during an editor-terminal command: terminal/kill, then release, the process killed', async (t) => {
  const terms = new Terminals(t);
  const client = { ...terms.handlers(), requestPermission: () => selected('allow_once') };
  const { agent, ctx, sessionId } = await toolSession(t, { caps: { terminal: true }, client });
  const prompt = promptText(ctx, sessionId, tool('bash', { command: 'sleep 3600', description: 'wait', timeoutMs: 600000 }));
  const terminalId = await terms.created;
  await cardStatus(agent, 'echo_0_0', 'in_progress');
  await until(() => terms.calls.some((c) => c.method === 'wait_for_exit'), 'terminal/wait_for_exit', emitterSource(terms.events, 'call'));
  const term = terms.terms.get(terminalId);
  await ctx.notify(M.session.cancel, { sessionId });
  const r = await prompt;
  assert.equal(r.stopReason, 'cancelled');
  const methods = terms.calls.map((c) => c.method);
  assert.deepEqual(methods, ['create', 'wait_for_exit', 'kill', 'output', 'release']);
  assert.deepEqual(terms.aborted, [{ method: 'wait_for_exit', terminalId }], 'the wait was withdrawn');
  assert.equal((await term.exited).signal, 'SIGKILL');
  const result = resultOf(events(agent.storeDir, sessionId), 'echo_0_0');
  assert.equal(result.data.isError, true);
  assert.equal(result.data.error?.code, 'TOOL_ABORTED');
  await agent.finish();
});

// `echo started` must have run before the timeout for the test to see its output kept; on a loaded
// machine that can take a while, so a run whose timeout came first is tried again with a longer one.
test('a command past its timeoutMs is killed: in the server, and in the editor\'s terminal (kill, then release)', async (t) => {
  const marker = `tools-e2e-${randomUUID()}`;
  t.after(() => { for (const pid of processesWith(marker)) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } });
  const command = `echo started; sleep 3600; echo ${marker}`;
  const note = (timeoutMs) => `[timed out after ${timeoutMs} ms: the command was killed]`;
  for (let timeoutMs = 300; ; timeoutMs *= 4) {
    const server = await toolSession(t, { client: { requestPermission: () => selected('allow_once') } });
    const r = await promptText(server.ctx, server.sessionId, tool('bash', { command, description: 'wait', timeoutMs }));
    assert.equal(r.stopReason, 'end_turn');
    const result = resultOf(events(server.agent.storeDir, server.sessionId), 'echo_0_0');
    assert.equal(result.data.isError, true, 'a command that did not finish fails its card');
    assert.deepEqual(processesWith(marker), [], 'the shell is gone');
    await server.agent.finish();
    if (resultText(result) === note(timeoutMs)) {
      t.diagnostic(`in the server: the timeout came before any output; again with ${timeoutMs * 4} ms`);
      continue;
    }
    assert.equal(resultText(result), `started\n${note(timeoutMs)}`);
    break;
  }

  for (let timeoutMs = 300; ; timeoutMs *= 4) {
    const terms = new Terminals(t);
    const editor = await toolSession(t, { caps: { terminal: true }, client: { ...terms.handlers(), requestPermission: () => selected('allow_once') } });
    const r = await promptText(editor.ctx, editor.sessionId, tool('bash', { command, description: 'wait', timeoutMs }));
    assert.equal(r.stopReason, 'end_turn');
    assert.deepEqual(terms.calls.map((c) => c.method), ['create', 'wait_for_exit', 'kill', 'output', 'release']);
    assert.equal(terms.aborted.length, 1, 'the wait was withdrawn');
    const result = resultOf(events(editor.agent.storeDir, editor.sessionId), 'echo_0_0');
    assert.equal(result.data.isError, true);
    await editor.agent.finish();
    if (resultText(result) === note(timeoutMs)) {
      t.diagnostic(`in the editor: the timeout came before any output; again with ${timeoutMs * 4} ms`);
      continue;
    }
    assert.equal(resultText(result), `started\n${note(timeoutMs)}`);
    break;
  }
});

// ---- 7. bad calls -----------------------------------------------------------------------------------

test('malformed arguments and unknown tools give error results; the turn ends end_turn', async (t) => {
  const asked = [];
  const { agent, ctx, sessionId } = await toolSession(t, { client: { requestPermission: ({ params }) => { asked.push(params); return selected('allow_once'); } } });
  const r = await promptText(ctx, sessionId, [
    tool('read', '{"file_path": "a.txt"'),
    tool('no_such_tool', { x: 1 }),
    tool('read', { file_path: 5 }),
    tool('read', '[1, 2]'),
    tool('todo_write', { todos: [{ content: '', status: 'done' }] }),
  ].join(' '));
  assert.equal(r.stopReason, 'end_turn');
  const evs = events(agent.storeDir, sessionId);
  const expected = [/not valid JSON/, /no tool named "no_such_tool"/, /`file_path` must be a string/, /must be a JSON object/, /invalid todo/];
  const cards = toolCards(agent.sdkUpdatesFor(sessionId));
  expected.forEach((re, k) => {
    const res = resultOf(evs, `echo_0_${k}`);
    assert.equal(res.data.isError, true);
    assert.match(resultText(res), re);
    assert.equal(cards.get(`echo_0_${k}`).card.status, 'failed');
  });
  assert.deepEqual(asked, [], 'nothing to ask about');
  assert.deepEqual(byType(evs, 'turn/end').at(-1).data.reason, { kind: 'completed' });
  assert.match(Agent.sdkText(agent.sdkUpdatesFor(sessionId)), /\[8\] tool \d+ bytes: Error: invalid todo/);
  await agent.finish();
});

test('a permission answer that is not one of the options, or an error, rejects the call (fail closed)', async (t) => {
  const answers = [selected('allow_everything'), { outcome: { outcome: 'maybe' } }, 'error'];
  const client = {
    requestPermission: () => {
      const a = answers.shift();
      if (a === 'error') throw acp.RequestError.internalError(undefined, 'the dialog broke');
      return a;
    },
  };
  const { agent, ctx, sessionId, cwd } = await toolSession(t, { client });
  const r = await promptText(ctx, sessionId, [1, 2, 3].map((n) => tool('write', { file_path: `f${n}.txt`, content: 'x' })).join(' '));
  assert.equal(r.stopReason, 'end_turn');
  assert.deepEqual(answers, [], 'each call was asked for');
  assert.deepEqual(readdirSync(cwd), [], 'nothing written');
  const evs = events(agent.storeDir, sessionId);
  for (const k of [0, 1, 2]) {
    const res = resultOf(evs, `echo_0_${k}`);
    assert.equal(res.data.isError, true);
    assert.match(resultText(res), /rejected/);
  }
  await agent.finish();
});

// ---- 8. crash while a tool runs ------------------------------------------------------------------

test('kill -9 while a command runs: the next writer closes the call TOOL_OUTCOME_UNKNOWN, the card replays failed', async (t) => {
  const dir = scratch(t);
  const store = path.join(dir, 'store');
  const cwd = path.join(dir, 'work');
  const marker = `tools-e2e-${randomUUID()}`;
  t.after(() => { for (const pid of processesWith(marker)) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } });
  const first = await toolSession(t, { store, cwd, client: { requestPermission: () => selected('allow_once') } });
  const starts = processStarts();  // the shell opens the loader's cache as it starts
  t.after(() => starts.close());
  await starts.ready;
  first.ctx.request(M.session.prompt, {
    sessionId: first.sessionId,
    prompt: [{ type: 'text', text: tool('bash', { command: `sleep 30; echo ${marker}`, description: 'wait' }) }],
  }).catch(() => { /* the process is killed */ });
  await cardStatus(first.agent, 'echo_0_0', 'in_progress');
  const [shell] = await until(() => processesWith(marker).length > 0 && processesWith(marker), 'the command\'s shell', starts);
  first.agent.signal('SIGKILL');
  assert.equal((await first.agent.waitExit()).signal, 'SIGKILL');
  // The shell dies with the server (its parent-death signal); the sleep it started is left to
  // whoever inherits it (docs/tools.md: nothing is left to reap it), ours to end.
  await goneOf([shell]);
  try { process.kill(-shell, 'SIGKILL'); } catch { /* gone */ }
  const before = events(store, first.sessionId);
  assert.ok(before.some((e) => e.type === 'tool/call' && e.data.callId === 'echo_0_0'));
  assert.ok(!before.some((e) => e.type === 'tool/result' || e.type === 'turn/end'), 'killed mid-call');

  // session/load is a reader (no lock: the turn may be another process's, still running): it
  // replays the call as the log has it and leaves the log alone.
  const { agent, ctx } = startSdkAgent(t, { args: ['--store', store] });
  await ctx.request(M.initialize, INIT_PARAMS);
  await ctx.request(M.session.load, { sessionId: first.sessionId, cwd, mcpServers: [] });
  assert.ok(toolCards(agent.sdkUpdatesFor(first.sessionId)).has('echo_0_0'), 'the call is replayed');
  assert.equal(events(store, first.sessionId).length, before.length, 'loading wrote nothing');

  // The next write takes the lock and closes the dead turn first (the harness's closers).
  const from = agent.sdkUpdates.length;
  assert.equal((await promptText(ctx, first.sessionId, 'after')).stopReason, 'end_turn');
  const evs = events(store, first.sessionId);
  const result = resultOf(evs, 'echo_0_0');
  assert.equal(result.data.isError, true);
  assert.equal(result.data.error.code, 'TOOL_OUTCOME_UNKNOWN');
  assert.match(resultText(result), /outcome is unknown/);
  const closedAt = evs.indexOf(result);
  assert.deepEqual(evs.slice(closedAt + 1, closedAt + 3).map((e) => [e.type, e.data.reason]),
    [['step/end', undefined], ['turn/end', { kind: 'interrupted' }]]);
  assert.match(Agent.sdkText(agent.sdkUpdates.slice(from)), /tool \d+ bytes: The tool call was interrupted/, 'the model is told');

  // Replayed now, the card ends failed with the closer's text.
  const again = agent.sdkUpdates.length;
  await ctx.request(M.session.load, { sessionId: first.sessionId, cwd, mcpServers: [] });
  const card = toolCards(agent.sdkUpdates.slice(again)).get('echo_0_0');
  assert.equal(card.card.status, 'failed');
  assert.match(cardText(card.card), /outcome is unknown/);
  assert.match(Agent.sdkText(agent.sdkUpdates.slice(again)), /\[The turn was interrupted before it finished\.\]/);
  await agent.finish();
});

// ---- 7. bytes that are not UTF-8 ------------------------------------------------------------------

// Issue 27: one byte that is not UTF-8 in a result made the frames holding it unreadable and the
// session's log corrupt for good (SESSION_LOG_CORRUPT on every load).
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const logBytes = (file) => (file.endsWith('.zstd') ? execFileSync('zstd', ['-dcq', file]) : readFileSync(file));

test('bytes that are not UTF-8 (a command\'s output, a Latin-1 file, a file name) arrive as U+FFFD; the session loads in a new process', async (t) => {
  const dir = scratch(t);
  const store = path.join(dir, 'store');
  const cwd = path.join(dir, 'work');
  mkdirSync(cwd);
  writeFileSync(path.join(cwd, 'latin1.txt'), Buffer.from('caf\xe9 au lait\n', 'latin1'));
  writeFileSync(Buffer.from(path.join(cwd, 'n\xe4me.txt'), 'latin1'), 'plain\n');
  const live = await toolSession(t, { store, cwd, client: { requestPermission: () => selected('allow_once') } });
  const r = await promptText(live.ctx, live.sessionId, [
    tool('bash', { command: "printf 'A\\377B'", description: 'bytes' }),
    tool('grep', { pattern: 'au lait' }),
    tool('glob', { pattern: '*.txt' }),
    tool('read', { file_path: 'latin1.txt' }),
  ].join(' '));
  assert.equal(r.stopReason, 'end_turn');
  live.agent.assertFramesOnly();  // every stdout line decoded strictly as UTF-8 and parsed as JSON
  const liveCards = toolCards(live.agent.sdkUpdatesFor(live.sessionId));
  const texts = [...liveCards.values()].map((c) => cardText(c.card));
  assert.equal(texts.length, 4);
  assert.match(texts[0], /^A\uFFFDB/);
  assert.match(texts[1], /caf\uFFFD au lait/);
  assert.match(texts[2], /n\uFFFDme\.txt/);
  assert.match(texts[3], /caf\uFFFD au lait/);
  // The session log and the process log are text.
  strictUtf8.decode(logBytes(logPath(store, live.sessionId)));
  strictUtf8.decode(readFileSync(live.agent.logFile));
  await live.agent.finish();

  const { agent, ctx } = startSdkAgent(t, { args: ['--store', store] });
  await ctx.request(M.initialize, INIT_PARAMS);
  await ctx.request(M.session.load, { sessionId: live.sessionId, cwd, mcpServers: [] });
  const replayCards = toolCards(agent.sdkUpdatesFor(live.sessionId));
  assert.deepEqual([...replayCards.values()].map((c) => c.card), [...liveCards.values()].map((c) => c.card));
  // The model reads the results as the client saw them.
  const next = await promptText(ctx, live.sessionId, 'and now?');
  assert.equal(next.stopReason, 'end_turn');
  assert.match(Agent.sdkText(agent.sdkUpdatesFor(live.sessionId)), /tool \d+ bytes: A\uFFFDB/);
  agent.assertFramesOnly();
  await agent.finish();
});

test('a log an older release wrote with raw bytes in a result loads with U+FFFD, continues, and store verify names the line', async (t) => {
  const dir = scratch(t);
  const store = path.join(dir, 'store');
  const cwd = path.join(dir, 'work');
  mkdirSync(cwd);
  const first = startSdkAgent(t, { args: ['--store', store, '--store-compression', 'none'],
    client: { requestPermission: () => selected('allow_once') } });
  await first.ctx.request(M.initialize, INIT_PARAMS);
  const { sessionId } = await first.ctx.request(M.session.new, { cwd, mcpServers: [] });
  await promptText(first.ctx, sessionId, tool('bash', { command: "echo MARK''ER", description: 'say' }));
  await promptText(first.ctx, sessionId, 'a later turn');  // its turn/end puts the damage inside finished history
  await first.agent.finish();
  // What the release before the fix wrote for `printf 'A\377B'`: the raw byte inside the string.
  const file = logPath(store, sessionId);
  const bytes = readFileSync(file);
  const at = bytes.indexOf('MARKER');  // first in the tool/result line; the answer after it quotes it too
  const line = bytes.subarray(bytes.lastIndexOf('\n', at) + 1, bytes.indexOf('\n', at)).toString();
  assert.match(line, /"tool\/result"/);
  const damaged = Buffer.concat([bytes.subarray(0, at), Buffer.from([0x41, 0xff, 0x42]), bytes.subarray(at + 6)]);
  writeFileSync(file, damaged);

  const { agent, ctx } = startSdkAgent(t, { args: ['--store', store] });
  await ctx.request(M.initialize, INIT_PARAMS);
  await ctx.request(M.session.load, { sessionId, cwd, mcpServers: [] });
  const cards = [...toolCards(agent.sdkUpdatesFor(sessionId)).values()];
  assert.equal(cards.length, 1);
  assert.match(cardText(cards[0].card), /^A\uFFFDB/);
  const r = await promptText(ctx, sessionId, 'go on');
  assert.equal(r.stopReason, 'end_turn');
  agent.assertFramesOnly();
  await agent.finish();
  // The old line is kept as it was (a log is never rewritten); the new lines are text.
  const after = readFileSync(file);
  assert.ok(after.length > damaged.length && after.subarray(0, damaged.length).equals(damaged));
  strictUtf8.decode(after.subarray(damaged.length));
  const verify = spawnSync(BIN, ['store', 'verify', store], { encoding: 'utf8' });
  assert.equal(verify.status, 1, verify.stdout + verify.stderr);
  assert.match(verify.stdout, /not valid UTF-8: read with U\+FFFD/);
});
