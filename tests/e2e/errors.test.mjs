// The error table of docs/decisions.md#errors-on-the-wire, frame by frame (raw mode: the SDK cannot send
// these frames). After every bad frame the server must keep serving: each row is followed by a good request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startAgent } from './lib/agent.mjs';

const INIT = (id) => JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: 1 } });

const isResponse = (e) => !Object.hasOwn(e.frame, 'method');

/**
 * Sends `bytes`, then a good initialize; once the good answer and `expect` (0 or 1) other answers
 * have arrived, returns the answers in between (the good one excluded). The bad frame may be
 * answered after the good one (handlers run concurrently), so this waits for that answer; an answer
 * beyond the expected ones shows in a later probe's window or, for the last, in answeredOnce().
 */
async function probe(agent, bytes, goodId, expect) {
  const from = agent.frames.length;
  await agent.writeRaw(bytes);
  await agent.writeRaw(INIT(goodId) + '\n');
  const good = await agent.response(goodId, { from });
  assert.equal(good.result?.protocolVersion, 1, `server keeps serving after the bad frame: ${JSON.stringify(good)}`);
  if (expect > 0) await agent.nextFrame((f) => !Object.hasOwn(f, 'method') && f.id !== goodId, { from, what: 'the answer to the bad frame' });
  return agent.frames.slice(from).filter((e) => isResponse(e) && e.frame.id !== goodId).map((e) => e.frame);
}

/**
 * After finish() (stdout read to its end): every answer the agent ever wrote, counted. Asserts
 * there were `count`: no request was answered twice, no notification or response frame at all.
 */
function answeredOnce(agent, count) {
  const answers = agent.frames.filter(isResponse).map((e) => e.line);
  assert.equal(answers.length, count, `answers: ${answers.join('\n')}`);
}

function assertError(frames, { id, code, message, data }, label) {
  assert.equal(frames.length, 1, `${label}: exactly one answer, got ${JSON.stringify(frames)}`);
  const [f] = frames;
  assert.ok(f.error, `${label}: an error response: ${JSON.stringify(f)}`);
  assert.deepEqual(f.id, id, `${label}: id`);
  assert.equal(f.error.code, code, `${label}: code (${f.error.message})`);
  assert.ok(f.error.message.startsWith(message), `${label}: message "${f.error.message}" starts with "${message}"`);
  if (data !== undefined) assert.deepEqual(f.error.data, data, `${label}: data`);
}

test('before initialize: requests are -32600 "Invalid request: initialize first", notifications unanswered', async (t) => {
  const agent = startAgent(t);
  for (const [label, frame, id] of [
    ['session/new', { jsonrpc: '2.0', id: 1, method: 'session/new', params: { cwd: '/', mcpServers: [] } }, 1],
    ['string id', { jsonrpc: '2.0', id: 'abc', method: 'session/prompt', params: { sessionId: 'x', prompt: [] } }, 'abc'],
    ['unknown method', { jsonrpc: '2.0', id: 2, method: 'no/such' }, 2],
  ]) {
    const from = agent.frames.length;
    await agent.send(frame);
    const r = await agent.response(id, { from });
    assertError([r], { id, code: -32600, message: 'Invalid request: initialize first' }, label);
  }
  // A notification is never answered, even before initialize.
  const from = agent.frames.length;
  await agent.send({ jsonrpc: '2.0', method: 'session/cancel', params: { sessionId: 'x' } });
  const init = await agent.call('initialize', { protocolVersion: 1 }, { id: 3 });
  assert.equal(init.result.protocolVersion, 1);
  assert.equal(agent.frames.length - from, 1, 'only initialize was answered');
  // After initialize the same request works.
  const r = await agent.call('session/new', { cwd: '/', mcpServers: [] });
  assert.ok(r.result?.sessionId);
  await agent.finish();
  answeredOnce(agent, 5); // three refusals, initialize, session/new
});

/** An initialize request whose params hold a string with these raw bytes in it. */
const inString = (bytes) => Buffer.concat([
  Buffer.from('{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1,"x":"a'),
  Buffer.from(bytes), Buffer.from('b"}}\n'),
]);

const rows = [
  // [label, bytes, expected answer or null for "no answer"]
  ['malformed JSON', '{"jsonrpc":"2.0","id":5,\n', { id: null, code: -32700, message: 'Parse error' }],
  ['trailing garbage after a value', INIT(6) + ' x\n', { id: null, code: -32700, message: 'Parse error' }],
  ['invalid UTF-8 inside a string', inString([0xc3, 0x28]), { id: null, code: -32700, message: 'Parse error: invalid UTF-8' }],
  ['a lone 0xff byte', Buffer.from([0xff, 0x0a]), { id: null, code: -32700, message: 'Parse error: invalid UTF-8' }],
  // Overlong encodings, encoded surrogates and code points past U+10FFFF are invalid UTF-8 too.
  ['overlong "/" (C0 AF) inside a string', inString([0xc0, 0xaf]), { id: null, code: -32700, message: 'Parse error: invalid UTF-8' }],
  ['overlong NUL (C0 80) inside a string', inString([0xc0, 0x80]), { id: null, code: -32700, message: 'Parse error: invalid UTF-8' }],
  ['three-byte overlong (E0 80 AF) inside a string', inString([0xe0, 0x80, 0xaf]), { id: null, code: -32700, message: 'Parse error: invalid UTF-8' }],
  ['four-byte overlong (F0 80 80 AF) inside a string', inString([0xf0, 0x80, 0x80, 0xaf]), { id: null, code: -32700, message: 'Parse error: invalid UTF-8' }],
  ['an encoded surrogate (ED A0 80) inside a string', inString([0xed, 0xa0, 0x80]), { id: null, code: -32700, message: 'Parse error: invalid UTF-8' }],
  ['past U+10FFFF (F4 90 80 80) inside a string', inString([0xf4, 0x90, 0x80, 0x80]), { id: null, code: -32700, message: 'Parse error: invalid UTF-8' }],
  ['overlong "{" (C1 BB) outside strings', Buffer.from([0xc1, 0xbb, 0x7d, 0x0a]), { id: null, code: -32700, message: 'Parse error: invalid UTF-8' }],
  ['batch', `[${INIT(8)}]\n`, { id: null, code: -32600, message: 'Invalid request' }],
  ['empty batch', '[]\n', { id: null, code: -32600, message: 'Invalid request' }],
  ['a number', '42\n', { id: null, code: -32600, message: 'Invalid request' }],
  ['a string', '"initialize"\n', { id: null, code: -32600, message: 'Invalid request' }],
  ['null', 'null\n', { id: null, code: -32600, message: 'Invalid request' }],
  ['no method', '{"jsonrpc":"2.0","id":9}\n', { id: 9, code: -32600, message: 'Invalid request' }],
  ['method not a string', '{"jsonrpc":"2.0","id":10,"method":42}\n', { id: 10, code: -32600, message: 'Invalid request' }],
  ['wrong jsonrpc version', '{"jsonrpc":"1.0","id":11,"method":"initialize","params":{"protocolVersion":1}}\n', { id: 11, code: -32600, message: 'Invalid request' }],
  ['id of a wrong type', '{"jsonrpc":"2.0","id":{"a":1},"method":"initialize","params":{"protocolVersion":1}}\n', { id: null, code: -32600, message: 'Invalid request' }],
  ['unknown method', '{"jsonrpc":"2.0","id":12,"method":"no/such","params":{}}\n', { id: 12, code: -32601, message: 'Method not found', data: { method: 'no/such' } }],
  ['unknown custom method', '{"jsonrpc":"2.0","id":"c","method":"_dsh/no_such"}\n', { id: 'c', code: -32601, message: 'Method not found', data: { method: '_dsh/no_such' } }],
  ['unknown notification', '{"jsonrpc":"2.0","method":"no/such","params":{}}\n', null],
  ['unknown custom notification', '{"jsonrpc":"2.0","method":"_dsh/no_such"}\n', null],
  ['a known request sent as notification', '{"jsonrpc":"2.0","method":"session/new","params":{"cwd":"/","mcpServers":[]}}\n', null],
  ['empty line', '\n', null],
  ['whitespace line', '  \t \n', null],
  ['wrong params type', '{"jsonrpc":"2.0","id":13,"method":"session/new","params":[1]}\n', { id: 13, code: -32602, message: 'Invalid params', data: { path: '' } }],
  ['missing params', '{"jsonrpc":"2.0","id":14,"method":"session/prompt"}\n', { id: 14, code: -32602, message: 'Invalid params', data: { path: '/sessionId' } }],
  ['wrong field type', '{"jsonrpc":"2.0","id":15,"method":"initialize","params":{"protocolVersion":"one"}}\n', { id: 15, code: -32602, message: 'Invalid params', data: { path: '/protocolVersion' } }],
  ['wrong nested type', '{"jsonrpc":"2.0","id":16,"method":"session/new","params":{"cwd":"/","mcpServers":"none"}}\n', { id: 16, code: -32602, message: 'Invalid params', data: { path: '/mcpServers' } }],
  ['unknown session', '{"jsonrpc":"2.0","id":17,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"x"}]}}\n', { id: 17, code: -32002, message: 'Resource not found', data: { sessionId: 'nope' } }],
];

test('after initialize: every row of the error table, and the server keeps serving after each', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  let goodId = 100;
  for (const [label, bytes, expected] of rows) {
    const answers = await probe(agent, bytes, goodId++, expected === null ? 0 : 1);
    if (expected === null) assert.deepEqual(answers, [], `${label}: never answered`);
    else assertError(answers, expected, label);
  }
  await agent.finish();
  answeredOnce(agent, 1 + rows.length + rows.filter(([, , expected]) => expected !== null).length);
});

test('CRLF line endings are accepted', async (t) => {
  const agent = startAgent(t);
  await agent.writeRaw(INIT(1) + '\r\n');
  const r = await agent.response(1);
  assert.equal(r.result?.protocolVersion, 1);
  await agent.finish();
});

test('a frame over --max-frame-bytes is -32600 with data.maxFrameBytes; the limit itself is accepted', async (t) => {
  const limit = 4096;
  const agent = startAgent(t, { args: ['--max-frame-bytes', String(limit)] });
  const frameOf = (id, size) => {
    const base = JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: 1, pad: '' } });
    const line = base.replace('"pad":""', `"pad":"${'x'.repeat(size - base.length)}"`);
    assert.equal(Buffer.byteLength(line), size);
    return line + '\n';
  };
  const atLimit = await probe(agent, frameOf(1, limit), 2, 1);
  assert.equal(atLimit.length, 1);
  assert.equal(atLimit[0].id, 1);
  assert.equal(atLimit[0].result?.protocolVersion, 1, 'a frame of exactly maxFrameBytes is served');

  const over = await probe(agent, frameOf(3, limit + 1), 4, 1);
  assert.equal(over.length, 1, JSON.stringify(over));
  assert.ok(over[0].id === null || over[0].id === 3, `id null unless it was read: ${over[0].id}`);
  assert.equal(over[0].error?.code, -32600);
  assert.ok(over[0].error.message.startsWith('Invalid request'));
  assert.deepEqual(over[0].error.data, { maxFrameBytes: limit });

  // A huge frame (20 MiB, split over many writes) is skipped, not buffered, and answered once.
  const huge = await probe(agent, frameOf(5, 20 * 1024 * 1024), 6, 1);
  assert.equal(huge.length, 1, JSON.stringify(huge));
  assert.deepEqual(huge[0].error?.data, { maxFrameBytes: limit });
  await agent.finish();
  answeredOnce(agent, 6);
});

test('an oversize frame mid-stream does not swallow the frames that follow it in the same write', async (t) => {
  const agent = startAgent(t, { args: ['--max-frame-bytes', '1024'] });
  await agent.writeRaw(INIT(1) + '\n' + `{"pad":"${'z'.repeat(5000)}"}\n` + INIT(2) + '\n');
  const r1 = await agent.response(1);
  const r2 = await agent.response(2);
  assert.equal(r1.result?.protocolVersion, 1);
  assert.equal(r2.result?.protocolVersion, 1);
  const errs = agent.frames.filter((e) => e.frame.error);
  assert.equal(errs.length, 1);
  assert.deepEqual(errs[0].frame.error.data, { maxFrameBytes: 1024 });
  await agent.finish();
});

// A frame that is valid JSON is not "malformed": a request whose params nest deeper than the JSON
// parser's default limit (Boost.JSON max_depth 32) must still be answered under its own id —
// otherwise the client waits forever. Deep values are legal in _meta and unknown fields.
test('a valid request nested 64 levels deep (in _meta) is answered under its id', async (t) => {
  const agent = startAgent(t);
  const deep = '{"a":'.repeat(64) + '1' + '}'.repeat(64);
  const from = agent.frames.length;
  await agent.writeRaw(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"_meta":${deep}}}\n`);
  await agent.writeRaw(INIT(2) + '\n');
  await agent.response(2, { from });
  // Either may be answered first (handlers run concurrently): the deep one is waited for as well.
  await agent.nextFrame((f) => !Object.hasOwn(f, 'method') && f.id !== 2, { from, what: 'the deep request\'s answer' });
  await agent.finish();
  const answers = agent.frames.slice(from).filter((e) => e.frame.id !== 2).map((e) => e.frame);
  assert.equal(answers.length, 1, JSON.stringify(answers));
  assert.equal(answers[0].id, 1, `answered under the request id: ${JSON.stringify(answers[0])}`);
  assert.equal(answers[0].result?.protocolVersion, 1);
});

// No request of ours is waiting here (no prompt runs: no permission, fs/* or terminal/* request was sent),
// so every response frame matches none of ours: it is logged, never answered (even with a wrong version
// or id type), and the next request is served as usual.
test('response frames are logged and never answered', async (t) => {
  const agent = startAgent(t);
  await agent.initialize();
  const from = agent.frames.length;
  for (const frame of [
    '{"jsonrpc":"2.0","id":15,"result":{}}',
    '{"jsonrpc":"2.0","id":"req-x","error":{"code":-32601,"message":"Method not found"}}',
    '{"jsonrpc":"2.0","id":null,"result":null}',
    '{"jsonrpc":"2.0","result":{"orphan":true}}',
    '{"jsonrpc":"1.0","id":{"odd":1},"result":1}',
    '{"id":16,"error":{"code":1,"message":"x"}}',
  ]) await agent.writeRaw(frame + '\n');
  const r = await agent.call('session/new', { cwd: '/', mcpServers: [] }, { id: 'after' });
  assert.ok(r.result?.sessionId, JSON.stringify(r));
  // Looked at once the process has exited (stdout read to its end, the log complete): an answer
  // to a response frame could have come at any time before that.
  agent.closeStdin();
  await agent.waitExit();
  const answers = agent.frames.slice(from).filter((e) => !Object.hasOwn(e.frame, 'method')).map((e) => e.frame);
  assert.deepEqual(answers.map((f) => f.id), ['after'], `only the request is answered: ${JSON.stringify(answers)}`);
  const log = agent.log();
  for (const id of ['15', '"req-x"', 'null', 'absent', '{"odd":1}', '16'])
    assert.ok(log.includes(`ignoring a response frame (id ${id})`), `the log names the response with id ${id}:\n${log}`);
  await agent.finish();
});

// The notice in the log counts the frame's own bytes, whichever line end it had.
test('the oversize notice counts bytes without the line terminator', async (t) => {
  const agent = startAgent(t, { args: ['--max-frame-bytes', '1024'] });
  await agent.initialize();
  for (const [size, end] of [[3000, '\n'], [3001, '\r\n'], [1025, '\r\n'], [200_000, '\r\n']]) {
    const from = agent.frames.length;
    await agent.writeRaw(`{"pad":"${'q'.repeat(size - 10)}"}` + end);
    await agent.writeRaw(INIT(size) + '\n');
    await agent.response(size, { from });
    const errs = agent.frames.slice(from).filter((e) => e.frame.error);
    assert.equal(errs.length, 1);
    assert.deepEqual(errs[0].frame.error.data, { maxFrameBytes: 1024 });
    assert.match(agent.log(), new RegExp(`dropped an input frame of ${size} bytes \\(limit 1024\\)`), `size ${size}, end ${JSON.stringify(end)}`);
  }
  await agent.finish();
});
