#!/usr/bin/env node
/**
 * Timing check for "no user enumeration": ValidateUser must take the same time
 * whatever made it fail. Starts the built service on a temporary SQLite database, then takes
 * `--samples` (default 200) timings of each failure class over HTTP POST, interleaved round
 * robin so drift in machine load hits every class alike, and compares the medians.
 *
 * Classes: unknown login, wrong password, disabled user, not granted, bad IP (an application
 * requiring one), throttled (a login/source pair past its failure limit), and a password too
 * long to hash. Sources vary per request (X-Forwarded-For from a trusted loopback proxy) and
 * each class rotates over ten logins, so only the throttled class is throttled.
 *
 * Passes when every class median is within `--tolerance` (default 0.10) of the median of all
 * failure medians. CI runs it with a wider tolerance for its noisier machine. Prints the
 * table and a closing "N passed, M failed" line (one check per class); exits 1 on failure.
 *
 *   npm run build && node scripts/security/timing-check.mjs [--samples 200] [--tolerance 0.1]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import process from 'node:process';
import console from 'node:console';
import { Buffer } from 'node:buffer';
import { URL, URLSearchParams } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dist = (p) => join(ROOT, 'dist', p);
const { values: opts } = parseArgs({ options: { samples: { type: 'string', default: '200' }, tolerance: { type: 'string', default: '0.10' } } });
const SAMPLES = Number(opts.samples);
const TOLERANCE = Number(opts.tolerance);
const ROTATION = 10;

const { openStore } = await import(dist('store/open-store.js'));
const { createAdminService } = await import(dist('domain/admin-service.js'));
const { createPasswordHasher } = await import(dist('domain/composite-password-hasher.js'));

const dir = mkdtempSync(join(tmpdir(), 'svcapi-timing-'));
const db = `sqlite:${join(dir, 'timing.db')}`;

async function seed() {
  const store = await openStore(db);
  const admin = createAdminService({ store, hasher: createPasswordHasher() });
  const must = async (p) => {
    const r = await p;
    if (!r.ok) throw new Error(r.message);
  };
  await must(admin.addApplication({ appId: 7, name: 'Needs IP', requireIp: true }));
  await must(admin.addApplication({ appId: 8, name: 'Nobody granted', requireIp: false }));
  for (let i = 0; i < ROTATION; i++) {
    await must(admin.addUser({ login: `good${i}`, password: 'right-password', appIds: [2, 7] }));
    await must(admin.addUser({ login: `off${i}`, password: 'right-password', appIds: [2] }));
    await must(admin.setUserEnabled(`off${i}`, false));
  }
  await must(admin.addUser({ login: 'victim', password: 'right-password', appIds: [2] }));
  await store.close();
}

function startServer() {
  const child = spawn(process.execPath, [dist('cli/main.js'), 'serve', '--port', '0', '--db', db], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SVCAPI_MANAGEMENT_PORT: 'off', SVCAPI_LOG_LEVEL: 'warn', SVCAPI_TRUSTED_PROXIES: '127.0.0.1', SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0' },
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (c) => {
      out += c;
      const m = /^Service: (http:\/\/\S+)$/m.exec(out);
      if (m) resolve({ child, url: new URL(m[1]) });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${out}`)));
  });
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
function post(url, form, source) {
  const body = new URLSearchParams(form).toString();
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = http.request(
      { host: url.hostname, port: url.port, path: '/Authentication.asmx/ValidateUser', method: 'POST', agent, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body), 'x-forwarded-for': source } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ ms: Number(process.hrtime.bigint() - started) / 1e6, status: res.statusCode, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

let nextSource = 0;
/** A fresh source address per request (10.x.y.z), so no source reaches its ceiling. */
const freshSource = () => {
  nextSource += 1;
  return `10.${(nextSource >> 16) & 255}.${(nextSource >> 8) & 255}.${nextSource & 255}`;
};

const THROTTLED_SOURCE = '192.0.2.77';
const classes = {
  'unknown login': (i) => [{ login: `nobody-${i}`, password: 'right-password', AppId: '2', IPAddress: '' }, freshSource()],
  'wrong password': (i) => [{ login: `good${i % ROTATION}`, password: 'wrong-password', AppId: '2', IPAddress: '' }, freshSource()],
  'disabled user': (i) => [{ login: `off${i % ROTATION}`, password: 'right-password', AppId: '2', IPAddress: '' }, freshSource()],
  'not granted': (i) => [{ login: `good${i % ROTATION}`, password: 'right-password', AppId: '8', IPAddress: '' }, freshSource()],
  'bad IP': (i) => [{ login: `good${i % ROTATION}`, password: 'right-password', AppId: '7', IPAddress: 'not-an-ip' }, freshSource()],
  throttled: () => [{ login: 'victim', password: 'wrong-password', AppId: '2', IPAddress: '' }, THROTTLED_SOURCE],
  'password too long': (i) => [{ login: `good${i % ROTATION}`, password: 'x'.repeat(1025), AppId: '2', IPAddress: '' }, freshSource()],
};

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

let server;
try {
  await seed();
  server = await startServer();
  // Warm up: a few successes set the padding target; the victim pair is driven past its limit.
  for (let i = 0; i < 5; i++) await post(server.url, { login: `good${i}`, password: 'right-password', AppId: '2', IPAddress: '' }, freshSource());
  for (let i = 0; i < 8; i++) await post(server.url, { login: 'victim', password: 'wrong-password', AppId: '2', IPAddress: '' }, THROTTLED_SOURCE);

  const timings = Object.fromEntries(Object.keys(classes).map((c) => [c, []]));
  const bodies = new Set();
  for (let i = 0; i < SAMPLES; i++) {
    for (const [name, make] of Object.entries(classes)) {
      const [form, source] = make(i);
      const r = await post(server.url, form, source);
      if (r.status !== 200) throw new Error(`${name}: HTTP ${r.status} ${r.text}`);
      bodies.add(r.text);
      timings[name].push(r.ms);
    }
  }
  const medians = Object.fromEntries(Object.entries(timings).map(([k, v]) => [k, median(v)]));
  const reference = median(Object.values(medians));
  let passed = 0;
  let failed = 0;
  console.log(`ValidateUser failure timings over HTTP POST, ${SAMPLES} samples per class; tolerance ±${(TOLERANCE * 100).toFixed(0)}% of ${reference.toFixed(1)} ms`);
  console.log('class               median ms   p10 ms   p90 ms   deviation   verdict');
  for (const [name, v] of Object.entries(timings)) {
    const s = [...v].sort((a, b) => a - b);
    const dev = (medians[name] - reference) / reference;
    const ok = Math.abs(dev) <= TOLERANCE;
    if (ok) passed++;
    else failed++;
    console.log(`${name.padEnd(20)}${medians[name].toFixed(1).padStart(9)}${s[Math.floor(s.length * 0.1)].toFixed(1).padStart(9)}${s[Math.floor(s.length * 0.9)].toFixed(1).padStart(9)}${`${(dev * 100).toFixed(1)}%`.padStart(12)}   ${ok ? 'PASS' : 'FAIL'}`);
  }
  // Identical bytes too: every class got the same answer.
  if (bodies.size === 1) passed++;
  else {
    failed++;
    console.log(`FAIL: ${bodies.size} different response bodies across failure classes`);
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exitCode = failed === 0 ? 0 : 1;
} finally {
  agent.destroy();
  server?.child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
