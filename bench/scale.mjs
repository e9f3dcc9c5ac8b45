#!/usr/bin/env node
/**
 * `npm run bench:scale` (issue 9): ValidateUserToken (SOAP 1.1) with 1 million users and
 * 10 million tokens in the store, against the same load on an empty store.
 *
 * Both SQLite files are created by the service's own migrations (`svcapi-auth migrate`) and get
 * the benchmark user through the CLI; then this script adds rows in bulk with better-sqlite3, in
 * the store's exact row format (tokens keyed by the SHA-256 hex of the token text), in big
 * transactions with journal_mode=OFF and synchronous=OFF during the seeding only (the tokens'
 * secondary indexes are dropped and rebuilt from their own DDL, which is much quicker than
 * maintaining them row by row). The file is put back in WAL mode afterwards.
 *
 * The load rotates over 10,000 tokens spread over the whole key space (the same 10,000 are the
 * only tokens of the empty store), so every request is a different lookup, as with real clients.
 * Servers are pinned like in `npm run bench`; runs alternate between the two stores.
 *
 * Options: --users N (1000000) --tokens N (10000000) --query-tokens N (10000)
 *          --runs N (3) --duration S (5) --connections 64[,16] --quick (1 run of 3 s)
 *          --cli PATH --client wrk|autocannon --no-pin --keep (keep the big file) --no-write
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { deployedNode } from './lib/deployed.mjs';
import { chooseClient, runLoad } from './lib/load.mjs';
import { cpuDelta, cpuLayout, killAll, loadAverage, machineInfo, sampleRss, treeCpu } from './lib/proc.mjs';
import { buildRequest, send } from './lib/requests.mjs';
import { fmt, fmtInt, fmtRatio, machineLine, median, medianOf, ratio, replaceSection, writeResults } from './lib/report.mjs';
import { APP_ID, seedService } from './lib/seed.mjs';
import { startServer } from './lib/servers.mjs';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(BENCH_DIR, '..');
const PLACEHOLDER = '__TOKEN__';

function parseArgs(argv) {
  const o = {
    users: 1_000_000, tokens: 10_000_000, queryTokens: 10_000, runs: 3, durationS: 5, connections: [64],
    cli: join(ROOT, 'dist', 'cli', 'main.js'), client: null, noPin: false, keep: false, write: true,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => argv[++i];
    if (a === '--users') o.users = Number(next());
    else if (a === '--tokens') o.tokens = Number(next());
    else if (a === '--query-tokens') o.queryTokens = Number(next());
    else if (a === '--runs') o.runs = Number(next());
    else if (a === '--duration') o.durationS = Number(next());
    else if (a === '--connections') o.connections = next().split(',').map(Number);
    else if (a === '--quick') Object.assign(o, { runs: 1, durationS: 3 });
    else if (a === '--cli') o.cli = resolve(next());
    else if (a === '--client') o.client = next();
    else if (a === '--no-pin') o.noPin = true;
    else if (a === '--keep') o.keep = true;
    else if (a === '--no-write') o.write = false;
    else throw new Error(`unknown argument ${a}`);
  }
  if (o.queryTokens > o.tokens) o.queryTokens = o.tokens;
  return o;
}

/** The columns of a table that must be given a value (NOT NULL without a default). */
function requiredColumns(db, table) {
  return db.prepare(`PRAGMA table_info(${table})`).all().filter((c) => c.notnull === 1 && c.dflt_value === null).map((c) => c.name);
}

function checkColumns(db, table, given) {
  const missing = requiredColumns(db, table).filter((c) => !given.includes(c));
  if (missing.length > 0) throw new Error(`the ${table} table now has required columns this seeder does not fill: ${missing.join(', ')} (update bench/scale.mjs)`);
}

/** Token text number i: GUID form, unique per run (a random prefix), cheap to make. */
function tokenText(prefix, i) {
  const hex = i.toString(16).padStart(24, '0');
  return `${prefix}-${hex.slice(0, 4)}-${hex.slice(4, 8)}-${hex.slice(8, 12)}-${hex.slice(12)}`;
}

const sha256 = (text) => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * Adds `users` users (with a grant to AppID 2) and `tokens` session tokens to a migrated SQLite
 * file; `queryIndexes` are the token numbers the load will use. Prints progress.
 */
function bulkSeed(file, { users, tokens, passwordHash, prefix, log }) {
  const db = new Database(file);
  const started = performance.now();
  try {
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -1048576'); // 1 GiB
    db.pragma('temp_store = MEMORY');
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('foreign_keys = OFF');
    const userCols = ['user_id', 'login', 'login_key', 'password_hash', 'enabled', 'created_at', 'password_changed_at'];
    const grantCols = ['user_id', 'app_id', 'granted_at'];
    const tokenCols = ['token_hash', 'kind', 'user_id', 'app_id', 'client_ip', 'source_ip', 'issued_at', 'expires_at', 'last_used_at'];
    checkColumns(db, 'users', userCols);
    checkColumns(db, 'user_applications', grantCols);
    checkColumns(db, 'tokens', tokenCols);
    const now = Date.now();
    const firstUser = (db.prepare('SELECT COALESCE(MAX(user_id), 0) AS m FROM users').get().m) + 1;

    const insertUser = db.prepare(`INSERT INTO users (${userCols.join(', ')}) VALUES (?, ?, ?, ?, 1, ?, ?)`);
    const insertGrant = db.prepare(`INSERT INTO user_applications (${grantCols.join(', ')}) VALUES (?, ${APP_ID}, ?)`);
    const BATCH = 100_000;
    for (let from = 0; from < users; from += BATCH) {
      db.transaction(() => {
        for (let i = from; i < Math.min(users, from + BATCH); i++) {
          const id = firstUser + i;
          const login = `scale.user.${i}`;
          insertUser.run(id, login, login, passwordHash, now, now);
          insertGrant.run(id, now);
        }
      })();
      if ((from + BATCH) % 250_000 === 0 || from + BATCH >= users) log(`scale:   users ${fmtInt(Math.min(users, from + BATCH))}/${fmtInt(users)} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
    }

    // Secondary indexes of tokens: dropped now, rebuilt from their own DDL after the bulk insert.
    const indexes = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tokens' AND sql IS NOT NULL").all();
    for (const ix of indexes) db.exec(`DROP INDEX "${ix.name}"`);
    const insertToken = db.prepare(`INSERT INTO tokens (${tokenCols.join(', ')}) VALUES (?, 'session', ?, ${APP_ID}, NULL, '127.0.0.1', ?, ?, ?)`);
    const TBATCH = 1_000_000;
    for (let from = 0; from < tokens; from += TBATCH) {
      const rows = [];
      for (let i = from; i < Math.min(tokens, from + TBATCH); i++) rows.push([sha256(tokenText(prefix, i)), i]);
      rows.sort((a, b) => (a[0] < b[0] ? -1 : 1)); // key order: fewer page splits
      db.transaction(() => {
        for (const [hash, i] of rows) {
          const issued = now - (i % 3_600_000);
          insertToken.run(hash, firstUser + (i % users), issued, issued + 86_400_000 * 30, issued);
        }
      })();
      log(`scale:   tokens ${fmtInt(Math.min(tokens, from + TBATCH))}/${fmtInt(tokens)} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
    }
    for (const ix of indexes) {
      const t = performance.now();
      db.exec(ix.sql);
      log(`scale:   index ${ix.name} rebuilt in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    }
    db.pragma('locking_mode = NORMAL');
    db.pragma('journal_mode = WAL');
    db.prepare('SELECT 1').get(); // leave exclusive mode
  } finally {
    db.close();
  }
  return (performance.now() - started) / 1000;
}

/** Only the query tokens, for the empty store (same rows, same user as the benchmark user). */
function seedQueryTokens(file, texts) {
  const db = new Database(file);
  try {
    const userId = db.prepare('SELECT MIN(user_id) AS id FROM users').get().id;
    const now = Date.now();
    const insert = db.prepare(`INSERT INTO tokens (token_hash, kind, user_id, app_id, client_ip, source_ip, issued_at, expires_at, last_used_at)
      VALUES (?, 'session', ?, ${APP_ID}, NULL, '127.0.0.1', ?, ?, ?)`);
    db.transaction(() => {
      for (const t of texts) insert.run(sha256(t), userId, now, now + 86_400_000 * 30, now);
    })();
  } finally {
    db.close();
  }
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
  const servers = [];
  const onSignal = () => {
    killAll();
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  try {
    const bigFile = join(tmp, 'scale.db');
    const emptyFile = join(tmp, 'empty.db');
    log(`scale: seeding ${fmtInt(o.users)} users and ${fmtInt(o.tokens)} tokens into ${bigFile}`);
    const { passwordHash } = await seedService({ cliPath: o.cli, db: `sqlite:${bigFile}`, tmpDir: tmp, newsCount: 0 });
    await seedService({ cliPath: o.cli, db: `sqlite:${emptyFile}`, tmpDir: tmp, newsCount: 0 });
    const prefix = randomBytes(4).toString('hex');
    const seedSeconds = bulkSeed(bigFile, { users: o.users, tokens: o.tokens, passwordHash, prefix, log });
    const bytes = statSync(bigFile).size;
    log(`scale: seeded in ${seedSeconds.toFixed(0)} s, ${fmt(bytes / 2 ** 30)} GiB`);

    // The tokens the load asks about: evenly spread over the token numbers (so over the key space).
    const step = Math.max(1, Math.floor(o.tokens / o.queryTokens));
    const texts = Array.from({ length: o.queryTokens }, (_, k) => tokenText(prefix, k * step + (k % step)));
    seedQueryTokens(emptyFile, texts);
    const tokensFile = join(tmp, 'tokens.txt');
    await writeFile(tokensFile, `${texts.join('\n')}\n`);

    // Started as the deployment files start it (their memory settings; bench/lib/deployed.mjs).
    const deployed = deployedNode();
    const env = { ...process.env, ...deployed.env, SVCAPI_MANAGEMENT_PORT: 'off', SVCAPI_LOG_LEVEL: 'warn', SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0' };
    const serve = (file) => [...deployed.nodeArgs, o.cli, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', `sqlite:${file}`, '--log-level', 'warn'];
    const empty = await startServer({ name: 'svcapi-auth, empty store', args: serve(emptyFile), env, cpu: layout.server, cwd: ROOT });
    servers.push(empty);
    log(`scale: empty store ready in ${fmtInt(empty.readyMs)} ms`);
    const big = await startServer({ name: 'svcapi-auth, big store', args: serve(bigFile), env, cpu: layout.server, cwd: ROOT });
    servers.push(big);
    log(`scale: big store ready in ${fmtInt(big.readyMs)} ms`);

    const req = buildRequest(OPERATIONS, 'soap11', 'ValidateUserToken', { token: PLACEHOLDER });
    for (const s of [empty, big]) {
      for (const t of [texts[0], texts.at(-1)]) {
        const answer = await send(s.origin, buildRequest(OPERATIONS, 'soap11', 'ValidateUserToken', { token: t }));
        if (!/>true</.test(answer.body)) throw new Error(`${s.name}: token ${t} does not validate: ${answer.body}`);
      }
    }

    const cells = [];
    for (const c of o.connections) for (const s of [empty, big]) cells.push({ server: s, connections: c, runs: [] });
    for (let round = 1; round <= o.runs; round++) {
      for (const cell of cells) {
        const base = { origin: cell.server.origin, req, connections: cell.connections, cpu: layout.load, client, tmpDir: tmp, rotate: { file: tokensFile, placeholder: PLACEHOLDER } };
        if (round === 1) await runLoad({ ...base, durationS: 1 });
        const cpuBefore = treeCpu(cell.server.pid);
        const rss = sampleRss(cell.server.pid);
        const r = await runLoad({ ...base, durationS: o.durationS });
        const cpuSeconds = cpuDelta(cpuBefore, treeCpu(cell.server.pid));
        const result = { ...r, rssMb: rss.stop().peakProcessMb, cpuUsPerReq: r.requests > 0 ? (cpuSeconds * 1e6) / r.requests : null };
        cell.runs.push(result);
        log(`scale:   ${cell.server.name.padEnd(26)} c=${cell.connections}  ${fmtInt(result.rps)} req/s  p50 ${fmt(result.p50Ms)} ms  p99 ${fmt(result.p99Ms)} ms  ` +
          `rss ${fmt(result.rssMb)} MB  cpu ${fmt(result.cpuUsPerReq)} µs/req${result.non2xx + result.errors > 0 ? `  (${result.non2xx} non-2xx, ${result.errors} errors)` : ''}`);
      }
    }

    const fields = ['rps', 'p50Ms', 'p99Ms', 'rssMb', 'cpuUsPerReq', 'non2xx', 'errors'];
    const rows = cells.map((c) => ({ store: c.server === big ? 'big' : 'empty', connections: c.connections, median: medianOf(c.runs, fields), runs: c.runs }));
    const byConn = o.connections.map((c) => {
      const e = rows.find((r) => r.store === 'empty' && r.connections === c).median;
      const b = rows.find((r) => r.store === 'big' && r.connections === c).median;
      return { connections: c, empty: e, big: b, ratio: ratio(b.rps, e.rps), p99Ratio: ratio(b.p99Ms, e.p99Ms) };
    });
    const loadEnd = loadAverage();
    const results = {
      startedAt, finishedAt: new Date().toISOString(), machine, layout, client, loadavg: { start: loadStart, end: loadEnd },
      options: { users: o.users, tokens: o.tokens, queryTokens: o.queryTokens, runs: o.runs, durationS: o.durationS, connections: o.connections },
      seedSeconds, fileBytes: bytes, readyMs: { empty: empty.readyMs, big: big.readyMs }, rows, byConnection: byConn,
      ratio: median(byConn.map((b) => b.ratio)),
    };
    const md = renderMarkdown(results);
    process.stdout.write(`\n${md}`);
    if (o.write) {
      const files = await writeResults(join(BENCH_DIR, 'results'), 'scale', results, md);
      await replaceSection(join(BENCH_DIR, 'README.md'), 'bench:scale', md.replace(/^# .*\n/, ''));
      log(`scale: wrote ${files.join(', ')} and bench/README.md`);
    }
  } finally {
    for (const s of servers) await s.stop().catch(() => undefined);
    killAll();
    if (o.keep) log(`scale: kept ${tmp}`);
    else await rm(tmp, { recursive: true, force: true });
    process.off('SIGINT', onSignal);
  }
}

function renderMarkdown(r) {
  const lines = [`# svcapi-auth at scale: ValidateUserToken with ${fmtInt(r.options.tokens)} tokens`, ''];
  lines.push(`Run of ${r.startedAt}: ${fmtInt(r.options.users)} users and ${fmtInt(r.options.tokens)} tokens seeded in ${fmt(r.seedSeconds)} s ` +
    `(${fmt(r.fileBytes / 2 ** 30)} GiB SQLite file); the empty store holds one user and the ${fmtInt(r.options.queryTokens)} tokens the load rotates over. ` +
    `${r.options.runs} run(s) of ${r.options.durationS} s per cell, medians; ValidateUserToken SOAP 1.1, keep-alive, one process.`, '');
  lines.push(`**Machine:** ${machineLine(r.machine, r.layout, r.loadavg.start, r.loadavg.end, r.client)}.`, '');
  lines.push('| Store | Conns | req/s | p50 ms | p99 ms | peak RSS MB | CPU µs/req | ready ms |', '|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const row of r.rows) {
    const m = row.median;
    lines.push(`| ${row.store === 'big' ? `${fmtInt(r.options.tokens)} tokens, ${fmtInt(r.options.users)} users` : 'empty'} | ${row.connections} | ${fmtInt(m.rps)} | ${fmt(m.p50Ms)} | ${fmt(m.p99Ms)} | ` +
      `${fmt(m.rssMb, 1)} | ${fmt(m.cpuUsPerReq, 1)} | ${fmtInt(row.store === 'big' ? r.readyMs.big : r.readyMs.empty)} |`);
  }
  lines.push('');
  for (const b of r.byConnection) {
    lines.push(`- ${b.connections} connections: req/s with ${fmtInt(r.options.tokens)} tokens = **${fmtRatio(b.ratio)}** the empty store's ` +
      `(p99 ${fmtRatio(b.p99Ratio)}); target ≥ 0.85×: **${b.ratio !== null && b.ratio >= 0.85 ? 'met' : 'not met'}**.`);
  }
  lines.push('');
  return `${lines.join('\n')}\n`;
}

main().catch((error) => {
  process.stderr.write(`scale: ${error.stack ?? error}\n`);
  killAll();
  process.exit(1);
});
