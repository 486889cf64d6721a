// session/load sends every update of the session before its response, the history and the
// available commands alike, and nothing for that session after it until the client sends something
// (https://agentclientprotocol.com/protocol/session-setup#loading-sessions): in a new process, in
// the process that has the session open, and while a turn of that session runs there (the load
// waits for it). Quiescence is shown by a later request's answer, never by a timer: a session/list
// sent after the load is answered, and still nothing of the session followed the load's answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { acp, Agent } from './lib/agent.mjs';
import { makeHome, startIn, text } from './lib/refs.mjs';

const M = acp.methods.agent;

const isResponse = (e) => !Object.hasOwn(e.frame, 'method') && Object.hasOwn(e.frame, 'id');
const updatesOf = (agent, sid, from, to = Infinity) => agent.frames
  .filter((e) => e.index >= from && e.index < to && e.frame.method === 'session/update' && e.frame.params.sessionId === sid);

/**
 * Loads `sid`, then asks for session/list. Returns the updates of `sid` before the load's answer, and
 * those after it up to the list's answer (which proves the server had nothing more to send for it).
 */
async function loadAndSettle(a, sid, cwd) {
  const from = a.agent.frames.length;
  const loaded = await a.ctx.request(M.session.load, { sessionId: sid, cwd, mcpServers: [] });
  assert.ok(loaded.modes, 'the load answered');
  const answer = a.agent.frames.find((e) => e.index >= from && isResponse(e) && e.frame.result?.modes);
  assert.ok(answer, 'the load answer is on the wire');
  await a.ctx.request(M.session.list, {});
  const listed = a.agent.frames.find((e) => e.index > answer.index && isResponse(e) && e.frame.result?.sessions);
  assert.ok(listed, 'the list answer is on the wire');
  return {
    before: updatesOf(a.agent, sid, from, answer.index).map((e) => e.frame.params.update),
    after: updatesOf(a.agent, sid, answer.index, listed.index).map((e) => e.frame.params.update),
  };
}

const kinds = (updates) => updates.map((u) => u.sessionUpdate);

test('session/load in a new process: history and commands before the answer, nothing after it', async (t) => {
  const home = makeHome(t);
  const a = await startIn(t, home);
  const { sessionId } = await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] });
  await a.ctx.request(M.session.prompt, { sessionId, prompt: text('remember this') });
  await a.agent.finish();

  const b = await startIn(t, home);
  const { before, after } = await loadAndSettle(b, sessionId, home);
  assert.ok(kinds(before).includes('user_message_chunk'), kinds(before).join(', '));
  assert.ok(kinds(before).includes('available_commands_update'), `commands before the answer: ${kinds(before).join(', ')}`);
  assert.deepEqual(kinds(after), [], 'nothing for the session after the load answer');
  await b.agent.finish();
});

test('session/load in the process that has the session open: the same order', async (t) => {
  const home = makeHome(t);
  const a = await startIn(t, home);
  const { sessionId } = await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] });
  await a.ctx.request(M.session.prompt, { sessionId, prompt: text('remember this') });
  for (let round = 0; round < 2; round++) {
    const { before, after } = await loadAndSettle(a, sessionId, home);
    assert.ok(kinds(before).includes('agent_message_chunk'), kinds(before).join(', '));
    assert.equal(kinds(before).at(-1), 'available_commands_update', kinds(before).join(', '));
    assert.deepEqual(kinds(after), [], `round ${round}: nothing for the session after the load answer`);
  }
  await a.agent.finish();
});

test('session/load while a turn of the session runs here: the load answers after the turn, with all of it', async (t) => {
  const home = makeHome(t);
  const a = await startIn(t, home, ['--echo-delay-ms', '10']);
  const { sessionId } = await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] });
  const from = a.agent.frames.length;
  const prompt = a.ctx.request(M.session.prompt, { sessionId, prompt: text('a turn that is still streaming its answer') });
  await a.agent.nextFrame((f) => f.method === 'session/update' && f.params.sessionId === sessionId &&
    f.params.update.sessionUpdate === 'agent_message_chunk', { from, what: 'the first chunk' });
  const loading = loadAndSettle(a, sessionId, home);
  assert.equal((await prompt).stopReason, 'end_turn');
  const { before, after } = await loading;
  assert.deepEqual(kinds(after), [], 'nothing for the session after the load answer');
  // The prompt was answered before the load, and the replay holds its whole answer.
  const promptAnswer = a.agent.frames.find((e) => e.index >= from && isResponse(e) && e.frame.result?.stopReason);
  const loadAnswer = a.agent.frames.find((e) => e.index >= from && isResponse(e) && e.frame.result?.modes);
  assert.ok(promptAnswer.index < loadAnswer.index, 'the running prompt answered first');
  const live = Agent.chunkText(a.agent.chunks({ sessionId, from }).filter((e) => e.index < promptAnswer.index));
  const replayed = before.filter((u) => u.sessionUpdate === 'agent_message_chunk').map((u) => u.content.text).join('');
  assert.ok(replayed.endsWith(live), `the replay ends with the turn's answer:\n${replayed}\n---\n${live}`);
  await a.agent.finish();
});

test('session/resume replays nothing; its commands come before its answer', async (t) => {
  const home = makeHome(t);
  const a = await startIn(t, home);
  const { sessionId } = await a.ctx.request(M.session.new, { cwd: home, mcpServers: [] });
  await a.ctx.request(M.session.prompt, { sessionId, prompt: text('remember this') });
  await a.agent.finish();

  const b = await startIn(t, home);
  const from = b.agent.frames.length;
  await b.ctx.request(M.session.resume, { sessionId, cwd: home, mcpServers: [] });
  const answer = b.agent.frames.find((e) => e.index >= from && isResponse(e));
  await b.ctx.request(M.session.list, {});
  const all = kinds(updatesOf(b.agent, sessionId, from).map((e) => e.frame.params.update));
  assert.deepEqual(all, ['available_commands_update'], 'no history, only the commands');
  assert.ok(updatesOf(b.agent, sessionId, from)[0].index < answer.index, 'the commands precede the answer');
  await b.agent.finish();
});
