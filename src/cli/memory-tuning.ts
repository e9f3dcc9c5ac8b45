/**
 * Memory settings for the processes that serve (issue 9: peak RSS under load at most 150 MB per
 * process). Both only take effect when they are in place before the process starts:
 *
 * - MALLOC_ARENA_MAX=1. Each argon2id computation mallocs its 19 MiB of blocks on a libuv
 *   thread-pool thread. glibc gives each thread its own arena and, once the first such block has
 *   been freed, raises its mmap threshold above 19 MiB, so later blocks come from the thread's
 *   arena and stay resident there when freed: after a few logins up to one block per pool thread
 *   (4 × 19 MiB by default) is held for good. With one arena, the next computation reuses the
 *   block the last one freed, whichever thread runs it, so hashing keeps at most one block per
 *   computation running at once (hashing.maxConcurrent). Giving the blocks back after every use
 *   instead (MALLOC_MMAP_THRESHOLD_=131072) makes each verification fault 19 MiB in again:
 *   30 ms instead of 18 ms of CPU on the benchmark machine.
 * - --max-semi-space-size=4 (MiB; V8's default is 16 on 64-bit). Under load V8 grows the young
 *   generation to two 16 MiB semi-spaces although the requests leave little alive; 4 MiB ones
 *   keep 24 MiB less resident for about 1-2% more CPU per ValidateUserToken (more scavenges).
 *
 * Node 20 cannot apply either to a running process (no execve; V8 sizes its heap at start and
 * ignores a later v8.setFlagsFromString), so the single `serve` process starts itself once more
 * with them (relaunchTuning, runRelaunched and launcherSignal, used by main.ts), and the cluster
 * primary of `serve --workers N` starts its workers with them (cluster.ts). Operators who set
 * MALLOC_ARENA_MAX and --max-semi-space-size themselves (any values; environment or
 * NODE_OPTIONS) get exactly one process, with their values.
 *
 * A third setting can be changed in a running process, so it needs no relaunch: how far the old
 * generation may grow before the next full collection (tuneHeapGrowth).
 *
 * This module is loaded by the launcher before anything else: node built-ins only.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import v8 from 'node:v8';
import { parseWorkers } from './workers-count.js';

export interface MemoryTuning {
  /** Variables to add to the environment. */
  readonly env: Readonly<Record<string, string>>;
  /** Node options to put before the script. */
  readonly execArgv: readonly string[];
}

const ARENA_MAX = '1';
const SEMI_SPACE_MIB = 4;
/** V8 accepts - or _ between the words of a flag. */
const SEMI_SPACE_FLAG = /--max[-_]semi[-_]space[-_]size\b/;
const HEAP_GROWING_PERCENT = 100;
const HEAP_GROWING_FLAG = /--heap[-_]growing[-_]percent\b/;
/** Tools that attach to this very process: the service must not move to another one under them. */
const ATTACHED_TOOL_FLAG = /--(inspect|debug|cpu-prof|heap-prof|prof)\b/;
/** Set by the launcher in the relaunched process's environment (and removed there at once). */
const RELAUNCHED = 'SVCAPI_RELAUNCHED';

/** A stop the launcher passes on to the relaunched process. */
interface StopMessage {
  readonly type: 'svcapi-auth:stop';
  readonly signal: NodeJS.Signals;
}

function nodeOptions(env: NodeJS.ProcessEnv, execArgv: readonly string[]): string {
  return `${execArgv.join(' ')} ${env.NODE_OPTIONS ?? ''}`;
}

/** The settings not yet in this environment and these node options (both empty when all are). */
export function missingTuning(env: NodeJS.ProcessEnv, execArgv: readonly string[]): MemoryTuning {
  return {
    env: env.MALLOC_ARENA_MAX === undefined ? { MALLOC_ARENA_MAX: ARENA_MAX } : {},
    execArgv: SEMI_SPACE_FLAG.test(nodeOptions(env, execArgv)) ? [] : [`--max-semi-space-size=${SEMI_SPACE_MIB}`],
  };
}

/** `--workers` as commander will read it (the last one wins), else SVCAPI_WORKERS, else 1. */
function requestedWorkers(argv: readonly string[], env: NodeJS.ProcessEnv): number {
  let text: string | undefined;
  for (let i = 1; i < argv.length && argv[i] !== '--'; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--workers') text = argv[i + 1] ?? '';
    else if (arg.startsWith('--workers=')) text = arg.slice('--workers='.length);
  }
  text ??= env.SVCAPI_WORKERS;
  return text === undefined || text.trim() === '' ? 1 : parseWorkers(text) ?? 1;
}

/**
 * The settings to relaunch this command with, or null to run it here: only a single `serve`
 * process on Linux (the arenas are glibc's) that lacks some of them, is not the relaunched
 * process itself and has no debugger or profiler attached. `serve --workers N` is left to its
 * primary, which does not serve.
 */
export function relaunchTuning(argv: readonly string[], env: NodeJS.ProcessEnv, execArgv: readonly string[], platform: NodeJS.Platform): MemoryTuning | null {
  if (platform !== 'linux' || argv[0] !== 'serve' || env[RELAUNCHED] !== undefined) return null;
  if (requestedWorkers(argv, env) > 1 || ATTACHED_TOOL_FLAG.test(nodeOptions(env, execArgv))) return null;
  const tuning = missingTuning(env, execArgv);
  return Object.keys(tuning.env).length === 0 && tuning.execArgv.length === 0 ? null : tuning;
}

/**
 * Runs `script argv` again in a child process with the settings added, as transparently as Node
 * allows: same node, node options, standard input, output and error; resolves to the child's
 * exit code, or ends this process with the signal that ended the child. SIGINT and SIGTERM are
 * passed on as messages rather than signals: a signal that reaches both processes (Ctrl-C in a
 * terminal, a service manager stopping the whole group) then stops the service once, where a
 * second signal would end it in the middle of its graceful shutdown. Resolves to null, after a
 * warning, when the child cannot be started: the caller then runs the command itself.
 */
export function runRelaunched(tuning: MemoryTuning, script: string, argv: readonly string[]): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...process.execArgv, ...tuning.execArgv, script, ...argv], {
      stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, ...tuning.env, [RELAUNCHED]: '1' },
    });
    let started = false;
    const forward = (signal: NodeJS.Signals): void => {
      if (child.connected) child.send({ type: 'svcapi-auth:stop', signal } satisfies StopMessage, () => undefined);
      else child.kill(signal);
    };
    // SIGHUP (logrotate: reopen the log file) is passed on as a signal, not a stop.
    const hangUp = (): void => {
      child.kill('SIGHUP');
    };
    const stopListening = (): void => {
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      process.off('SIGHUP', hangUp);
    };
    process.on('SIGINT', forward);
    process.on('SIGTERM', forward);
    process.on('SIGHUP', hangUp);
    child.once('spawn', () => {
      started = true;
    });
    child.once('error', (error) => {
      if (started) return; // a failed send or kill: the exit still follows
      stopListening();
      process.stderr.write(`warning: could not start the service with its memory settings (${error.message}); running without them\n`);
      resolve(null);
    });
    child.once('exit', (code, signal) => {
      stopListening();
      if (signal === null) {
        resolve(code ?? 1);
        return;
      }
      // Ended by a signal: end the same way, so whoever started us sees what happened.
      process.kill(process.pid, signal);
      resolve(128 + (constants.signals[signal] ?? 0)); // only if this process ignores that signal
    });
  });
}

/**
 * In the relaunched process (otherwise undefined): aborted with the signal's name when the
 * launcher passes SIGINT or SIGTERM on, for `serve` to stop as it would on that signal. When the
 * launcher dies without passing anything on (SIGKILL), this process dies the same way at once,
 * as the service would have without the relaunch.
 */
export function launcherSignal(env: NodeJS.ProcessEnv): AbortSignal | undefined {
  const relaunched = env[RELAUNCHED] === '1';
  delete env[RELAUNCHED]; // not for the processes this one starts
  if (!relaunched || process.send === undefined) return undefined;
  const stop = new AbortController();
  process.on('message', (message: Partial<StopMessage>) => {
    if (message.type === 'svcapi-auth:stop' && typeof message.signal === 'string') stop.abort(message.signal);
  });
  process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'));
  // The channel must not keep this process alive once `serve` has returned.
  process.channel?.unref();
  return stop.signal;
}

/**
 * For a process that serves: after each full collection, the old generation may grow to twice
 * what survived it (--heap-growing-percent=100) before the next one. V8 otherwise allows up to
 * four times when collections are quick, as they are with a live heap of about 20 MB: requests
 * that wait (a login queued for a hashing slot) outlive a few scavenges and are promoted, and
 * that garbage then piles up to 50 MB or more before a full collection. The full collections
 * this adds take a few milliseconds every few seconds under load. V8 reads the flag each time it
 * sets the next limit, so setting it at run time works; a value given on node's command line is
 * kept.
 */
export function tuneHeapGrowth(execArgv: readonly string[]): void {
  if (HEAP_GROWING_FLAG.test(execArgv.join(' '))) return;
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
