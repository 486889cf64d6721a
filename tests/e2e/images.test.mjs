// Images in prompts (issue 28), through the official SDK: an image reaches the echo model (which
// describes what arrived), is saved in the harness's attachment store under $DSH_HOME (sha256 of its
// bytes) and logged as the harness's image block, in both store generations; the model still sees it
// on later turns; a load in a new process replays it as an image block (its placeholder once the
// object is gone). Images that are too large, not what their mimeType says, or sent to a model that
// takes none (DeepSeek, an OpenAI-compatible model not marked imageInput) are -32602 and nothing is
// logged; an OpenAI-compatible model marked imageInput gets `image_url` parts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { INIT_PARAMS, startSdkAgent, acp } from './lib/agent.mjs';
import { startFakeProvider, answer, providerArgs } from './lib/fake-provider.mjs';
import { logPath, readRawLog } from './lib/store.mjs';
import { png } from './lib/png.mjs';

const M = acp.methods.agent;

// ---- real images ------------------------------------------------------------------------------

const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');
const objectPath = (dshHome, hex) => path.join(dshHome, 'attachments', 'v1', 'objects', hex.slice(0, 2), hex);
const imageBlock = (buf, mimeType = 'image/png', extra = {}) => ({ type: 'image', data: buf.toString('base64'), mimeType, ...extra });

// ---- helpers ----------------------------------------------------------------------------------

function makeDirs(t) {
  const dir = mkdtempSync(path.join(tmpdir(), 'dsh-acp-images-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cwd = path.join(dir, 'proj');
  mkdirSync(cwd);
  return { dir, cwd, store: path.join(dir, 'sessions'), dshHome: path.join(dir, 'dsh') };
}

async function start(t, { store, dshHome }, args = [], env = {}) {
  const { agent, ctx } = startSdkAgent(t, { args: ['--store', store, '--store-compression', 'none', ...args], env: { DSH_HOME: dshHome, ...env } });
  const init = await ctx.request(M.initialize, INIT_PARAMS);
  return { agent, ctx, init };
}

const updatesOf = (agent, sessionId, from = 0) => agent.sdkUpdatesFor(sessionId).slice(from).map((u) => u.params.update);
const answerOf = (updates) => updates.filter((u) => u.sessionUpdate === 'agent_message_chunk').map((u) => u.content.text).join('');

/** The raw data of the session's user/message events (the log's own key order). */
function userMessages(store, sessionId) {
  return readRawLog(logPath(store, sessionId)).slice(1).filter((e) => e.type === 'user/message').map((e) => e.data);
}

async function refused(promise, pattern) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.code, -32602, `${err.code} ${err.message}`);
    assert.match(err.message, pattern);
    return true;
  });
}

// ---- tests ------------------------------------------------------------------------------------

for (const generation of ['0.1', '45fc']) {
  test(`${generation}: an image reaches the model, is stored as the harness stores it, and replays as an image after a restart`, async (t) => {
    const dirs = makeDirs(t);
    const picture = png(3, 2);
    const hex = sha256(picture);
    const a = await start(t, dirs, ['--store-generation', generation]);
    assert.equal(a.init.agentCapabilities.promptCapabilities.image, true);
    const { sessionId } = await a.ctx.request(M.session.new, { cwd: dirs.cwd, mcpServers: [] });

    const r = await a.ctx.request(M.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: 'what is in ' }, imageBlock(picture, 'image/png', { uri: 'file:///home/a/shot.png' }), { type: 'text', text: ' please?' }],
    });
    assert.equal(r.stopReason, 'end_turn');
    const first = answerOf(updatesOf(a.agent, sessionId));
    assert.match(first, new RegExp(`^image in \\[2\\]: image/png, 3x2, ${picture.length} bytes$`, 'm'), first);

    // The object: where the harness keeps it, named by the sha256 of its bytes, the bytes unchanged.
    assert.deepEqual(readFileSync(objectPath(dirs.dshHome, hex)), picture);
    assert.deepEqual(readdirSync(path.join(dirs.dshHome, 'attachments', 'v1', 'tmp')), [], 'no staging file left');
    // The block, in the store's key order, between the texts it stood between.
    const [user] = userMessages(dirs.store, sessionId);
    assert.deepEqual(user.content, [
      { type: 'text', text: 'what is in ' },
      { type: 'image', attachment: { attachmentId: `sha256:${hex}`, mediaType: 'image/png', width: 3, height: 2, bytes: picture.length, name: 'shot.png' } },
      { type: 'text', text: ' please?' },
    ]);
    assert.deepEqual(Object.keys(user.content[1].attachment), ['attachmentId', 'mediaType', 'width', 'height', 'bytes', 'name']);
    if (generation === '0.1') assert.equal(user.role, 'user');

    // A later turn's request still carries the image (rebuilt from the log).
    const before = a.agent.sdkUpdatesFor(sessionId).length;
    await a.ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'and now?' }] });
    const second = answerOf(updatesOf(a.agent, sessionId, before));
    assert.match(second, /^echo: received 4 messages\n/);
    assert.match(second, new RegExp(`^image in \\[2\\]: image/png, 3x2, ${picture.length} bytes$`, 'm'));
    await a.agent.finish();

    // A new process loads it: the image comes back as an image block where it stood.
    const b = await start(t, dirs);
    await b.ctx.request(M.session.load, { sessionId, cwd: dirs.cwd, mcpServers: [] });
    const replayed = updatesOf(b.agent, sessionId).filter((u) => u.sessionUpdate === 'user_message_chunk');
    assert.deepEqual(replayed.slice(0, 3).map((u) => u.content), [
      { type: 'text', text: 'what is in ' },
      { type: 'image', data: picture.toString('base64'), mimeType: 'image/png' },
      { type: 'text', text: ' please?' },
    ]);
    assert.equal(new Set(replayed.slice(0, 3).map((u) => u.messageId)).size, 1, 'one message');
    await b.agent.finish();

    // Without its object the image replays as its placeholder, and the model reads the placeholder.
    rmSync(objectPath(dirs.dshHome, hex));
    const c = await start(t, dirs);
    await c.ctx.request(M.session.load, { sessionId, cwd: dirs.cwd, mcpServers: [] });
    const shown = updatesOf(c.agent, sessionId).filter((u) => u.sessionUpdate === 'user_message_chunk');
    assert.equal(shown[0].content.text, `what is in \n[image shot.png (image/png, ${picture.length} bytes) \u2014 attachment missing]\n please?`);
    const from = c.agent.sdkUpdatesFor(sessionId).length;
    await c.ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'still there?' }] });
    const third = answerOf(updatesOf(c.agent, sessionId, from));
    assert.doesNotMatch(third, /^image in/m);
    assert.match(third, /\[2\] user \d+ bytes: what is in \[image: shot\.png, image\/png/);
    await c.agent.finish();
  });
}

test('an image alone is a prompt', async (t) => {
  const dirs = makeDirs(t);
  const a = await start(t, dirs);
  const { sessionId } = await a.ctx.request(M.session.new, { cwd: dirs.cwd, mcpServers: [] });
  const picture = png(1, 1);
  assert.equal((await a.ctx.request(M.session.prompt, { sessionId, prompt: [imageBlock(picture)] })).stopReason, 'end_turn');
  assert.match(answerOf(updatesOf(a.agent, sessionId)), /^image in \[2\]: image\/png, 1x1, /m);
  const [user] = userMessages(dirs.store, sessionId);
  assert.deepEqual(user.content.map((b) => b.type), ['image']);
  await a.agent.finish();
});

test('an image\'s metadata is neither stored nor sent to the model nor replayed', async (t) => {
  const dirs = makeDirs(t);
  const a = await start(t, dirs);
  const { sessionId } = await a.ctx.request(M.session.new, { cwd: dirs.cwd, mcpServers: [] });
  const clean = png(2, 2);
  const tagged = png(2, 2, 0, { GPSPosition: '48.8584 N, 2.2945 E', Author: 'Alice Example' });
  assert.notDeepEqual(tagged, clean);
  await a.ctx.request(M.session.prompt, { sessionId, prompt: [imageBlock(tagged)] });
  // The echo model reports the bytes it was sent: the clean image's.
  assert.match(answerOf(updatesOf(a.agent, sessionId)), new RegExp(`^image in \\[2\\]: image/png, 2x2, ${clean.length} bytes$`, 'm'));
  const [user] = userMessages(dirs.store, sessionId);
  assert.equal(user.content[0].attachment.attachmentId, `sha256:${sha256(clean)}`);
  assert.deepEqual(readFileSync(objectPath(dirs.dshHome, sha256(clean))), clean);
  await a.agent.finish();
  const b = await start(t, dirs);
  await b.ctx.request(M.session.load, { sessionId, cwd: dirs.cwd, mcpServers: [] });
  const [shown] = updatesOf(b.agent, sessionId).filter((u) => u.sessionUpdate === 'user_message_chunk');
  assert.equal(shown.content.data, clean.toString('base64'));
  await b.agent.finish();
});

test('images over the size limits, of another type than declared, or not canonical base64 are -32602; nothing is logged or stored', async (t) => {
  const dirs = makeDirs(t);
  const a = await start(t, dirs);
  const { sessionId } = await a.ctx.request(M.session.new, { cwd: dirs.cwd, mcpServers: [] });
  const prompt = (p) => a.ctx.request(M.session.prompt, { sessionId, prompt: p });
  const MiB = 1024 * 1024;
  const big = png(2, 2, 5 * MiB); // a valid PNG just over 5 MiB
  await refused(prompt([{ type: 'text', text: 'big' }, imageBlock(big)]), /\/prompt\/1\/data: .*larger than 5 MiB \(the limit per image\)/);
  const fits = png(2, 2, 4 * MiB);
  await refused(prompt([imageBlock(fits), imageBlock(fits), imageBlock(fits), imageBlock(fits), imageBlock(fits)]),
    /\/prompt\/4\/data: .*larger than 20 MiB together \(the limit per prompt\)/);
  await refused(prompt([{ type: 'text', text: 'x' }, imageBlock(png(2, 2), 'image/jpeg')]), /\/prompt\/1\/data: the image data is not a valid image\/jpeg image/);
  await refused(prompt([imageBlock(png(2, 2).subarray(0, 20))]), /not a valid image\/png image/);
  await refused(prompt([imageBlock(png(2, 2), 'image/bmp')]), /\/prompt\/0\/mimeType: image mimeType must be/);
  await refused(prompt([{ type: 'image', data: png(2, 2).toString('base64').replace(/=+$/, '') + ' ', mimeType: 'image/png' }]), /canonical base64/);
  await refused(prompt([imageBlock(png(8193, 1))]), /8193x1 pixels, more than 8192 on a side/);
  assert.deepEqual(updatesOf(a.agent, sessionId).filter((u) => /message_chunk$/.test(u.sessionUpdate)), [], 'nothing streamed');
  assert.equal(a.agent.turnCount(sessionId), 0, 'nothing logged');
  assert.equal(existsSync(path.join(dirs.dshHome, 'attachments')), false, 'nothing stored');
  // The session is still usable.
  assert.equal((await prompt([{ type: 'text', text: 'fine' }])).stopReason, 'end_turn');
  await a.agent.finish();
});

test('a DeepSeek model takes no images: refused naming the model, before anything is logged', async (t) => {
  const dirs = makeDirs(t);
  const a = await start(t, dirs, ['--provider', 'deepseek', '--model', 'deepseek-chat'], { DEEPSEEK_API_KEY: 'sk-test-not-used' });
  const { sessionId } = await a.ctx.request(M.session.new, { cwd: dirs.cwd, mcpServers: [] });
  await refused(a.ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'look' }, imageBlock(png(2, 2))] }),
    /the model "deepseek-chat" \(provider deepseek\) takes no images/);
  assert.equal(a.agent.turnCount(sessionId), 0);
  assert.equal(existsSync(path.join(dirs.dshHome, 'attachments')), false);
  await a.agent.finish();
});

test('an OpenAI-compatible model marked imageInput gets image_url parts; one not marked refuses naming it', async (t) => {
  const server = await startFakeProvider(t);
  server.queue(answer({ content: ['a small picture'] }));
  const dirs = makeDirs(t);
  const picture = png(4, 4);
  const NO_KEYS = { OPENAI_API_KEY: '', DEEPSEEK_API_KEY: '' };

  const plain = await start(t, dirs, providerArgs(server.url), NO_KEYS);
  const s0 = (await plain.ctx.request(M.session.new, { cwd: dirs.cwd, mcpServers: [] })).sessionId;
  await refused(plain.ctx.request(M.session.prompt, { sessionId: s0, prompt: [imageBlock(picture)] }),
    /the model "m1" \(provider openai\) takes no images; choose a model that does or mark it imageInput/);
  assert.equal(server.requests.length, 0);
  await plain.agent.finish();

  const a = await start(t, dirs, providerArgs(server.url, ['--image-input']), NO_KEYS);
  const { sessionId } = await a.ctx.request(M.session.new, { cwd: dirs.cwd, mcpServers: [] });
  const r = await a.ctx.request(M.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'describe ' }, imageBlock(picture), { type: 'text', text: ' briefly' }] });
  assert.equal(r.stopReason, 'end_turn');
  assert.equal(server.requests.length, 1);
  const user = server.requests[0].body.messages.at(-1);
  assert.deepEqual(user, {
    role: 'user',
    content: [
      { type: 'text', text: 'describe ' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${picture.toString('base64')}` } },
      { type: 'text', text: ' briefly' },
    ],
  });
  await a.agent.finish();
});
