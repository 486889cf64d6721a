// Every frame the agent writes conforms to the ACP v1 JSON schema shipped with the pinned SDK
// (schema/v1/schema.json): results by the method they answer, session/update notifications, errors.
// The SDK itself does not validate response results, so this is the check that does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { startAgent } from './lib/agent.mjs';
import { makeHome } from './lib/refs.mjs';
import { writeLog } from './lib/store.mjs';

const require = createRequire(import.meta.url);
const schemaPath = require.resolve('@agentclientprotocol/sdk/schema/v1/schema.json');
const schema = JSON.parse(readFileSync(schemaPath, 'utf8'));

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
for (const f of ['int32', 'int64', 'uint16', 'uint32', 'uint64', 'double', 'float']) {
  ajv.addFormat(f, { type: 'number', validate: (n) => Number.isFinite(n) });
}
ajv.addSchema(schema, 'acp');
const validator = (def) => ajv.getSchema(`acp#/$defs/${def}`);

const RESULT_DEF = {
  initialize: 'InitializeResponse',
  'session/new': 'NewSessionResponse',
  'session/prompt': 'PromptResponse',
};

function check(def, value, label) {
  const v = validator(def);
  assert.ok(v, `schema has ${def}`);
  assert.ok(v(value), `${label} does not match ${def}: ${ajv.errorsText(v.errors)}\n${JSON.stringify(value)}`);
}

test('every frame of a typical conversation matches the ACP v1 schema', async (t) => {
  const agent = startAgent(t, { args: ['--echo-delay-ms', '5'] });
  const methods = new Map();
  const call = (method, params) => {
    const id = agent.nextId++;
    methods.set(id, method);
    return agent.call(method, params, { id });
  };
  await agent.writeRaw('{"jsonrpc":"2.0","id":"early","method":"session/new","params":{"cwd":"/","mcpServers":[]}}\n');
  await agent.response('early');
  await call('initialize', { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true } });
  const { result: { sessionId } } = await call('session/new', { cwd: agent.home, mcpServers: [] });
  await call('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hello' }, { type: 'resource_link', name: 'a', uri: 'file:///a' }] });
  await call('session/prompt', { sessionId, prompt: [{ type: 'resource', resource: { uri: 'file:///b', text: 'B' } }] });
  await call('session/prompt', { sessionId, prompt: [{ type: 'text', text: '[[echo:stop=refusal]]' }] });
  const cancelled = call('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'x [[sleep:5000]]' }] });
  await agent.notify('session/cancel', { sessionId });
  await cancelled;
  await call('session/prompt', { sessionId, prompt: [{ type: 'image', data: 'AA==', mimeType: 'image/png' }] });
  await call('session/prompt', { sessionId: 'nope', prompt: [{ type: 'text', text: 'x' }] });
  await call('no/such', {});
  await agent.writeRaw('{oops\n[1]\n');
  await call('initialize', { protocolVersion: 1 });

  let results = 0;
  let updates = 0;
  let errors = 0;
  for (const { frame, line } of agent.frames) {
    if (frame.method === 'session/update') {
      check('SessionNotification', frame.params, line);
      updates++;
    } else if (Object.hasOwn(frame, 'error')) {
      check('Error', frame.error, line);
      errors++;
    } else if (Object.hasOwn(frame, 'result')) {
      const def = RESULT_DEF[methods.get(frame.id)];
      assert.ok(def, `a result for a request we sent: ${line}`);
      check(def, frame.result, line);
      results++;
    } else {
      assert.fail(`unexpected frame from the agent: ${line}`);
    }
  }
  assert.ok(results >= 7 && updates > 20 && errors >= 6, `covered ${results} results, ${updates} updates, ${errors} errors`);
  await agent.finish();
});

// session/load of a harness session with tools (issue 15): the cards, diffs, locations, plan and
// image placeholders the replay builds are valid ACP too. The log is hand-written in the normalised
// shape and stored in the layout and shapes of the run's store root (lib/store.mjs writeLog); DSH_HOME
// names the harness home whose attachment store holds one of the two images.
test('a replayed harness session with tools, a plan and images matches the ACP v1 schema', async (t) => {
  const home = makeHome(t);
  const harness = path.join(home, 'harness');
  const bytes = Buffer.from('not really a png');
  const present = createHash('sha256').update(bytes).digest('hex');
  const missing = 'f'.repeat(64);
  mkdirSync(path.join(harness, 'attachments', 'v1', 'objects', present.slice(0, 2)), { recursive: true });
  writeFileSync(path.join(harness, 'attachments', 'v1', 'objects', present.slice(0, 2), present), bytes);
  const store = path.join(home, 'sessions');
  const cwd = home;
  const id = 'harness-tools';
  const time = 1783600629541;
  const image = (hex, name) => ({ type: 'image', attachment: { attachmentId: `sha256:${hex}`, mediaType: 'image/png', width: 4, height: 4, bytes: bytes.length, name } });
  const call = (seq, callId, name, args) => ({ type: 'tool/call', seq, time, data: { turn: 1, step: 1, callId, name, arguments: JSON.stringify(args) } });
  const result = (seq, callId, text, extra = {}) => ({ type: 'tool/result', seq, time, data: { turn: 1, step: 1, callId, content: [{ type: 'text', text }], isError: false, ...extra }, sourceEventSeqs: [seq - 1], surfaceOp: 'append' });
  const recall = { kind: 'session-reference', form: 'recall', version: 1, references: [{ sessionId: 'other', label: 'Other', capturedThroughSeq: 3, compacted: false, originalMessages: 2, retainedMessages: 2, omittedMessages: 0, omittedBytes: 0, truncated: false, inputIndex: 0 }] };
  const lines = [
    { type: 'session', version: 0, id, createdAt: time, cwd, delegationDepth: 0 },
    { type: 'turn/start', seq: 0, time, data: { turn: 1 } },
    { type: 'user/message', seq: 1, time, data: { content: [{ type: 'text', text: 'fix @Other, see' }, image(present, 'shot.png'), image(missing, 'gone.png')], source: { kind: 'user' }, role: 'user', id: 'm1' }, surfaceOp: 'append' },
    { type: 'user/message', seq: 2, time, data: { source: recall, content: [{ type: 'text', text: '## Referenced sessions\n\n…' }], role: 'user', id: 'm2' }, surfaceOp: 'append' },
    { type: 'step/start', seq: 3, time, data: { turn: 1, step: 1 } },
    { type: 'assistant/message', seq: 4, time, data: { turn: 1, step: 1, content: [{ type: 'text', text: 'Looking.' }], provenance: { provider: 'deepseek', model: 'deepseek-flash' } }, surfaceOp: 'append' },
    call(5, 'c1', 'read', { file_path: 'src/a.cpp', offset: 3 }),
    result(6, 'c1', '3: int x = 1;'),
    call(7, 'c2', 'edit', { file_path: 'src/a.cpp', old_string: 'int x = 1;', new_string: 'int x = 2;' }),
    result(8, 'c2', 'The file src/a.cpp has been updated successfully.', { meta: { diffs: [{ path: 'src/a.cpp', oldText: 'int x = 1;', newText: 'int x = 2;' }] } }),
    call(9, 'c3', 'write', { file_path: 'NEW.md', content: '# new\n' }),
    result(10, 'c3', 'Wrote NEW.md'),
    call(11, 'c4', 'bash', { command: 'make test', description: 'Run the tests' }),
    result(12, 'c4', 'ok\n[exit code: 0]'),
    call(13, 'c5', 'grep', { pattern: 'TODO', path: 'src' }),
    result(14, 'c5', 'No matches found'),
    { type: 'todo/write', seq: 15, time, data: { todos: [{ content: 'edit a.cpp', status: 'completed' }, { content: 'run tests', status: 'in_progress' }] } },
    { type: 'step/end', seq: 16, time, data: { turn: 1, step: 1 } },
    { type: 'turn/end', seq: 17, time, data: { turn: 1, reason: { kind: 'completed' } } },
  ];
  writeLog(store, lines);
  const agent = startAgent(t, { env: { DSH_HOME: harness }, args: ['--store', store] });

  await agent.call('initialize', { protocolVersion: 1 });
  const from = agent.frames.length;
  const answer = await agent.call('session/load', { sessionId: id, cwd, mcpServers: [] });
  assert.ok(!answer.error, JSON.stringify(answer.error));
  const updates = agent.frames.slice(from).filter(({ frame }) => frame.method === 'session/update');
  for (const { frame, line } of updates) check('SessionNotification', frame.params, line);
  const shown = updates.map(({ frame }) => frame.params.update).filter((u) => u.sessionUpdate !== 'available_commands_update');
  assert.equal(shown[0].content.text, 'fix @Other, see\n[image shot.png (image/png, 16 bytes)]\n[image gone.png (image/png, 16 bytes) — attachment missing]');
  assert.equal(shown[1].toolCallId, 'dsh-ref-2', 'the recall card right after its direct message');
  const cards = shown.filter((u) => u.sessionUpdate === 'tool_call' && u.toolCallId.startsWith('c'));
  assert.deepEqual(cards.map((c) => [c.kind, c.title]), [
    ['read', 'Read src/a.cpp:3-'], ['edit', 'Edit src/a.cpp'], ['edit', 'Write NEW.md'], ['execute', 'Run `make test`'], ['search', 'Search for TODO in src'],
  ]);
  assert.deepEqual(cards[0].locations, [{ path: path.join(cwd, 'src/a.cpp'), line: 3 }]);
  const diffs = shown.filter((u) => u.sessionUpdate === 'tool_call_update').flatMap((u) => u.content.filter((c) => c.type === 'diff'));
  assert.deepEqual(diffs, [
    { type: 'diff', path: path.join(cwd, 'src/a.cpp'), oldText: 'int x = 1;', newText: 'int x = 2;' },
    { type: 'diff', path: path.join(cwd, 'NEW.md'), newText: '# new\n' },
  ]);
  assert.deepEqual(shown.find((u) => u.sessionUpdate === 'plan').entries.map((e) => e.status), ['completed', 'in_progress']);
  await agent.finish();
});
