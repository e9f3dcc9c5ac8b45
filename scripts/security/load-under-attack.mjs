#!/usr/bin/env node
/**
 * Load check: while 500 wrong passwords per second arrive, ValidateUserToken keeps its
 * p99 under 50 ms. Starts the built service on a temporary SQLite database; the flood comes from
 * ever-new source addresses (X-Forwarded-For through a trusted loopback proxy) with ever-new
 * logins, the worst case for the service: no throttle applies and every attempt asks for a hash.
 * Bounded hashing must turn the excess into fast "Server too busy" faults instead of a queue,
 * and token validation, which never hashes, must not notice.
 *
 *   npm run build && node scripts/security/load-under-attack.mjs [--seconds 10] [--rate 500] [--p99 50]
 *
 * Prints what happened and a closing "N passed, M failed" line; exits 1 on failure.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, URL, URLSearchParams } from 'node:url';
import { parseArgs } from 'node:util';
import process from 'node:process';
import console from 'node:console';
import { Buffer } from 'node:buffer';
import { setTimeout as sleep } from 'node:timers/promises';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dist = (p) => join(ROOT, 'dist', p);
const { values: opts } = parseArgs({ options: { seconds: { type: 'string', default: '10' }, rate: { type: 'string', default: '500' }, p99: { type: 'string', default: '50' } } });
const SECONDS = Number(opts.seconds);
const RATE = Number(opts.rate);
const P99_LIMIT = Number(opts.p99);

const { openStore } = await import(dist('store/open-store.js'));
const { createAdminService } = await import(dist('domain/admin-service.js'));
const { createPasswordHasher } = await import(dist('domain/composite-password-hasher.js'));

const dir = mkdtempSync(join(tmpdir(), 'svcapi-attack-'));
const db = `sqlite:${join(dir, 'attack.db')}`;
{
  const store = await openStore(db);
  const admin = createAdminService({ store, hasher: createPasswordHasher() });
  const r = await admin.addUser({ login: 'client', password: 'client-password', appIds: [2] });
  if (!r.ok) throw new Error(r.message);
  await store.close();
}

const child = spawn(process.execPath, [dist('cli/main.js'), 'serve', '--port', '0', '--db', db], {
  cwd: ROOT,
  stdio: ['ignore', 'pipe', 'pipe'],
  env: { ...process.env, SVCAPI_MANAGEMENT_PORT: 'off', SVCAPI_LOG_LEVEL: 'error', SVCAPI_TRUSTED_PROXIES: '127.0.0.1', SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0' },
});
const url = await new Promise((resolve, reject) => {
  let out = '';
  const onData = (c) => {
    out += c;
    const m = /^Service: (http:\/\/\S+)$/m.exec(out);
    if (m) resolve(new URL(m[1]));
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  child.once('exit', (code) => reject(new Error(`server exited ${code}: ${out}`)));
});

function request(agent, path, body, headers = {}) {
  return new Promise((resolve) => {
    const started = process.hrtime.bigint();
    const req = http.request(
      { host: url.hostname, port: url.port, path, method: body === undefined ? 'GET' : 'POST', agent, headers: body === undefined ? headers : { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body), ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ ms: Number(process.hrtime.bigint() - started) / 1e6, status: res.statusCode, text }));
      },
    );
    req.on('error', (error) => resolve({ ms: Number(process.hrtime.bigint() - started) / 1e6, status: 0, text: String(error) }));
    req.end(body);
  });
}

const clientAgent = new http.Agent({ keepAlive: true, maxSockets: 8 });
const floodAgent = new http.Agent({ keepAlive: true, maxSockets: 256 });
let passed = 0;
let failed = 0;
const check = (ok, text) => {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'PASS' : 'FAIL'} ${text}`);
};

try {
  const login = await request(clientAgent, '/Authentication.asmx/ValidateUser', 'login=client&password=client-password&AppId=2&IPAddress=');
  const token = /<string xmlns="SVCAPI">([0-9a-f-]{36})<\/string>/.exec(login.text)?.[1];
  if (!token) throw new Error(`no token: ${login.text}`);
  const validate = () => request(clientAgent, `/Authentication.asmx/ValidateUserToken?token=${token}`);

  // Idle baseline.
  const idle = [];
  for (let i = 0; i < 400; i++) idle.push((await validate()).ms);

  // The flood: RATE wrong passwords per second, open loop, each from a new source and login.
  let sent = 0;
  const outcomes = { token: 0, empty: 0, busy: 0, other: 0 };
  const flood = [];
  const end = Date.now() + SECONDS * 1000;
  const floodLoop = (async () => {
    // Open loop paced by the clock, not by counting ticks: a tick that comes late (this process
    // also runs the token clients) sends what is due by now, so the rate is RATE whatever the
    // timers do.
    const tick = 10;
    const start = Date.now();
    while (Date.now() < end) {
      const due = Math.floor((RATE * (Date.now() - start)) / 1000) - sent;
      for (let i = 0; i < due; i++) {
        sent++;
        const source = `10.${(sent >> 16) & 255}.${(sent >> 8) & 255}.${sent & 255}`;
        flood.push(
          request(floodAgent, '/Authentication.asmx/ValidateUser', new URLSearchParams({ login: `guess${sent}`, password: 'wrong', AppId: '2', IPAddress: '' }).toString(), { 'x-forwarded-for': source }).then((r) => {
            if (r.status === 200 && r.text.includes('<string xmlns="SVCAPI" />')) outcomes.empty++;
            else if (r.status === 500 && r.text.includes('Server too busy')) outcomes.busy++;
            else if (r.status === 200) outcomes.token++;
            else outcomes.other++;
          }),
        );
      }
      await sleep(tick);
    }
  })();

  // Token validation beside it: 8 clients back to back.
  const underLoad = [];
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (Date.now() < end) {
        const r = await validate();
        if (r.status !== 200 || !r.text.includes('>true<')) throw new Error(`token check failed: ${r.status} ${r.text}`);
        underLoad.push(r.ms);
      }
    }),
  );
  await floodLoop;
  await Promise.all(flood);

  const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
  console.log(`flood: ${sent} wrong passwords in ${SECONDS} s (${Math.round(sent / SECONDS)}/s): ${outcomes.empty} ordinary failures, ${outcomes.busy} "Server too busy", ${outcomes.token} tokens, ${outcomes.other} other`);
  console.log(`ValidateUserToken idle: p50 ${pct(idle, 0.5).toFixed(2)} ms, p99 ${pct(idle, 0.99).toFixed(2)} ms`);
  console.log(`ValidateUserToken under the flood: ${underLoad.length} calls, p50 ${pct(underLoad, 0.5).toFixed(2)} ms, p99 ${pct(underLoad, 0.99).toFixed(2)} ms`);
  check(sent >= RATE * SECONDS * 0.9, `the flood ran at ${Math.round(sent / SECONDS)}/s (target ${RATE}/s)`);
  check(outcomes.token === 0 && outcomes.other === 0, 'every guess got the ordinary failure or "Server too busy", nothing else');
  check(pct(underLoad, 0.99) < P99_LIMIT, `ValidateUserToken p99 under the flood ${pct(underLoad, 0.99).toFixed(2)} ms < ${P99_LIMIT} ms`);
} finally {
  clientAgent.destroy();
  floodAgent.destroy();
  child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed === 0 ? 0 : 1;
