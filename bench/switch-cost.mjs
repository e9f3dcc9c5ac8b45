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
 * Options: --variant NAME[@CLI]:K=V,K=V (repeatable; default on: and off:SVCAPI_TABLE_MEMO=false;
 * @CLI: that variant runs another build, e.g. one with a speed-up taken out, to measure one that
 * has no switch) --only ids (whatsnew-10, whatsnew-100, vut-soap11, vut-fleet; default the two
 * WhatsNew) --fleet N (100000: vut-fleet's tokens, seeded in bulk as bench:scale does, each request
 * the next of them in a shuffled rotation: more than the memory keeps, so nearly every check reads
 * the store)
 * --runs N (5) --duration S (5) --connections N (16) --cli PATH (dist/cli/main.js; seeds the
 * database) --pg URL (PostgreSQL instead of SQLite: a fresh schema, dropped afterwards).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath, pathToFileURL, URL } from 'node:url';
import { envOf, readArgs } from './lib/args.mjs';
import { deployedNode } from './lib/deployed.mjs';
import { chooseClient, runLoad } from './lib/load.mjs';
import { clockTicksPerSecond, cpuDelta, cpuLayout, killAll, loadAverage, processTree, treeCpu, waitIdle } from './lib/proc.mjs';
import { fmt, median } from './lib/report.mjs';
import { buildRequest, newsRowsIn, send, tokenIn } from './lib/requests.mjs';
import { seedPostgres, seedSqlite, tokenText } from './lib/scale-seed.mjs';
import { APP_ID, BENCH_LOGIN, BENCH_PASSWORD, NEWS_LANGUAGE, seedService, throttleOffConfig } from './lib/seed.mjs';
import { startServer } from './lib/servers.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PLACEHOLDER = '__TOKEN__';

function parseArgs(argv) {
  const o = { variants: [], only: ['whatsnew-10', 'whatsnew-100'], runs: 5, durationS: 5, connections: 16, cli: join(ROOT, 'dist', 'cli', 'main.js'), pg: null, fleet: 100_000 };
  readArgs(argv, (a, next) => {
    if (a === '--variant') {
      const [label, ...settings] = next().split(/[:,]/);
      const [name, cli = null] = label.split('@');
      o.variants.push({ name, cli: cli === null ? null : resolve(cli), env: envOf(settings, a) });
    } else if (a === '--only') o.only = next().split(',');
    else if (a === '--runs') o.runs = Number(next());
    else if (a === '--duration') o.durationS = Number(next());
    else if (a === '--connections') o.connections = Number(next());
    else if (a === '--cli') o.cli = resolve(next());
    else if (a === '--pg') o.pg = next();
    else if (a === '--fleet') o.fleet = Number(next());
    else if (a === '--help' || a === '-h') {
      process.stdout.write('usage: node bench/switch-cost.mjs [--variant NAME:K=V,K=V]... [--only whatsnew-10,whatsnew-100,vut-soap11] [--runs N] [--duration S] [--connections N] [--cli PATH] [--pg URL] [--fleet N]\n');
      process.exit(0);
    } else return false;
  });
  if (o.variants.length === 0) o.variants.push({ name: 'on', cli: null, env: {} }, { name: 'off', cli: null, env: { SVCAPI_TABLE_MEMO: 'false' } });
  return o;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const layout = cpuLayout(false);
  const client = chooseClient('wrk');
  const tmp = await mkdtemp(join(tmpdir(), 'svcapi-switch-cost-'));
  const log = (s) => process.stderr.write(`${s}\n`);
  const schema = `switch_${process.pid}_${Date.now().toString(36)}`;
  try {
    let db = `sqlite:${join(tmp, 'bench.db')}`;
    if (o.pg !== null) {
      const url = new URL(o.pg);
      url.searchParams.set('schema', schema);
      db = url.toString();
    }
    const { passwordHash } = await seedService({ cliPath: o.cli, db, tmpDir: tmp, newsCount: 100 });
    const rotation = o.only.includes('vut-fleet') ? await seedFleet(o, db, schema, passwordHash, tmp) : null;
    const throttle = await throttleOffConfig(o.cli, tmp);
    const deployed = deployedNode();
    const env = {
      ...process.env, ...deployed.env, SVCAPI_MANAGEMENT_PORT: 'off', SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0',
      ...(throttle.file !== null && { SVCAPI_CONFIG: throttle.file }),
    };
    const servers = [];
    for (const variant of o.variants) {
      const args = [...deployed.nodeArgs, variant.cli ?? o.cli, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db, '--log-level', 'warn'];
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
      'vut-fleet': {
        req: buildRequest(OPERATIONS, 'soap11', 'ValidateUserToken', { token: PLACEHOLDER }), rotate: rotation, ok: (body) => />true</.test(body),
        first: rotation === null ? null : buildRequest(OPERATIONS, 'soap11', 'ValidateUserToken', { token: rotation.first }),
      },
    };
    const chosen = o.only.map((id) => {
      if (!(id in scenarios)) throw new Error(`unknown scenario ${id}`);
      return { id, ...scenarios[id] };
    });
    for (const { server, name } of servers) {
      for (const s of chosen) {
        if (!s.ok((await send(server.origin, s.first ?? s.req)).body)) throw new Error(`${name}: wrong answer to ${s.id}`);
        await runLoad({ origin: server.origin, req: s.req, rotate: s.rotate, connections: o.connections, durationS: 1, cpu: layout.load, client, tmpDir: tmp }); // warm-up
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
          const beforeSys = treeSystemCpu(server.pid);
          const r = await runLoad({ origin: server.origin, req: s.req, rotate: s.rotate, connections: o.connections, durationS: o.durationS, cpu: layout.load, client, tmpDir: tmp });
          const us = (cpuDelta(before, treeCpu(server.pid)) * 1e6) / r.requests;
          const sysUs = (cpuDelta(beforeSys, treeSystemCpu(server.pid)) * 1e6) / r.requests;
          const key = `${s.id} ${name}`;
          if (!figures.has(key)) figures.set(key, []);
          figures.get(key).push({ us, sysUs });
          log(`switch-cost: round ${round + 1} ${key}: ${fmt(us, 1)} µs CPU/req (system ${fmt(sysUs, 1)}), ${Math.round(r.rps)} req/s${r.errors + r.non2xx > 0 ? `, ${r.errors + r.non2xx} errors` : ''}`);
        }
      }
      loads.push(loadAverage());
    }
    // Rounds alternate the order, so a drift of the machine shows in every variant alike; the
    // difference of each round's pair (against the first variant) is the steadier figure.
    process.stdout.write(`| Scenario | Variant | CPU µs/req (median of ${o.runs}) | of which system | − ${servers[0].name}, median of the rounds' differences | runs |\n|---|---|---:|---:|---:|---|\n`);
    for (const [key, list] of figures) {
      const [id, name] = key.split(' ');
      const base = figures.get(`${id} ${servers[0].name}`);
      const diffs = list.map((x, i) => x.us - base[i].us);
      process.stdout.write(`| ${id} | ${name} | ${fmt(median(list.map((x) => x.us)), 1)} | ${fmt(median(list.map((x) => x.sysUs)), 1)} | ${name === servers[0].name ? '' : fmt(median(diffs), 1)} | ${list.map((x) => fmt(x.us, 1)).join(' ')} |\n`);
    }
    process.stdout.write(`\nLoad average (1/5/15 min) at the start and after each round: ${loads.map((l) => l.join('/')).join(' → ')}\n`);
  } finally {
    killAll();
    await rm(tmp, { recursive: true, force: true });
    if (o.pg !== null) await dropSchema(o.pg, schema);
  }
}

/** `o.fleet` live tokens in `db` (bulk, bench/lib/scale-seed.mjs), and a file of them in a shuffled order for wrk's rotation. */
async function seedFleet(o, db, schema, passwordHash, tmp) {
  const prefix = randomBytes(4).toString('hex');
  const users = Math.max(1000, Math.round(o.fleet / 10));
  const log = (s) => process.stderr.write(`${s}\n`);
  if (o.pg === null) {
    seedSqlite(db.slice('sqlite:'.length), { users, tokens: o.fleet, passwordHash, prefix, log });
  } else {
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: o.pg });
    await client.connect();
    try {
      await client.query(`SET search_path = "${schema}"`);
      await seedPostgres(client, { users, tokens: o.fleet, passwordHash, prefix, log });
    } finally {
      await client.end();
    }
  }
  const texts = Array.from({ length: o.fleet }, (_, i) => tokenText(prefix, i));
  for (let k = texts.length - 1, x = 12345; k > 0; k--) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const j = x % (k + 1);
    [texts[k], texts[j]] = [texts[j], texts[k]];
  }
  const file = join(tmp, 'fleet.txt');
  await writeFile(file, `${texts.join('\n')}\n`);
  return { file, placeholder: PLACEHOLDER, first: texts[0] };
}

/** System CPU seconds of each process of the tree (stime only), keyed by pid, as treeCpu() has utime + stime. */
function treeSystemCpu(pid) {
  const ticks = clockTicksPerSecond();
  const map = new Map();
  for (const p of processTree(pid)) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      map.set(p, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[12]) / ticks);
    } catch {
      map.set(p, 0);
    }
  }
  return map;
}

async function dropSchema(baseUrl, schema) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: baseUrl });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  killAll();
  process.exit(1);
});
