#!/usr/bin/env node
/**
 * CPU per request of two or more builds (or settings) of svcapi-auth, side by side with the
 * ceiling and node-soap, in one run: the figure to judge a speed-up by on a shared machine,
 * where req/s moves with whatever else runs. Each variant gets its own freshly seeded SQLite
 * database (seeded by its own CLI) and runs pinned like `npm run bench` (deployment memory
 * settings, default log level); the cells alternate in rounds, so a disturbance spreads over all.
 *
 * Usage: node bench/cpu-compare.mjs --variant base:/tmp/base/dist/cli/main.js --variant new:dist/cli/main.js
 *          [--variant off:dist/cli/main.js:SVCAPI_X=0,SVCAPI_Y=1]   a variant's extra environment
 *          [--only vut-soap11,vut-soap12,whatsnew-10,getuserloginurl] [--connections 16,64]
 *          [--runs 3] [--duration 5] [--warmup 1] [--no-refs]   (no ceiling, no node-soap: variants only)
 * Prints, per scenario and connections, the median req/s, CPU µs per request (user + system of
 * the process, /proc), event-loop CPU µs per request, and req/s as a ratio to the ceiling's
 * ValidateUserToken SOAP 1.1 and to node-soap's same operation; and, paired round by round, each
 * variant's CPU per request as a ratio to the first variant's (median of the rounds: a machine
 * busy with other work slows both sides of a pair alike).
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { envOf, readArgs } from './lib/args.mjs';
import { deployedNode } from './lib/deployed.mjs';
import { chooseClient, runLoad } from './lib/load.mjs';
import { cpuDelta, cpuLayout, killAll, loadAverage, treeCpu, treeLoopCpu, waitIdle } from './lib/proc.mjs';
import { median } from './lib/report.mjs';
import { buildRequest, newsRowsIn, send, tokenIn } from './lib/requests.mjs';
import { APP_ID, BENCH_LOGIN, BENCH_PASSWORD, LOGIN_URL, NEWS_LANGUAGE, newsRecords, seedService, throttleOffConfig } from './lib/seed.mjs';
import { startServer } from './lib/servers.mjs';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(BENCH_DIR, '..');
const ALL = ['vut-soap11', 'vut-soap12', 'vut-get', 'vut-post', 'whatsnew-10', 'whatsnew-100', 'getuserloginurl'];

function parseArgs(argv) {
  const o = { variants: [], only: ALL, connections: [16, 64], runs: 3, durationS: 5, warmupS: 1, refs: true };
  readArgs(argv, (a, next) => {
    if (a === '--variant') {
      const [name, cli, envText] = next().split(':');
      o.variants.push({ name, cli: resolve(cli), env: envOf((envText ?? '').split(','), a) });
    } else if (a === '--only') o.only = next().split(',');
    else if (a === '--connections') o.connections = next().split(',').map(Number);
    else if (a === '--runs') o.runs = Number(next());
    else if (a === '--duration') o.durationS = Number(next());
    else if (a === '--warmup') o.warmupS = Number(next());
    else if (a === '--no-refs') o.refs = false;
    else return false;
  });
  if (o.variants.length === 0) o.variants.push({ name: 'dist', cli: join(ROOT, 'dist', 'cli', 'main.js'), env: {} });
  for (const v of o.variants) if (!existsSync(v.cli)) throw new Error(`${v.cli} does not exist`);
  for (const s of o.only) if (!ALL.includes(s)) throw new Error(`unknown scenario ${s} (${ALL.join(' ')})`);
  return o;
}

function requestFor(OPERATIONS, scenario, token) {
  const wn = (qty) => ['soap11', 'WhatsNew', { AppToken: '', AppID: APP_ID, AppVersion: '', Language: NEWS_LANGUAGE, qtyNews: qty }];
  const spec = {
    'vut-soap11': ['soap11', 'ValidateUserToken', { token }],
    'vut-soap12': ['soap12', 'ValidateUserToken', { token }],
    'vut-get': ['http-get', 'ValidateUserToken', { token }],
    'vut-post': ['http-post', 'ValidateUserToken', { token }],
    'whatsnew-10': wn(10),
    'whatsnew-100': wn(100),
    getuserloginurl: ['soap11', 'GetUserLoginURL', { token, AppID: APP_ID }],
  }[scenario];
  return buildRequest(OPERATIONS, ...spec);
}

const EXPECT = {
  'vut-soap11': (b) => />true</.test(b), 'vut-soap12': (b) => />true</.test(b), 'vut-get': (b) => />true</.test(b), 'vut-post': (b) => />true</.test(b),
  'whatsnew-10': (b) => newsRowsIn(b) === 10, 'whatsnew-100': (b) => newsRowsIn(b) === 100,
  getuserloginurl: (b) => /ticket=[0-9a-f-]{36}/.test(b),
};

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const { OPERATIONS } = await import(pathToFileURL(join(dirname(o.variants[0].cli), '..', 'contract', 'operations.js')).href);
  const client = chooseClient(null);
  const layout = cpuLayout(false);
  const log = (t) => process.stderr.write(`${t}\n`);
  const tmp = await mkdtemp(join(tmpdir(), 'svcapi-cpu-compare-'));
  const servers = [];
  const loadStart = loadAverage();
  try {
    const deployed = deployedNode();
    let passwordHash = null;
    for (const v of o.variants) {
      const db = `sqlite:${join(tmp, `${v.name}.db`)}`;
      const seeded = await seedService({ cliPath: v.cli, db, tmpDir: tmp });
      passwordHash ??= seeded.passwordHash;
      const throttle = await throttleOffConfig(v.cli, tmp);
      const server = await startServer({
        name: v.name, cpu: layout.server, cwd: ROOT,
        args: [...deployed.nodeArgs, v.cli, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db],
        env: { ...process.env, ...deployed.env, SVCAPI_MANAGEMENT_PORT: 'off', SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0', ...(throttle.file !== null && { SVCAPI_CONFIG: throttle.file }), ...v.env },
      });
      const login = await send(server.origin, buildRequest(OPERATIONS, 'soap11', 'ValidateUser', { login: BENCH_LOGIN, password: BENCH_PASSWORD, AppId: APP_ID, IPAddress: '' }));
      const token = tokenIn(login.body);
      if (token === null) throw new Error(`${v.name}: no token: ${login.body}`);
      servers.push({ name: v.name, server, token, scenarios: o.only });
    }
    if (o.refs) {
      const ceiling = await startServer({ name: 'ceiling', cpu: layout.server, args: [join(BENCH_DIR, 'ceiling-server.mjs'), '--port', '0'] });
      servers.push({ name: 'ceiling', server: ceiling, token: '00000000-0000-0000-0000-000000000000', scenarios: ['vut-soap11'] });
    }
    const soapScenarios = o.refs ? o.only.filter((s) => ['vut-soap11', 'whatsnew-10', 'whatsnew-100', 'getuserloginurl'].includes(s)) : [];
    if (soapScenarios.length > 0) {
      const wsdl = await (await globalThis.fetch(`${servers[0].server.url}?WSDL`)).text();
      const wsdlFile = join(tmp, 'Authentication.wsdl');
      await writeFile(wsdlFile, wsdl);
      const news = newsRecords(100).map((n, i) => ({ NewsID: i + 1, AppID: n.appId, Title: n.title, Body: n.body, Language: n.language, Url: n.url, PublishedAt: n.publishedAt.replace('Z', '+00:00') }));
      const fixture = join(tmp, 'node-soap-fixture.json');
      const token = servers[0].token;
      await writeFile(fixture, JSON.stringify({ wsdlFile, login: BENCH_LOGIN, passwordHash, appId: APP_ID, loginUrl: LOGIN_URL, tokens: [token], news }));
      const nodeSoap = await startServer({ name: 'node-soap', cpu: layout.server, cwd: ROOT, args: [join(BENCH_DIR, 'node-soap-server.mjs'), fixture, '--port', '0'] });
      servers.push({ name: 'node-soap', server: nodeSoap, token, scenarios: soapScenarios });
    }

    const cells = [];
    for (const scenario of o.only.concat(o.only.includes('vut-soap11') || !o.refs ? [] : ['vut-soap11'])) {
      for (const s of servers) {
        if (!s.scenarios.includes(scenario)) continue;
        const req = requestFor(OPERATIONS, scenario, s.token);
        const answer = await send(s.server.origin, req);
        if (answer.status !== 200 || !EXPECT[scenario](answer.body)) throw new Error(`${scenario} on ${s.name}: HTTP ${answer.status}: ${answer.body.slice(0, 300)}`);
        for (const connections of o.connections) cells.push({ scenario, name: s.name, server: s.server, req, connections, runs: [] });
      }
    }
    for (let round = 1; round <= o.runs; round++) {
      // Alternate the order of the servers within a scenario from round to round.
      const ordered = round % 2 === 1 ? cells : [...cells].reverse();
      for (const cell of ordered) {
        const load = { origin: cell.server.origin, req: cell.req, connections: cell.connections, cpu: layout.load, client, tmpDir: tmp, timeoutS: 10 };
        if (round === 1 && o.warmupS > 0) {
          await runLoad({ ...load, durationS: o.warmupS });
          await waitIdle(cell.server.pid);
        }
        const cpu0 = treeCpu(cell.server.pid);
        const loop0 = treeLoopCpu(cell.server.pid);
        const r = await runLoad({ ...load, durationS: o.durationS });
        const cpu = cpuDelta(cpu0, treeCpu(cell.server.pid));
        const loop = cpuDelta(loop0, treeLoopCpu(cell.server.pid));
        await waitIdle(cell.server.pid);
        const run = { rps: r.rps, cpuUs: (cpu * 1e6) / r.requests, loopUs: (loop * 1e6) / r.requests, bad: r.non2xx + r.errors, load: loadAverage()[0] };
        cell.runs.push(run);
        log(`${cell.scenario.padEnd(16)} ${cell.name.padEnd(10)} c=${String(cell.connections).padEnd(3)} ${Math.round(run.rps).toString().padStart(6)} req/s  cpu ${run.cpuUs.toFixed(1)} µs  loop ${run.loopUs.toFixed(1)} µs${run.bad > 0 ? `  ${run.bad} bad` : ''}  (load ${run.load})`);
      }
    }
    const med = (cell, f) => median(cell.runs.map((r) => r[f]));
    const find = (scenario, name, c) => cells.find((x) => x.scenario === scenario && x.name === name && x.connections === c);
    const lines = [
      `cpu-compare: ${new Date().toISOString()}, ${o.runs} runs × ${o.durationS} s, load average ${loadStart.join(' ')} → ${loadAverage().join(' ')}`,
      '',
      '| scenario | server | conns | req/s | ×ceiling | ×node-soap | CPU µs/req (runs) | loop µs/req |',
      '|---|---|---:|---:|---:|---:|---:|---:|',
    ];
    for (const cell of cells) {
      const ceil = find('vut-soap11', 'ceiling', cell.connections);
      const ns = find(cell.scenario, 'node-soap', cell.connections);
      const rps = med(cell, 'rps');
      lines.push(`| ${cell.scenario} | ${cell.name} | ${cell.connections} | ${Math.round(rps)} | ${ceil ? (rps / med(ceil, 'rps')).toFixed(2) : '–'} | ${ns ? (rps / med(ns, 'rps')).toFixed(2) : '–'} | ` +
        `${med(cell, 'cpuUs').toFixed(1)} (${cell.runs.map((r) => r.cpuUs.toFixed(0)).join(' ')}) | ${med(cell, 'loopUs').toFixed(1)} |`);
    }
    if (o.variants.length > 1) {
      lines.push('', `Paired CPU per request, each variant / ${o.variants[0].name}, round by round (median, and the rounds):`, '');
      for (const cell of cells) {
        if (cell.name === o.variants[0].name || !o.variants.some((v) => v.name === cell.name)) continue;
        const first = find(cell.scenario, o.variants[0].name, cell.connections);
        const ratios = cell.runs.map((r, i) => r.cpuUs / (first?.runs[i]?.cpuUs ?? Number.NaN));
        lines.push(`- ${cell.scenario} c=${cell.connections} ${cell.name}: ${median(ratios)?.toFixed(3)} (${ratios.map((x) => x.toFixed(2)).join(' ')})`);
      }
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    for (const s of servers) await s.server.stop(5000).catch(() => undefined);
    killAll();
    await rm(tmp, { recursive: true, force: true });
  }
}

main().catch((error) => {
  process.stderr.write(`cpu-compare: ${error.stack ?? error}\n`);
  killAll();
  process.exit(1);
});
