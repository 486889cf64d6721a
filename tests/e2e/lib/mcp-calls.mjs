// Calls of MCP tools from the model (the echo model's [[echo:tool=...]] directives), for the MCP
// tests: a prompt whose tool call is allowed, and the call's final card.
import assert from 'node:assert/strict';

/**
 * Sends a prompt in raw mode, allowing the permission request of its tool call, whose title must
 * match `title`; resolves to { from, answer } (the frame index it started at, its answer frame).
 */
export async function promptAllowing(agent, sessionId, text, id, title = /mcp__/) {
  const from = agent.frames.length;
  await agent.send({ jsonrpc: '2.0', id, method: 'session/prompt', params: { sessionId, prompt: [{ type: 'text', text }] } });
  const asked = await agent.nextFrame((f) => f.method === 'session/request_permission', { from, what: 'a permission request' });
  assert.match(asked.frame.params.toolCall.title ?? '', title);
  await agent.send({ jsonrpc: '2.0', id: asked.frame.id, result: { outcome: { outcome: 'selected', optionId: 'allow_once' } } });
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
