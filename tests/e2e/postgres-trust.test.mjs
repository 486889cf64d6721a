// Sessions in PostgreSQL between people who do not trust each other, through the official ACP SDK
// and psql: one person's psql can neither hold up another's prompts nor learn which sessions they
// keep, and a store URL with a password is refused in every spelling libpq reads, printed nowhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { acp } from './lib/agent.mjs';
import { prompt, text } from './lib/refs.mjs';
import { listed, listedEventually, load, newSession, person } from './lib/pgpeople.mjs';
import { freshStore, psql, runBin, storedEvents, turnStarted } from './lib/postgres.mjs';

const M = acp.methods.agent;

/** psql as `role`, kept open: run(sql) sends statements and resolves with the output up to a marker. */
function psqlSession(t, url) {
  const proc = spawn('psql', [url, '-v', 'ON_ERROR_STOP=1', '-XAtq'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '', err = '', waiting = null, marks = 0;
  const settle = () => {
    if (!waiting) return;
    const at = out.indexOf(waiting.mark);
    if (at >= 0) {
      const done = waiting;
      waiting = null;
      const text = out.slice(0, at).trim();
      out = out.slice(at + done.mark.length);
      done.resolve(text);
    } else if (proc.exitCode !== null) {
      waiting.reject(new Error(`psql ended: ${err}`));
    }
  };
  proc.stdout.on('data', (d) => { out += d; settle(); });
  proc.stderr.on('data', (d) => { err += d; });
  proc.on('exit', settle);
  t.after(() => proc.kill());
  return {
    run(sql) {
      const mark = `--done-${++marks}--`;
      return new Promise((resolve, reject) => {
        waiting = { mark, resolve, reject };
        proc.stdin.write(`${sql}\nSELECT '${mark}';\n`);
      });
    },
    errors: () => err,
  };
}

test('another person in psql can neither hold up alice\'s prompts nor learn which sessions she keeps', async (t) => {
  const store = freshStore(t);
  const alice = await person(t, store.url('alice'));
  const sid = await newSession(alice);
  await prompt(alice, sid, 'one');

  // Bob takes what he can: the advisory key the previous schema locked sessions with, and every row
  // of the lock table he can reach, in a transaction he keeps open.
  const bob = psqlSession(t, store.url('bob'));
  assert.equal(await bob.run(`SELECT pg_try_advisory_lock(hashtextextended('dsh-acp:' || '${sid}', 0));`), 't');
  assert.equal(await bob.run('BEGIN; SELECT count(*) FROM (SELECT FROM dsh_acp.session_locks FOR UPDATE) l;'), '0');
  for (const words of ['two', 'three']) {
    const r = await prompt(alice, sid, words);
    assert.equal(r.response.stopReason, 'end_turn', 'never SESSION_BUSY because of bob');
  }
  // While alice's turn runs, her lock's row is not his to wait for: he is answered at once.
  const slow = alice.ctx.request(M.session.prompt, { sessionId: sid, prompt: text('slow [[echo:sleep=2000]]') });
  await turnStarted(store.db, sid, 4);
  assert.equal(await bob.run(`SET LOCAL lock_timeout = '50ms'; SELECT count(*) FROM (SELECT FROM dsh_acp.session_locks ` +
    `WHERE id = '${sid}' FOR UPDATE) l;`), '0');
  assert.equal((await slow).stopReason, 'end_turn');
  assert.equal(await bob.run('ROLLBACK;'), '');

  // Bob copies a session with alice's id into the database (store copy from a directory) and inserts
  // one in psql: both go through as for an id nobody has, so neither tells him hers exists.
  const home = mkdtempSync(path.join(tmpdir(), 'dsh-acp-pgpeople-'));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const shape = psql(store.db, `SELECT generation FROM dsh_acp.sessions WHERE id = '${sid}'`);
  const out = runBin(['store', 'copy', store.url('alice'), path.join(home, 'alices'), '--store-compression', 'none',
    '--store-generation', shape]);
  assert.equal(out.status, 0, out.stderr);
  const into = runBin(['store', 'copy', path.join(home, 'alices'), store.url('bob')]);
  assert.equal(into.status, 0, into.stdout + into.stderr);
  assert.doesNotMatch(into.stdout + into.stderr, /exist/i);
  assert.equal(await bob.run(`INSERT INTO dsh_acp.sessions (id, generation, header_line, created_at, updated_at) ` +
    `VALUES ('${sid}-2', '45fc', '{}', 1, 1) RETURNING id;`), `${sid}-2`);
  psql(store.db, `INSERT INTO dsh_acp.sessions (id, owner, generation, header_line, created_at, updated_at) ` +
    `VALUES ('${sid}-2', '${store.roles.alice}', '45fc', '{}', 1, 1)`);  // hers too, made by the admin
  assert.equal(await bob.run(`SELECT count(*) FROM dsh_acp.sessions WHERE id LIKE '${sid}%';`), '2', 'his own two only');

  // Each lists and writes their own.
  const mine = (await listed(alice)).filter((s) => s.sessionId === sid);
  assert.equal(mine.length, 1);
  assert.ok(JSON.stringify(mine[0]._meta).includes(store.roles.alice));
  const bobAgent = await person(t, store.url('bob'));
  const his = await listedEventually(bobAgent, sid);
  assert.ok(JSON.stringify(his._meta).includes(store.roles.bob), JSON.stringify(his._meta));
  await load(bobAgent, sid);
  assert.equal((await prompt(bobAgent, sid, 'my copy')).response.stopReason, 'end_turn');
  const hers = storedEvents(store.db, sid, store.roles.alice);
  assert.equal(hers.filter((e) => e.type === 'turn/start').length, 4, 'alice\'s session untouched');
  assert.equal(storedEvents(store.db, sid, store.roles.bob).filter((e) => e.type === 'turn/start').length, 5);
  await alice.agent.finish();
  await bobAgent.agent.finish();
});

test('a store URL with a password is refused in every spelling, and the password is printed nowhere', async (t) => {
  const store = freshStore(t, ['alice']);
  const SECRET = 's3cret-e2e';
  const url = store.url('alice');
  const withParam = (param) => `${url}${url.includes('?') ? '&' : '?'}${param}`;
  const spellings = [
    url.replace('@', `:${SECRET}@`),
    withParam(`password=${SECRET}`),
    withParam(`%70assword=${SECRET}`),
    withParam(`%70assword=${encodeURIComponent(SECRET).replace('e', '%65')}`),
    withParam(`sslpassword=${SECRET}`),
    withParam(`dbname=${encodeURIComponent(`${store.db} password=${SECRET}`)}`),
  ];
  const home = mkdtempSync(path.join(tmpdir(), 'dsh-acp-pgurl-'));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const log = path.join(home, 'server.log');
  const shows = (r) => [r.stdout, r.stderr, existsSync(log) ? readFileSync(log, 'utf8') : ''].join('\n');
  for (const bad of spellings) {
    const env = { HOME: home, XDG_DATA_HOME: home, XDG_CONFIG_HOME: home };
    const config = path.join(home, 'config.json');
    writeFileSync(config, JSON.stringify({ store: bad }));
    const runs = [
      runBin(['--store', bad, '--log-file', log], env),
      runBin(['--log-file', log], { ...env, DSH_ACP_STORE: bad }),
      runBin(['--config', config, '--log-file', log], env),
      runBin(['store', 'copy', bad, path.join(home, 'out')], env),
      runBin(['store', 'copy', path.join(home, 'none'), bad], env),
      runBin(['store', 'verify', bad], env),
      runBin(['store', 'migrate', bad], env),
    ];
    for (const r of runs) {
      assert.equal(r.status, 2, `refused: ${bad}\n${r.stderr}`);
      assert.match(r.stderr, /password/i, r.stderr);
      assert.ok(!shows(r).includes(SECRET), `no password shown: ${shows(r)}`);
      assert.ok(!shows(r).includes('s3cr%65t'), shows(r));
    }
  }
  // The same URL without the password serves (credentials come the libpq ways).
  const ok = runBin(['store', 'verify', url]);
  assert.equal(ok.status, 0, ok.stderr);
});
