// Two people on one PostgreSQL store, each a server process of their own driven through the ACP SDK
// (postgres.test.mjs, postgres-trust.test.mjs).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { INIT_PARAMS, startSdkAgent, acp, until, everyMs } from './agent.mjs';

const M = acp.methods.agent;

/** An initialized agent on `url` (its own home for logs; no file store at all). */
export async function person(t, url, args = []) {
  const { agent, ctx } = startSdkAgent(t, { args: ['--store', url, ...args] });
  await ctx.request(M.initialize, INIT_PARAMS);
  return { agent, ctx };
}

// Every session of a test works in one directory, as one project on two machines would.
const PROJECT = mkdtempSync(path.join(tmpdir(), 'dsh-acp-pg-project-'));
process.on('exit', () => rmSync(PROJECT, { recursive: true, force: true }));
export const newSession = async (p) => (await p.ctx.request(M.session.new, { cwd: PROJECT, mcpServers: [] })).sessionId;
export const load = (p, sessionId) => p.ctx.request(M.session.load, { sessionId, cwd: PROJECT, mcpServers: [] });
export const listed = async (p) => (await p.ctx.request(M.session.list, {})).sessions;
// Another process's change reaches a listing through NOTIFY, a moment after its commit: the listing
// is asked again until it shows (or no longer shows) the session (a change that never shows ends the
// test at its CTest timeout).
export async function listedEventually(p, id, present = true) {
  let row;
  await until(async () => {
    row = (await listed(p)).find((s) => s.sessionId === id);
    return Boolean(row) === present;
  }, `${id} ${present ? 'listed' : 'no longer listed'}`, everyMs(5));
  return row;
}
