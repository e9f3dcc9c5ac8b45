/**
 * Process plumbing for the benchmark: spawning (pinned with taskset where available), process
 * trees, CPU time and RSS from /proc, the machine's description, and cleanup of every child.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import process from 'node:process';
import { clearInterval, setInterval } from 'node:timers';

const children = new Set();

export const HAS_PROC = existsSync('/proc/self/stat');
const TASKSET = ['/usr/bin/taskset', '/bin/taskset'].find((p) => existsSync(p)) ?? null;

let clockTicks = null;
/** USER_HZ, the unit of utime/stime in /proc/<pid>/stat (almost always 100). */
export function clockTicksPerSecond() {
  if (clockTicks === null) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/**
 * The CPU layout: on 2+ cores with taskset, the servers get core 0 and the load generator the
 * other cores; otherwise nothing is pinned.
 */
export function cpuLayout(noPin = false) {
  const cores = availableParallelism();
  if (noPin || TASKSET === null || cores < 2) return { pinned: false, server: null, load: null, cores, reason: noPin ? '--no-pin' : TASKSET === null ? 'no taskset' : 'one core' };
  return { pinned: true, server: '0', load: cores === 2 ? '1' : `1-${cores - 1}`, cores, reason: 'taskset' };
}

/** Spawns `file args` (optionally on the given CPU list) and remembers it for killAll(). */
export function spawnChild(file, args, { cpu = null, env = process.env, cwd, stdio = ['ignore', 'pipe', 'pipe'] } = {}) {
  const [cmd, argv] = cpu !== null && TASKSET !== null ? [TASKSET, ['-c', cpu, file, ...args]] : [file, args];
  const child = spawn(cmd, argv, { env, cwd, stdio });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Kills every child this process started (by pid), e.g. on SIGINT or after a failure. */
export function killAll(signal = 'SIGKILL') {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        child.kill(signal);
      } catch {
        // already gone
      }
    }
  }
}

/** Runs a program to completion; resolves with its output (never rejects on a non-zero status). */
export function run(file, args, { input, env = process.env, cwd, cpu = null } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawnChild(file, args, { env, cwd, cpu, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c) => (stderr += c));
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

/** The pid and all its descendants (a cluster primary and its workers). */
export function processTree(pid) {
  const out = [];
  const visit = (p) => {
    out.push(p);
    try {
      for (const tid of readdirSync(`/proc/${p}/task`)) {
        const text = readFileSync(`/proc/${p}/task/${tid}/children`, 'utf8').trim();
        if (text !== '') for (const c of text.split(/\s+/)) visit(Number(c));
      }
    } catch {
      // gone, or no /proc
    }
  };
  visit(pid);
  return out;
}

/** utime + stime of one process, in seconds (0 when it is gone). */
function cpuSecondsOf(pid, statFile = `/proc/${pid}/stat`) {
  try {
    const stat = readFileSync(statFile, 'utf8');
    // Fields after the command name "(...)"; utime and stime are fields 14 and 15 (1-based).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / clockTicksPerSecond();
  } catch {
    return 0;
  }
}

/** CPU seconds used so far by each process of the tree, keyed by pid. */
export function treeCpu(pid) {
  const map = new Map();
  for (const p of processTree(pid)) map.set(p, cpuSecondsOf(p));
  return map;
}

/**
 * CPU seconds used so far by the main thread of each process of the tree (its event loop: the
 * thread whose id is the process id), keyed by pid; argon2id's pool threads are not in it.
 */
export function treeLoopCpu(pid) {
  const map = new Map();
  for (const p of processTree(pid)) map.set(p, cpuSecondsOf(p, `/proc/${p}/task/${p}/stat`));
  return map;
}

/**
 * How many times the main thread of each process of the tree has been put on a CPU so far
 * (/proc/<pid>/task/<pid>/schedstat, its third field), keyed by pid: each wake-up of the event
 * loop is one, and so is each return after the thread was preempted. 0 where schedstat is absent.
 */
export function treeLoopRuns(pid) {
  const map = new Map();
  for (const p of processTree(pid)) {
    try {
      map.set(p, Number(readFileSync(`/proc/${p}/task/${p}/schedstat`, 'utf8').trim().split(' ')[2]) || 0);
    } catch {
      map.set(p, 0);
    }
  }
  return map;
}

/** CPU seconds spent by the tree between two treeCpu() snapshots (processes started meanwhile count from 0). */
export function cpuDelta(before, after) {
  let total = 0;
  for (const [p, s] of after) total += s - (before.get(p) ?? 0);
  return total;
}

/** A /proc/<pid>/status field in kB (VmRSS, VmHWM), or null. */
export function statusKb(pid, field) {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/**
 * Samples the RSS of every process of a tree every `everyMs` until stopped; stop() returns the
 * highest RSS one process reached (MB) and, at that moment, the tree's total, and the highest
 * RssAnon of one process: what the process owns (heap, malloc, SQLite's page cache), without the
 * file-backed pages (the binary, libraries and SQLite's memory map of the database file, which the
 * kernel shares with its page cache and may drop at any time). On SQLite, GetUserLoginURL's
 * tickets grow the file and its map: RssFile 54 → 163 MB over 32 s at 64 connections while
 * RssAnon stayed 61–71 MB (2026-11-28).
 */
export function sampleRss(pid, everyMs = 100) {
  let peakProcessKb = 0;
  let peakTreeKb = 0;
  let peakAnonKb = 0;
  const sample = () => {
    let tree = 0;
    for (const p of processTree(pid)) {
      const kb = statusKb(p, 'VmRSS') ?? 0;
      tree += kb;
      peakProcessKb = Math.max(peakProcessKb, kb);
      peakAnonKb = Math.max(peakAnonKb, statusKb(p, 'RssAnon') ?? 0);
    }
    peakTreeKb = Math.max(peakTreeKb, tree);
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { peakProcessMb: peakProcessKb / 1024, peakTreeMb: peakTreeKb / 1024, peakAnonMb: peakAnonKb / 1024 };
    },
  };
}

/** VmHWM (peak RSS since start) of each process of the tree, the highest, in MB. */
export function treeHwmMb(pid) {
  let max = 0;
  for (const p of processTree(pid)) max = Math.max(max, statusKb(p, 'VmHWM') ?? 0);
  return max / 1024;
}

/**
 * Waits until the process tree is idle (under `threshold` of a core over 250 ms), at most
 * `maxMs`: a load generator that stops leaves requests behind in the server (a queue of
 * password verifications, for instance), which must not count against the next cell.
 */
export async function waitIdle(pid, { maxMs = 20_000, threshold = 0.1 } = {}) {
  const started = Date.now();
  for (;;) {
    const before = treeCpu(pid);
    await new Promise((resolve) => globalThis.setTimeout(resolve, 250));
    const used = cpuDelta(before, treeCpu(pid)) / 0.25;
    if (used < threshold) return Date.now() - started;
    if (Date.now() - started > maxMs) return Date.now() - started;
  }
}

export function loadAverage() {
  return loadavg().map((x) => Math.round(x * 100) / 100);
}

export function machineInfo() {
  let cpuModel = cpus()[0]?.model ?? 'unknown';
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) cpuModel = m[1].trim();
  } catch {
    // not Linux
  }
  let os = process.platform;
  try {
    const m = /^PRETTY_NAME="?([^"\n]+)"?$/m.exec(readFileSync('/etc/os-release', 'utf8'));
    if (m) os = m[1];
  } catch {
    // no os-release
  }
  return {
    cpuModel,
    cores: availableParallelism(),
    memoryGb: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os,
    kernel: (() => {
      try {
        return readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim();
      } catch {
        return null;
      }
    })(),
    node: process.version,
  };
}
