#!/usr/bin/env node
/**
 * What shadow mode costs svcapi-auth's own process, in CPU per request rather than throughput
 * (throughput is noisy on a shared machine; CPU time per request much less so). Not part of
 * `npm test`; needs `npm run build`.
 *
 * Three servers on one SQLite database, as in bench.mjs's `shadow` scenario: the "old service"
 * (a second svcapi-auth, --log-level warn) on the load generator's cores; the server without
 * shadowing and the one with `legacy.shadow.rate: 1`, each pinned to the server core. Then, in
 * rounds (plain and shadowed alternate, so that a drift of the machine favours neither):
 *
 *   --rate R      a fixed rate (autocannon overallRate, default 4000 req/s): below saturation,
 *                 nothing is shed, every request is compared; the main figure is
 *                 (CPU µs/request shadowed − plain), per compared request;
 *   --saturate    also at full load (--connections, default 16,64), as bench.mjs (wrk when
 *                 installed, else autocannon; --client to choose): req/s, p99, CPU µs/request,
 *                 how many requests were compared or dropped, and the CPU the shadow budget
 *                 charged (svcapi_auth_shadow_cpu_seconds_total) beside the extra CPU measured.
 *
 * Options: --runs N (3) --duration S (5) --cli PATH (dist/cli/main.js); --variant NAME:K=V,K=V
 * (repeatable: one more shadowed server with that environment, e.g.
 * `--variant new: --variant old:SVCAPI_SHADOW_PIPELINING=0,SVCAPI_SHADOW_BYTE_COMPARE=0`; default
 * one, `shadowed`); --legacy-nice N (the old service at that nice level, so that it takes less
 * of the load generator's core); --legacy-ceiling (the old service is bench/ceiling-server.mjs,
 * whose fixed answer is ours byte for byte: it takes next to nothing from the load generator's
 * core, as an old service on its own machine would; bench.mjs's default); --cpu-prof DIR (the
 * shadowed servers write a V8 CPU profile there at exit).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { envOf, readArgs } from './lib/args.mjs';
import { chooseClient, runLoad } from './lib/load.mjs';
import { cpuDelta, cpuLayout, killAll, run, treeCpu, waitIdle } from './lib/proc.mjs';
import { buildRequest, send, tokenIn } from './lib/requests.mjs';
import { countsSince, managementUrlOf, shadowCounts } from './lib/shadow-counts.mjs';
import { fmt, fmtInt, median } from './lib/report.mjs';
import { APP_ID, BENCH_LOGIN, BENCH_PASSWORD, seedService, throttleOffConfig } from './lib/seed.mjs';
import { startServer } from './lib/servers.mjs';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(BENCH_DIR, '..');
const RUNNER = join(BENCH_DIR, 'autocannon-runner.mjs');

function parseArgs(argv) {
  const o = { runs: 3, durationS: 5, rate: 4000, saturate: false, connections: [16, 64], cli: join(ROOT, 'dist', 'cli', 'main.js'), variants: [], cpuProf: null, legacyNice: 0, legacyCeiling: false, client: null };
  readArgs(argv, (a, next) => {
    if (a === '--runs') o.runs = Number(next());
    else if (a === '--duration') o.durationS = Number(next());
    else if (a === '--rate') o.rate = Number(next());
    else if (a === '--saturate') o.saturate = true;
    else if (a === '--connections') o.connections = next().split(',').map(Number);
    else if (a === '--cli') o.cli = resolve(next());
    else if (a === '--variant') {
      const [name, ...settings] = next().split(/[:,]/);
      o.variants.push({ name, env: envOf(settings, a) });
    } else if (a === '--cpu-prof') o.cpuProf = resolve(next());
    else if (a === '--legacy-nice') o.legacyNice = Number(next());
    else if (a === '--legacy-ceiling') o.legacyCeiling = true;
    else if (a === '--client') o.client = next();
    else if (a === '--help' || a === '-h') {
      process.stdout.write('usage: node bench/shadow-cost.mjs [--runs N] [--duration S] [--rate R|0] [--saturate] [--connections 16,64] [--cli PATH] [--variant NAME:K=V,K=V]... [--legacy-nice N] [--legacy-ceiling] [--cpu-prof DIR] [--client wrk|autocannon]\n');
      process.exit(0);
    } else return false;
  });
  if (o.variants.length === 0) o.variants.push({ name: 'shadowed', env: {} });
  return o;
}

async function load(origin, req, { connections, durationS, rate, cpu, client, tmpDir }) {
  // At full load, the load generator bench.mjs uses (wrk when installed: a fraction of
  // autocannon's CPU, which shares its core with the old service); a fixed rate needs autocannon.
  if (!rate && client === 'wrk') {
    const r = await runLoad({ origin, req, connections, durationS, cpu, client, tmpDir });
    return { sent: r.requests, durationS: r.durationS, p99Ms: r.p99Ms, errors: r.errors, non2xx: r.non2xx };
  }
  const spec = { url: `${origin}${req.path}`, method: req.method, headers: req.headers, body: req.body, connections, durationS, timeoutS: 10, check: null, rotate: null, ...(rate && { overallRate: rate }) };
  const r = await run(process.execPath, [RUNNER, JSON.stringify(spec)], { cpu });
  const m = /^BENCH_RESULT (.+)$/m.exec(r.stdout);
  if (!m) throw new Error(`autocannon gave no result (exit ${r.code}):\n${r.stdout}${r.stderr}`);
  return JSON.parse(m[1]);
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const layout = cpuLayout(false);
  const client = chooseClient(o.client);
  const tmp = await mkdtemp(join(tmpdir(), 'svcapi-shadow-cost-'));
  const log = (s) => process.stderr.write(`${s}\n`);
  const servers = [];
  try {
    const db = `sqlite:${join(tmp, 'bench.db')}`;
    await seedService({ cliPath: o.cli, db, tmpDir: tmp, newsCount: 0 });
    const throttle = await throttleOffConfig(o.cli, tmp);
    // The memory tuning serve would relaunch itself with (src/cli/memory-tuning.ts), set here so
    // that it does not: one process per server, and --cpu-prof applies to the one serving.
    const env = {
      ...process.env, SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0', MALLOC_ARENA_MAX: '1', NODE_OPTIONS: '--max-semi-space-size=4',
      ...(throttle.file !== null && { SVCAPI_CONFIG: throttle.file }),
    };
    const serve = (extra = []) => [o.cli, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db, ...extra];
    const start = async (name, spec) => {
      const s = await startServer({ name, cwd: ROOT, ...spec });
      servers.push(s);
      return s;
    };
    // With --legacy-nice, the old service yields its core to the load generator, whose latency
    // figures would otherwise include the time the old service took from it.
    // With --legacy-ceiling, the old service is bench/ceiling-server.mjs (its fixed answer is ours
    // for this request, byte for byte): what it takes from the load generator's core is next to nothing.
    const legacyArgs = o.legacyCeiling ? [join(BENCH_DIR, 'ceiling-server.mjs'), '--port', '0'] : serve(['--log-level', 'warn']);
    const niced = o.legacyNice > 0 ? { file: 'nice', args: ['-n', String(o.legacyNice), process.execPath, ...legacyArgs] } : { args: legacyArgs };
    const legacy = await start('legacy', { ...niced, env: { ...env, SVCAPI_MANAGEMENT_PORT: 'off' }, cpu: layout.load });
    const plain = await start('plain', { args: serve(), env: { ...env, SVCAPI_MANAGEMENT_PORT: 'off' }, cpu: layout.server });
    const profile = o.cpuProf === null ? [] : ['--cpu-prof', `--cpu-prof-dir=${o.cpuProf}`];
    const shadowedServers = [];
    for (const variant of o.variants) {
      const shadowEnv = { ...env, SVCAPI_MANAGEMENT_PORT: '0', SVCAPI_LEGACY_URL: legacy.url, SVCAPI_LEGACY_SHADOW_RATE: '1', ...variant.env };
      const server = await start(variant.name, { args: [...profile, ...serve()], env: shadowEnv, cpu: layout.server });
      // startServer keeps the output before readiness: the Management line is in it.
      const managementUrl = managementUrlOf(server.output());
      if (managementUrl === null) throw new Error(`no Management line:\n${server.output()}`);
      shadowedServers.push({ name: variant.name, server, managementUrl });
    }

    const { OPERATIONS } = await import(pathToFileURL(join(dirname(o.cli), '..', 'contract', 'operations.js')).href);
    const login = await send(plain.origin, buildRequest(OPERATIONS, 'soap11', 'ValidateUser', { login: BENCH_LOGIN, password: BENCH_PASSWORD, AppId: APP_ID, IPAddress: '' }));
    const token = tokenIn(login.body);
    if (token === null) throw new Error(`no token: ${login.body}`);
    const req = buildRequest(OPERATIONS, 'soap11', 'ValidateUserToken', { token });

    const modes = o.rate > 0 ? [{ label: `rate ${o.rate}`, connections: 16, rate: o.rate }] : [];
    if (o.saturate) for (const c of o.connections) modes.push({ label: `c=${c}`, connections: c, rate: null });
    const targets = [{ name: 'plain', server: plain, managementUrl: null }, ...shadowedServers];
    const results = new Map();
    for (let round = 1; round <= o.runs; round++) {
      for (const mode of modes) {
        for (const target of targets) {
          const { server, managementUrl } = target;
          const key = `${mode.label} ${target.name}`;
          if (round === 1) await load(server.origin, req, { connections: mode.connections, durationS: 1, rate: mode.rate, cpu: layout.load, client, tmpDir: tmp });
          await waitIdle(server.pid);
          const counts0 = managementUrl !== null ? await shadowCounts(managementUrl) : null;
          const cpu0 = treeCpu(server.pid);
          const r = await load(server.origin, req, { connections: mode.connections, durationS: o.durationS, rate: mode.rate, cpu: layout.load, client, tmpDir: tmp });
          // The comparisons still running after the load count too.
          await waitIdle(server.pid);
          const cpuS = cpuDelta(cpu0, treeCpu(server.pid));
          const counts = managementUrl !== null ? countsSince(counts0, await shadowCounts(managementUrl)) : null;
          const row = { rps: r.sent / r.durationS, p99Ms: r.p99Ms, requests: r.sent, cpuUs: (cpuS * 1e6) / r.sent, counts };
          if (!results.has(key)) results.set(key, []);
          results.get(key).push(row);
          const shown = counts && { ...counts, chargedS: undefined, chargedUsPerReq: Number(fmt((counts.chargedS * 1e6) / r.sent)) };
          log(`${key.padEnd(28)} ${fmtInt(row.rps).padStart(7)} req/s  p99 ${fmt(r.p99Ms)} ms  cpu ${fmt(row.cpuUs)} µs/req${shown ? `  ${JSON.stringify(shown)}` : ''}${r.errors + r.non2xx > 0 ? `  (${r.errors} errors, ${r.non2xx} non-2xx)` : ''}`);
        }
      }
    }
    log('\nmedians:');
    for (const mode of modes) {
      const p = results.get(`${mode.label} plain`);
      const m = (rows, f) => median(rows.map(f));
      log(`${mode.label} plain: cpu ${fmt(m(p, (r) => r.cpuUs))} µs/req, ${fmtInt(m(p, (r) => r.rps))} req/s, p99 ${fmt(m(p, (r) => r.p99Ms))} ms`);
      for (const { name } of shadowedServers) {
        const s = results.get(`${mode.label} ${name}`);
        const comparedOf = (r) => r.counts.same + r.counts.different + r.counts.error;
        const compared = m(s, (r) => comparedOf(r) / r.requests);
        // Extra CPU of the shadowed server per compared request, from the pairs of one round.
        const extra = median(s.map((r, i) => ((r.cpuUs - (p[i]?.cpuUs ?? NaN)) * r.requests) / Math.max(1, comparedOf(r))));
        // The budget's meter: CPU charged to shadow work per request, against the extra measured over plain.
        const charged = m(s, (r) => (r.counts.chargedS * 1e6) / r.requests);
        log(`${mode.label} ${name}: cpu ${fmt(m(s, (r) => r.cpuUs))} µs/req (${m(s, (r) => r.cpuUs) >= m(p, (r) => r.cpuUs) ? '+' : ''}${fmt(m(s, (r) => r.cpuUs) - m(p, (r) => r.cpuUs))}; charged ${fmt(charged)}), ` +
          `${fmt(extra)} µs per compared request, ${fmt(compared * 100, 1)}% compared; ` +
          `${fmtInt(m(s, (r) => r.rps))} req/s (${fmt(m(s, (r) => r.rps) / m(p, (r) => r.rps))}×), p99 ${fmt(m(s, (r) => r.p99Ms))} ms (${fmt(m(s, (r) => r.p99Ms) - m(p, (r) => r.p99Ms))})`);
      }
    }
  } finally {
    for (const s of servers.reverse()) await s.stop().catch(() => undefined);
    killAll();
    await rm(tmp, { recursive: true, force: true });
  }
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  killAll();
  process.exit(1);
});
