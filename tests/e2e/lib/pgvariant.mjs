// The `.pg` variants of the e2e tests (issue 17: the existing suites against both stores). A test file
// registered a second time as e2e.<stem>.pg (tests/e2e/CMakeLists.txt, dsh_add_pg_variant) runs with
// DSH_ACP_TEST_STORE=pg and DSH_ACP_TEST_PG (the suite's cluster). Then every store directory a test
// starts a server on stands for a database of its own on that cluster (created and migrated by the
// binary under test, with a login role in dsh_acp_user so row security applies):
//   - the server runs with `--store URL` in place of the directory (lib/agent.mjs);
//   - sessions the test wrote into the directory as files are put in first (`dsh-acp store copy DIR URL`);
//   - a test reading the directory (lib/store.mjs logFiles, so logPath/events/readLog) reads an export
//     made at that point (`dsh-acp store copy URL DIR`, which continues logs the database holds more of).
// Copies are append-only, so a test may append to a log and restart the server as with files.
// Tests of a file-store fact (modes, torn tails, cut logs, flock) are `fileStoreOnly`: not defined in
// the variant (a skipped test would count as failing). The Python twin is tests/tools/pg_store.py.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

export const PG_VARIANT = process.env.DSH_ACP_TEST_STORE === 'pg';

const here = path.dirname(fileURLToPath(import.meta.url));
const BIN = process.env.DSH_ACP_BIN || path.join(here, '..', '..', '..', 'build', 'dsh-acp');

/** `test`, except in the PostgreSQL variant, where the test (of a file-store fact) is not defined. */
export const fileStoreOnly = PG_VARIANT ? () => {} : test;

const URL_PARTS = /^(postgres(?:ql)?:\/\/)(?:([^@/?]*)@)?([^/?]*)(?:\/([^?]*))?(\?.*)?$/;

function parts() {
  const admin = process.env.DSH_ACP_TEST_PG;
  assert.ok(admin, 'DSH_ACP_TEST_STORE=pg needs DSH_ACP_TEST_PG: run through ctest (the postgres fixture)');
  const m = URL_PARTS.exec(admin);
  assert.ok(m, `DSH_ACP_TEST_PG is no postgresql:// URL: ${admin}`);
  return m;
}

const urlFor = (role, db) => {
  const m = parts();
  return `${m[1]}${role}@${m[3]}/${db}${m[5] ?? ''}`;
};
const adminRole = () => parts()[2] || 'postgres';

function psql(db, sql) {
  const r = spawnSync('psql', [urlFor(adminRole(), db), '-v', 'ON_ERROR_STOP=1', '-XAtq', '-c', sql], { encoding: 'utf8' });
  assert.equal(r.status, 0, `psql failed: ${r.stderr}\n${sql}`);
  return r.stdout.trim();
}

function run(args) {
  const r = spawnSync(BIN, args, { encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, 0, `dsh-acp ${args.join(' ')}: exit ${r.status}\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

const stores = new Map(); // resolved directory -> {db, role, url}

process.on('exit', () => {
  for (const s of stores.values()) {
    spawnSync('psql', [urlFor(adminRole(), 'postgres'), '-XAtq', '-c', `DROP DATABASE IF EXISTS ${s.db} WITH (FORCE)`]);
    spawnSync('psql', [urlFor(adminRole(), 'postgres'), '-XAtq', '-c', `DROP ROLE IF EXISTS ${s.role}`]);
  }
});

/** The database standing for store directory `dir` (made on first use). */
function databaseOf(dir) {
  const key = path.resolve(dir);
  let s = stores.get(key);
  if (!s) {
    const tag = randomBytes(4).toString('hex');
    s = { db: `dsh_e2e_${tag}`, role: `person_${tag}` };
    psql('postgres', `CREATE DATABASE ${s.db}`);
    stores.set(key, s);
    run(['store', 'migrate', urlFor(adminRole(), s.db)]);
    psql(s.db, `CREATE ROLE ${s.role} LOGIN IN ROLE dsh_acp_user`);
    s.url = urlFor(s.role, s.db);
  }
  return s;
}

/** The ids of the sessions `dir`'s database holds now (as the superuser: every owner's). */
export function sessionIds(s) {
  const out = psql(s.db, "SELECT encode(convert_to(id, 'UTF8'), 'hex') FROM dsh_acp.sessions");
  return new Set(out ? out.split('\n').map((h) => Buffer.from(h, 'hex').toString('utf8')) : []);
}

/** `dsh-acp store copy FROM TO [args]`, which must succeed. */
export const copyStore = (from, to, args = []) => run(['store', 'copy', from, to, ...args]);

export { databaseOf };

/** The database standing for `dir` ({db, url}), or undefined (not a variant, or no server ran on it). */
export const databaseFor = (dir) => stores.get(path.resolve(dir));

/** turn/start events session `id` holds in `dir`'s database now. */
export function turnStarts(dir, id) {
  const s = stores.get(path.resolve(dir));
  if (!s) return 0;
  return Number(psql(s.db, `SELECT count(*) FROM dsh_acp.events WHERE session_id = '${id.replaceAll("'", "''")}' AND type = 'turn/start'`));
}
