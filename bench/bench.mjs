#!/usr/bin/env node
/**
 * `npm run bench`: svcapi-auth against its ceiling and against node-soap, side by side
 * in one run on this machine. Not part of `npm test`.
 *
 * Servers (all started at the beginning; their start is timed up to the first answered ?WSDL):
 *   ceiling          bench/ceiling-server.mjs: bare node:http, a fixed ValidateUserToken answer
 *   svcapi-auth      dist/cli/svcapi-auth.cjs serve on SQLite, one process, pinned like the ceiling
 *   svcapi-auth (auto)   the same with --workers auto, on all cores (ValidateUser)
 *   svcapi-auth (1p, all cores)  one process, not pinned (the mixed run)
 *   …on PostgreSQL   the same on PostgreSQL with --pg
 *   node-soap        bench/node-soap-server.mjs: our WSDL, the operations in memory (SOAP 1.1 only)
 * Load: wrk (else autocannon), keep-alive, no pipelining, 16 and 64 connections, fixed
 * durations, 3 runs per cell in rounds (every cell once per round), medians reported.
 *
 * Options:
 *   --quick              1 run of 3 s per cell (development)
 *   --runs N  --duration S  --warmup S  --connections 16,64   (--warmup 0: none; a login server is
 *                        warmed 40 s before its first run, LOGIN_WARMUP_S)
 *   --only a,b           scenarios by id (vut-soap11, vut-soap12, vut-get, vut-post, whatsnew-10,
 *                        whatsnew-100, getuserloginurl, validateuser, mixed, shadow); the ceiling's
 *                        ValidateUserToken SOAP 1.1 always runs, as every ratio needs it
 *   --pg [URL]           svcapi-auth on PostgreSQL too (default postgres://postgres@127.0.0.1:5432/test,
 *                        or BENCH_PG_URL), in a fresh schema dropped afterwards. Without --pg the
 *                        default URL is tried and used when it answers (said in the output)
 *   --no-pg              SQLite only
 *   --client wrk|autocannon   force a load generator
 *   --cli PATH           the svcapi-auth build to measure (default dist/cli/svcapi-auth.cjs, the executable the
 *                        deployment files run; an older build's dist/cli/main.js works too)
 *   --no-pin             do not use taskset
 *   --shadow-target fixed|svcapi   the old service of the shadow scenario: a fixed answer
 *                        (default; it costs the load generator's core next to nothing, as an old
 *                        service on its own machine would) or a second svcapi-auth
 *   --no-write           print only; do not write bench/results/ nor bench/README.md
 *   --keep               keep the temporary directory
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { readArgs } from './lib/args.mjs';
import { deployedNode } from './lib/deployed.mjs';
import { chooseClient, runLoad } from './lib/load.mjs';
import { DEFAULT_PG_URL, dropPgSchema, pgAnswers, pgUrlArg, redactUrl, runSchema } from './lib/pg.mjs';
import { cpuDelta, cpuLayout, killAll, loadAverage, machineInfo, run, sampleRss, treeCpu, treeHwmMb, treeLoopCpu, treeLoopRuns, waitIdle } from './lib/proc.mjs';
import { buildRequest, newsRowsIn, send, tokenIn } from './lib/requests.mjs';
import { countsSince, managementUrlOf, shadowCounts } from './lib/shadow-counts.mjs';
import { fmt, fmtInt, fmtRatio, machineLine, median, medianOf, ratio, replaceSection, writeResults } from './lib/report.mjs';
import { APP_ID, BENCH_LOGIN, BENCH_PASSWORD, LOGIN_URL, NEWS_LANGUAGE, newsRecords, seedService, throttleOffConfig } from './lib/seed.mjs';
import { startServer } from './lib/servers.mjs';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(BENCH_DIR, '..');
const RESULTS_DIR = join(BENCH_DIR, 'results');
/** Seconds of logins before a login server's first measured run (the validateuser scenario says why). */
const LOGIN_WARMUP_S = 40;

// --- options ---

function parseArgs(argv) {
  const o = {
    runs: 3, durationS: 5, warmupS: 1, connections: [16, 64], only: null, pg: 'auto', client: null,
    cli: join(ROOT, 'dist', 'cli', 'svcapi-auth.cjs'), noPin: false, write: true, keep: false, shadowTarget: 'fixed',
  };
  readArgs(argv, (a, next, peek) => {
    if (a === '--quick') Object.assign(o, { runs: 1, durationS: 3, warmupS: 1 });
    else if (a === '--runs') o.runs = Number(next());
    else if (a === '--duration') o.durationS = Number(next());
    else if (a === '--warmup') o.warmupS = Number(next());
    else if (a === '--connections') o.connections = next().split(',').map(Number);
    else if (a === '--only') o.only = next().split(',').map((s) => s.trim()).filter(Boolean);
    else if (a === '--pg') o.pg = pgUrlArg(next, peek);
    else if (a === '--no-pg') o.pg = null;
    else if (a === '--client') o.client = next();
    else if (a === '--cli') o.cli = resolve(next());
    else if (a === '--no-pin') o.noPin = true;
    else if (a === '--shadow-target') {
      o.shadowTarget = next();
      if (o.shadowTarget !== 'fixed' && o.shadowTarget !== 'svcapi') throw new Error('--shadow-target: fixed or svcapi');
    }
    else if (a === '--no-write') o.write = false;
    else if (a === '--keep') o.keep = true;
    else if (a === '--render') o.render = resolve(next());
    else if (a === '--help' || a === '-h') {
      process.stdout.write(`${readHeader()}\n`);
      process.exit(0);
    } else return false;
  }, { unknownHint: ' (see --help)' });
  if (!(o.runs >= 1) || !(o.durationS > 0) || o.connections.some((c) => !(c >= 1))) throw new Error('bad --runs / --duration / --connections');
  return o;
}

function readHeader() {
  return 'usage: node bench/bench.mjs [--quick] [--runs N] [--duration S] [--warmup S] [--connections 16,64] [--only ids] [--pg [URL] | --no-pg]\n' +
    '                              [--client wrk|autocannon] [--cli PATH] [--no-pin] [--shadow-target fixed|svcapi] [--no-write] [--keep]\n' +
    '       node bench/bench.mjs --render bench/results/latest.json   (writes latest.md and bench/README.md again from a run\'s results, no load)\n' +
    'Scenarios: vut-soap11 vut-soap12 vut-get vut-post whatsnew-10 whatsnew-100 getuserloginurl validateuser mixed shadow';
}

// --- scenarios ---

/**
 * `servers`: the roles that run it. `expect(body)` checks one answer before the load.
 * `ref`: the node-soap scenario it is compared with (node-soap only speaks SOAP 1.1).
 */
function scenarios(token) {
  const vut = (binding) => ({ op: 'ValidateUserToken', binding, args: { token }, expect: (b) => />true</.test(b) });
  const wn = (qty) => ({
    op: 'WhatsNew', binding: 'soap11', args: { AppToken: '', AppID: APP_ID, AppVersion: '', Language: NEWS_LANGUAGE, qtyNews: qty },
    expect: (b) => newsRowsIn(b) === qty,
  });
  return [
    { id: 'vut-soap11', title: 'ValidateUserToken SOAP 1.1', ...vut('soap11'), servers: ['ceiling', 'svcapi', 'svcapi-quiet', 'svcapi-pg', 'node-soap'], ref: 'vut-soap11' },
    { id: 'vut-soap12', title: 'ValidateUserToken SOAP 1.2', ...vut('soap12'), servers: ['svcapi', 'svcapi-pg'], ref: 'vut-soap11' },
    { id: 'vut-get', title: 'ValidateUserToken HTTP GET', ...vut('http-get'), servers: ['svcapi', 'svcapi-pg'], ref: 'vut-soap11' },
    { id: 'vut-post', title: 'ValidateUserToken HTTP POST', ...vut('http-post'), servers: ['svcapi', 'svcapi-pg'], ref: 'vut-soap11' },
    { id: 'whatsnew-10', title: 'WhatsNew, 10 rows (SOAP 1.1)', ...wn(10), servers: ['svcapi', 'svcapi-quiet', 'svcapi-pg', 'node-soap'], ref: 'whatsnew-10' },
    { id: 'whatsnew-100', title: 'WhatsNew, 100 rows (SOAP 1.1)', ...wn(100), servers: ['svcapi', 'svcapi-pg', 'node-soap'], ref: 'whatsnew-100' },
    {
      id: 'getuserloginurl', title: 'GetUserLoginURL (SOAP 1.1)', op: 'GetUserLoginURL', binding: 'soap11', args: { token, AppID: APP_ID },
      expect: (b) => /ticket=[0-9a-f-]{36}/.test(b), servers: ['svcapi', 'svcapi-pg', 'node-soap'], ref: 'getuserloginurl',
    },
    // Shadow mode's cost (docs/cutover.md): the same server with every request also sent to a
    // stand-in for the old service (legacy.shadow.rate 1), beside its twin without, which serves
    // only this scenario too: the plain \`svcapi\` server has served every other scenario by then
    // (other bindings and operations, tickets written), which a twin started beside the shadowed one
    // has not. Each round measures the pair twice, A B then B A (\`pairsPerRound\`): the budget is
    // a difference of two p99s at saturation, which moves by several ms from one run to the next
    // here, so it is taken per adjacent pair and the median of the pairs is reported.
    {
      id: 'shadow', title: 'ValidateUserToken SOAP 1.1, shadowed at 100%', ...vut('soap11'), servers: ['svcapi-unshadowed', 'svcapi-shadow'], ref: 'vut-soap11',
      pairsPerRound: 2,
    },
    {
      id: 'validateuser', title: 'ValidateUser, correct password (SOAP 1.1)', op: 'ValidateUser', binding: 'soap11',
      args: { login: BENCH_LOGIN, password: BENCH_PASSWORD, AppId: APP_ID, IPAddress: '' },
      expect: (b) => tokenIn(b) !== null, servers: ['svcapi-auto', 'svcapi-pg-auto'], ref: null, timeoutS: 60,
      // A server's first login cell is warmed for this long, not --warmup's 1 s: the other cells'
      // second of warm-up is 25,000-45,000 requests, a login server's about 80, and V8 optimises a
      // function once it has run enough: on one `--workers auto` server (2026-11-30, 10 s rounds)
      // the main threads' CPU per login fell from 1.75-1.50 ms in the first 30 s to 0.95-1.03 ms
      // after 40 s, and logins/s rose from 78-80 to 93-95; with --no-opt it stayed at 1.47-1.56 ms.
      // A service runs for days, its logins on optimised code: that is the rate it has.
      warmupS: LOGIN_WARMUP_S,
      // Every answer is checked: only successful logins are a fair comparison with raw argon2id.
      check: { js: /<ValidateUserResult>[0-9a-f-]{36}</, lua: '<ValidateUserResult>%x+%-%x+%-%x+%-%x+%-%x+<' },
    },
  ];
}

const ROLE_LABEL = {
  ceiling: 'ceiling (bare node:http)',
  svcapi: 'svcapi-auth SQLite (default settings)',
  'svcapi-quiet': 'svcapi-auth SQLite, --log-level warn',
  'svcapi-pg': 'svcapi-auth PostgreSQL',
  'svcapi-auto': 'svcapi-auth SQLite, --workers auto',
  'svcapi-pg-auto': 'svcapi-auth PostgreSQL, --workers auto',
  'svcapi-mixed': 'svcapi-auth SQLite, 1 process, all cores',
  'node-soap': 'node-soap (in memory)',
  'svcapi-unshadowed': 'svcapi-auth SQLite, the shadowed server\'s twin without shadowing',
  'svcapi-shadow': 'svcapi-auth SQLite, legacy.shadow.rate 1',
  'svcapi-legacy': 'svcapi-auth SQLite as the old service (shadow target, load cores)',
  'fixed-legacy': 'fixed answer as the old service (bench/ceiling-server.mjs, shadow target, load cores)',
};

// --- main ---

/** Writes latest.md and bench/README.md's section again from a run's results (after a change of the report alone). */
async function render(file) {
  const results = JSON.parse(readFileSync(file, 'utf8'));
  // The bench:scale rows as its latest run has them, in the place the run's own were.
  const at = results.targets.findIndex((t) => t.name.endsWith('(bench:scale)'));
  const kept = results.targets.filter((t) => !t.name.endsWith('(bench:scale)'));
  results.targets = [...kept.slice(0, at < 0 ? kept.length : at), ...scaleTargets(), ...kept.slice(at < 0 ? kept.length : at)];
  const markdown = renderMarkdown(results);
  await writeFile(join(RESULTS_DIR, 'latest.md'), markdown);
  await replaceSection(join(BENCH_DIR, 'README.md'), 'bench:latest', markdown.replace(/^# .*\n/, ''));
  process.stdout.write(markdown);
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (o.render !== undefined) return render(o.render);
  if (!existsSync(o.cli)) throw new Error(`${o.cli} does not exist: run npm run build first (npm run bench does)`);
  const { OPERATIONS } = await import(pathToFileURL(join(dirname(o.cli), '..', 'contract', 'operations.js')).href);
  const client = chooseClient(o.client);
  const layout = cpuLayout(o.noPin);
  const machine = machineInfo();
  const startedAt = new Date().toISOString();
  const loadStart = loadAverage();
  const log = (text) => process.stderr.write(`${text}\n`);
  log(`bench: ${machine.cpuModel}, ${machine.cores} cores, Node ${machine.node}, load generator ${client}, ` +
    `${layout.pinned ? `servers on core ${layout.server}, load on core ${layout.load}` : `not pinned (${layout.reason})`}, load average ${loadStart.join(' ')}`);
  if (machine.cores < 2) log('bench: one core only: server and load generator share it, figures are not comparable with a 2-core run');

  const tmp = await mkdtemp(join(tmpdir(), 'svcapi-bench-'));
  const cleanups = [];
  const onSignal = () => {
    killAll();
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    // --- seed ---
    const t0 = Date.now();
    const sqliteDb = `sqlite:${join(tmp, 'bench.db')}`;
    const { passwordHash } = await seedService({ cliPath: o.cli, db: sqliteDb, tmpDir: tmp });
    let pgDb = null;
    if (o.pg === 'auto') {
      o.pg = (await pgAnswers(DEFAULT_PG_URL)) ? DEFAULT_PG_URL : null;
      log(o.pg === null ? `bench: PostgreSQL not reachable at ${redactUrl(DEFAULT_PG_URL)}: SQLite only (--pg URL to name one)` : `bench: PostgreSQL at ${redactUrl(DEFAULT_PG_URL)}: measured beside SQLite (--no-pg to skip)`);
    }
    if (o.pg !== null) {
      const { schema, url } = runSchema(o.pg, 'bench');
      pgDb = url;
      cleanups.push(() => dropPgSchema(o.pg, schema, (t) => log(`bench: ${t}`)));
      await seedService({ cliPath: o.cli, db: pgDb, tmpDir: tmp });
    }
    const throttle = await throttleOffConfig(o.cli, tmp);
    log(`bench: seeded in ${((Date.now() - t0) / 1000).toFixed(1)} s; brute-force throttling: ${throttle.note}`);

    // --- servers ---
    // Started as the deployment files start it (their memory settings; bench/lib/deployed.mjs).
    const deployed = deployedNode();
    const serviceEnv = {
      ...process.env, ...deployed.env, SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0',
      ...(throttle.file !== null && { SVCAPI_CONFIG: throttle.file }),
    };
    // What ships: the default log level (info, one access line per request). The quiet server
    // (--log-level warn) runs beside it for the headline cells, never instead of it.
    const serve = (db, extra = []) => [...deployed.nodeArgs, o.cli, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db, ...extra];
    const selected = (id) => o.only === null || o.only.includes(id);
    const all = scenarios('00000000-0000-0000-0000-000000000000');
    const wanted = new Set(['ceiling']);
    for (const s of all) {
      if (!selected(s.id)) continue;
      for (const role of s.servers) if ((!role.startsWith('svcapi-pg') || pgDb !== null)) wanted.add(role);
    }
    if (selected('mixed')) wanted.add('svcapi-mixed');
    // The old service: in production it has a machine of its own. Here it shares the load
    // generator's core, so by default it is the fixed answer (bench/ceiling-server.mjs, whose bytes
    // are ours for this request, so every comparison is "same"), which takes next to nothing from
    // the load generator; --shadow-target svcapi: a second svcapi-auth, which answers at the load
    // generator's expense (2026-11-28: the shadowed p99 1.5-3 ms higher at 16 connections than
    // an identical server's, against 0-1 ms with the fixed answer; docs/benchmarks.md).
    const legacyRole = o.shadowTarget === 'svcapi' ? 'svcapi-legacy' : 'fixed-legacy';
    if (wanted.has('svcapi-shadow')) wanted.add(legacyRole);
    // The comparisons need the reference cells: node-soap's ValidateUserToken for every binding.
    if ([...wanted].some((r) => r.startsWith('svcapi')) && [...all].some((s) => selected(s.id) && s.op === 'ValidateUserToken')) wanted.add('node-soap');

    const servers = {};
    const start = async (role, spec) => {
      if (!wanted.has(role)) return;
      log(`bench: starting ${ROLE_LABEL[role]}`);
      servers[role] = await startServer({ name: ROLE_LABEL[role], ...spec });
      cleanups.push(() => servers[role].stop());
      log(`bench:   ready in ${servers[role].readyMs.toFixed(0)} ms at ${servers[role].url}`);
      // The next server starts once this one is idle: what a server still does after its first
      // answer (compiling, its database check in the background) ran on the same core as the
      // next one's start and counted in that one's ready time (2026-11-28: the ceiling 335 ms,
      // servers started late 1.3-1.8 s against 0.6-0.8 started alone, bench/startup.mjs).
      await waitIdle(servers[role].pid);
    };
    await start('svcapi', { args: serve(sqliteDb), env: serviceEnv, cpu: layout.server, cwd: ROOT });
    // The shadow target runs on the load generator's cores, so the server under test keeps its
    // core to itself; its own work then slows the load generator a little (a caveat of 2 cores).
    await start('svcapi-legacy', { args: serve(sqliteDb, ['--log-level', 'warn']), env: serviceEnv, cpu: layout.load, cwd: ROOT });
    await start('fixed-legacy', { args: [join(BENCH_DIR, 'ceiling-server.mjs'), '--port', '0'], cpu: layout.load });
    await start('svcapi-unshadowed', { args: serve(sqliteDb), env: serviceEnv, cpu: layout.server, cwd: ROOT });
    if (wanted.has('svcapi-shadow')) {
      // The comparison counts are read on its management listener's /metrics (every server has
      // one, on an ephemeral port, as `serve` starts by default).
      const legacyEnv = { ...serviceEnv, SVCAPI_LEGACY_URL: servers[legacyRole].url, SVCAPI_LEGACY_SHADOW_RATE: '1' };
      await start('svcapi-shadow', { args: serve(sqliteDb), env: legacyEnv, cpu: layout.server, cwd: ROOT });
    }
    await start('svcapi-quiet', { args: serve(sqliteDb, ['--log-level', 'warn']), env: serviceEnv, cpu: layout.server, cwd: ROOT });
    await start('svcapi-auto', { args: serve(sqliteDb, ['--workers', 'auto']), env: serviceEnv, cwd: ROOT });
    await start('svcapi-mixed', { args: serve(sqliteDb), env: serviceEnv, cwd: ROOT });
    if (pgDb !== null) {
      await start('svcapi-pg', { args: serve(pgDb), env: serviceEnv, cpu: layout.server, cwd: ROOT });
      await start('svcapi-pg-auto', { args: serve(pgDb, ['--workers', 'auto']), env: serviceEnv, cwd: ROOT });
    }
    await start('ceiling', { args: [join(BENCH_DIR, 'ceiling-server.mjs'), '--port', '0'], cpu: layout.server });

    // A token from the service itself (ValidateUser), valid on every svcapi server (shared store).
    const any = servers.svcapi ?? servers['svcapi-unshadowed'] ?? servers['svcapi-auto'] ?? servers['svcapi-mixed'] ?? servers['svcapi-pg'] ?? servers['svcapi-pg-auto'];
    const tokenFor = async (server) => {
      if (server === undefined) return '00000000-0000-0000-0000-000000000000';
      const answer = await send(server.origin, buildRequest(OPERATIONS, 'soap11', 'ValidateUser', { login: BENCH_LOGIN, password: BENCH_PASSWORD, AppId: APP_ID, IPAddress: '' }));
      const token = tokenIn(answer.body);
      if (token === null) throw new Error(`ValidateUser did not return a token (HTTP ${answer.status}): ${answer.body}`);
      return token;
    };
    const sqliteToken = await tokenFor(any && !any.name.includes('PostgreSQL') ? any : undefined);
    const pgToken = pgDb !== null ? await tokenFor(servers['svcapi-pg'] ?? servers['svcapi-pg-auto']) : null;

    if (wanted.has('node-soap')) {
      const wsdlFile = join(tmp, 'Authentication.wsdl');
      const wsdlSource = any ?? servers.ceiling;
      const wsdl = await (await globalThis.fetch(`${wsdlSource.url}?WSDL`)).text();
      if (!wsdl.includes('wsdl:definitions')) throw new Error('could not fetch the WSDL from svcapi-auth for node-soap');
      await writeFile(wsdlFile, wsdl);
      const news = newsRecords(100).map((n, i) => ({
        NewsID: i + 1, AppID: n.appId, Title: n.title, Body: n.body, Language: n.language, Url: n.url,
        PublishedAt: n.publishedAt.replace('Z', '+00:00'),
      }));
      const fixture = join(tmp, 'node-soap-fixture.json');
      await writeFile(fixture, JSON.stringify({ wsdlFile, login: BENCH_LOGIN, passwordHash, appId: APP_ID, loginUrl: LOGIN_URL, tokens: [sqliteToken], news }));
      await start('node-soap', { args: [join(BENCH_DIR, 'node-soap-server.mjs'), fixture, '--port', '0'], cpu: layout.server, cwd: ROOT });
    }

    // --- cells ---
    const cells = [];
    for (const s of scenarios(sqliteToken)) {
      for (const role of s.servers) {
        if (!servers[role]) continue;
        // The ceiling's and node-soap's ValidateUserToken SOAP 1.1 always run: every ratio needs them.
        if (!selected(s.id) && !(s.id === 'vut-soap11' && (role === 'ceiling' || role === 'node-soap'))) continue;
        const token = role.startsWith('svcapi-pg') ? pgToken : sqliteToken;
        const args = 'token' in s.args ? { ...s.args, token } : s.args;
        const req = buildRequest(OPERATIONS, s.binding, s.op, args);
        for (const connections of o.connections) {
          cells.push({ scenario: s, role, server: servers[role], req, connections, runs: [], skipped: null });
        }
      }
    }

    // One answer of each cell, checked, before any load (the ceiling answers "true" to anything).
    for (const cell of cells) {
      if (cell.connections !== o.connections[0]) continue;
      const answer = await send(cell.server.origin, cell.req);
      if (answer.status !== 200 || !cell.scenario.expect(answer.body)) {
        const why = `check failed: HTTP ${answer.status}: ${answer.body.slice(0, 300)}`;
        for (const c of cells) if (c.scenario === cell.scenario && c.role === cell.role) c.skipped = why;
        log(`bench: ${cell.scenario.id} on ${cell.role}: ${why} (skipped)`);
      }
    }

    const argonRuns = [];
    const mixedRuns = [];
    const loopFloorRuns = [];
    const legacyCpuStart = servers[legacyRole] ? treeCpu(servers[legacyRole].pid) : null;
    const runsTotal = cells.filter((c) => c.skipped === null).reduce((n, c) => n + (c.scenario.pairsPerRound ?? 1), 0) + (selected('mixed') && servers['svcapi-mixed'] ? 2 : 0);
    const loginServers = new Set(cells.filter((c) => c.skipped === null && c.scenario.warmupS !== undefined).map((c) => c.server)).size;
    // The login cells' extras each round: the raw argon2id rate twice, the paced ceiling, the bare login and its warm-up.
    const estimate = o.runs * runsTotal * o.durationS + runsTotal * o.warmupS + (selected('validateuser') ? o.runs * (4 * o.durationS + o.warmupS) : 0) +
      (o.warmupS > 0 ? loginServers * LOGIN_WARMUP_S : 0);
    const warmedServers = new Set();
    log(`bench: ${runsTotal} cells × ${o.runs} run(s) × ${o.durationS} s: about ${Math.ceil(estimate / 60)} min`);

    for (let round = 1; round <= o.runs; round++) {
      log(`bench: round ${round}/${o.runs}`);
      // The raw argon2id rate right before and right after the logins it is compared with: the
      // machine's speed drifts by several percent within minutes here, and bracketing the cells
      // keeps a drift from favouring either side.
      const rawRate = async () => {
        argonRuns.push(await argon2Rate(passwordHash, o.durationS, machine.cores));
        log(`bench:   raw argon2id: ${fmt(argonRuns.at(-1).rate)} verifications/s on ${argonRuns.at(-1).threads} threads, ${fmt(argonRuns.at(-1).cpuMsPerVerification)} ms CPU each`);
      };
      // Within a scenario, the servers run in the listed order in odd rounds and in the reverse
      // order in even ones: here the cell run second in a pair tended to measure slower whatever
      // it ran (docs/benchmarks.md), and alternating keeps that from favouring either side.
      // A scenario with \`pairsPerRound: 2\` then runs again in the opposite order (A B B A).
      const ordered = cells.map((c) => c.scenario).filter((sc, i, all) => all.indexOf(sc) === i).flatMap((sc) => {
        const group = cells.filter((c) => c.scenario === sc);
        const first = round % 2 === 1 ? group : [...group].reverse();
        return sc.pairsPerRound === 2 ? [...first, ...[...first].reverse()] : first;
      });
      const loginCells = ordered.filter((c) => c.skipped === null && c.scenario.id === 'validateuser');
      for (const cell of ordered) {
        if (cell.skipped !== null) continue;
        if (cell === loginCells[0]) await rawRate();
        const loadOptions = {
          origin: cell.server.origin, req: cell.req, connections: cell.connections, cpu: cell.role.endsWith('auto') ? null : layout.load,
          check: cell.scenario.check ?? null, timeoutS: cell.scenario.timeoutS ?? 10, client, tmpDir: tmp,
        };
        if (round === 1 && o.warmupS > 0 && cell.runs.length === 0) {
          const first = !warmedServers.has(cell.server);
          warmedServers.add(cell.server);
          await runLoad({ ...loadOptions, durationS: first && cell.scenario.warmupS !== undefined ? Math.max(o.warmupS, cell.scenario.warmupS) : o.warmupS });
          await waitIdle(cell.server.pid);
        }
        // The shadowed server: how many requests were compared, of those it served (the budget
        // drops the rest at saturation), counted after the comparisons still running have ended.
        const shadowUrl = cell.role === 'svcapi-shadow' ? managementUrlOf(cell.server.output()) : null;
        const shadow0 = shadowUrl === null ? null : await shadowCounts(shadowUrl);
        const result = await measure(cell.server, () => runLoad({ ...loadOptions, durationS: o.durationS }));
        await waitIdle(cell.server.pid);
        if (shadowUrl !== null) {
          const counts = countsSince(shadow0, await shadowCounts(shadowUrl));
          result.shadowCompared = counts.same + counts.different + counts.error;
          result.shadowDropped = counts.dropped;
        }
        cell.runs.push(result);
        log(`bench:   ${cell.scenario.id.padEnd(16)} ${cell.role.padEnd(14)} c=${String(cell.connections).padEnd(3)} ${fmtInt(result.rps).padStart(7)} req/s  ` +
          `p50 ${fmt(result.p50Ms)} ms  p99 ${fmt(result.p99Ms)} ms  rss ${fmt(result.rssMb)} MB  cpu ${fmt(result.cpuUsPerReq)} µs/req` +
          `${result.non2xx + result.errors > 0 ? `  (${result.non2xx} non-2xx, ${result.errors} errors)` : ''}` +
          `${result.checked ? `  (${result.checked.ok} ok, ${result.checked.bad} failed logins${result.checked.bad > 0 ? `; first: ${result.checked.firstBad.slice(0, 160)}` : ''})` : ''}` +
          `${result.shadowCompared !== undefined ? `  (${result.shadowCompared} compared, ${result.shadowDropped} dropped)` : ''}`);
        if (cell === loginCells.at(-1)) await rawRate();
        if (cell === loginCells.at(-1) && servers.ceiling && client === 'wrk') loopFloorRuns.push(await loopFloor(loginCells, servers.ceiling, layout, tmp, o, machine.cores, log, passwordHash));
      }
      if (selected('mixed') && servers['svcapi-mixed']) {
        mixedRuns.push(await mixedRun(servers['svcapi-mixed'], OPERATIONS, sqliteToken, layout, client, tmp, o, round === 1, log));
      }
    }

    if (servers[legacyRole]) {
      // What shadowing costs, per connections: throughput ratio and p99 difference (the budget: ≥ 0.90, ≤ +2 ms).
      for (const connections of o.connections) {
        const plain = cells.find((c) => c.scenario.id === 'shadow' && c.role === 'svcapi-unshadowed' && c.connections === connections);
        const shadowed = cells.find((c) => c.scenario.id === 'shadow' && c.role === 'svcapi-shadow' && c.connections === connections);
        if (!plain?.runs.length || !shadowed?.runs.length) continue;
        const cost = shadowCost(plain.runs, shadowed.runs);
        log(`bench: shadow cost c=${connections}: ${fmtRatio(cost.ratio)} req/s, p99 ${signedMs(cost.p99DeltaMs)} (medians of ${cost.pairs.length} pairs: ` +
          `${cost.pairs.map((p) => `${fmtRatio(p.ratio)} ${signedMs(p.p99DeltaMs)}`).join(', ')}); ${comparedShare(shadowed.runs)}`);
      }
      log(`bench: the shadow target used ${fmt(cpuDelta(legacyCpuStart, treeCpu(servers[legacyRole].pid)))} s of CPU (it answered the shadowed requests)`);
    }
    const loadEnd = loadAverage();
    const results = summarise({ o, cells, servers, argonRuns, mixedRuns, loopFloorRuns, machine, layout, client, startedAt, loadStart, loadEnd, throttle, pg: pgDb !== null });
    const markdown = renderMarkdown(results);
    process.stdout.write(`\n${markdown}`);
    if (o.write) {
      const files = await writeResults(RESULTS_DIR, '', results, markdown);
      await replaceSection(join(BENCH_DIR, 'README.md'), 'bench:latest', markdown.replace(/^# .*\n/, ''));
      log(`bench: wrote ${files.join(', ')} and bench/README.md`);
    }
  } finally {
    for (const c of cleanups.reverse()) {
      try {
        await c();
      } catch (error) {
        log(`bench: cleanup: ${error.message}`);
      }
    }
    killAll();
    if (o.keep) log(`bench: kept ${tmp}`);
    else await rm(tmp, { recursive: true, force: true });
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/**
 * What an event loop costs per request at the login cells' pace, whatever it serves: the ceiling
 * (one process, a fixed answer, nothing to parse or store) paced to the rate one worker of
 * `--workers auto` answered logins at in this round's first login cell, its main thread's CPU per
 * request. At tens of requests a second each one wakes an idle loop, and on this VM a wake alone
 * costs the thread 0.3-0.9 ms (2026-11-28: the ceiling at 20 requests/s 0.90 ms a request, at
 * 43/s 0.73, one connection back to back 0.30; at saturation 0.03). Beside the login's figure it
 * separates what the login path does from what waking for it costs here.
 *
 * Then the bare login (bench/bare-login-server.mjs: node:http, one argon2id verification of the
 * benchmark user's hash on the pool, a fixed answer; one process, unpinned like the login servers),
 * loaded like the first login cell: its main thread's CPU a login is what a login costs any Node.js
 * event loop here, before parsing, storing, logging or auditing anything.
 */
async function loopFloor(loginCells, ceiling, layout, tmp, o, workers, log, passwordHash) {
  const cell = loginCells.find((c) => c.runs.length > 0 && c.runs.at(-1).okRps > 0);
  if (cell === undefined) return null;
  const perProcess = cell.runs.at(-1).okRps / workers;
  // One connection: paced connections of wrk keep in step and arrive together, several requests
  // a wake (8 of them: 0.25 ms a request against 0.70 for one, 2026-11-28); logins arrive apart.
  const connections = 1;
  const delayMs = 1000 / perProcess;
  const result = await measure(ceiling, () => runLoad({
    origin: ceiling.origin, req: cell.req, connections, durationS: o.durationS, cpu: layout.load, client: 'wrk', tmpDir: tmp, delayMs,
  }));
  await waitIdle(ceiling.pid);
  log(`bench:   loop floor: the ceiling at ${fmt(result.rps)} req/s (one connection, paced to one worker's ${fmt(perProcess)} logins/s): ` +
    `${fmt(result.loopUsPerReq / 1000, 3)} ms of its event loop's CPU a request, on the CPU ${fmt(result.loopRunsPerReq)} time(s) a request`);
  const bare = await bareLogin(cell, layout, tmp, o, log, passwordHash);
  return { rps: result.rps, targetRps: perProcess, loopMsPerReq: result.loopUsPerReq / 1000, loopRunsPerReq: result.loopRunsPerReq, bare };
}

/** The bare login server under the first login cell's load (loopFloor): its event loop's CPU and times on the CPU a login. */
async function bareLogin(cell, layout, tmp, o, log, passwordHash) {
  const server = await startServer({
    name: 'bare login (node:http + argon2id)',
    args: [join(BENCH_DIR, 'bare-login-server.mjs'), '--port', '0', '--hash', passwordHash, '--password-env', 'BENCH_ARGON2_PASSWORD'],
    env: { ...process.env, BENCH_ARGON2_PASSWORD: BENCH_PASSWORD },
  });
  try {
    const load = { origin: server.origin, req: cell.req, connections: cell.connections, cpu: layout.load, client: 'wrk', tmpDir: tmp, timeoutS: 60 };
    await runLoad({ ...load, durationS: Math.max(1, o.warmupS) });
    const result = await measure(server, () => runLoad({ ...load, durationS: o.durationS }));
    if (result.non2xx + result.errors > 0 || result.rps <= 0) throw new Error(`the bare login server failed ${result.non2xx + result.errors} of ${result.requests} logins`);
    log(`bench:   bare login: node:http and argon2id alone at ${fmt(result.rps)} logins/s (${cell.connections} connections): ` +
      `${fmt(result.loopUsPerReq / 1000, 3)} ms of its event loop's CPU a login, on the CPU ${fmt(result.loopRunsPerReq)} time(s) a login`);
    return { rps: result.rps, loopMsPerReq: result.loopUsPerReq / 1000, loopRunsPerReq: result.loopRunsPerReq };
  } finally {
    await server.stop();
  }
}

/** The machine's raw argon2id rate (bench/argon2-rate.mjs: one worker thread per core), on the benchmark user's hash. */
async function argon2Rate(passwordHash, seconds, cores) {
  const r = await run(process.execPath, [join(BENCH_DIR, 'argon2-rate.mjs'), '--hash', passwordHash, '--password-env', 'BENCH_ARGON2_PASSWORD', '--seconds', String(seconds)], {
    env: { ...process.env, BENCH_ARGON2_PASSWORD: BENCH_PASSWORD, UV_THREADPOOL_SIZE: String(Math.max(4, cores)) },
  });
  const m = /^BENCH_RESULT (.+)$/m.exec(r.stdout);
  if (!m) throw new Error(`argon2-rate failed:\n${r.stdout}${r.stderr}`);
  return JSON.parse(m[1]);
}

/** Runs `load` while measuring the server's CPU time and sampling its RSS. */
async function measure(server, load) {
  const cpuBefore = treeCpu(server.pid);
  const loopBefore = treeLoopCpu(server.pid);
  const runsBefore = treeLoopRuns(server.pid);
  const rss = sampleRss(server.pid);
  const result = await load();
  const cpuSeconds = cpuDelta(cpuBefore, treeCpu(server.pid));
  const loopSeconds = cpuDelta(loopBefore, treeLoopCpu(server.pid));
  const loopRuns = cpuDelta(runsBefore, treeLoopRuns(server.pid));
  const { peakProcessMb, peakTreeMb, peakAnonMb } = rss.stop();
  return {
    ...result,
    cpuSeconds,
    cpuUsPerReq: result.requests > 0 ? (cpuSeconds * 1e6) / result.requests : null,
    // The event loops' share (main threads only): what a request costs the loop that serves all.
    loopUsPerReq: result.requests > 0 ? (loopSeconds * 1e6) / result.requests : null,
    // How many times the event loops were put on a CPU a request (wake-ups and returns from preemption).
    loopRunsPerReq: result.requests > 0 && loopRuns > 0 ? loopRuns / result.requests : null,
    rssMb: peakProcessMb,
    rssTreeMb: peakTreeMb,
    rssAnonMb: peakAnonMb,
    loadavg: loadAverage(),
  };
}

/**
 * ValidateUserToken (SOAP 1.1, 16 connections) alone, then again while a second load generator
 * floods ValidateUser (correct password, 16 connections), on one svcapi-auth process that may
 * use every core (the default hashing capacity leaves one core to the event loop).
 */
async function mixedRun(server, OPERATIONS, token, layout, client, tmpDir, o, warm, log) {
  const vut = buildRequest(OPERATIONS, 'soap11', 'ValidateUserToken', { token });
  const vu = buildRequest(OPERATIONS, 'soap11', 'ValidateUser', { login: BENCH_LOGIN, password: BENCH_PASSWORD, AppId: APP_ID, IPAddress: '' });
  const base = { origin: server.origin, connections: 16, cpu: layout.load, client, tmpDir };
  if (warm && o.warmupS > 0) await runLoad({ ...base, req: vut, durationS: o.warmupS });
  const idle = await measure(server, () => runLoad({ ...base, req: vut, durationS: o.durationS }));
  await waitIdle(server.pid);
  let flood = null;
  const busy = await measure(server, async () => {
    const [tokenLoad, floodLoad] = await Promise.all([
      runLoad({ ...base, req: vut, durationS: o.durationS }),
      runLoad({ ...base, req: vu, durationS: o.durationS, timeoutS: 60, check: { js: /<ValidateUserResult>[0-9a-f-]{36}</, lua: '<ValidateUserResult>%x+%-%x+%-%x+%-%x+%-%x+<' } }),
    ]);
    flood = floodLoad;
    return tokenLoad;
  });
  await waitIdle(server.pid);
  log(`bench:   mixed: ValidateUserToken p99 ${fmt(idle.p99Ms)} ms idle, ${fmt(busy.p99Ms)} ms during the flood ` +
    `(${fmtInt(idle.rps)} → ${fmtInt(busy.rps)} req/s; ValidateUser ${fmt(flood.rps)} req/s, ${flood.checked?.bad ?? 0} failed)`);
  return { idle, busy, flood };
}

// --- summary ---

/** A difference in ms with its sign: "+0.31 ms", "-1.97 ms". */
function signedMs(value) {
  return `${value >= 0 ? '+' : ''}${fmt(value)} ms`;
}

/**
 * What shadowing costs, from the runs of the twin without (`plain`) and of the shadowed server,
 * which ran in adjacent pairs (the n-th run of each, A B / B A): per pair the throughput ratio and
 * the p99 difference, and the medians over the pairs. Paired, a drift of the machine within the
 * run (it moved the plain server's p99 by 10 ms within one run here) falls on both sides of a pair.
 */
function shadowCost(plain, shadowed) {
  const pairs = plain.slice(0, shadowed.length).map((a, i) => ({ ratio: ratio(shadowed[i].rps, a.rps), p99DeltaMs: shadowed[i].p99Ms - a.p99Ms }));
  return { pairs, ratio: median(pairs.map((p) => p.ratio)), p99DeltaMs: median(pairs.map((p) => p.p99DeltaMs)) };
}

/** The shadowed server's runs: requests compared, of all it served, summed over the runs. */
function comparedShare(runs) {
  const compared = runs.reduce((n, r) => n + (r.shadowCompared ?? 0), 0);
  const served = runs.reduce((n, r) => n + (r.requests ?? 0), 0);
  return `${fmtInt(compared)} of ${fmtInt(served)} requests compared, ${fmt((100 * compared) / Math.max(1, served), 2)}%`;
}

const FIELDS = ['rps', 'okRps', 'p50Ms', 'p90Ms', 'p99Ms', 'maxMs', 'rssMb', 'rssTreeMb', 'rssAnonMb', 'cpuUsPerReq', 'loopUsPerReq', 'loopRunsPerReq', 'requests', 'non2xx', 'errors'];

function summarise({ o, cells, servers, argonRuns, mixedRuns, loopFloorRuns, machine, layout, client, startedAt, loadStart, loadEnd, throttle, pg }) {
  const rows = cells.map((c) => ({
    scenario: c.scenario.id, title: c.scenario.title, role: c.role, server: ROLE_LABEL[c.role], connections: c.connections,
    skipped: c.skipped, median: c.runs.length > 0 ? medianOf(c.runs, FIELDS) : null,
    failedLogins: c.scenario.check ? c.runs.reduce((n, r) => n + (r.checked?.bad ?? 0), 0) : null,
    firstFailure: c.runs.map((r) => r.checked?.firstBad ?? '').find((t) => t !== '')?.slice(0, 120) ?? null,
    runs: c.runs,
  }));
  const find = (scenario, role, connections) => rows.find((r) => r.scenario === scenario && r.role === role && r.connections === connections)?.median ?? null;
  const argonRate = median(argonRuns.map((r) => r.rate));
  const argonCpuMs = median(argonRuns.map((r) => r.cpuMsPerVerification));
  for (const r of rows) {
    if (r.median === null) continue;
    const s = scenarios('x').find((x) => x.id === r.scenario);
    const ceiling = find('vut-soap11', 'ceiling', r.connections);
    const nodeSoap = s.ref === null ? null : find(s.ref, 'node-soap', r.connections);
    const rel = (base) => (base === null ? null : {
      rps: ratio(r.median.rps, base.rps), p50: ratio(r.median.p50Ms, base.p50Ms), p99: ratio(r.median.p99Ms, base.p99Ms),
      rss: ratio(r.median.rssMb, base.rssMb), cpu: ratio(r.median.cpuUsPerReq, base.cpuUsPerReq),
    });
    r.vsCeiling = rel(ceiling);
    r.vsNodeSoap = r.role === 'node-soap' && s.ref === r.scenario ? rel(r.median) : rel(nodeSoap);
    r.nodeSoapRef = s.ref;
    // Only successful logins count: a refused one (server busy) costs no verification.
    if (r.scenario === 'validateuser') {
      r.vsArgon2 = ratio(r.median.okRps, argonRate);
      // Less sensitive to other load on the machine: CPU of one raw verification / the service's CPU per login.
      r.vsArgon2Cpu = ratio(argonCpuMs === null ? null : argonCpuMs * 1000, r.median.cpuUsPerReq);
    }
  }
  const mixed = mixedRuns.length === 0 ? null : {
    server: ROLE_LABEL['svcapi-mixed'],
    idle: medianOf(mixedRuns.map((m) => m.idle), FIELDS),
    busy: medianOf(mixedRuns.map((m) => m.busy), FIELDS),
    flood: medianOf(mixedRuns.map((m) => m.flood), ['rps', 'p50Ms', 'p99Ms', 'requests', 'non2xx', 'errors']),
    failedLogins: mixedRuns.reduce((n, m) => n + (m.flood.checked?.bad ?? 0), 0),
    runs: mixedRuns,
  };
  if (mixed) mixed.p99Ratio = ratio(mixed.busy.p99Ms, mixed.idle.p99Ms);
  const serverInfo = Object.fromEntries(Object.entries(servers).map(([role, s]) => [role, { label: ROLE_LABEL[role], readyMs: s.readyMs, peakRssMb: treeHwmMb(s.pid) }]));
  const floors = loopFloorRuns.filter((r) => r !== null);
  const results = {
    startedAt, finishedAt: new Date().toISOString(), machine, layout, client, loadavg: { start: loadStart, end: loadEnd },
    options: { runs: o.runs, durationS: o.durationS, warmupS: o.warmupS, connections: o.connections, only: o.only, pg, cli: o.cli },
    throttle: throttle.note, servers: serverInfo, argon2: { rate: argonRate, cpuMsPerVerification: argonCpuMs, runs: argonRuns }, rows, mixed,
    loopFloor: floors.length === 0 ? null : { rps: median(floors.map((r) => r.rps)), loopMsPerReq: median(floors.map((r) => r.loopMsPerReq)), loopRunsPerReq: median(floors.map((r) => r.loopRunsPerReq)),
      bare: floors.some((r) => r.bare) ? { rps: median(floors.map((r) => r.bare?.rps)), loopMsPerReq: median(floors.map((r) => r.bare?.loopMsPerReq)), loopRunsPerReq: median(floors.map((r) => r.bare?.loopRunsPerReq)) } : null,
      runs: floors },
  };
  results.targets = evaluateTargets(results, find);
  return results;
}

function evaluateTargets(results, find) {
  const targets = [];
  const add = (name, met, figure) => targets.push({ name, met, figure });
  const conns = results.options.connections;
  const rowsOf = (scenario, role) => conns.map((c) => ({ c, m: find(scenario, role, c) })).filter((x) => x.m !== null);
  const svc = rowsOf('vut-soap11', 'svcapi');
  if (svc.length > 0) {
    const parts = svc.map(({ c, m }) => ({ c, r: ratio(m.rps, find('vut-soap11', 'ceiling', c)?.rps), n: ratio(m.rps, find('vut-soap11', 'node-soap', c)?.rps) }));
    const quiet = (c) => ratio(find('vut-soap11', 'svcapi-quiet', c)?.rps ?? null, find('vut-soap11', 'ceiling', c)?.rps);
    add('ValidateUserToken SOAP 1.1 ≥ 0.65× the ceiling\'s req/s (default settings)', parts.every((p) => p.r !== null && p.r >= 0.65),
      parts.map((p) => `${fmtRatio(p.r)} at ${p.c} conns (quiet: ${fmtRatio(quiet(p.c))})`).join(', '));
    add('ValidateUserToken SOAP 1.1 ≥ 2× node-soap\'s req/s', parts.every((p) => p.n !== null && p.n >= 2),
      parts.map((p) => `${fmtRatio(p.n)} at ${p.c} conns`).join(', '));
    const at64 = find('vut-soap11', 'svcapi', 64);
    add('ValidateUserToken SOAP 1.1 p99 < 10 ms at 64 connections', at64 !== null && at64.p99Ms < 10, at64 === null ? 'not measured' : `${fmt(at64.p99Ms)} ms`);
    const others = ['vut-soap12', 'vut-get', 'vut-post'].flatMap((id) => rowsOf(id, 'svcapi').map(({ c, m }) => ({ id, c, r: ratio(m.rps, find('vut-soap11', 'svcapi', c)?.rps) })));
    if (others.length > 0) {
      add('SOAP 1.2, GET and POST within 10% of SOAP 1.1 (at least 0.9× its req/s)', others.every((p) => p.r !== null && p.r >= 0.9),
        others.map((p) => `${p.id.replace('vut-', '')} ${fmtRatio(p.r)} @${p.c}`).join(', '));
    }
  }
  for (const [id, rows, line] of [['whatsnew-10', 10, 0.55], ['whatsnew-100', 100, 0.3]]) {
    const wn = rowsOf(id, 'svcapi');
    if (wn.length === 0) continue;
    const parts = wn.map(({ c, m }) => ({ c, r: ratio(m.rps, find('vut-soap11', 'ceiling', c)?.rps) }));
    add(`WhatsNew ${rows} rows ≥ ${line}× the ceiling`, parts.every((p) => p.r !== null && p.r >= line), parts.map((p) => `${fmtRatio(p.r)} at ${p.c} conns`).join(', '));
  }
  const vu = results.rows.filter((r) => r.scenario === 'validateuser' && r.role === 'svcapi-auto' && r.median !== null);
  if (vu.length > 0) {
    add('ValidateUser ≥ 0.95× the raw argon2id rate (--workers auto)', vu.every((r) => r.vsArgon2 !== null && r.vsArgon2 >= 0.95 && r.failedLogins === 0),
      `${vu.map((r) => `${fmt(r.median.okRps)} logins/s = ${fmtRatio(r.vsArgon2)} at ${r.connections} conns`).join(', ')} (raw ${fmt(results.argon2.rate)}/s); ` +
      `by CPU: ${vu.map((r) => `${fmtRatio(r.vsArgon2Cpu)}`).join(', ')} (raw ${fmt(results.argon2.cpuMsPerVerification)} ms per verification)` +
      `${vu.some((r) => r.failedLogins > 0) ? `; ${vu.reduce((n, r) => n + r.failedLogins, 0)} logins failed` : ''}`);
  }
  const loopPerLogin = results.rows.filter((r) => r.scenario === 'validateuser' && r.median?.okRps > 0);
  if (loopPerLogin.length > 0) {
    // Per successful login: a refused one (server busy) costs the loop almost nothing and would flatter it.
    const perLogin = (r, field) => (r.median[field] == null ? null : (r.median[field] * r.median.rps) / r.median.okRps);
    const ms = (r) => {
      const us = perLogin(r, 'loopUsPerReq');
      return us === null ? null : us / 1000;
    };
    // How the figure is made up: the times the loop was put on a CPU a login (schedstat) and what each cost.
    const runs = (r) => {
      const n = perLogin(r, 'loopRunsPerReq');
      return n === null || n === 0 ? '' : ` (on the CPU ${fmt(n)} times a login, ${fmtInt((ms(r) * 1000) / n)} µs each)`;
    };
    const floor = results.loopFloor;
    // A login wakes its loop twice at the least: for its request, and when its hash is done on the
    // thread pool (the response cannot be written before). At the floor's cost a wake, that is the
    // least any event loop of this machine spends on a login before doing anything.
    const least = floor === null ? '' : `; a login needs at least two wake-ups (its request, its hash's end): at least ${fmt(2 * floor.loopMsPerReq, 3)} ms here`;
    const bare = floor?.bare ?? null;
    const bareText = bare === null ? '' : `; a bare login server (node:http and argon2id alone, nothing stored or logged, ${fmt(bare.rps)} logins/s): ` +
      `${fmt(bare.loopMsPerReq, 3)} ms a login${bare.loopRunsPerReq ? ` (on the CPU ${fmt(bare.loopRunsPerReq)} times a login)` : ''}`;
    add('ValidateUser: event-loop CPU per login ≤ 0.5 ms', loopPerLogin.every((r) => ms(r) !== null && ms(r) <= 0.5),
      loopPerLogin.map((r) => `${r.role} ${fmt(ms(r), 3)} ms at ${r.connections} conns${runs(r)}`).join(', ') +
      (floor === null ? '' : `; the ceiling paced to one worker's rate (${fmt(floor.rps)} req/s): ${fmt(floor.loopMsPerReq, 3)} ms a request` +
        `${floor.loopRunsPerReq ? ` (on the CPU ${fmt(floor.loopRunsPerReq)} times a request)` : ''}, the cost of waking the loop here${least}${bareText}`));
  }
  const glu = rowsOf('getuserloginurl', 'svcapi');
  if (glu.length > 0) {
    const parts = glu.map(({ c, m }) => ({ c, n: ratio(m.rps, find('getuserloginurl', 'node-soap', c)?.rps) }));
    add('GetUserLoginURL ≥ 1.5× node-soap\'s rate (node-soap keeps tickets in memory)', parts.every((p) => p.n !== null && p.n >= 1.5),
      parts.map((p) => `${fmtRatio(p.n)} at ${p.c} conns`).join(', '));
  }
  const pgVut = rowsOf('vut-soap11', 'svcapi-pg');
  if (pgVut.length > 0) {
    const parts = pgVut.map(({ c, m }) => ({ c, r: ratio(m.rps, find('vut-soap11', 'ceiling', c)?.rps) }));
    add('PostgreSQL: ValidateUserToken SOAP 1.1 ≥ 0.55× the ceiling', parts.every((p) => p.r !== null && p.r >= 0.55),
      parts.map((p) => `${fmtRatio(p.r)} at ${p.c} conns`).join(', '));
  }
  const shadowRuns = (role, c) => results.rows.find((r) => r.scenario === 'shadow' && r.role === role && r.connections === c)?.runs ?? [];
  const shadowParts = conns.map((c) => ({ c, plain: shadowRuns('svcapi-unshadowed', c), shadowed: shadowRuns('svcapi-shadow', c) }))
    .filter((x) => x.plain.length > 0 && x.shadowed.length > 0).map((x) => ({ ...x, cost: shadowCost(x.plain, x.shadowed) }));
  if (shadowParts.length > 0) {
    add('Shadowing at 100% costs ≤ 10% of ValidateUserToken req/s and ≤ +2 ms of p99 (medians of adjacent pairs)',
      shadowParts.every((x) => x.cost.ratio >= 0.9 && x.cost.p99DeltaMs <= 2),
      shadowParts.map((x) => `${fmtRatio(x.cost.ratio)}, p99 ${signedMs(x.cost.p99DeltaMs)} at ${x.c} conns ` +
        `(pairs: ${x.cost.pairs.map((p) => signedMs(p.p99DeltaMs)).join(', ')}; ${comparedShare(x.shadowed)})`).join('; '));
  }
  if (results.mixed) {
    add('ValidateUserToken p99 during a ValidateUser flood ≤ 2× idle', results.mixed.p99Ratio !== null && results.mixed.p99Ratio <= 2,
      `${fmt(results.mixed.busy.p99Ms)} ms vs ${fmt(results.mixed.idle.p99Ms)} ms idle = ${fmtRatio(results.mixed.p99Ratio)}`);
  }
  targets.push(...scaleTargets());
  const svcRows = results.rows.filter((r) => r.role.startsWith('svcapi') && r.median !== null);
  /** The highest of a memory field over svcapi-auth's cells and the mixed run's busy phase. */
  const peakOf = (field) => Math.max(0, ...svcRows.map((r) => r.median[field] ?? 0), ...(results.mixed ? [results.mixed.busy[field] ?? 0] : []));
  const [rssMax, anonMax] = [peakOf('rssMb'), peakOf('rssAnonMb')];
  // Decided on the whole RSS; the anonymous part beside it says how much is the process's own
  // (the rest is file-backed: SQLite's map of a database file that the benchmark's writes grow).
  add('Peak RSS under load ≤ 150 MB per process', svcRows.length > 0 ? rssMax <= 150 : null, `${fmt(rssMax)} MB at most (anonymous: ${fmt(anonMax)} MB at most; the rest file-backed)`);
  const readies = Object.entries(results.servers).filter(([role]) => role.startsWith('svcapi'));
  add('Ready to serve within 1 s of start', readies.length > 0 ? readies.every(([, s]) => s.readyMs <= 1000) : null,
    readies.map(([, s]) => `${s.label} ${fmtInt(s.readyMs)} ms`).join(', '));
  return targets;
}

/**
 * bench:scale's fleet rows, from its latest run (results/scale-latest.json, read when the table is
 * made, so `--render` quotes a bench:scale run made after the bench's): 1M distinct tokens in
 * rotation against the hot set, per store. Their names end in "(bench:scale)".
 */
function scaleTargets() {
  const scale = readScale();
  if (scale === null) return [{ name: 'Fleet scale (bench:scale)', met: null, figure: 'not measured here: npm run bench:scale' }];
  return scale.comparisons.map((c) => {
    const line = c.store === 'sqlite' ? 0.8 : 0.6;
    return {
      name: `${c.store === 'sqlite' ? 'SQLite' : 'PostgreSQL'} fleet (10M tokens, 1M in rotation) ≥ ${line}× the hot set (bench:scale)`, met: c.ratio >= line,
      figure: `${fmtRatio(c.ratio)}, fleet p99 ${fmt(c.fleet?.p99Ms)} ms (bench:scale of ${scale.startedAt})`,
    };
  });
}

function readScale() {
  const file = join(RESULTS_DIR, 'scale-latest.json');
  if (!existsSync(file)) return null;
  try {
    const scale = JSON.parse(readFileSync(file, 'utf8'));
    return { comparisons: Array.isArray(scale.comparisons) ? scale.comparisons : [], startedAt: scale.startedAt };
  } catch {
    return null;
  }
}

// --- markdown ---

function cellText(value, rel, key, digits) {
  const v = digits === 0 ? fmtInt(value) : fmt(value, digits);
  if (!rel) return v;
  const parts = [];
  if (rel.c && rel.c[key] !== null && rel.c[key] !== undefined) parts.push(`${fmtRatio(rel.c[key])}c`);
  if (rel.n && rel.n[key] !== null && rel.n[key] !== undefined) parts.push(`${fmtRatio(rel.n[key])}n`);
  return parts.length === 0 ? v : `${v} (${parts.join(' ')})`;
}

/**
 * How far one server's runs of a cell lay apart: the reader's measure of the machine's noise in
 * this run. The reference servers do the same work every run, so their spread is the machine's;
 * svcapi-auth's widest cell shows what a single figure of the table may carry.
 */
function roundToRound(rows) {
  const spread = (row) => {
    const rps = (row.runs ?? []).map((run) => run.rps).filter((v) => Number.isFinite(v) && v > 0);
    return rps.length < 2 ? null : { min: Math.min(...rps), max: Math.max(...rps) };
  };
  const text = (s) => `${fmtInt(s.min)}–${fmtInt(s.max)} req/s (${fmt(s.max / s.min)}×)`;
  const refs = [];
  for (const role of ['ceiling', 'node-soap']) {
    for (const row of rows.filter((x) => x.role === role && x.scenario === 'vut-soap11')) {
      const s = spread(row);
      if (s !== null) refs.push(`${row.server} at ${row.connections} conns ${text(s)}`);
    }
  }
  let widest = null;
  for (const row of rows.filter((x) => x.role.startsWith('svcapi') && x.scenario !== 'validateuser')) {
    const s = spread(row);
    if (s !== null && (widest === null || s.max / s.min > widest.s.max / widest.s.min)) widest = { row, s };
  }
  if (refs.length === 0 && widest === null) return null;
  const parts = [...refs];
  if (widest !== null) parts.push(`svcapi-auth's widest cell ${widest.row.title}, ${widest.row.server}, ${widest.row.connections} conns: ${text(widest.s)}`);
  return `Round to round (the same cell's runs, lowest–highest; the ratios of a run compare cells measured minutes apart): ${parts.join('; ')}.`;
}

export function renderMarkdown(r) {
  const lines = [];
  lines.push('# svcapi-auth benchmark', '');
  lines.push(`Run of ${r.startedAt} (${r.options.runs} run(s) of ${r.options.durationS} s per cell, medians; keep-alive, no pipelining).`, '');
  lines.push(`**Machine:** ${machineLine(r.machine, r.layout, r.loadavg.start, r.loadavg.end, r.client)}.`, '');
  lines.push('Each figure is followed by its ratio to the ceiling (`c`, the same connections, ValidateUserToken SOAP 1.1) and to node-soap ' +
    '(`n`, the same scenario and connections; node-soap serves SOAP 1.1 only, so SOAP 1.2 / GET / POST are compared with its SOAP 1.1 ' +
    'figure). RSS is the highest resident set of one process during the cell; CPU is the server\'s (all its processes\') user+system ' +
    'time per answered request.', '');
  lines.push('| Scenario | Server | Conns | req/s | p50 ms | p99 ms | peak RSS MB | CPU µs/req | notes |');
  lines.push('|---|---|---:|---:|---:|---:|---:|---:|---|');
  for (const row of r.rows) {
    if (row.median === null) {
      lines.push(`| ${row.title} | ${row.server} | ${row.connections} | – | – | – | – | – | ${row.skipped ?? 'not run'} |`);
      continue;
    }
    const rel = { c: row.role === 'ceiling' ? null : row.vsCeiling, n: row.role === 'node-soap' ? null : row.vsNodeSoap };
    const notes = [];
    if (row.scenario === 'validateuser') {
      notes.push(`${fmt(row.median.okRps)} successful logins/s = ${fmtRatio(row.vsArgon2)} the raw argon2id rate (${fmt(r.argon2.rate)}/s); ` +
        `CPU per login = raw verification ÷ ${fmt(1 / row.vsArgon2Cpu)} (${fmtRatio(row.vsArgon2Cpu)})`);
    }
    if (row.failedLogins) notes.push(`${row.failedLogins} logins failed in all runs${row.firstFailure ? ` (${row.firstFailure})` : ''}`);
    if (row.median.non2xx > 0 || row.median.errors > 0) notes.push(`${fmtInt(row.median.non2xx)} non-2xx, ${fmtInt(row.median.errors)} errors`);
    if (row.role === 'node-soap') notes.push('in memory, SOAP 1.1 only');
    if (row.role !== 'node-soap' && row.nodeSoapRef !== row.scenario && row.nodeSoapRef !== null && row.vsNodeSoap) notes.push('n: vs node-soap SOAP 1.1');
    lines.push(`| ${row.title} | ${row.server} | ${row.connections} | ${cellText(row.median.rps, rel, 'rps', 0)} | ${cellText(row.median.p50Ms, rel, 'p50', 2)} | ` +
      `${cellText(row.median.p99Ms, rel, 'p99', 2)} | ${cellText(row.median.rssMb, rel, 'rss', 1)} | ${cellText(row.median.cpuUsPerReq, rel, 'cpu', 1)} | ${notes.join('; ')} |`);
  }
  if (r.mixed) {
    const m = r.mixed;
    lines.push(`| ValidateUserToken SOAP 1.1, idle | ${m.server} | 16 | ${fmtInt(m.idle.rps)} | ${fmt(m.idle.p50Ms)} | ${fmt(m.idle.p99Ms)} | ${fmt(m.idle.rssMb, 1)} | ${fmt(m.idle.cpuUsPerReq, 1)} | mixed run, baseline |`);
    lines.push(`| ValidateUserToken SOAP 1.1, during a ValidateUser flood (16 conns) | ${m.server} | 16 | ${fmtInt(m.busy.rps)} | ${fmt(m.busy.p50Ms)} | ${fmt(m.busy.p99Ms)} | ` +
      `${fmt(m.busy.rssMb, 1)} | – | p99 ${fmtRatio(m.p99Ratio)} idle; flood ${fmt(m.flood.rps)} logins/s${m.failedLogins ? `, ${m.failedLogins} failed` : ''} |`);
  }
  lines.push('');
  const noise = roundToRound(r.rows);
  if (noise !== null) lines.push(noise, '');
  if (r.argon2.rate !== null) {
    lines.push(`Raw argon2id (m=19456, t=2, p=1; ${r.argon2.runs[0]?.threads} worker threads, the user's own hash, measured right before and right after the ValidateUser cells of each round, median): ` +
      `**${fmt(r.argon2.rate)} verifications/s**, ${fmt(r.argon2.cpuMsPerVerification)} ms of CPU each.`, '');
  }
  lines.push('Start to first answered `?WSDL`: ' + Object.values(r.servers).map((s) => `${s.label} ${fmtInt(s.readyMs)} ms`).join('; ') + '.', '');
  lines.push(`Brute-force throttling for the run: ${r.throttle}.`, '');
  lines.push('## Targets', '');
  lines.push('| Target | Met | Figure |', '|---|---|---|');
  for (const t of r.targets) lines.push(`| ${t.name} | ${t.met === null ? 'n/a' : t.met ? 'met' : '**not met**'} | ${t.figure} |`);
  lines.push('');
  if (r.loadavg.start[0] > 0.5 || r.loadavg.end[0] > 0.5) {
    lines.push(`> The machine was not idle (load average ${r.loadavg.start.join(' ')} → ${r.loadavg.end.join(' ')}): these figures are noisy.`, '');
  }
  return `${lines.join('\n')}\n`;
}

main().catch((error) => {
  process.stderr.write(`bench: ${error.stack ?? error}\n`);
  killAll();
  process.exit(1);
});
