#!/usr/bin/env node
/**
 * What a login costs the event loop, and why: one `serve` process on a seeded SQLite file, its
 * main thread alone on the first core and every other thread of it (the password hashing, V8's
 * helpers) on the second, logins sent one after another from that second core for a warm-up and
 * then for a few rounds. Per successful login it prints the main thread's CPU time and how many
 * times it was put on the CPU (/proc/<pid>/task/<pid>/schedstat: run time, wait time, runs), and
 * so the CPU of one run. `npm run bench` reports the CPU a login of `--workers auto`, where the
 * hashing shares the cores; here it does not, so what is left is the loop's own.
 *
 * Usage: node bench/login-loop.mjs [--cli PATH] [--warmup S] [--seconds S] [--rounds N]
 * Linux with taskset, 2 cores or more. Prints one line per round and BENCH_RESULT {...}.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { readArgs } from './lib/args.mjs';
import { buildRequest } from './lib/requests.mjs';
import { APP_ID, BENCH_LOGIN, BENCH_PASSWORD, seedService, throttleOffConfig } from './lib/seed.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const o = { cli: join(ROOT, 'dist', 'cli', 'main.js'), warmupS: 40, seconds: 15, rounds: 3 };
readArgs(process.argv.slice(2), (flag, next) => {
  if (flag === '--cli') o.cli = next();
  else if (flag === '--warmup') o.warmupS = Number(next());
  else if (flag === '--seconds') o.seconds = Number(next());
  else if (flag === '--rounds') o.rounds = Number(next());
  else return false;
  return true;
});

const PORT = 18_090 + (process.pid % 1000);
const { OPERATIONS } = await import(pathToFileURL(join(dirname(o.cli), '..', 'contract', 'operations.js')).href);
const tmp = mkdtempSync(join(tmpdir(), 'svcapi-login-loop-'));
const db = `sqlite:${join(tmp, 'auth.db')}`;
let server = null;
try {
  await seedService({ cliPath: o.cli, db, tmpDir: tmp, newsCount: 0 });
  // Every login comes from one address: brute-force protection would refuse them.
  const { file } = await throttleOffConfig(o.cli, tmp);
  server = spawn(process.execPath, [o.cli, 'serve', '--db', db, '--port', String(PORT), '--management-port', '0'], {
    env: { ...process.env, ...(file !== null && { SVCAPI_CONFIG: file }), SVCAPI_HASHING_MAX_CONCURRENT: '1' }, stdio: ['ignore', 'ignore', 'inherit'],
  });
  const pid = server.pid;
  const req = buildRequest(OPERATIONS, 'soap11', 'ValidateUser', { login: BENCH_LOGIN, password: BENCH_PASSWORD, AppId: APP_ID, IPAddress: '' });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const login = () => new Promise((resolve, reject) => {
    const r = http.request({ host: '127.0.0.1', port: PORT, method: 'POST', path: req.path, headers: req.headers, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => resolve(/<ValidateUserResult>[0-9a-f-]{36}</.test(body)));
    });
    r.on('error', reject);
    r.end(req.body);
  });
  for (let tries = 0; ; tries++) {
    try {
      if (await login()) break;
      throw new Error('the login failed');
    } catch (error) {
      if (tries > 100) throw error;
      await sleep(100);
    }
  }
  const logins = async (seconds) => {
    let ok = 0;
    for (const end = Date.now() + seconds * 1000; Date.now() < end;) if (await login()) ok++;
    return ok;
  };
  const schedstat = () => readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').trim().split(' ').map(Number);
  // The main thread (its id is the process id) on core 0, every other thread on core 1, this process too.
  const place = () => {
    for (const tid of readdirSync(`/proc/${pid}/task`)) execFileSync('taskset', ['-pc', Number(tid) === pid ? '0' : '1', tid], { stdio: 'ignore' });
  };
  execFileSync('taskset', ['-pc', '1', String(process.pid)], { stdio: 'ignore' });
  place();
  process.stderr.write(`login-loop: warming ${o.warmupS} s (V8 optimises the login path after a few thousand logins)\n`);
  await logins(o.warmupS);
  const rounds = [];
  for (let round = 1; round <= o.rounds; round++) {
    place(); // threads started since (a new pool thread, a V8 helper) go to core 1 too
    const [cpu0, , runs0] = schedstat();
    const ok = await logins(o.seconds);
    const [cpu1, , runs1] = schedstat();
    const r = { logins: ok, loginsPerSecond: ok / o.seconds, loopMsPerLogin: (cpu1 - cpu0) / 1e6 / ok, runsPerLogin: (runs1 - runs0) / ok, msPerRun: (cpu1 - cpu0) / 1e6 / (runs1 - runs0) };
    rounds.push(r);
    process.stdout.write(`round ${round}: ${ok} logins in ${o.seconds} s, the main thread ${r.loopMsPerLogin.toFixed(3)} ms of CPU a login, ` +
      `on the CPU ${r.runsPerLogin.toFixed(2)} times a login, ${r.msPerRun.toFixed(3)} ms each\n`);
  }
  process.stdout.write(`BENCH_RESULT ${JSON.stringify({ cli: o.cli, rounds })}\n`);
} finally {
  server?.kill('SIGTERM');
  if (server !== null) await new Promise((resolve) => server.once('exit', resolve));
  rmSync(tmp, { recursive: true, force: true });
}
