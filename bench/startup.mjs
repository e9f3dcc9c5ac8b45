#!/usr/bin/env node
/**
 * `node bench/startup.mjs`: how long `serve` takes to be ready, and the CPU it spends getting
 * there, for one or more builds side by side. Each round starts every build once, in turn (the
 * order rotates), as deploy/systemd/svcapi-auth.service starts it (bench/lib/deployed.mjs), on a
 * SQLite file seeded once and shared; "ready" is bench.mjs's: from spawn to the first answered
 * `?WSDL`. CPU is user + system time of the whole process tree at that moment (a cluster's
 * primary and workers; children that already exited, such as the database check, included).
 *
 * Usage: node bench/startup.mjs [--cli dist/cli/svcapi-auth.cjs] [--cli /tmp/old/dist/cli/main.js ...]
 *          [--with KEY=VALUE]   (after a --cli: that build's own environment, e.g. a switch off; the
 *                                same --cli twice with different --with compares settings)
 *          [--runs 10] [--args "--workers auto"] [--env KEY=VALUE] [--pg URL]   (PostgreSQL: in a fresh schema, dropped afterwards)
 * Prints each build's median and range of ready time and CPU, and the load average.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { keyValue, readArgs } from './lib/args.mjs';
import { deployedNode } from './lib/deployed.mjs';
import { clockTicksPerSecond, killAll, processTree } from './lib/proc.mjs';
import { dropPgSchema, runSchema } from './lib/pg.mjs';
import { seedService } from './lib/seed.mjs';
import { startServer } from './lib/servers.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function parseArgs(argv) {
  const o = { clis: [], withs: [], runs: 10, args: [], env: {}, db: null };
  readArgs(argv, (a, next) => {
    if (a === '--cli') {
      o.clis.push(resolve(next()));
      o.withs.push({});
    } else if (a === '--with') {
      const kv = next();
      if (o.withs.length === 0) throw new Error(`--with KEY=VALUE follows a --cli, not ${kv}`);
      const [key, value] = keyValue(kv, a);
      o.withs[o.withs.length - 1][key] = value;
    } else if (a === '--runs') o.runs = Number(next());
    else if (a === '--args') o.args.push(...next().split(' ').filter(Boolean));
    else if (a === '--pg') o.db = next();
    else if (a === '--env') {
      const [key, value] = keyValue(next(), a);
      o.env[key] = value;
    } else return false;
  });
  if (o.clis.length === 0) {
    o.clis.push(join(ROOT, 'dist', 'cli', 'svcapi-auth.cjs'));
    o.withs.push({});
  }
  return o;
}

/** utime + stime + the reaped children's cutime + cstime of every process of the tree, in seconds. */
function treeCpuWithReaped(pid) {
  let ticks = 0;
  for (const p of processTree(pid)) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    } catch {
      // gone
    }
  }
  return ticks / clockTicksPerSecond();
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const tmp = await mkdtemp(join(tmpdir(), 'svcapi-startup-'));
  // A schema of its own: the URL as given would put the service's tables in the database's default schema and leave them there.
  const pgRun = o.db === null ? null : runSchema(o.db, 'startup');
  try {
    const db = pgRun?.url ?? `sqlite:${join(tmp, 'bench.db')}`;
    await seedService({ cliPath: o.clis[0], db, tmpDir: tmp });
    const deployed = deployedNode();
    const env = { ...process.env, ...deployed.env, SVCAPI_MANAGEMENT_PORT: 'off', SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0', ...o.env };
    const results = o.clis.map(() => ({ readyMs: [], cpuMs: [] }));
    const load = [loadavg()[0]];
    for (let round = 0; round < o.runs; round++) {
      for (let k = 0; k < o.clis.length; k++) {
        const which = (round + k) % o.clis.length;
        const server = await startServer({
          name: `build ${which + 1}`, args: [...deployed.nodeArgs, o.clis[which], 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db, ...o.args],
          env: { ...env, ...o.withs[which] }, cwd: ROOT,
        });
        const cpu = treeCpuWithReaped(server.pid);
        results[which].readyMs.push(server.readyMs);
        results[which].cpuMs.push(cpu * 1000);
        await server.stop();
      }
      load.push(loadavg()[0]);
    }
    const range = (xs) => `${Math.round(Math.min(...xs))}–${Math.round(Math.max(...xs))}`;
    for (let k = 0; k < o.clis.length; k++) {
      const r = results[k];
      const withText = Object.entries(o.withs[k]).map(([key, value]) => ` ${key}=${value}`).join('');
      process.stdout.write(`${o.clis[k]}${withText} ${o.args.join(' ')}: ready median ${Math.round(median(r.readyMs))} ms (${range(r.readyMs)}), CPU to ready median ${Math.round(median(r.cpuMs))} ms (${range(r.cpuMs)}), ${o.runs} starts\n`);
    }
    process.stdout.write(`load average (1 min) during the runs: ${range(load.map((x) => x * 100)).split('–').map((x) => (Number(x) / 100).toFixed(2)).join('–')}\n`);
  } finally {
    killAll();
    await rm(tmp, { recursive: true, force: true });
    if (pgRun !== null) await dropPgSchema(o.db, pgRun.schema, (text) => process.stdout.write(`${text}\n`));
  }
}

await main();
