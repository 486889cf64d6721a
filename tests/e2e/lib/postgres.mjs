// PostgreSQL for the e2e tests: the cluster the test suite started (tests/pg/pg-cluster, CTest
// fixture `postgres`), reached through DSH_ACP_TEST_PG (the superuser's URL over a unix socket).
// Each test gets its own database, migrated by the real binary, and its own login roles, so tests
// in parallel (and the suite's two passes) never see each other's sessions.
// A test that stops and starts PostgreSQL itself uses a cluster of its own instead (privateCluster).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { BIN, REPO_ROOT, until, everyMs } from './agent.mjs';

let ADMIN = process.env.DSH_ACP_TEST_PG;

const PG_CLUSTER = path.join(REPO_ROOT, 'tests', 'pg', 'pg-cluster');

function pgCluster(cmd, dir) {
  const r = spawnSync(PG_CLUSTER, [cmd, dir], { encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, 0, `pg-cluster ${cmd} ${dir}: ${r.stderr}${r.error ?? ''}`);
}

/**
 * A cluster of this test file alone (tests/pg/pg-cluster start), in a fresh directory under /tmp
 * (the server's system user must reach it when run as root); the helpers below then use it instead
 * of the suite's. For tests that stop and start PostgreSQL: the suite's cluster serves other tests.
 * `halt()` stops the server (fast shutdown), `resume()` starts it again on the same data. Removed
 * by `remove()` (idempotent), and at the latest when the process exits.
 */
export function privateCluster() {
  const dir = mkdtempSync('/tmp/dsh-acp-pgr-');
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    const r = spawnSync(PG_CLUSTER, ['stop', dir], { encoding: 'utf8', timeout: 120000 });
    if (r.status !== 0) rmSync(dir, { recursive: true, force: true });
  };
  process.on('exit', remove);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.once(sig, () => { remove(); process.kill(process.pid, sig); });
  }
  try {
    pgCluster('start', dir);
  } catch (err) {
    remove();
    throw err;
  }
  ADMIN = `postgresql://postgres@/postgres?host=${dir}/socket`;
  return {
    dir,
    url: ADMIN,
    halt: () => pgCluster('halt', dir),
    resume: () => pgCluster('resume', dir),
    remove,
  };
}

/** The admin URL (the suite's cluster, or the private one); a test that needs PostgreSQL fails (never skips) without one. */
export function adminUrl() {
  assert.ok(ADMIN, 'DSH_ACP_TEST_PG is not set: run through ctest (the postgres fixture starts the server)');
  return ADMIN;
}

// libpq URLs may have an empty host (the socket is a parameter), which WHATWG URL refuses.
const URL_PARTS = /^(postgres(?:ql)?:\/\/)(?:([^@/?]*)@)?([^/?]*)(?:\/([^?]*))?(\?.*)?$/;

/** The admin URL's role. */
export function adminRole() {
  const m = URL_PARTS.exec(adminUrl());
  assert.ok(m, `DSH_ACP_TEST_PG is no postgresql:// URL: ${adminUrl()}`);
  return m[2] || 'postgres';
}

/** The admin URL with its user and database replaced (the socket and other parameters kept). */
export function urlFor(role, db) {
  const m = URL_PARTS.exec(adminUrl());
  return `${m[1]}${role}@${m[3]}/${db}${m[5] ?? ''}`;
}

/** Runs SQL through psql as the superuser in `db`; returns psql's unaligned output. */
export function psql(db, sql) {
  const r = spawnSync('psql', [urlFor(adminRole(), db), '-v', 'ON_ERROR_STOP=1', '-XAtq', '-c', sql],
    { encoding: 'utf8' });
  assert.equal(r.status, 0, `psql failed: ${r.stderr}\n${sql}`);
  return r.stdout.trim();
}

/** Runs the binary with `args` (no ACP): {status, stdout, stderr}. */
export function runBin(args, env = {}) {
  const r = spawnSync(BIN, args, { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * A fresh database migrated by `dsh-acp store migrate`, with login roles `people` (each a member of
 * dsh_acp_user). Returns {db, url(role)}; dropped after the test.
 */
export function freshStore(t, people = ['alice', 'bob']) {
  const tag = randomBytes(4).toString('hex');
  const db = `dsh_e2e_${tag}`;
  psql('postgres', `CREATE DATABASE ${db}`);
  const migrated = runBin(['store', 'migrate', urlFor(adminRole(), db)]);
  assert.equal(migrated.status, 0, `store migrate: ${migrated.stderr}`);
  const roles = {};
  for (const p of people) {
    roles[p] = `${p}_${tag}`;
    psql(db, `CREATE ROLE ${roles[p]} LOGIN IN ROLE dsh_acp_user`);
  }
  t.after(() => {
    psql('postgres', `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    for (const r of Object.values(roles)) psql('postgres', `DROP ROLE IF EXISTS ${r}`);
  });
  return { db, roles, url: (p) => urlFor(roles[p], db), admin: urlFor(adminRole(), db) };
}

/** Events of a session as stored (seq order): [{seq, type, line}]; `owner`: of that role's session of the id. */
export function storedEvents(db, id, owner = null) {
  const whose = owner ? ` AND owner = '${owner.replaceAll("'", "''")}'` : '';
  const out = psql(db, `SELECT json_build_object('seq', seq, 'type', type, 'line', line) FROM dsh_acp.events ` +
    `WHERE session_id = '${id.replaceAll("'", "''")}'${whose} ORDER BY seq`);
  return out ? out.split('\n').map((l) => JSON.parse(l)) : [];
}

/** Resolves once the session holds `count` turn/start events (its prompt is running). */
export async function turnStarted(db, id, count = 1) {
  await until(() => Number(psql(db, `SELECT count(*) FROM dsh_acp.events WHERE session_id = '${id}' AND type = 'turn/start'`)) >= count,
    `turn ${count} of ${id} to start`, everyMs(20));
}
