// Layout-aware access to a session store root for the end-to-end tests. A root holds one of the
// harness's two layouts ("generations"):
//   45fc  <root>/cwd-<12 hex of sha256(cwd)>/<encodeSegment(id)>.jsonl[.zstd]          (docs/store-format.md#flat-layout-45fc)
//   0.1   <root>/--<projectKey(cwd)>--/<encodeSegment(id)>/session.jsonl[.zstd]         (docs/store-format.md#project-layout-01)
// (`_no-cwd` for a session without a cwd, in both). The server gives a new root the layout of
// --store-generation / DSH_ACP_STORE_GENERATION (45fc by default) and keeps the layout an existing
// root holds, so the suite runs against either. These helpers find a session's log in a root of
// either layout (by looking at what the root holds), read its events in one normalised model (the
// 45fc shape, see normaliseEvent), and write hand-made logs in the root's layout and shapes.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { appendFileSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync,
  writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { copyStore, databaseFor, databaseOf, sessionIds } from './pgvariant.mjs';

/** The layout a new root takes in this run: DSH_ACP_STORE_GENERATION, else 45fc (the server's default). */
export const DEFAULT_GENERATION = process.env.DSH_ACP_STORE_GENERATION === '0.1' ? '0.1' : '45fc';

/** encodeSegment(): per UTF-16 unit keep [A-Za-z0-9._-], else ~XXXX; "." and ".." fully escaped. */
export function encodeSegment(id) {
  if (id === '.') return '~002E';
  if (id === '..') return '~002E~002E';
  let out = '';
  for (let i = 0; i < id.length; i++) {
    const c = id[i];
    out += /[A-Za-z0-9._-]/.test(c) ? c : `~${id.charCodeAt(i).toString(16).toUpperCase().padStart(4, '0')}`;
  }
  return out;
}

/** The 45fc bucket of a cwd: cwd-<first 12 hex of sha256(cwd)>, or _no-cwd. */
export const bucketOf = (cwd) => (cwd === undefined ? '_no-cwd' : `cwd-${createHash('sha256').update(cwd, 'utf8').digest('hex').slice(0, 12)}`);

/** projectKey(cwd) of the 0.1 layout (docs/store-format.md#projectkey; src/store/layout.cpp project_key). */
export function projectKey(cwd) {
  assert.ok(cwd.length > 0, 'cannot encode an empty project path');
  let out = '';
  let inRun = false;
  for (let i = 0; i < cwd.length; i++) {
    const c = cwd[i];
    if (c === '/' || c === '\\' || c === ':') {
      if (!inRun) out += '-';
      inRun = true;
      continue;
    }
    inRun = false;
    out += /[A-Za-z0-9._-]/.test(c) ? c : `~${cwd.charCodeAt(i).toString(16).toUpperCase().padStart(4, '0')}`;
  }
  out = out.replace(/^-+/, '');
  if (out === '') out = 'root';
  return out.slice(0, 251);
}

/** The 0.1 project directory of a cwd: --<projectKey(cwd)>--, or _no-cwd. */
export const projectDirOf = (cwd) => (cwd === undefined ? '_no-cwd' : `--${projectKey(cwd)}--`);

/** The directory (relative to the root) a session's log lives in, in a layout. */
export const sessionDirOf = (generation, cwd, id) =>
  (generation === '0.1' ? path.join(projectDirOf(cwd), encodeSegment(id)) : bucketOf(cwd));

const isLogName = (n) => n.endsWith('.jsonl') || n.endsWith('.jsonl.zstd');
const isDir = (p) => { try { return statSync(p).isDirectory(); } catch { return false; } };

/**
 * The layout a root holds: '0.1' when a directory of the root holds a session directory with a
 * session.jsonl[.zstd], '45fc' when one holds a flat log; otherwise (empty or absent root) the
 * layout a new root takes in this run.
 */
export function generationOf(store) {
  let flat = false;
  if (existsSync(store)) {
    for (const b of readdirSync(store)) {
      const bdir = path.join(store, b);
      if (!isDir(bdir)) continue;
      for (const n of readdirSync(bdir)) {
        if (isLogName(n)) flat = true;
        else if (['session.jsonl', 'session.jsonl.zstd'].some((f) => existsSync(path.join(bdir, n, f)))) return '0.1';
      }
    }
  }
  return flat ? '45fc' : DEFAULT_GENERATION;
}

/** The encoding a root holds ('zstd' or 'none'), or undefined when it holds no log. */
export function encodingOf(store) {
  const files = logFilesRaw(store);
  if (files.length === 0) return undefined;
  return files[0].endsWith('.zstd') ? 'zstd' : 'none';
}

/**
 * Every log file in a root, of either layout and encoding (absolute paths). In the PostgreSQL variant
 * (lib/pgvariant.mjs) the root is first brought up to date with the database standing for it.
 */
export function logFiles(store) {
  pgSyncOut(store);
  return logFilesRaw(store);
}

/** Every log file in a root as it is on disk. */
export function logFilesRaw(store) {
  const out = [];
  if (!existsSync(store)) return out;
  for (const b of readdirSync(store)) {
    const bdir = path.join(store, b);
    if (!isDir(bdir)) continue;
    for (const n of readdirSync(bdir)) {
      const p = path.join(bdir, n);
      if (isLogName(n)) out.push(p);
      else if (isDir(p)) {
        for (const f of ['session.jsonl', 'session.jsonl.zstd']) if (existsSync(path.join(p, f))) out.push(path.join(p, f));
      }
    }
  }
  return out;
}

/** The session id segment a log file belongs to (its file name in 45fc, its directory in 0.1). */
export const segmentOfLog = (file) => {
  const base = path.basename(file);
  return base === 'session.jsonl' || base === 'session.jsonl.zstd' ? path.basename(path.dirname(file))
    : base.replace(/\.jsonl(\.zstd)?$/, '');
};

/** The log file of `id` in `store` (either layout, raw or zstd); asserts there is exactly one. */
export function logPath(store, id) {
  const name = encodeSegment(id);
  const found = logFiles(store).filter((f) => segmentOfLog(f) === name);
  assert.equal(found.length, 1, `exactly one log for ${id}: ${found}`);
  return found[0];
}

/** Where the log of a session would be in a root of `generation` with encoding `encoding`. */
export function logPathFor(store, { id, cwd }, { generation = generationOf(store), encoding = 'none' } = {}) {
  const suffix = encoding === 'zstd' ? '.jsonl.zstd' : '.jsonl';
  return generation === '0.1' ? path.join(store, sessionDirOf('0.1', cwd, id), `session${suffix}`)
    : path.join(store, bucketOf(cwd), `${encodeSegment(id)}${suffix}`);
}

/** True when a log file is in the 0.1 layout (a session directory's session.jsonl[.zstd]). */
export const isV01Log = (file) => /(^|\/)session\.jsonl(\.zstd)?$/.test(file);

/** The log's lines as stored, parsed (zstd through the zstd CLI): [header, ...events]. */
export function readRawLog(file) {
  const raw = file.endsWith('.zstd') ? execFileSync('zstd', ['-dcq', file]) : readFileSync(file);
  const s = raw.toString('utf8');
  assert.ok(s.endsWith('\n'), `${file}: last line not terminated`);
  return s.slice(0, -1).split('\n').map((l) => JSON.parse(l));
}

/** The log's lines with every event normalised (normaliseEvent): [header, ...events]. */
export function readLog(file) {
  const [header, ...evs] = readRawLog(file);
  return [header, ...evs.map(normaliseEvent)];
}

/** The normalised events of `id` in `store`. */
export const events = (store, id) => readLog(logPath(store, id)).slice(1);

// ---- the normalised model -------------------------------------------------------------------

const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const isId = (v) => typeof v === 'string' && v.length > 0;

/**
 * One event in the normalised model: the 45fc shape. Step 1 mirrors src/store/event_model.cpp
 * (normalise_event), so a 0.1.1 line reads as the server reads it:
 *   assistant/message  data.message{role, content, source{kind:'model', …provenance}, id} -> data{content, provenance}
 *   tool/result        data.message{source, content:[tool-result], role, id}               -> data{callId, content, isError}
 *   turn/end           reason {kind:'error', error}                                        -> reason {kind:'error', failure}
 *   compaction/start|summary|end                                                           -> compact/start|summary|end
 * Step 2 takes off, after checking it, the identity 0.1.1 adds and 45fc does not have — message ids
 * (and role) on user/message, assistant/message and tool/result, the compaction id on compact/* and
 * on the checkpoint's source, the recall source's form:'recall', an aborted turn's reason {kind:'user'}
 * (src/store/event_model.cpp to_v01_record writes exactly these) — so an assertion written against
 * the 45fc shape checks the same fact in either layout. A 45fc line passes through unchanged.
 * Returns a new object.
 */
export function normaliseEvent(event) {
  const e = structuredClone(event);
  const d = e.data;
  if (!isObj(d)) return e;
  const dropMessageId = (where, obj, role) => {
    if (!Object.hasOwn(obj, 'id') && !Object.hasOwn(obj, 'role')) return obj;
    assert.ok(isId(obj.id), `seq ${e.seq}: ${where} has a message id: ${JSON.stringify(obj).slice(0, 200)}`);
    if (role !== undefined) assert.equal(obj.role, role, `seq ${e.seq}: ${where} role`);
    const { id: _id, role: _role, ...rest } = obj;
    return rest;
  };
  switch (e.type) {
    case 'assistant/message':
      if (isObj(d.message) && !Object.hasOwn(d, 'content') && Object.hasOwn(d.message, 'content')) {
        const { message } = d;
        assert.equal(message.role, 'assistant', `seq ${e.seq}: assistant message role`);
        assert.ok(isId(message.id), `seq ${e.seq}: assistant message id`);
        const { kind, ...provenance } = message.source ?? {};
        assert.equal(kind, 'model', `seq ${e.seq}: assistant source kind`);
        const out = {};
        for (const [k, v] of Object.entries(d)) {
          if (k === 'message') { out.content = message.content; out.provenance = provenance; } else out[k] = v;
        }
        e.data = out;
      } else e.data = dropMessageId('assistant/message', d);
      break;
    case 'tool/result': {
      const block = isObj(d.message) && Array.isArray(d.message.content) && d.message.content.length === 1
        ? d.message.content[0] : undefined;
      if (isObj(block) && block.type === 'tool-result' && !Object.hasOwn(d, 'content')) {
        const { message } = d;
        assert.equal(message.role, 'user', `seq ${e.seq}: tool result role`);
        assert.ok(isId(message.id), `seq ${e.seq}: tool result id`);
        assert.equal(message.source?.kind, 'tool', `seq ${e.seq}: tool result source`);
        assert.equal(message.source?.callId, block.toolCallId, `seq ${e.seq}: source.callId = toolCallId`);
        const out = {};
        for (const [k, v] of Object.entries(d)) {
          if (k !== 'message') { out[k] = v; continue; }
          out.callId = block.toolCallId ?? message.source?.callId;
          if (Object.hasOwn(block, 'content')) out.content = block.content;
          if (Object.hasOwn(block, 'isError')) out.isError = block.isError;
        }
        e.data = out;
      } else e.data = dropMessageId('tool/result', d);
      break;
    }
    case 'turn/end': {
      const r = d.reason;
      if (isObj(r) && r.kind === 'error' && isObj(r.error) && !Object.hasOwn(r, 'failure')) {
        d.reason = Object.fromEntries(Object.entries(r).map(([k, v]) => [k === 'error' ? 'failure' : k, v]));
      } else if (isObj(r) && r.kind === 'aborted' && isObj(r.reason) && r.reason.kind === 'user' && Object.keys(r.reason).length === 1) {
        d.reason = { kind: 'aborted' };
      }
      break;
    }
    case 'compaction/start':
    case 'compaction/summary':
    case 'compaction/end':
      e.type = e.type.replace('compaction/', 'compact/');
      // fall through: the compaction id
    case 'compact/start':
    case 'compact/summary':
    case 'compact/end':
      if (Object.hasOwn(d, 'compactionId')) {
        assert.ok(isId(d.compactionId), `seq ${e.seq}: compactionId`);
        delete d.compactionId;
      }
      break;
    case 'user/message':
    case 'steering/message': {
      const data = dropMessageId(e.type, d, 'user');
      const s = data.source;
      if (isObj(s) && s.kind === 'plugin' && s.plugin === 'compact' && Object.hasOwn(s, 'compactionId')) {
        assert.ok(isId(s.compactionId), `seq ${e.seq}: checkpoint compactionId`);
        delete s.compactionId;
      }
      if (isObj(s) && s.kind === 'session-reference' && Object.hasOwn(s, 'form')) {
        assert.equal(s.form, 'recall', `seq ${e.seq}: session-reference form`);
        // 0.1.1's recall order is {source, content, …}; the 45fc record is {content, source}.
        const { form: _f, ...rest } = s;
        e.data = { ...(Object.hasOwn(data, 'content') ? { content: data.content } : {}), ...data, source: rest };
      } else e.data = data;
      break;
    }
    default:
      break;
  }
  return e;
}

// ---- writing hand-made logs -----------------------------------------------------------------

/**
 * A 45fc-shaped event in the shape 0.1.1 writes (mirrors to_v01_record and assign_v01_ids in
 * src/store/event_model.cpp): turn/start without trigger, messages with role and a fresh id,
 * assistant/tool payloads under data.message, error reasons under `error`, compaction/* with an id.
 * `state` carries the open compaction's id across calls.
 */
export function toV01(event, state = {}) {
  const d = event.data;
  if (!isObj(d)) return event;
  const env = (type, data) => {
    const out = { type, seq: event.seq, time: event.time, data };
    for (const k of ['sourceEventSeqs', 'surfaceOp']) if (Object.hasOwn(event, k)) out[k] = event[k];
    return out;
  };
  const pick = (obj, keys) => Object.fromEntries(keys.filter((k) => Object.hasOwn(obj, k)).map((k) => [k, obj[k]]));
  switch (event.type) {
    case 'turn/start':
      return env('turn/start', pick(d, ['turn']));
    case 'turn/end': {
      const r = d.reason ?? { kind: 'completed' };
      let reason = { kind: r.kind };
      if (r.kind === 'aborted') reason = { kind: 'aborted', reason: isObj(r.reason) ? r.reason : { kind: 'user' } };
      else if (r.kind === 'error') {
        reason = { kind: 'error', error: r.failure ?? r.error ?? { message: r.message ?? '', code: r.code || 'UNKNOWN' } };
      } else if (r.kind === 'disposed') reason = { kind: 'aborted', reason: { kind: 'disposed' } };
      return env('turn/end', { ...pick(d, ['turn']), reason });
    }
    case 'user/message':
    case 'steering/message': {
      let source = d.source;
      if (isObj(source) && source.kind === 'plugin' && source.plugin === 'compact' && !Object.hasOwn(source, 'compactionId') && state.compactionId) {
        source = { ...source, compactionId: state.compactionId };
      }
      const recall = isObj(source) && source.kind === 'session-reference';
      if (recall && !Object.hasOwn(source, 'form')) {
        const { kind, ...rest } = source;
        source = { kind, form: 'recall', ...rest };
      }
      const data = recall ? { source, content: d.content } : { content: d.content, source };
      return env('user/message', { ...data, role: 'user', id: d.id ?? randomUUID() });
    }
    case 'assistant/message': {
      const message = { role: 'assistant', content: d.content ?? [], source: { kind: 'model', ...(d.provenance ?? {}) }, id: d.id ?? randomUUID() };
      return env('assistant/message', { ...pick(d, ['turn', 'step']), message, ...pick(d, ['interrupted', 'usage']) });
    }
    case 'tool/result': {
      const block = { type: 'tool-result', toolCallId: d.callId, content: d.content ?? [], isError: d.isError ?? false };
      const message = { source: { kind: 'tool', callId: d.callId }, content: [block], role: 'user', id: d.id ?? randomUUID() };
      return env('tool/result', { ...pick(d, ['turn', 'step']), message, ...pick(d, ['error', 'meta']) });
    }
    case 'compact/start':
      state.compactionId = d.compactionId ?? randomUUID();
      return env('compaction/start', { compactionId: state.compactionId, ...pick(d, ['sourceCommandId', 'turn']) });
    case 'compact/summary':
      state.compactionId ??= randomUUID();
      return env('compaction/summary', {
        compactionId: state.compactionId,
        ...pick(d, ['sourceCommandId', 'summary', 'rawOutput', 'llmStreamCall', 'shadowedRange', 'shadowedSeqs',
          'shadowedTokenCount', 'provider', 'model', 'maxTokens', 'usage']),
      });
    case 'compact/end': {
      const id = state.compactionId ?? randomUUID();
      delete state.compactionId;
      return env('compaction/end', { compactionId: id, ...pick(d, ['sourceCommandId', 'turn', 'error']) });
    }
    default:
      return event;
  }
}

/** The lines of a hand-made log (header, then 45fc-shaped events) in the shapes of `generation`. */
export function linesFor(generation, lines, state = {}) {
  return generation === '0.1' ? lines.map((l) => (l.type === 'session' ? l : toV01(l, state))) : lines;
}

/**
 * Writes a hand-made raw log (header first, 45fc-shaped events) into `store` in the layout the
 * root holds (generationOf) and in that layout's shapes; returns the file. Directories 0700, log 0600.
 */
export function writeLog(store, lines, { generation = generationOf(store) } = {}) {
  const [header] = lines;
  const file = logPathFor(store, header, { generation, encoding: 'none' });
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, linesFor(generation, lines).map((l) => JSON.stringify(l) + '\n').join(''), { mode: 0o600 });
  return file;
}

/** Appends (45fc-shaped) events to a raw log, one line each, in the shapes of the log's layout. */
export function appendEvents(file, list) {
  const out = isV01Log(file) ? linesFor('0.1', list) : list;
  appendFileSync(file, out.map((e) => JSON.stringify(e) + '\n').join(''));
}

/**
 * The {message, code, …} of an `error` turn/end reason in the normalised model: 45fc writes a
 * provider failure flat ({kind, step, message, code}) and a refusal as {kind, step, failure}; 0.1.1
 * has one shape ({kind, error}, normalised to {kind, failure}).
 */
export function failureOf(reason) {
  assert.equal(reason?.kind, 'error', `an error reason: ${JSON.stringify(reason)}`);
  if (isObj(reason.failure)) return reason.failure;
  const { kind: _k, step: _s, ...flat } = reason;
  return flat;
}

// ---- the PostgreSQL variant (lib/pgvariant.mjs) ---------------------------------------------
// A root a server ran on in the variant mirrors the database standing for it. Copies only ever append
// (`store copy` continues a log the other side holds a prefix of), so each direction copies only what
// changed on its side: into the database, the logs the test wrote or changed since the last copy; out
// of it, everything, after removing the logs (as a copy left them) of sessions the server deleted.

const copied = new Map(); // resolved root -> Map(log file -> stamp) as the last copy left them

const stamp = (f) => { const st = statSync(f); return `${st.size}:${st.mtimeMs}`; };

function remember(root, live) {
  const m = new Map();
  for (const f of logFilesRaw(root)) if (live.has(segmentOfLog(f))) m.set(f, stamp(f));
  copied.set(path.resolve(root), m);
}

/**
 * The URL of the database standing for root `dir`, for a server of the variant (lib/agent.mjs), after
 * the logs the test wrote or changed there are copied in. `generation` and `compression` are the
 * server's own (--store-generation, --store-compression), which the copies out follow.
 */
export function pgServerStore(dir, { generation, compression } = {}) {
  const s = databaseOf(dir);
  if (generation) s.generation = generation;
  if (compression) s.compression = compression;
  const seen = copied.get(path.resolve(dir)) ?? new Map();
  const changed = logFilesRaw(dir).filter((f) => seen.get(f) !== stamp(f));
  if (changed.length > 0) {
    const tmp = mkdtempSync(path.join(tmpdir(), 'dsh-pg-seed-'));
    try {
      for (const f of changed) {
        const to = path.join(tmp, path.relative(dir, f));
        mkdirSync(path.dirname(to), { recursive: true, mode: 0o700 });
        copyFileSync(f, to);
      }
      copyStore(tmp, s.url);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
    remember(dir, new Set([...sessionIds(s)].map(encodeSegment)));
  }
  return s.url;
}

/** Brings root `store` up to date with the database standing for it (no-op without one). */
function pgSyncOut(store) {
  const s = databaseFor(store);
  if (!s) return;
  const live = new Set([...sessionIds(s)].map(encodeSegment));
  for (const [f, st] of copied.get(path.resolve(store)) ?? []) {
    if (live.has(segmentOfLog(f)) || !existsSync(f) || stamp(f) !== st) continue;
    rmSync(isV01Log(f) ? path.dirname(f) : f, { recursive: true, force: true });
  }
  const generation = logFilesRaw(store).length > 0 ? generationOf(store) : s.generation ?? DEFAULT_GENERATION;
  copyStore(s.url, store, ['--store-generation', generation, ...(s.compression ? ['--store-compression', s.compression] : [])]);
  remember(store, live);
}
