#!/usr/bin/env node
// `npx dsh-acp`: starts the dsh-acp binary of this package's version. The binary comes from the
// release archive named in dist.json, fetched once, checked against its SHA-256 and unpacked into
// the user's cache. The editor's stdin and stdout go straight to the binary (inherited), so this
// script never writes to stdout: its few messages go to stderr.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');
const { spawn, execFileSync } = require('node:child_process');

const dist = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'dist.json'), 'utf8'));

function fail(message) {
  process.stderr.write(`dsh-acp (npm): ${message}\n`);
  process.exit(1);
}

// The ACP registry's platform names.
function platformKey() {
  const system = { linux: 'linux', darwin: 'darwin', win32: 'windows' }[process.platform];
  const arch = { x64: 'x86_64', arm64: 'aarch64' }[process.arch];
  return system && arch ? `${system}-${arch}` : `${process.platform}-${process.arch}`;
}

async function download(url) {
  if (url.startsWith('file:')) return fs.readFileSync(new URL(url));
  const res = await fetch(url, { redirect: 'follow' });
  if (!res.ok) fail(`downloading ${url}: HTTP ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

async function install(target, cacheRoot, dir) {
  process.stderr.write(`dsh-acp (npm): fetching ${target.archive}\n`);
  const data = await download(target.archive);
  const sum = crypto.createHash('sha256').update(data).digest('hex');
  if (sum !== target.sha256) fail(`${target.archive}: SHA-256 ${sum}, expected ${target.sha256}; nothing was installed`);
  fs.mkdirSync(cacheRoot, { recursive: true });
  // Unpacked beside the final place and renamed into it, so a second npx starting at the same time
  // never runs a half-written binary.
  const tmp = fs.mkdtempSync(path.join(cacheRoot, '.unpack-'));
  try {
    const archive = path.join(tmp, 'archive.tar.gz');
    const into = path.join(tmp, 'unpacked');
    fs.writeFileSync(archive, data);
    fs.mkdirSync(into);
    execFileSync('tar', ['-xzf', archive, '-C', into], { stdio: ['ignore', 'ignore', 'inherit'] });
    try {
      fs.renameSync(into, dir);
    } catch (e) {
      if (!fs.existsSync(dir)) throw e;  // another start installed it first
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function main() {
  const key = platformKey();
  const target = dist.archives[key];
  if (!target) {
    fail(`this release (${dist.version}) has no build for ${key}; it has ${Object.keys(dist.archives).join(', ')}. ` +
         'Build from source as the README says.');
  }
  const cacheRoot = process.env.DSH_ACP_RELEASE_CACHE ||
    path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'dsh-acp', 'releases');
  const dir = path.join(cacheRoot, `${dist.version}-${key}`);
  const bin = path.join(dir, target.cmd);
  if (!fs.existsSync(bin)) await install(target, cacheRoot, dir);
  const child = spawn(bin, process.argv.slice(2), { stdio: 'inherit' });
  const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const signal of forwarded) process.on(signal, () => child.kill(signal));
  child.on('error', (e) => fail(`${bin}: ${e.message}`));
  child.on('exit', (code, signal) => {
    if (!signal) process.exit(code);
    // Ended by a signal: end the same way, so the editor sees what the binary saw.
    for (const s of forwarded) process.removeAllListeners(s);
    process.kill(process.pid, signal);
  });
}

main().catch((e) => fail(e.stack || String(e)));
