#!/usr/bin/env node
/**
 * A CPU profile of svcapi-auth under load: seeds a database like `npm run bench`, starts
 * `node --cpu-prof dist/cli/main.js serve` (pinned like the benchmark), loads one scenario
 * (default ValidateUserToken SOAP 1.1, 64 connections, 10 s), stops the server gracefully so
 * the profile is written, and prints the functions with the most self time, the most inclusive
 * time, and the self time per package / file.
 *
 * Usage: node bench/profile.mjs [--scenario vut-soap11|vut-soap12|vut-get|vut-post|whatsnew-10|whatsnew-100|getuserloginurl|validateuser]
 *          [--seconds 10] [--connections 64] [--top 30] [--cli PATH] [--keep] [--no-write]
 *          [--log-level warn]   profile a quieter configuration (default: what ships, the access log on)
 *          [--target ceiling]   profile the ceiling server instead, to calibrate (what node:http and
 *                               the socket writes cost by themselves on this machine)
 *          [--pg [URL]]         on PostgreSQL (default BENCH_PG_URL or postgres://postgres@127.0.0.1:5432/test),
 *                               in a fresh schema dropped afterwards, instead of a SQLite file
 * Writes bench/results/profile-latest.md (profile-ceiling.md for the ceiling; keeps the .cpuprofile with --keep).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { readArgs } from './lib/args.mjs';
import { chooseClient, runLoad } from './lib/load.mjs';
import { cpuLayout, killAll, loadAverage, machineInfo } from './lib/proc.mjs';
import { buildRequest, send, tokenIn } from './lib/requests.mjs';
import { fmt, fmtInt } from './lib/report.mjs';
import { APP_ID, BENCH_LOGIN, BENCH_PASSWORD, NEWS_LANGUAGE, seedService, throttleOffConfig } from './lib/seed.mjs';
import { startServer } from './lib/servers.mjs';
import { dropPgSchema, pgUrlArg, runSchema } from './lib/pg.mjs';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(BENCH_DIR, '..');

function parseArgs(argv) {
  const o = { scenario: 'vut-soap11', seconds: 10, connections: 64, top: 30, cli: join(ROOT, 'dist', 'cli', 'main.js'), keep: false, write: true, target: 'svcapi', logLevel: null, pg: null };
  readArgs(argv, (a, next, peek) => {
    if (a === '--scenario') o.scenario = next();
    else if (a === '--seconds') o.seconds = Number(next());
    else if (a === '--connections') o.connections = Number(next());
    else if (a === '--top') o.top = Number(next());
    else if (a === '--cli') o.cli = resolve(next());
    else if (a === '--keep') o.keep = true;
    else if (a === '--no-write') o.write = false;
    else if (a === '--target') o.target = next();
    else if (a === '--log-level') o.logLevel = next();
    else if (a === '--pg') o.pg = pgUrlArg(next, peek);
    else return false;
  });
  return o;
}

/** Where a frame's code lives: a package, a file of the service, node's internals, or V8's pseudo-frames. */
function category(url, functionName) {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native / V8 builtins)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return `npm:${nm[1]}`;
  if (url.startsWith('node:')) return url.replace(/^node:internal\/(.*?)(\/.*)?$/, 'node:internal/$1');
  const dist = /\/dist\/(.+)$/.exec(url);
  if (dist) return `svcapi-auth:${dist[1]}`;
  return url;
}

export function summariseProfile(profile, top) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const key = (n) => {
    const f = n.callFrame;
    const file = f.url === '' ? '' : f.url.replace(/^file:\/\/.*?\/(node_modules|dist)\//, '$1/');
    return `${f.functionName || '(anonymous)'} ${file}${f.url === '' ? '' : `:${f.lineNumber + 1}`}`;
  };
  const self = new Map();
  const inclusive = new Map();
  const categories = new Map();
  let total = 0;
  const deltas = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = deltas[i + 1] ?? deltas[i] ?? 0; // a sample's time is the gap to the next one
    const node = byId.get(profile.samples[i]);
    if (!node) continue;
    total += dt;
    const k = key(node);
    self.set(k, (self.get(k) ?? 0) + dt);
    const cat = category(node.callFrame.url, node.callFrame.functionName);
    categories.set(cat, (categories.get(cat) ?? 0) + dt);
    const seen = new Set();
    for (let id = node.id; id !== undefined; id = parent.get(id)) {
      const kk = key(byId.get(id));
      if (seen.has(kk)) continue;
      seen.add(kk);
      inclusive.set(kk, (inclusive.get(kk) ?? 0) + dt);
    }
  }
  const topOf = (map) => [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, top).map(([name, us]) => ({ name, ms: us / 1000, pct: (100 * us) / total }));
  return { totalMs: total / 1000, self: topOf(self), inclusive: topOf(inclusive).filter((x) => !/^\((root|program|idle)\)/.test(x.name)), categories: topOf(categories) };
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (!existsSync(o.cli)) throw new Error(`${o.cli} does not exist: run npm run build first`);
  const { OPERATIONS } = await import(pathToFileURL(join(dirname(o.cli), '..', 'contract', 'operations.js')).href);
  const client = chooseClient(null);
  const layout = cpuLayout(false);
  const tmp = await mkdtemp(join(tmpdir(), 'svcapi-profile-'));
  const log = (t) => process.stderr.write(`${t}\n`);
  let server;
  let pgSchema = null;
  try {
    let db = `sqlite:${join(tmp, 'bench.db')}`;
    if (o.pg !== null) {
      const { schema, url } = runSchema(o.pg, 'profile');
      pgSchema = schema;
      db = url;
    }
    await seedService({ cliPath: o.cli, db, tmpDir: tmp });
    const throttle = await throttleOffConfig(o.cli, tmp);
    const profDir = join(tmp, 'prof');
    const profArgs = ['--cpu-prof', '--cpu-prof-dir', profDir, '--cpu-prof-interval', '250'];
    let token = '00000000-0000-0000-0000-000000000000';
    if (o.target === 'ceiling') {
      server = await startServer({ name: 'ceiling --cpu-prof', cpu: layout.server, cwd: ROOT, args: [...profArgs, join(BENCH_DIR, 'ceiling-server.mjs'), '--port', '0'] });
    } else {
      server = await startServer({
        name: 'svcapi-auth --cpu-prof', cpu: layout.server, cwd: ROOT,
        args: [...profArgs, o.cli, 'serve', '--port', '0', '--db', db, ...(o.logLevel === null ? [] : ['--log-level', o.logLevel])],
        env: { ...process.env, SVCAPI_MANAGEMENT_PORT: 'off', SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0', ...(throttle.file && { SVCAPI_CONFIG: throttle.file }) },
      });
      const login = await send(server.origin, buildRequest(OPERATIONS, 'soap11', 'ValidateUser', { login: BENCH_LOGIN, password: BENCH_PASSWORD, AppId: APP_ID, IPAddress: '' }));
      token = tokenIn(login.body);
      if (token === null) throw new Error(`no token: ${login.body}`);
    }
    const reqs = {
      'vut-soap11': ['soap11', 'ValidateUserToken', { token }],
      'vut-soap12': ['soap12', 'ValidateUserToken', { token }],
      'vut-get': ['http-get', 'ValidateUserToken', { token }],
      'vut-post': ['http-post', 'ValidateUserToken', { token }],
      'whatsnew-10': ['soap11', 'WhatsNew', { AppToken: '', AppID: APP_ID, AppVersion: '', Language: NEWS_LANGUAGE, qtyNews: 10 }],
      'whatsnew-100': ['soap11', 'WhatsNew', { AppToken: '', AppID: APP_ID, AppVersion: '', Language: NEWS_LANGUAGE, qtyNews: 100 }],
      // Issues and stores a login ticket per call (group commit: one transaction per turn).
      getuserloginurl: ['soap11', 'GetUserLoginURL', { token, AppID: APP_ID }],
      // The event loop's share of a login (argon2id itself runs on the libuv pool, outside the profile).
      'validateuser': ['soap11', 'ValidateUser', { login: BENCH_LOGIN, password: BENCH_PASSWORD, AppId: APP_ID, IPAddress: '' }],
    };
    if (!reqs[o.scenario]) throw new Error(`unknown --scenario ${o.scenario}`);
    const req = buildRequest(OPERATIONS, ...reqs[o.scenario]);
    const base = { origin: server.origin, req, connections: o.connections, cpu: layout.load, client, tmpDir: tmp };
    await runLoad({ ...base, durationS: 2 });
    const load = await runLoad({ ...base, durationS: o.seconds });
    log(`profile: ${o.scenario} c=${o.connections}: ${fmtInt(load.rps)} req/s, p50 ${fmt(load.p50Ms)} ms, p99 ${fmt(load.p99Ms)} ms (under the profiler)`);
    await server.stop(30_000);
    const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error(`no .cpuprofile written (server output: ${server.output()})`);
    const summary = summariseProfile(JSON.parse(readFileSync(join(profDir, file), 'utf8')), o.top);

    const m = machineInfo();
    const lines = [
      `# CPU profile of ${o.target === 'ceiling' ? 'the ceiling server' : 'svcapi-auth'}${o.pg !== null && o.target !== 'ceiling' ? ' on PostgreSQL' : ''}: ${o.scenario}, ${o.connections} connections, ${o.seconds} s`, '',
      `${new Date().toISOString()}; ${m.cpuModel}, ${m.cores} cores, Node ${m.node}; load average ${loadAverage().join(' ')}; ` +
      `${fmtInt(load.rps)} req/s under the profiler (2 s warm-up + ${o.seconds} s profiled, whole process life ${fmt(summary.totalMs / 1000)} s of samples).`, '',
      '## Self time by package / file', '', '| Where | ms | % |', '|---|---:|---:|',
      ...summary.categories.map((c) => `| ${c.name} | ${fmt(c.ms)} | ${fmt(c.pct, 1)} |`), '',
      '## Functions by self time', '', '| Function | ms | % |', '|---|---:|---:|',
      ...summary.self.map((c) => `| \`${c.name}\` | ${fmt(c.ms)} | ${fmt(c.pct, 1)} |`), '',
      '## Functions by inclusive time', '', '| Function | ms | % |', '|---|---:|---:|',
      ...summary.inclusive.map((c) => `| \`${c.name}\` | ${fmt(c.ms)} | ${fmt(c.pct, 1)} |`), '',
    ];
    const md = `${lines.join('\n')}\n`;
    process.stdout.write(md);
    if (o.write) {
      await mkdir(join(BENCH_DIR, 'results'), { recursive: true });
      await writeFile(join(BENCH_DIR, 'results', o.target === 'ceiling' ? 'profile-ceiling.md' : 'profile-latest.md'), md);
    }
    if (o.keep) log(`profile: kept ${join(profDir, file)}`);
  } finally {
    if (server) await server.stop(5000).catch(() => undefined);
    killAll();
    if (pgSchema !== null) await dropPgSchema(o.pg, pgSchema, (t) => log(`profile: ${t}`)).catch((error) => log(`profile: ${error.message}`));
    if (!o.keep) await rm(tmp, { recursive: true, force: true });
  }
}

main().catch((error) => {
  process.stderr.write(`profile: ${error.stack ?? error}\n`);
  killAll();
  process.exit(1);
});
