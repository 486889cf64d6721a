// The main job of `./dev demo`: a scripted ACP client session, through the official ACP SDK,
// against the real binary on the offline echo model, printed as a readable transcript.
//
// It shows the distinguishing feature end to end: two sessions, a prompt in the second that
// mentions the first, the live reference card, the two user messages the model received (the
// untrusted snapshot, then the user's readable @label text), and a fresh process replaying the
// second session from its log with the card in place. Then the agent's tools: in a session on a
// real project directory the model reads a file and edits it, after the client (the user) answered
// session/request_permission with allow_once. Usage: node demo/demo.mjs path/to/dsh-acp
import { mkdirSync, mkdtempSync, rmSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// The one Node helper of the end-to-end tests runs the binary and connects the SDK (installed from
// the lockfile with those tests); it reads the binary's path from DSH_ACP_BIN when it loads.
const here = path.dirname(fileURLToPath(import.meta.url));
const BIN = path.resolve(process.argv[2] || path.join(here, '..', 'build', 'dsh-acp'));
process.env.DSH_ACP_BIN = BIN;
const { Agent, acp } = await import('../tests/e2e/lib/agent.mjs');
const M = acp.methods.agent;

const home = mkdtempSync(path.join(tmpdir(), 'dsh-acp-demo-'));
const tty = process.stdout.isTTY;
const style = (code, s) => (tty ? `\x1b[${code}m${s}\x1b[0m` : s);
const bold = (s) => style('1', s);
const dim = (s) => style('2', s);
const cyan = (s) => style('36', s);
const green = (s) => style('32', s);
const yellow = (s) => style('33', s);

function indent(text, prefix) {
  return text.split('\n').map((l) => prefix + l).join('\n');
}

/** A tool card's content, short: a text's first lines, a diff as -/+ lines. */
function showToolContent(content) {
  for (const c of content ?? []) {
    if (c.type === 'diff') {
      console.log(dim(`         diff ${path.basename(c.path)}:`));
      // The lines both sides share around the change are context.
      const before = (c.oldText ?? '').split('\n').filter((l) => l !== '');
      const after = (c.newText ?? '').split('\n').filter((l) => l !== '');
      let head = 0;
      while (head < before.length && head < after.length && before[head] === after[head]) head++;
      let tail = 0;
      while (tail < before.length - head && tail < after.length - head && before.at(-1 - tail) === after.at(-1 - tail)) tail++;
      for (const l of before.slice(0, head)) console.log(`             ${l}`);
      for (const l of before.slice(head, before.length - tail)) console.log(`           - ${l}`);
      for (const l of after.slice(head, after.length - tail)) console.log(`           + ${l}`);
      for (const l of after.slice(after.length - tail)) console.log(`             ${l}`);
    } else if (c.content?.text) {
      const lines = c.content.text.split('\n');
      const shown = lines.slice(0, 8).join('\n') + (lines.length > 8 ? `\n… (${lines.length - 8} more lines)` : '');
      console.log(indent(shown, '         '));
    }
  }
}

/** Starts the agent and connects the SDK client; prints every update as it arrives. */
function startAgent(label) {
  // Both processes share the demo's home (DSH_ACP_HOME): its store and log file, as an editor's would.
  const agent = new Agent({ defaultPaths: true, env: { DSH_ACP_HOME: home } });
  agent.child.stderr.on('data', (d) => process.stderr.write(d));
  let pending = '';
  let pendingKind = null;
  const flush = () => {
    if (!pending) return;
    const who = pendingKind === 'user_message_chunk' ? cyan('  user (replayed) ') : pendingKind === 'agent_thought_chunk' ? dim('  agent thinking  ') : green('  agent           ');
    console.log(who + indent(pending, '                  ').trimStart());
    pending = '';
    pendingKind = null;
  };
  const onUpdate = (params) => {
    const u = params.update;
    if (['agent_message_chunk', 'user_message_chunk', 'agent_thought_chunk'].includes(u.sessionUpdate)) {
      if (pendingKind && pendingKind !== u.sessionUpdate) flush();
      pendingKind = u.sessionUpdate;
      pending += u.content?.text ?? '';
      return;
    }
    flush();
    if (u.sessionUpdate === 'tool_call') {
      console.log(yellow(`  [card] ${u.title}`) + dim(`  (${u.toolCallId}, ${u.kind}, ${u.status})`));
      showToolContent(u.content);
    } else if (u.sessionUpdate === 'tool_call_update') {
      console.log(dim(`  [card ${u.toolCallId}] ${u.status ?? 'updated'}`));
      if (u.status === 'completed' || u.status === 'failed') showToolContent(u.content);
    } else if (u.sessionUpdate === 'session_info_update') {
      console.log(dim(`  [title] ${u.title}`));
    } else if (u.sessionUpdate === 'available_commands_update') {
      console.log(dim(`  [commands] ${u.availableCommands.map((c) => '/' + c.name).join(' ')}`));
    } else {
      console.log(dim(`  [${u.sessionUpdate}]`));
    }
  };
  // The user grants each request once (an editor would show the card and the four options).
  const requestPermission = ({ params }) => {
    flush();
    const options = params.options.map((o) => o.optionId).join(' / ');
    console.log(cyan(`  agent → session/request_permission: “${params.toolCall.title}”`) + dim(`  (${options})`));
    console.log(cyan('  client ← allow_once'));
    return { outcome: { outcome: 'selected', optionId: 'allow_once' } };
  };
  const conn = agent.connectSdk({ requestPermission }, { onUpdate });
  console.log(bold(`\n=== ${label}: started ${path.relative(process.cwd(), BIN) || BIN} --provider echo (store ${home}/sessions)`));
  return {
    async call(method, params, what) {
      console.log(cyan(`client → ${what}`));
      const result = await conn.agent.request(method, params);
      flush();
      return result;
    },
    async stop() {
      flush();
      agent.closeStdin();
      const { code } = await agent.waitExit();
      agent.dispose();
      console.log(dim(`  (stdin closed; agent exited with code ${code})`));
    },
  };
}

function userSays(text) {
  console.log(cyan('  user            ') + indent(text, '                  ').trimStart());
}

try {
  // ---- First process: two sessions, a reference from the second to the first ----
  const a = startAgent('Editor window 1');
  const init = await a.call(M.initialize, { protocolVersion: 1, clientCapabilities: {} }, 'initialize');
  console.log(dim(`  agent ${init.agentInfo.name} ${init.agentInfo.version}, loadSession=${init.agentCapabilities.loadSession}, references=${JSON.stringify(init.agentCapabilities._meta?.['dsh-acp/sessionReferences'])}`));

  const alphaCwd = '/projects/billing';
  const { sessionId: alpha } = await a.call(M.session.new, { cwd: alphaCwd, mcpServers: [] }, `session/new (cwd ${alphaCwd})`);
  console.log(dim(`  session Alpha = ${alpha}`));
  const alphaText = 'Billing decision: we use PostgreSQL with logical replication, not MySQL.';
  userSays(alphaText);
  let r = await a.call(M.session.prompt, { sessionId: alpha, prompt: [{ type: 'text', text: alphaText }] }, 'session/prompt (Alpha)');
  console.log(dim(`  stopReason ${r.stopReason}`));

  const betaCwd = '/projects/reports';
  const { sessionId: beta } = await a.call(M.session.new, { cwd: betaCwd, mcpServers: [] }, `session/new (cwd ${betaCwd})`);
  console.log(dim(`  session Beta = ${beta}`));
  userSays('/ref');
  await a.call(M.session.prompt, { sessionId: beta, prompt: [{ type: 'text', text: '/ref' }] }, 'session/prompt (Beta: discover sessions to reference)');

  const { candidates } = await a.call('_dsh/sessionReference/candidates', { sessionId: beta }, '_dsh/sessionReference/candidates');
  const alphaMention = `@[Alpha](${candidates.find((c) => c.sessionId === alpha).uri})`;
  const betaText = `Which database did we choose in ${alphaMention}? Use it for the reports too.`;
  userSays(betaText);
  r = await a.call(M.session.prompt, { sessionId: beta, prompt: [{ type: 'text', text: betaText }] }, 'session/prompt (Beta mentions Alpha)');
  console.log(dim(`  stopReason ${r.stopReason}  — the echo model lists what it received: the snapshot, then the readable @Alpha text`));
  await a.stop();

  // ---- Second process: list, then replay Beta from its log ----
  const b = startAgent('Editor window 2 (a fresh process)');
  await b.call(M.initialize, { protocolVersion: 1, clientCapabilities: {} }, 'initialize');
  const list = await b.call(M.session.list, {}, 'session/list');
  for (const s of list.sessions) console.log(dim(`  ${s.sessionId}  ${s.cwd}  “${s.title}”  updated ${s.updatedAt}`));
  await b.call(M.session.load, { sessionId: beta, cwd: betaCwd, mcpServers: [] }, 'session/load (Beta: the history replays before the answer)');
  console.log(dim('  load answered: the user text shows @Alpha and the card; the snapshot itself is never shown as user text'));

  // ---- Tools: read a file, then edit it once the user allowed it ----
  // No fs/terminal capabilities were advertised at initialize, so the server runs the tools itself,
  // confined to the session's cwd. The echo model calls the tools its prompt's directives name.
  const project = path.join(home, 'project');
  const notes = path.join(project, 'notes.md');
  mkdirSync(project);
  writeFileSync(notes, '# Reports\nMonthly reports recieve the billing totals.\n');
  console.log(bold(`\n--- tools: ${notes}`));
  console.log(indent(readFileSync(notes, 'utf8').trimEnd(), '  │ '));
  const { sessionId: gamma } = await b.call(M.session.new, { cwd: project, mcpServers: [] }, `session/new (cwd ${project})`);
  const fix = 'Fix the typo in notes.md. [[echo:tool=read {"file_path":"notes.md"}]] ' +
    '[[echo:tool=edit {"file_path":"notes.md","old_string":"recieve","new_string":"receive"}]]';
  userSays(fix);
  r = await b.call(M.session.prompt, { sessionId: gamma, prompt: [{ type: 'text', text: fix }] }, 'session/prompt (read, then edit)');
  console.log(dim(`  stopReason ${r.stopReason}  — reads run freely; the edit waited for the permission`));
  console.log(bold(`  ${path.basename(notes)} now:`));
  console.log(indent(readFileSync(notes, 'utf8').trimEnd(), '  │ '));
  await b.stop();

  const log = path.join(home, 'dsh-acp.log');
  if (existsSync(log)) console.log(dim(`\nServer log (${readFileSync(log, 'utf8').split('\n').length - 1} lines) stayed out of the protocol stream.`));
  console.log(bold('\nDemo complete.'));
} finally {
  rmSync(home, { recursive: true, force: true });
}
