// initialize through the official SDK client: protocol version, agent identity, capabilities.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { BIN, INIT_PARAMS, startSdkAgent, acp } from './lib/agent.mjs';

const versionLine = execFileSync(BIN, ['--version'], { encoding: 'utf8' }).trim();
// The commit the binary names: this checkout's HEAD (the build was made from it), "unknown" without git.
let headCommit = 'unknown';
try {
  headCommit = execFileSync('git', ['-C', new URL('.', import.meta.url).pathname, 'rev-parse', '--short=12', 'HEAD'],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
} catch { /* no git: the build said "unknown" too */ }

test('initialize answers protocol 1, identity and the implemented capabilities', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  const r = await ctx.request(acp.methods.agent.initialize, INIT_PARAMS);

  assert.equal(r.protocolVersion, 1);
  assert.equal(r.agentInfo.name, 'dsh-acp');
  assert.match(r.agentInfo.version, /^\d+\.\d+\.\d+/);
  assert.equal(versionLine, `dsh-acp ${r.agentInfo.version} (commit ${headCommit})`,
    '--version names agentInfo.version and the commit built');
  assert.equal(typeof r.agentInfo.title, 'string');

  const pc = r.agentCapabilities.promptCapabilities;
  assert.equal(pc.embeddedContext, true);
  assert.equal(pc.image, true); // whatever the provider: a model that takes none refuses naming itself (images.test.mjs)
  assert.equal(pc.audio, false);
  // The echo model needs no key, and still names one agent method (auth.test.mjs).
  assert.deepEqual(r.authMethods.map((m) => m.type), ['agent']);
  // How commands the server runs are confined: Landlock, or none with the reason (docs/tools.md, "Sandbox").
  const sandbox = r.agentCapabilities._meta['dsh-acp/sandbox'];
  assert.ok(sandbox.commands === 'landlock' || (sandbox.commands === 'none' && typeof sandbox.reason === 'string'),
    JSON.stringify(sandbox));
  await agent.finish();
});

test('initialize answers protocol 1 whatever version the client asks for, and again on a second initialize', async (t) => {
  const { agent, ctx } = startSdkAgent(t);
  const first = await ctx.request(acp.methods.agent.initialize, { ...INIT_PARAMS, protocolVersion: 7 });
  assert.equal(first.protocolVersion, 1);
  const second = await ctx.request(acp.methods.agent.initialize, INIT_PARAMS);
  assert.deepEqual(second, first);
  await agent.finish();
});
