#!/usr/bin/env node
/**
 * What one speed-up saves, in CPU per request rather than throughput (throughput is noisy on a
 * shared machine; CPU time per request much less so): one server per variant, each with its own
 * environment (an off switch, docs/architecture.md "Caches and fast paths"), all on one seeded
 * SQLite database and pinned to the server core; wrk on the other core loads them in turn, in
 * rounds whose order alternates, and the CPU the server's process tree used (/proc) is divided by
 * the requests it answered. Not part of `npm test`; needs `npm run build`.
 *
 *   node bench/switch-cost.mjs --variant on: --variant off:SVCAPI_TABLE_MEMO=false --only whatsnew-10,whatsnew-100
 *
 * Options: --variant NAME:K=V,K=V (repeatable; default on: and off:SVCAPI_TABLE_MEMO=false)
 * --only ids (whatsnew-10, whatsnew-100, vut-soap11; default the two WhatsNew) --runs N (5)
 * --duration S (5) --connections N (16) --cli PATH (dist/cli/main.js).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { deployedNode } from './lib/deployed.mjs';
import { chooseClient, runLoad } from './lib/load.mjs';
import { cpuDelta, cpuLayout, killAll, loadAverage, treeCpu, waitIdle } from './lib/proc.mjs';
import { fmt, median } from './lib/report.mjs';
import { buildRequest, newsRowsIn, send, tokenIn } from './lib/requests.mjs';
import { APP_ID, BENCH_LOGIN, BENCH_PASSWORD, NEWS_LANGUAGE, seedService, throttleOffConfig } from './lib/seed.mjs';
import { startServer } from './lib/servers.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function parseArgs(argv) {
  const o = { variants: [], only: ['whatsnew-10', 'whatsnew-100'], runs: 5, durationS: 5, connections: 16, cli: join(ROOT, 'dist', 'cli', 'main.js') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--variant') {
      const [name, ...settings] = next().split(/[:,]/);
      o.variants.push({ name, env: Object.fromEntries(settings.filter((kv) => kv !== '').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])) });
    } else if (a === '--only') o.only = next().split(',');
    else if (a === '--runs') o.runs = Number(next());
    else if (a === '--duration') o.durationS = Number(next());
    else if (a === '--connections') o.connections = Number(next());
    else if (a === '--cli') o.cli = resolve(next());
    else if (a === '--help' || a === '-h') {
      process.stdout.write('usage: node bench/switch-cost.mjs [--variant NAME:K=V,K=V]... [--only whatsnew-10,whatsnew-100,vut-soap11] [--runs N] [--duration S] [--connections N] [--cli PATH]\n');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (o.variants.length === 0) o.variants.push({ name: 'on', env: {} }, { name: 'off', env: { SVCAPI_TABLE_MEMO: 'false' } });
  return o;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const layout = cpuLayout(false);
  const client = chooseClient('wrk');
  const tmp = await mkdtemp(join(tmpdir(), 'svcapi-switch-cost-'));
  const log = (s) => process.stderr.write(`${s}\n`);
  try {
    const db = `sqlite:${join(tmp, 'bench.db')}`;
    await seedService({ cliPath: o.cli, db, tmpDir: tmp, newsCount: 100 });
    const throttle = await throttleOffConfig(o.cli, tmp);
    const deployed = deployedNode();
    const env = {
      ...process.env, ...deployed.env, SVCAPI_MANAGEMENT_PORT: 'off', SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0',
      ...(throttle.file !== null && { SVCAPI_CONFIG: throttle.file }),
    };
    const servers = [];
    for (const variant of o.variants) {
      const args = [...deployed.nodeArgs, o.cli, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db, '--log-level', 'warn'];
      servers.push({ ...variant, server: await startServer({ name: variant.name, args, env: { ...env, ...variant.env }, cpu: layout.server, cwd: ROOT }) });
    }
    const { OPERATIONS } = await import(pathToFileURL(join(dirname(o.cli), '..', 'contract', 'operations.js')).href);
    const first = servers[0].server;
    const token = tokenIn((await send(first.origin, buildRequest(OPERATIONS, 'soap11', 'ValidateUser', { login: BENCH_LOGIN, password: BENCH_PASSWORD, AppId: APP_ID, IPAddress: '' }))).body);
    const whatsNew = (qty) => ({
      req: buildRequest(OPERATIONS, 'soap11', 'WhatsNew', { AppToken: '', AppID: APP_ID, AppVersion: '', Language: NEWS_LANGUAGE, qtyNews: qty }),
      ok: (body) => newsRowsIn(body) === qty,
    });
    const scenarios = {
      'whatsnew-10': whatsNew(10),
      'whatsnew-100': whatsNew(100),
      'vut-soap11': { req: buildRequest(OPERATIONS, 'soap11', 'ValidateUserToken', { token }), ok: (body) => />true</.test(body) },
    };
    const chosen = o.only.map((id) => {
      if (!(id in scenarios)) throw new Error(`unknown scenario ${id}`);
      return { id, ...scenarios[id] };
    });
    for (const { server, name } of servers) {
      for (const s of chosen) {
        if (!s.ok((await send(server.origin, s.req)).body)) throw new Error(`${name}: wrong answer to ${s.id}`);
        await runLoad({ origin: server.origin, req: s.req, connections: o.connections, durationS: 1, cpu: layout.load, client, tmpDir: tmp }); // warm-up
      }
    }
    const loads = [loadAverage()];
    const figures = new Map();
    for (let round = 0; round < o.runs; round++) {
      const order = round % 2 === 0 ? servers : [...servers].reverse();
      for (const s of chosen) {
        for (const { name, server } of order) {
          await waitIdle(server.pid);
          const before = treeCpu(server.pid);
          const r = await runLoad({ origin: server.origin, req: s.req, connections: o.connections, durationS: o.durationS, cpu: layout.load, client, tmpDir: tmp });
          const us = (cpuDelta(before, treeCpu(server.pid)) * 1e6) / r.requests;
          const key = `${s.id} ${name}`;
          if (!figures.has(key)) figures.set(key, []);
          figures.get(key).push(us);
          log(`switch-cost: round ${round + 1} ${key}: ${fmt(us, 1)} µs CPU/req, ${Math.round(r.rps)} req/s${r.errors + r.non2xx > 0 ? `, ${r.errors + r.non2xx} errors` : ''}`);
        }
      }
      loads.push(loadAverage());
    }
    process.stdout.write(`| Scenario | Variant | CPU µs/req (median of ${o.runs}) | runs |\n|---|---|---:|---|\n`);
    for (const [key, list] of figures) {
      const [id, name] = key.split(' ');
      process.stdout.write(`| ${id} | ${name} | ${fmt(median(list), 1)} | ${list.map((x) => fmt(x, 1)).join(' ')} |\n`);
    }
    process.stdout.write(`\nLoad average (1/5/15 min) at the start and after each round: ${loads.map((l) => l.join('/')).join(' → ')}\n`);
  } finally {
    killAll();
    await rm(tmp, { recursive: true, force: true });
  }
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  killAll();
  process.exit(1);
});
