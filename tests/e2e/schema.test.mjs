// Every frame the agent writes conforms to the ACP v1 JSON schema shipped with the pinned SDK
// (schema/v1/schema.json): results by the method they answer, session/update notifications, errors.
// The SDK itself does not validate response results, so this is the check that does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { startAgent } from './lib/agent.mjs';

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
