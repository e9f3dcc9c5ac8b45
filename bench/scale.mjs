#!/usr/bin/env node
/**
 * `npm run bench:scale`: ValidateUserToken (SOAP 1.1) with 1 million users and 10 million tokens
 * in the store, on SQLite and on PostgreSQL, one process, in two rotations of the same store:
 *
 * - hot: the load rotates over 10,000 tokens, fewer than the process keeps in memory
 *   (performance.tokenCacheEntries), so after the first pass it measures the kept path;
 * - fleet: the load rotates over 1,000,000 distinct tokens (every device of a fleet holds its
 *   own token and checks it every few minutes), more than the records in memory hold
 *   (performance.tokenCacheEntries) but not the session memory (performance.sessionMemoryEntries,
 *   domain/session-memory.ts). Its first pass, every check of a token not seen before, reads the
 *   store: the miss path, measured in the windows of that pass ("fleet, first pass"). The fleet
 *   cells then measure the steady state, every device having checked its token before.
 *
 * Both rotations are spread over the token numbers, so over the key space; each request asks
 * about the next token of its rotation, and each load goes on where the server's last load of
 * that rotation left it. Runs alternate between the cells (rounds), and the ratios fleet/hot
 * are taken within a run.
 *
 * Then, per store, housekeeping at that size: 1,000,000 tokens that expired two days ago are
 * added, a server is started (its housekeeping's first run begins at once and deletes them in
 * batches) and the fleet load runs in windows while the purge goes on, then again once it is
 * done: token-check p99 during the purge against p99 without it, same server. These servers run
 * with the session memory off, so that every check reads the store beside the purge.
 *
 * Memory: the peak VmRSS of the server and, separately, the peaks of RssAnon (heap, SQLite's
 * page cache, malloc: what the process owns) and RssFile (pages of mapped files: the binary,
 * libraries and, with SQLite's memory map, the database file itself, which the kernel shares
 * with its page cache and may drop at any time), from /proc/PID/status every 100 ms.
 *
 * The stores are seeded in bulk (bench/lib/scale-seed.mjs), not through the API; with --dir the
 * seeded stores (a SQLite file and a PostgreSQL schema) are kept there and reused by later runs.
 *
 * Options: --users N (1000000) --tokens N (10000000) --hot N (10000) --fleet N (1000000)
 *          --stores sqlite,pg (both) --pg URL (BENCH_PG_URL or postgres://postgres@127.0.0.1:5432/test)
 *          --purge N (1000000; 0 skips the purge measurement) --purge-windows N (12: measured windows
 *          during the purge at most; the rest of it runs unmeasured) --runs N (3) --duration S (5)
 *          --connections 64[,16] --quick (1 run of 3 s) --dir DIR (keep and reuse the stores)
 *          --prepare-only (seed, then stop) --cli PATH --client wrk|autocannon --no-pin --no-write
 *          --env K=V (extra server environment, repeatable: e.g. SVCAPI_TOKEN_CACHE_ENTRIES=0)
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { clearInterval, setInterval, setTimeout } from 'node:timers';
import { fileURLToPath, pathToFileURL, URL } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { keyValue, readArgs } from './lib/args.mjs';
import { deployedNode } from './lib/deployed.mjs';
import { chooseClient, runLoad } from './lib/load.mjs';
import { cpuDelta, cpuLayout, killAll, loadAverage, machineInfo, processTree, treeCpu } from './lib/proc.mjs';
import { buildRequest, send } from './lib/requests.mjs';
import { fmt, fmtInt, fmtRatio, machineLine, median, ratio, replaceSection, writeResults } from './lib/report.mjs';
import {
  countPostgresExpired, countSqliteExpired, DAY_MS, seedPostgres, seedPostgresExpired, seedSqlite, seedSqliteExpired, tokenText,
} from './lib/scale-seed.mjs';
import { seedService } from './lib/seed.mjs';
import { startServer } from './lib/servers.mjs';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(BENCH_DIR, '..');
const PLACEHOLDER = '__TOKEN__';
const DEFAULT_PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** Targets of the fleet run (one process, 64 connections). */
/** With performance.sqliteCheckInBackground off, serve checks the whole SQLite file before it listens: minutes at 10M tokens on a busy VM. */
const READY_TIMEOUT_MS = 900_000;
/**
 * serve checks a SQLite file (PRAGMA quick_check) in a child process after it listens: the
 * measurements wait until it is gone (it shares the server's core, and the tree's CPU would count
 * it); returns how long that took after the server was ready, in ms.
 */
async function untilStartCheckEnds(server) {
  const started = Date.now();
  while (processTree(server.pid).length > 1 && Date.now() - started < READY_TIMEOUT_MS) await new Promise((r) => setTimeout(r, 200));
  return Date.now() - started;
}
const TARGET = { sqliteRatio: 0.8, pgRatio: 0.6, sqliteP99Ms: 15, anonMb: 150, purgeP99Ratio: 2 };

function parseArgs(argv) {
  const o = {
    users: 1_000_000, tokens: 10_000_000, hot: 10_000, fleet: 1_000_000, stores: ['sqlite', 'pg'], pgUrl: DEFAULT_PG_URL, purge: 1_000_000,
    runs: 3, durationS: 5, connections: [64], dir: null, prepareOnly: false, purgeWindows: 12,
    cli: join(ROOT, 'dist', 'cli', 'main.js'), client: null, noPin: false, write: true, env: {},
  };
  readArgs(argv, (a, next) => {
    if (a === '--users') o.users = Number(next());
    else if (a === '--tokens') o.tokens = Number(next());
    else if (a === '--hot') o.hot = Number(next());
    else if (a === '--fleet' || a === '--query-tokens') o.fleet = Number(next());
    else if (a === '--stores') o.stores = next().split(',').filter((s) => s !== '');
    else if (a === '--pg') o.pgUrl = next();
    else if (a === '--purge') o.purge = Number(next());
    else if (a === '--purge-windows') o.purgeWindows = Number(next());
    else if (a === '--runs') o.runs = Number(next());
    else if (a === '--duration') o.durationS = Number(next());
    else if (a === '--connections') o.connections = next().split(',').map(Number);
    else if (a === '--quick') Object.assign(o, { runs: 1, durationS: 3 });
    else if (a === '--dir') o.dir = resolve(next());
    else if (a === '--prepare-only') o.prepareOnly = true;
    else if (a === '--cli') o.cli = resolve(next());
    else if (a === '--client') o.client = next();
    else if (a === '--no-pin') o.noPin = true;
    else if (a === '--no-write') o.write = false;
    else if (a === '--env') {
      const [key, value] = keyValue(next(), a);
      o.env[key] = value;
    } else return false;
  });
  for (const s of o.stores) if (s !== 'sqlite' && s !== 'pg') throw new Error(`--stores: unknown store ${s}`);
  o.hot = Math.min(o.hot, o.tokens);
  o.fleet = Math.min(o.fleet, o.tokens);
  return o;
}

/** Peaks of VmRSS, RssAnon and RssFile (MB) of one process, sampled every `everyMs`. */
function sampleMemory(pid, everyMs = 100) {
  const peak = { rss: 0, anon: 0, file: 0 };
  const field = (text, name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) / 1024;
  const sample = () => {
    for (const p of processTree(pid)) {
      let text;
      try {
        text = readFileSync(`/proc/${p}/status`, 'utf8');
      } catch {
        continue;
      }
      peak.rss = Math.max(peak.rss, field(text, 'VmRSS'));
      peak.anon = Math.max(peak.anon, field(text, 'RssAnon'));
      peak.file = Math.max(peak.file, field(text, 'RssFile') + field(text, 'RssShmem'));
    }
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

/** The data set: seeded once (into `dir` when given), described by scale.json there. */
async function prepareData(o, dir, log) {
  const metaFile = join(dir, 'scale.json');
  let meta = existsSync(metaFile) ? JSON.parse(readFileSync(metaFile, 'utf8')) : null;
  if (meta !== null && (meta.users !== o.users || meta.tokens !== o.tokens)) {
    throw new Error(`${dir} holds a data set of ${meta.users} users / ${meta.tokens} tokens, not ${o.users} / ${o.tokens}: use another --dir`);
  }
  if (meta === null) {
    meta = { users: o.users, tokens: o.tokens, prefix: randomBytes(4).toString('hex'), stores: {} };
  }
  const save = () => writeFile(metaFile, `${JSON.stringify(meta, null, 2)}\n`);
  if (o.stores.includes('sqlite') && meta.stores.sqlite === undefined) {
    const file = join(dir, 'scale.db');
    await rm(file, { force: true });
    log(`scale: seeding ${fmtInt(o.users)} users and ${fmtInt(o.tokens)} tokens into ${file}`);
    const started = Date.now();
    const { passwordHash } = await seedService({ cliPath: o.cli, db: `sqlite:${file}`, tmpDir: dir, newsCount: 0 });
    const firstUser = seedSqlite(file, { users: o.users, tokens: o.tokens, passwordHash, prefix: meta.prefix, log });
    meta.stores.sqlite = { db: `sqlite:${file}`, file, firstUser, seedSeconds: (Date.now() - started) / 1000 };
    await save();
  }
  if (o.stores.includes('pg') && meta.stores.pg === undefined) {
    const schema = o.dir === null ? `scale_${process.pid}_${Date.now().toString(36)}` : 'svcapi_scale';
    const url = new URL(o.pgUrl);
    url.searchParams.set('schema', schema);
    const client = new pg.Client({ connectionString: o.pgUrl });
    await client.connect();
    try {
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      log(`scale: seeding ${fmtInt(o.users)} users and ${fmtInt(o.tokens)} tokens into ${o.pgUrl} schema ${schema}`);
      const started = Date.now();
      const { passwordHash } = await seedService({ cliPath: o.cli, db: url.toString(), tmpDir: dir, newsCount: 0 });
      await client.query(`SET search_path = ${schema}`);
      const firstUser = await seedPostgres(client, { users: o.users, tokens: o.tokens, passwordHash, prefix: meta.prefix, log });
      meta.stores.pg = { db: url.toString(), schema, firstUser, seedSeconds: (Date.now() - started) / 1000 };
      await save();
    } finally {
      await client.end();
    }
  }
  return meta;
}

async function storeSize(name, store) {
  if (name === 'sqlite') return statSync(store.file).size;
  const client = new pg.Client({ connectionString: store.db.replace(/[?&]schema=[^&]*/, '') });
  await client.connect();
  try {
    return Number((await client.query(`SELECT SUM(pg_total_relation_size(c.oid)) AS b FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind = 'r'`, [store.schema])).rows[0].b);
  } finally {
    await client.end();
  }
}

/** Opens the store's database for the purge phase: seeding expired rows and counting them. */
async function expiredAccess(name, store, meta, purgeCount) {
  const prefix = `${meta.prefix.slice(0, 4)}dead`;
  if (name === 'sqlite') {
    return {
      seed: () => seedSqliteExpired(store.file, { count: purgeCount, users: meta.users, firstUser: store.firstUser, prefix }),
      count: () => {
        const db = new Database(store.file, { readonly: true });
        try {
          return countSqliteExpired(db, Date.now() - DAY_MS);
        } finally {
          db.close();
        }
      },
      cleanup: () => {
        const db = new Database(store.file);
        try {
          db.prepare('DELETE FROM tokens WHERE expires_at < ?').run(Date.now() - DAY_MS);
          db.pragma('wal_checkpoint(TRUNCATE)');
        } finally {
          db.close();
        }
      },
      close: async () => undefined,
    };
  }
  const client = new pg.Client({ connectionString: store.db.replace(/[?&]schema=[^&]*/, '') });
  await client.connect();
  await client.query(`SET search_path = ${store.schema}`);
  return {
    seed: () => seedPostgresExpired(client, { count: purgeCount, users: meta.users, firstUser: store.firstUser, prefix }),
    count: () => countPostgresExpired(client, Date.now() - DAY_MS),
    cleanup: async () => {
      await client.query('DELETE FROM tokens WHERE expires_at < $1', [new Date(Date.now() - DAY_MS)]);
      await client.query('VACUUM (ANALYZE) tokens');
    },
    close: () => client.end(),
  };
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (!existsSync(o.cli)) throw new Error(`${o.cli} does not exist: run npm run build first (npm run bench:scale does)`);
  const { OPERATIONS } = await import(pathToFileURL(join(dirname(o.cli), '..', 'contract', 'operations.js')).href);
  const client = chooseClient(o.client);
  const layout = cpuLayout(o.noPin);
  const machine = machineInfo();
  const startedAt = new Date().toISOString();
  const loadStart = loadAverage();
  const log = (t) => process.stderr.write(`${t}\n`);
  const tmp = await mkdtemp(join(tmpdir(), 'svcapi-scale-'));
  const dir = o.dir ?? tmp;
  await mkdir(dir, { recursive: true });
  const servers = [];
  const onSignal = () => {
    killAll();
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  let meta = null;
  try {
    meta = await prepareData(o, dir, log);
    if (o.prepareOnly) return;

    // The rotations: evenly spread over the token numbers (so over the key space and the users),
    // in a shuffled order (a fixed one), as devices check at times of their own: consecutive
    // requests share no page of the token or user B-trees.
    const rotation = (count) => {
      const step = Math.max(1, Math.floor(o.tokens / count));
      const texts = Array.from({ length: count }, (_, k) => tokenText(meta.prefix, k * step + (k % step)));
      let x = 12345;
      for (let k = texts.length - 1; k > 0; k--) {
        x = (Math.imul(x, 1103515245) + 12345) >>> 0;
        const j = x % (k + 1);
        [texts[k], texts[j]] = [texts[j], texts[k]];
      }
      return texts;
    };
    const rotations = { hot: rotation(o.hot), fleet: rotation(o.fleet) };
    const files = {};
    for (const [name, texts] of Object.entries(rotations)) {
      files[name] = join(tmp, `${name}.txt`);
      await writeFile(files[name], `${texts.join('\n')}\n`);
    }

    // Started as the deployment files start it (their memory settings; bench/lib/deployed.mjs).
    const deployed = deployedNode();
    // What ships: the default log level (an access line per check) and the management listener;
    // only housekeeping's schedule is moved out of the way, so that no purge runs but the one
    // measured below.
    const env = {
      ...process.env, ...deployed.env, SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0',
      SVCAPI_HOUSEKEEPING_INTERVAL_MS: '86400000', ...o.env,
    };
    const serve = (db) => [...deployed.nodeArgs, o.cli, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db];
    const req = buildRequest(OPERATIONS, 'soap11', 'ValidateUserToken', { token: PLACEHOLDER });
    const check = async (s) => {
      for (const t of [rotations.hot[0], rotations.fleet.at(-1)]) {
        const answer = await send(s.origin, buildRequest(OPERATIONS, 'soap11', 'ValidateUserToken', { token: t }));
        if (!/>true</.test(answer.body)) throw new Error(`${s.name}: token ${t} does not validate: ${answer.body}`);
      }
    };
    // Each server's rotations go on where its last load left them, as a fleet's devices take
    // turns: a load never starts over at the tokens the one before it just checked.
    const cursors = new Map();
    const measure = async (server, rotate, connections, durationS) => {
      const key = `${server.pid} ${rotate}`;
      const start = cursors.get(key) ?? 0;
      const cpuBefore = treeCpu(server.pid);
      const memory = sampleMemory(server.pid);
      const r = await runLoad({ origin: server.origin, req, connections, durationS, cpu: layout.load, client, tmpDir: tmp, rotate: { file: files[rotate], placeholder: PLACEHOLDER, start } });
      cursors.set(key, (start + r.requests) % rotations[rotate].length);
      const cpuSeconds = cpuDelta(cpuBefore, treeCpu(server.pid));
      const peak = memory.stop();
      return { ...r, rssMb: peak.rss, anonMb: peak.anon, fileMb: peak.file, cpuUsPerReq: r.requests > 0 ? (cpuSeconds * 1e6) / r.requests : null };
    };
    const line = (label, r) => `${label.padEnd(28)} ${fmtInt(r.rps)} req/s  p50 ${fmt(r.p50Ms)} ms  p99 ${fmt(r.p99Ms)} ms  ` +
      `rss ${fmt(r.rssMb, 0)} MB (anon ${fmt(r.anonMb, 0)}, file ${fmt(r.fileMb, 0)})  cpu ${fmt(r.cpuUsPerReq, 1)} µs/req` +
      `${r.non2xx + r.errors > 0 ? `  (${r.non2xx} non-2xx, ${r.errors} errors)` : ''}`;

    // Hot and fleet on each store, in rounds.
    const live = {};
    const readyMs = {};
    const checkMs = {};
    for (const name of o.stores) {
      const s = await startServer({ name: `svcapi-auth ${name}`, args: serve(meta.stores[name].db), env, cpu: layout.server, cwd: ROOT, readyTimeoutMs: READY_TIMEOUT_MS });
      servers.push(s);
      await check(s);
      live[name] = s;
      readyMs[name] = s.readyMs;
      checkMs[name] = await untilStartCheckEnds(s);
      log(`scale: ${name} ready in ${fmtInt(s.readyMs)} ms${checkMs[name] > 0 ? `, its check of the file ended ${fmtInt(checkMs[name])} ms later` : ''}`);
    }
    const cells = [];
    const firstPass = {};
    for (const c of o.connections) for (const name of o.stores) for (const rotate of ['hot', 'fleet']) cells.push({ store: name, rotate, connections: c, runs: [] });
    for (let round = 1; round <= o.runs; round++) {
      for (const cell of cells) {
        if (round === 1) {
          if (cell.rotate === 'fleet' && firstPass[cell.store] === undefined) {
            // Warm-up: one whole pass over the fleet, so that every device has checked its token
            // once, as in a fleet's steady state (each device checks every few minutes). Each of
            // its windows checks tokens seen for the first time: the miss path, reported apart.
            firstPass[cell.store] = [];
            for (let sent = 0; sent < o.fleet;) {
              const r = await measure(live[cell.store], 'fleet', cell.connections, o.durationS);
              firstPass[cell.store].push(r);
              sent += r.requests;
              log(`scale:   ${line(`${cell.store} fleet, first pass`, r)}  (${fmtInt(Math.min(sent, o.fleet))} of ${fmtInt(o.fleet)})`);
            }
          } else await measure(live[cell.store], cell.rotate, cell.connections, o.durationS); // warm-up: a pass over the hot set, the file's pages
        }
        const r = await measure(live[cell.store], cell.rotate, cell.connections, o.durationS);
        cell.runs.push(r);
        log(`scale:   ${line(`${cell.store} ${cell.rotate} c=${cell.connections}`, r)}`);
      }
    }
    for (const name of o.stores) await live[name].stop();

    // Housekeeping at that size: the fleet load during a purge of `o.purge` expired tokens.
    const purges = [];
    // Every check of these loads reads the store, the worst case for a purge beside them: the
    // session memory is off (it would answer more and more of the checks as the windows go on,
    // and the server without a purge would not be warmed alike).
    const purgeEnv = { SVCAPI_SESSION_MEMORY_ENTRIES: '0', ...env };
    if (o.purge > 0) {
      for (const name of o.stores) {
        const access = await expiredAccess(name, meta.stores[name], meta, o.purge);
        try {
          log(`scale: ${name}: adding ${fmtInt(o.purge)} expired tokens`);
          const added = await access.seed();
          const before = await access.count();
          const s = await startServer({ name: `svcapi-auth ${name}, purging`, args: serve(meta.stores[name].db), env: purgeEnv, cpu: layout.server, cwd: ROOT, readyTimeoutMs: READY_TIMEOUT_MS });
          servers.push(s);
          await untilStartCheckEnds(s);
          const purgeStart = Date.now();
          const during = [];
          let left = before;
          while (left > 0 && during.length < o.purgeWindows) {
            const r = await measure(s, 'fleet', 64, o.durationS);
            left = await access.count();
            during.push({ ...r, left });
            log(`scale:   ${line(`${name} fleet, purging`, r)}  (${fmtInt(left)} expired left)`);
          }
          const windowSeconds = (Date.now() - purgeStart) / 1000;
          const deletedInWindows = before - left;
          await s.stop();
          // What the windows did not see deleted goes now, directly, so no later server purges it under load.
          await access.cleanup();
          // The same load on a fresh server of the same store without anything to purge: the p99 to compare with.
          const q = await startServer({ name: `svcapi-auth ${name}, no purge`, args: serve(meta.stores[name].db), env: purgeEnv, cpu: layout.server, cwd: ROOT, readyTimeoutMs: READY_TIMEOUT_MS });
          servers.push(q);
          await untilStartCheckEnds(q);
          await measure(q, 'fleet', 64, o.durationS);
          const after = [];
          for (let k = 0; k < Math.max(1, Math.min(o.runs * 2, during.length)); k++) {
            const r = await measure(q, 'fleet', 64, o.durationS);
            after.push(r);
            log(`scale:   ${line(`${name} fleet, no purge`, r)}`);
          }
          await q.stop();
          // Windows that ran while rows were still being deleted (the last may have seen the end).
          const purging = during.filter((r, k) => k === 0 || during[k - 1].left > 0);
          purges.push({
            store: name, added, expiredBefore: before, deletedInWindows, rowsPerSecond: deletedInWindows / windowSeconds, purgeSeconds: left === 0 ? windowSeconds : before / (deletedInWindows / windowSeconds), purgeEstimated: left > 0, windows: during,
            duringP99Ms: median(purging.map((r) => r.p99Ms)), worstP99Ms: Math.max(...purging.map((r) => r.p99Ms)),
            duringRps: median(purging.map((r) => r.rps)), afterP99Ms: median(after.map((r) => r.p99Ms)), afterRps: median(after.map((r) => r.rps)),
            after,
          });
        } finally {
          await access.close();
        }
      }
    }

    const fields = ['rps', 'p50Ms', 'p99Ms', 'rssMb', 'anonMb', 'fileMb', 'cpuUsPerReq', 'non2xx', 'errors'];
    const med = (runs) => Object.fromEntries(fields.map((f) => [f, f === 'rssMb' || f === 'anonMb' || f === 'fileMb' ? Math.max(...runs.map((r) => r[f])) : median(runs.map((r) => r[f]))]));
    const rows = cells.map((c) => ({ store: c.store, rotate: c.rotate, connections: c.connections, median: med(c.runs), runs: c.runs }));
    // The first pass's windows (all but its last, which wraps into tokens seen before): the miss path.
    for (const name of o.stores) {
      const windows = (firstPass[name] ?? []).slice(0, Math.max(1, (firstPass[name] ?? []).length - 1));
      if (windows.length > 0) rows.push({ store: name, rotate: 'fleet, first pass', connections: o.connections[0], median: med(windows), runs: windows });
    }
    const comparisons = [];
    for (const c of o.connections) {
      for (const name of o.stores) {
        const hot = rows.find((r) => r.store === name && r.rotate === 'hot' && r.connections === c).median;
        const fleet = rows.find((r) => r.store === name && r.rotate === 'fleet' && r.connections === c).median;
        const first = rows.find((r) => r.store === name && r.rotate === 'fleet, first pass' && r.connections === c)?.median ?? null;
        comparisons.push({ store: name, connections: c, hot, fleet, ratio: ratio(fleet.rps, hot.rps), cpuDeltaUs: fleet.cpuUsPerReq - hot.cpuUsPerReq,
          firstPass: first, firstPassRatio: first === null ? null : ratio(first.rps, hot.rps) });
      }
    }
    const sizes = {};
    for (const name of o.stores) sizes[name] = await storeSize(name, meta.stores[name]);
    const results = {
      startedAt, finishedAt: new Date().toISOString(), machine, layout, client, loadavg: { start: loadStart, end: loadAverage() },
      options: { users: o.users, tokens: o.tokens, hot: o.hot, fleet: o.fleet, stores: o.stores, purge: o.purge, purgeWindows: o.purgeWindows, runs: o.runs, durationS: o.durationS, connections: o.connections, env: o.env },
      seedSeconds: Object.fromEntries(o.stores.map((n) => [n, meta.stores[n].seedSeconds])), storeBytes: sizes, readyMs, checkMs, rows, comparisons, purges,
    };
    const md = renderMarkdown(results);
    process.stdout.write(`\n${md}`);
    if (o.write) {
      const written = await writeResults(join(BENCH_DIR, 'results'), 'scale', results, md);
      await replaceSection(join(BENCH_DIR, 'README.md'), 'bench:scale', md.replace(/^# .*\n/, ''));
      log(`scale: wrote ${written.join(', ')} and bench/README.md`);
    }
  } finally {
    for (const s of servers) await s.stop().catch(() => undefined);
    killAll();
    if (o.dir === null) {
      const pgStore = meta?.stores?.pg;
      if (pgStore !== undefined) {
        const c = new pg.Client({ connectionString: o.pgUrl });
        await c.connect().then(() => c.query(`DROP SCHEMA IF EXISTS ${pgStore.schema} CASCADE`)).finally(() => c.end()).catch(() => undefined);
      }
    } else log(`scale: the stores stay in ${dir} (reused by the next run with --dir ${dir})`);
    await rm(tmp, { recursive: true, force: true });
    process.off('SIGINT', onSignal);
  }
}

const STORE_NAME = { sqlite: 'SQLite', pg: 'PostgreSQL' };

function renderMarkdown(r) {
  const o = r.options;
  const lines = [`# svcapi-auth at scale: ValidateUserToken with ${fmtInt(o.tokens)} tokens, hot set and fleet`, ''];
  const sizes = o.stores.map((n) => `${STORE_NAME[n]} ${fmt(r.storeBytes[n] / 2 ** 30)} GiB, ready in ${fmt(r.readyMs[n] / 1000, 1)} s` +
    `${(r.checkMs?.[n] ?? 0) > 0 ? ` (its check of the file in the background ended ${fmt(r.checkMs[n] / 1000, 1)} s later; measured after it)` : ''}`).join('; ');
  lines.push(`Run of ${r.startedAt}: ${fmtInt(o.users)} users and ${fmtInt(o.tokens)} tokens (${sizes}). ` +
    `**hot**: the load rotates over ${fmtInt(o.hot)} tokens (all kept in memory after one pass); **fleet**: over ${fmtInt(o.fleet)} distinct tokens, ` +
    `measured after one whole pass over them (a fleet's steady state: every device has checked its token before; each load goes on where the last one left the rotation); ` +
    `**fleet, first pass**: the windows of that pass, every check of a token not seen before, so read from the store (the miss path). ` +
    `${o.runs} run(s) of ${o.durationS} s per cell in rounds, medians (peak memory: the highest); ` +
    `ValidateUserToken SOAP 1.1, keep-alive, one process.${Object.keys(o.env).length > 0 ? ` Server environment: ${Object.entries(o.env).map(([k, v]) => `${k}=${v}`).join(' ')}.` : ''}`, '');
  lines.push(`**Machine:** ${machineLine(r.machine, r.layout, r.loadavg.start, r.loadavg.end, r.client)}.`, '');
  lines.push('| Store | Rotation | Conns | req/s | p50 ms | p99 ms | CPU µs/req | peak RSS MB | RssAnon MB | RssFile MB |', '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const row of r.rows) {
    const m = row.median;
    lines.push(`| ${STORE_NAME[row.store]} | ${row.rotate} (${fmtInt(row.rotate === 'hot' ? o.hot : o.fleet)}${row.rotate === 'fleet, first pass' ? `; ${row.runs.length} windows` : ''}) | ${row.connections} | ${fmtInt(m.rps)} | ${fmt(m.p50Ms)} | ${fmt(m.p99Ms)} | ` +
      `${fmt(m.cpuUsPerReq, 1)} | ${fmt(m.rssMb, 0)} | ${fmt(m.anonMb, 0)} | ${fmt(m.fileMb, 0)} |`);
  }
  lines.push('', 'RssAnon is what the process owns (heap, SQLite\'s page cache, malloc); RssFile counts pages of mapped files (binary, libraries, and the database file when SQLite maps it), which the kernel shares with its page cache and can drop: the memory target applies to RssAnon.', '');
  for (const c of r.comparisons) {
    const target = c.store === 'sqlite' ? TARGET.sqliteRatio : TARGET.pgRatio;
    const met = c.ratio !== null && c.ratio >= target && (c.store !== 'sqlite' || c.fleet.p99Ms <= TARGET.sqliteP99Ms) && c.fleet.anonMb <= TARGET.anonMb;
    lines.push(`- ${STORE_NAME[c.store]}, ${c.connections} connections: fleet = **${fmtRatio(c.ratio)}** the hot set's req/s, ` +
      `${c.cpuDeltaUs >= 0 ? '+' : ''}${fmt(c.cpuDeltaUs, 1)} µs CPU per request, p99 ${fmt(c.fleet.p99Ms)} ms, peak RssAnon ${fmt(c.fleet.anonMb, 0)} MB; ` +
      `target ≥ ${target}×${c.store === 'sqlite' ? `, p99 ≤ ${TARGET.sqliteP99Ms} ms` : ''}, RssAnon ≤ ${TARGET.anonMb} MB: **${met ? 'met' : 'not met'}**` +
      `${c.firstPass === null ? '' : `; the first pass (the miss path) ${fmtRatio(c.firstPassRatio)}, ${fmt(c.firstPass.cpuUsPerReq, 1)} µs CPU per request, p99 ${fmt(c.firstPass.p99Ms)} ms`}.`);
  }
  if (r.purges.length > 0) {
    lines.push('', `Housekeeping: ${fmtInt(o.purge)} tokens expired two days ago added, then a fresh server whose housekeeping deletes them (default settings) while the fleet load runs in ${o.durationS} s windows (${o.purgeWindows} at most; a longer purge is timed by its rate, "est."); then the same load on a fresh server with nothing to purge. Both with the session memory off (SVCAPI_SESSION_MEMORY_ENTRIES=0), so that every check reads the store beside the purge.`, '');
    lines.push('| Store | rows deleted during the windows | rows/s | whole purge s | req/s during | p99 during (median of windows / worst) | req/s without | p99 without | p99 ratio |', '|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const p of r.purges) {
      lines.push(`| ${STORE_NAME[p.store]} | ${fmtInt(p.deletedInWindows)} | ${fmtInt(p.rowsPerSecond)} | ${fmt(p.purgeSeconds, 0)}${p.purgeEstimated ? ' (est.)' : ''} | ${fmtInt(p.duringRps)} | ` +
        `${fmt(p.duringP99Ms)} / ${fmt(p.worstP99Ms)} | ${fmtInt(p.afterRps)} | ${fmt(p.afterP99Ms)} | ${fmtRatio(ratio(p.duringP99Ms, p.afterP99Ms))} (target ≤ ${TARGET.purgeP99Ratio}×: **${ratio(p.duringP99Ms, p.afterP99Ms) <= TARGET.purgeP99Ratio ? 'met' : 'not met'}**) |`);
    }
  }
  lines.push('');
  return `${lines.join('\n')}\n`;
}

main().catch((error) => {
  process.stderr.write(`scale: ${error.stack ?? error}\n`);
  killAll();
  process.exit(1);
});
