// acpx (npm, pinned by package-lock.json), a headless ACP client nobody here wrote, against the real
// binary and the loopback fake provider: `sessions new`, `prompt` in a new process, `sessions list`,
// a prompt with a mention, `cancel`, `set model`, `set-mode` across processes, usage, an image
// prompt and an MCP server over HTTP, each checked through acpx's own output and exit code. acpx launches a custom agent with `--agent '<command>'`; its state lives under $HOME/.acpx,
// so each test gets its own HOME. Each acpx command talks to a "queue owner" process that keeps the
// agent running for `--ttl` seconds: with `--ttl 1` later commands usually start a new agent process,
// which attaches the stored session with session/resume. The tool turns run on the offline echo
// model, whose [[echo:tool=NAME {JSON}]] directive makes it call a tool; acpx's own permission
// policy (--approve-all / --deny-all) answers our session/request_permission.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { BIN, until, waitNoting, emitterSource, goneOf } from './lib/agent.mjs';
import { FakeProvider, answer, providerArgs, startSse, chunkEvent } from './lib/fake-provider.mjs';
import { startHttpMcpServer } from './lib/mcp-http-server.mjs';
import { png } from './lib/png.mjs';

const require = createRequire(import.meta.url);
const ACPX = path.join(path.dirname(require.resolve('acpx/package.json')), 'dist', 'cli.js');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const uriOf = (id) => `dsh-session:${Buffer.from(JSON.stringify(id)).toString('base64url')}`;

/** A private HOME (acpx state), DSH_ACP_HOME (our store, log and config) and project directory. */
async function setup(t, { echo = false, extra = [] } = {}) {
  const home = mkdtempSync(path.join(tmpdir(), 'dsh-acp-acpx-'));
  const dsh = path.join(home, 'dsh');
  const project = path.join(home, 'project');
  mkdirSync(dsh);
  mkdirSync(project);
  // A second model to switch to with `set model`.
  writeFileSync(path.join(dsh, 'config.json'), JSON.stringify({ models: ['m2'] }));
  const provider = await new FakeProvider().start();
  provider.fallback = answer({ content: ['fake ', 'answer'] });
  const env = { ...process.env, HOME: home, DSH_ACP_HOME: dsh };
  const agent = [BIN, ...(echo ? ['--provider', 'echo'] : providerArgs(provider.url)), ...extra].join(' ');
  const running = new Set();
  t.after(async () => {
    for (const child of running) child.kill('SIGKILL');
    await stopBackground(home);
    provider.server.closeAllConnections?.();
    await new Promise((r) => provider.server.close(r));
    rmSync(home, { recursive: true, force: true });
  });
  /**
   * Runs acpx with the given arguments; resolves to {code, stdout, stderr}. The promise's `output()`
   * is its stdout so far.
   */
  const acpx = (args, { permissions = '--approve-all' } = {}) => {
    const child = spawn(process.execPath, [ACPX, '--agent', agent, '--ttl', '1', permissions, ...args],
      { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const done = waitNoting(new Promise((resolve) => child.on('close', (code) => {
      running.delete(child);
      resolve({ code, stdout, stderr });
    })), `acpx ${args.join(' ')}`);
    done.output = () => stdout;
    done.stdout = child.stdout;  // an event source of until(): its 'data'
    return done;
  };
  return { home, dsh, project, provider, acpx, store: path.join(dsh, 'sessions') };
}

/** Pids of the agent processes started so far (each logs its start). */
function agentPids(dsh) {
  const log = path.join(dsh, 'dsh-acp.log');
  if (!existsSync(log)) return new Set();
  return new Set([...readFileSync(log, 'utf8').matchAll(/\[(\d+)\] info dsh-acp .* starting/g)].map((m) => Number(m[1])));
}

const alive = (pid) => {
  try { process.kill(pid, 0); return true; } catch { return false; }
};

/** Processes running with this HOME: the acpx commands, their queue owners and our agents. */
function processesOf(home) {
  const pids = [];
  for (const entry of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0').includes(`HOME=${home}`)) pids.push(Number(entry));
    } catch { /* gone, or not ours */ }
  }
  return pids.filter((pid) => pid !== process.pid);
}

// Queue owners outlive the acpx command by --ttl seconds, and with them our agent processes, and
// they write under $HOME/.acpx as they go: end every process the test started (found by its HOME)
// and wait for it, so none outlives the test or writes into its directory while it is removed.
async function stopBackground(home) {
  // Killed, not asked to stop: a process that had a grace period could still write meanwhile. Again
  // while any is left: a queue owner may have started one more as it died.
  for (let pids = processesOf(home); pids.length > 0; pids = processesOf(home)) {
    for (const pid of pids) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ }
    }
    await goneOf(pids);
  }
}

/** The last user message of a recorded chat-completions request. */
const lastUser = (request) => request.body.messages.filter((m) => m.role === 'user').at(-1).content;

test('acpx: sessions new, prompt in a new process, sessions list, a mention, set model', async (t) => {
  const { acpx, provider, project, dsh } = await setup(t);

  const created = await acpx(['sessions', 'new']);
  assert.equal(created.code, 0, created.stderr);
  const sid = created.stdout.trim();
  assert.match(sid, UUID, 'acpx prints the session id our server chose');

  const first = await acpx(['prompt', 'hello from acpx']);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, /fake answer/);
  assert.match(first.stdout, /end_turn/);
  assert.equal(lastUser(provider.requests.at(-1)), 'hello from acpx');
  assert.equal(agentPids(dsh).size, 2, 'the prompt ran in a second agent process');
  assert.match(readFileSync(path.join(dsh, 'dsh-acp.log'), 'utf8'), /exiting/, 'the first one had exited');

  const listed = await acpx(['sessions', 'list']);
  assert.equal(listed.code, 0, listed.stderr);
  const row = listed.stdout.split('\n').find((l) => l.startsWith(sid));
  assert.ok(row, `the session is listed:\n${listed.stdout}`);
  assert.ok(row.includes('hello from acpx'), 'with its title');
  assert.ok(row.includes(project), 'and its cwd');

  // A second, named session mentions the first: the model gets the snapshot ahead of the message,
  // and acpx shows the reference card (a completed read tool call).
  const other = await acpx(['sessions', 'new', '--name', 'other']);
  assert.equal(other.code, 0, other.stderr);
  const otherId = other.stdout.trim();
  assert.match(otherId, UUID);
  assert.notEqual(otherId, sid);
  const mention = await acpx(['prompt', '-s', 'other', `what did we say in @[first](${uriOf(sid)})?`]);
  assert.equal(mention.code, 0, mention.stderr);
  assert.match(mention.stdout, /Referenced sessions · first/);
  assert.match(mention.stdout, /fake answer/);
  const messages = provider.requests.at(-1).body.messages;
  assert.match(messages.at(-2).content, /## Referenced sessions/);
  assert.match(messages.at(-2).content, /hello from acpx/);
  assert.equal(messages.at(-1).content, 'what did we say in @first?');

  // A mention of a session that does not exist is an error, but not "no session" (exit 4): the
  // message cannot be mistaken for the caller's own session being gone.
  const missing = await acpx(['prompt', '-s', 'other', `see @[gone](${uriOf('no-such-session')})`]);
  assert.equal(missing.code, 1, `${missing.stdout}\n${missing.stderr}`);
  assert.match(missing.stdout + missing.stderr, /referenced session .*no-such-session.* does not exist/);

  // set model: the session's next request goes to the chosen model.
  const set = await acpx(['set', 'model', 'm2']);
  assert.equal(set.code, 0, `${set.stdout}\n${set.stderr}`);
  assert.match(set.stdout, /model/);
  assert.equal(provider.requests.at(-1).body.model, 'm1');
  const after = await acpx(['prompt', 'which model now']);
  assert.equal(after.code, 0, after.stderr);
  assert.equal(provider.requests.at(-1).body.model, 'm2');
  assert.equal(lastUser(provider.requests.at(-1)), 'which model now');
  const unknown = await acpx(['set', 'model', 'no-such-model']);
  assert.notEqual(unknown.code, 0, 'an unknown model is refused');
});

test('acpx: cancel stops a running prompt, which ends cancelled', async (t) => {
  const { acpx, provider } = await setup(t);
  const created = await acpx(['sessions', 'new']);
  assert.equal(created.code, 0, created.stderr);

  // The model streams one piece, then waits for the connection to close (the cancel).
  let streaming;
  const started = new Promise((r) => { streaming = r; });
  provider.queue(async (req, res) => {
    startSse(res);
    res.write(chunkEvent({ content: 'partial ' }));
    streaming();
    await new Promise((r) => res.on('close', r));
  });
  const running = acpx(['prompt', 'a long answer please']);
  await started;
  await until(() => running.output().includes('partial'), 'the partial answer to reach acpx', emitterSource(running.stdout, 'data'));
  const cancel = await acpx(['cancel']);
  assert.equal(cancel.code, 0, `${cancel.stdout}\n${cancel.stderr}`);
  const prompt = await running;
  assert.match(prompt.stdout, /partial/);
  assert.match(prompt.stdout, /cancelled/);
  assert.equal(provider.requests.at(-1).closedAt !== null, true, 'the model request was closed');
});

// A prompt whose echo model writes a file and runs a command that creates another. acpx advertises
// fs and terminal capabilities, so the write goes through its fs/write_text_file and the command
// through its terminal/create, after our server asked session/request_permission for each.
const toolPrompt = (tag) => `make two files [[echo:tool=write {"file_path":"${tag}-written.txt","content":"written via acpx\\n"}]] ` +
  `[[echo:tool=bash {"command":"printf ran > ${tag}-ran.txt","description":"create a file"}]]`;

test('acpx --approve-all: the echo model writes a file and runs a command', async (t) => {
  const { acpx, project } = await setup(t, { echo: true });
  const created = await acpx(['sessions', 'new']);
  assert.equal(created.code, 0, created.stderr);

  const run = await acpx(['prompt', toolPrompt('approved')]);
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  assert.equal(readFileSync(path.join(project, 'approved-written.txt'), 'utf8'), 'written via acpx\n');
  assert.equal(readFileSync(path.join(project, 'approved-ran.txt'), 'utf8'), 'ran');
  // Through acpx, as the editor: each after its permission request.
  assert.match(run.stdout, /session\/request_permission[^]*fs\/write_text_file[^]*session\/request_permission[^]*terminal\/create/);
  // The model's second request carried both results; its answer lists them and the turn ends.
  assert.match(run.stdout, /tool \d+ bytes: .*approved-written\.txt/, run.stdout);
  assert.doesNotMatch(run.stdout, /rejected/);
  assert.match(run.stdout, /\[done\] end_turn/);
});

test('acpx --deny-all: nothing is written or run, and the turn still ends normally', async (t) => {
  const { acpx, project } = await setup(t, { echo: true });
  const created = await acpx(['sessions', 'new'], { permissions: '--deny-all' });
  assert.equal(created.code, 0, created.stderr);

  const run = await acpx(['prompt', toolPrompt('denied')], { permissions: '--deny-all' });
  // acpx's exit code 5 says its permission requests were all denied: our server asked it.
  assert.equal(run.code, 5, `${run.stdout}\n${run.stderr}`);
  assert.equal(existsSync(path.join(project, 'denied-written.txt')), false, 'the write did not happen');
  assert.equal(existsSync(path.join(project, 'denied-ran.txt')), false, 'the command did not run');
  assert.doesNotMatch(run.stdout, /fs\/write_text_file|terminal\/create/, 'acpx was not even asked to');
  // Refused at our permission request (not by acpx refusing an fs or terminal call): each call's
  // result, which the echo model lists in its answer, is the rejection; then the turn ends as usual.
  const rejections = run.stdout.match(/tool \d+ bytes: Error: the user rejected this call/g) ?? [];
  assert.equal(rejections.length, 2, run.stdout);
  assert.match(run.stdout, /\[done\] end_turn/);
});

// acpx re-attaches a stored session with session/resume from whichever agent process serves the
// next command. A mode chosen with `set-mode` is the session's (logged), not the process's: after
// every process is gone, the next prompt still runs in auto, so no session/request_permission is sent
// (in ask acpx would be asked twice; --approve-all answers only acpx's own gate on its fs and terminal
// calls). `--format json` shows the frames: the usage_update after each model call and the prompt's
// usage.
test('acpx: set-mode holds in a new agent process; usage_update and the prompt usage reach acpx', async (t) => {
  const { acpx, project, dsh, home } = await setup(t, { echo: true, extra: ['--context-window', '100000'] });
  const created = await acpx(['sessions', 'new']);
  assert.equal(created.code, 0, created.stderr);
  const mode = await acpx(['set-mode', 'auto']);
  assert.equal(mode.code, 0, `${mode.stdout}\n${mode.stderr}`);
  await stopBackground(home);
  const before = agentPids(dsh);
  assert.ok([...before].every((pid) => !alive(pid)), 'no agent process is left');

  const run = await acpx(['--format', 'json', 'prompt', toolPrompt('auto')]);
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  const after = agentPids(dsh);
  assert.ok([...after].some((pid) => !before.has(pid)), 'the prompt ran in a new agent process');
  const frames = run.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const resumed = frames.find((f) => f.result?.modes);
  assert.equal(resumed?.result.modes.currentModeId, 'auto', 'session/resume answers the mode set before');
  assert.equal(frames.some((f) => f.method === 'session/request_permission'), false, 'nothing was asked');
  assert.equal(readFileSync(path.join(project, 'auto-written.txt'), 'utf8'), 'written via acpx\n');
  assert.equal(readFileSync(path.join(project, 'auto-ran.txt'), 'utf8'), 'ran');

  const usage = frames.filter((f) => f.params?.update?.sessionUpdate === 'usage_update').map((f) => f.params.update);
  assert.equal(usage.length, 2, 'one per model call: the tool calls, then the answer');
  for (const u of usage) assert.equal(u.size, 100000);
  assert.ok(usage[1].used > usage[0].used, 'the context grows with the tool results');
  const answered = frames.find((f) => f.result?.stopReason);
  assert.equal(answered.result.stopReason, 'end_turn');
  assert.ok(answered.result.usage.totalTokens > 0, 'the prompt answer carries usage');
});

// acpx sends a prompt given as a JSON array of ACP content blocks as it is: an image block reaches
// the echo model, which describes what it received, and is kept in the harness's attachment store.
test('acpx: a structured prompt with an image reaches the model and the attachment store', async (t) => {
  const { acpx, project, dsh } = await setup(t, { echo: true });
  const created = await acpx(['sessions', 'new']);
  assert.equal(created.code, 0, created.stderr);
  const image = png(3, 2);
  const prompt = path.join(project, 'prompt.json');
  writeFileSync(prompt, JSON.stringify([{ type: 'text', text: 'what is this?' },
    { type: 'image', mimeType: 'image/png', data: image.toString('base64') }]));
  const run = await acpx(['prompt', '-f', prompt]);
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  assert.ok(run.stdout.includes(`image in [2]: image/png, 3x2, ${image.length} bytes`), run.stdout);
  const hex = createHash('sha256').update(image).digest('hex');
  // DSH_HOME defaults to ~/.dsh, and HOME is the test's.
  const object = path.join(path.dirname(dsh), '.dsh', 'attachments', 'v1', 'objects', hex.slice(0, 2), hex);
  assert.deepEqual(readFileSync(object), image);
});

// An MCP server over streamable HTTP, given to acpx in an --mcp-config file (with a header), is
// passed in session/new and session/resume; the echo model calls its tool through our server.
test('acpx --mcp-config: an MCP server over HTTP, its header and its tool', async (t) => {
  const { acpx, project } = await setup(t, { echo: true });
  const server = await startHttpMcpServer();
  t.after(server.close);
  const config = path.join(project, 'mcp.json');
  writeFileSync(config, JSON.stringify({ mcpServers: [{ type: 'http', name: 'web', url: server.url('/mcp'),
    headers: [{ name: 'X-Dsh-Test', value: 'via acpx' }] }] }));
  const created = await acpx(['--mcp-config', config, 'sessions', 'new']);
  assert.equal(created.code, 0, created.stderr);
  const run = await acpx(['--mcp-config', config, 'prompt',
    'ask [[echo:tool=mcp__web__echo {"text":"hello over http"}]] [[echo:tool=mcp__web__header {"name":"X-Dsh-Test"}]]']);
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /tool \d+ bytes: echo: hello over http/);
  assert.match(run.stdout, /tool \d+ bytes: via acpx/);
  const posts = server.requests.filter((r) => r.method === 'POST');
  assert.ok(posts.length >= 3, 'initialize, tools/list and the calls went to the server');
  for (const r of posts) assert.equal(r.headers['x-dsh-test'], 'via acpx');
});
