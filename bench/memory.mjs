#!/usr/bin/env node
/**
 * `node bench/memory.mjs`: where a serving process's resident memory goes under load. Starts
 * `serve` (dist/cli/main.js, SQLite, default configuration) and runs three phases, each sampled from
 * /proc every 100 ms: ValidateUserToken alone (16 connections), ValidateUserToken with a
 * ValidateUser flood beside it (16 + 16, the benchmark's mixed run), and a ValidateUser flood
 * alone (64). Prints, per phase, the peak VmRSS of the serving process with its RssAnon and
 * RssFile at that moment, V8's heap (the management listener's metrics) and the anonymous
 * mappings of 16 MiB or more (malloc arenas holding argon2id blocks).
 *
 * Also: the CPU time per request, the token p99, and how long the event loop's thread waited for
 * a CPU (schedstat: what the hashing threads' nice value is for).
 *
 * Options: --deployed (start it as deploy/systemd/svcapi-auth.service does: its environment and
 * node flags), --env KEY=VALUE (repeatable, e.g. MALLOC_ARENA_MAX=1), --node-args "..." (node's
 * flags), --args "..." (serve's), --only idle,mixed,flood, --duration S (per phase, default 10),
 * --pin (server on CPU 0, load on CPU 1), --cli PATH, --dump (smaps_rollup and the largest
 * mappings at the end).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { clearInterval, setInterval } from 'node:timers';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { keyValue, readArgs } from './lib/args.mjs';
import { deployedNode } from './lib/deployed.mjs';
import { chooseClient, runLoad } from './lib/load.mjs';
import { cpuDelta, killAll, processTree, statusKb, treeCpu, waitIdle } from './lib/proc.mjs';
import { buildRequest, send, tokenIn } from './lib/requests.mjs';
import { APP_ID, BENCH_LOGIN, BENCH_PASSWORD, seedService, throttleOffConfig } from './lib/seed.mjs';
import { startServer } from './lib/servers.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function parseArgs(argv) {
  const o = { durationS: 10, env: {}, args: [], nodeArgs: [], only: null, pin: false, deployed: false, dump: false, cli: join(ROOT, 'dist', 'cli', 'main.js') };
  readArgs(argv, (a, next) => {
    if (a === '--duration') o.durationS = Number(next());
    else if (a === '--env') {
      const [key, value] = keyValue(next(), a);
      o.env[key] = value;
    } else if (a === '--args') o.args.push(...next().split(' ').filter(Boolean));
    else if (a === '--cli') o.cli = resolve(next());
    else if (a === '--dump') o.dump = true;
    else if (a === '--node-args') o.nodeArgs.push(...next().split(' ').filter(Boolean));
    else if (a === '--only') o.only = next().split(',');
    else if (a === '--pin') o.pin = true;
    else if (a === '--deployed') o.deployed = true;
    else return false;
  });
  return o;
}

/** The process of the tree that serves: the one with the largest resident set. */
function servingPid(rootPid) {
  let best = rootPid;
  let bestKb = -1;
  for (const pid of processTree(rootPid)) {
    const kb = statusKb(pid, 'VmRSS') ?? 0;
    if (kb > bestKb) [best, bestKb] = [pid, kb];
  }
  return best;
}

/** Anonymous mappings of at least `minMib` MiB (their resident MiB), largest first. */
function bigAnonMappings(pid, minMib = 16) {
  const out = [];
  let current = null;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      const size = (parseInt(head[2], 16) - parseInt(head[1], 16)) / 1048576;
      current = head[3] === '' && size >= minMib ? { sizeMib: size, rssMib: 0 } : null;
      if (current) out.push(current);
    } else if (current && line.startsWith('Rss:')) current.rssMib = Number(/(\d+)/.exec(line)[1]) / 1024;
  }
  return out.sort((a, b) => b.rssMib - a.rssMib);
}

/** The 20 mappings with the most resident memory. */
function topMappings(pid) {
  const out = [];
  let current = null;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      current = { sizeMib: (parseInt(head[2], 16) - parseInt(head[1], 16)) / 1048576, rssMib: 0, name: `${head[3]} ${head[4] || '[anon]'}` };
      out.push(current);
    } else if (current && line.startsWith('Rss:')) current.rssMib = Number(/(\d+)/.exec(line)[1]) / 1024;
  }
  return out.sort((a, b) => b.rssMib - a.rssMib).slice(0, 20);
}

/** Nanoseconds the process's main thread (the event loop) has waited on a run queue (schedstat). */
function mainThreadWaitNs(pid) {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[1]);
  } catch {
    return 0;
  }
}

/** Samples the serving process every 100 ms; stop() gives the peak and what made it up. */
function sampler(rootPid) {
  let peak = { rss: 0, anon: 0, file: 0, shmem: 0 };
  const sample = () => {
    const pid = servingPid(rootPid);
    const rss = statusKb(pid, 'VmRSS') ?? 0;
    if (rss > peak.rss) peak = { rss, anon: statusKb(pid, 'RssAnon') ?? 0, file: statusKb(pid, 'RssFile') ?? 0, shmem: statusKb(pid, 'RssShmem') ?? 0 };
  };
  sample();
  const timer = setInterval(sample, 100);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

async function v8Heap(managementUrl) {
  if (managementUrl === null) return null;
  const text = await (await globalThis.fetch(`${managementUrl}/metrics`)).text();
  const value = (re) => {
    const m = re.exec(text);
    return m ? Number(m[1]) / 1048576 : null;
  };
  return {
    totalMib: value(/^nodejs_heap_size_total_bytes (\S+)/m),
    usedMib: value(/^nodejs_heap_size_used_bytes (\S+)/m),
    newMib: value(/^nodejs_heap_space_size_total_bytes\{space="new"\} (\S+)/m),
    oldMib: value(/^nodejs_heap_space_size_total_bytes\{space="old"\} (\S+)/m),
    externalMib: value(/^nodejs_external_memory_bytes (\S+)/m),
  };
}

const mb = (kb) => (kb / 1024).toFixed(1);

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const tmp = await mkdtemp(join(tmpdir(), 'svcapi-memory-'));
  try {
    const db = `sqlite:${join(tmp, 'bench.db')}`;
    await seedService({ cliPath: o.cli, db, tmpDir: tmp, newsCount: 0 });
    const throttle = await throttleOffConfig(o.cli, tmp);
    const deployed = o.deployed ? deployedNode() : { env: {}, nodeArgs: [] };
    const env = {
      ...process.env, ...deployed.env, SVCAPI_MANAGEMENT_PORT: '0', SVCAPI_MANAGEMENT_HOST: '127.0.0.1', SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0',
      ...(throttle.file !== null && { SVCAPI_CONFIG: throttle.file }), ...o.env,
    };
    const server = await startServer({ name: 'svcapi-auth', cpu: o.pin ? '0' : null, args: [...deployed.nodeArgs, ...o.nodeArgs, o.cli, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db, ...o.args], env, cwd: ROOT });
    const managementUrl = /^Management: (https?:\/\/[^/\s]+)/m.exec(server.output())?.[1] ?? null;
    const client = chooseClient(null);
    const vu = buildRequest(await operations(), 'soap11', 'ValidateUser', { login: BENCH_LOGIN, password: BENCH_PASSWORD, AppId: APP_ID, IPAddress: '' });
    const token = tokenIn((await send(server.origin, vu)).body);
    const vut = buildRequest(await operations(), 'soap11', 'ValidateUserToken', { token });
    const base = { origin: server.origin, client, tmpDir: tmp, durationS: o.durationS, cpu: o.pin ? '1' : null };
    const check = { js: /<ValidateUserResult>[0-9a-f-]{36}</, lua: '<ValidateUserResult>%x+%-%x+%-%x+%-%x+%-%x+<' };
    const phases = [
      ['idle', () => runLoad({ ...base, req: vut, connections: 16 })],
      ['mixed', () => Promise.all([runLoad({ ...base, req: vut, connections: 16 }), runLoad({ ...base, req: vu, connections: 16, timeoutS: 60, check })])],
      ['flood', () => runLoad({ ...base, req: vu, connections: 64, timeoutS: 60, check })],
    ];
    process.stdout.write(`env ${JSON.stringify({ ...deployed.env, ...o.env })} node ${JSON.stringify([...deployed.nodeArgs, ...o.nodeArgs])} serve ${JSON.stringify(o.args)}; processes ${processTree(server.pid).length}\n`);
    for (const [name, load] of phases.filter(([id]) => o.only === null || o.only.includes(id))) {
      const s = sampler(server.pid);
      const cpuBefore = treeCpu(server.pid);
      const waitBefore = mainThreadWaitNs(servingPid(server.pid));
      const result = await load();
      const cpuS = cpuDelta(cpuBefore, treeCpu(server.pid));
      const waitMs = (mainThreadWaitNs(servingPid(server.pid)) - waitBefore) / 1e6;
      const peak = s.stop();
      const pid = servingPid(server.pid);
      const heap = await v8Heap(managementUrl);
      const big = bigAnonMappings(pid).filter((m) => m.rssMib >= 8);
      const loads = Array.isArray(result) ? result : [result];
      process.stdout.write(`${name.padEnd(6)} peak VmRSS ${mb(peak.rss)} MB (anon ${mb(peak.anon)}, file ${mb(peak.file)}, shmem ${mb(peak.shmem)}); ` +
        `VmHWM ${mb(statusKb(pid, 'VmHWM') ?? 0)}; now anon ${mb(statusKb(pid, 'RssAnon') ?? 0)}; ` +
        `v8 ${heap ? `total ${heap.totalMib.toFixed(1)} (new ${heap.newMib.toFixed(1)}, old ${heap.oldMib.toFixed(1)}) used ${heap.usedMib.toFixed(1)} ext ${heap.externalMib.toFixed(1)}` : 'n/a'}; ` +
        `anon maps ≥16 MiB with ≥8 MiB resident: ${big.map((m) => `${m.rssMib.toFixed(0)}/${m.sizeMib.toFixed(0)}`).join(' ') || 'none'}; ` +
        `req/s ${loads.map((r) => r.rps.toFixed(0)).join(' + ')}; token p99 ${loads[0].p99Ms.toFixed(2)} ms; ` +
        `CPU ${((cpuS * 1e6) / loads.reduce((n, r) => n + r.requests, 0)).toFixed(1)} µs/request; ` +
        `event loop waited for a CPU ${waitMs.toFixed(0)} ms (${((waitMs * 1000) / loads[0].requests).toFixed(2)} µs per token request)\n`);
      await waitIdle(server.pid);
    }
    if (o.dump) {
      const pid = servingPid(server.pid);
      process.stdout.write(`smaps_rollup:\n${readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8')}`);
      process.stdout.write(`largest mappings (resident MiB / size MiB):\n${topMappings(pid).map((m) => `  ${m.rssMib.toFixed(1).padStart(6)} / ${m.sizeMib.toFixed(1).padStart(7)} ${m.name}`).join('\n')}\n`);
    }
    await server.stop();
  } finally {
    killAll();
    await rm(tmp, { recursive: true, force: true });
  }
}

async function operations() {
  return (await import(pathToFileURL(join(ROOT, 'dist', 'contract', 'operations.js')).href)).OPERATIONS;
}

await main();
