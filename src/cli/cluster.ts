/**
 * `serve --workers N|auto`: several processes serving one port, with Node's cluster module.
 *
 * The primary forks N workers (the first alone, the others once it has loaded its modules:
 * performance.workersStaggered) and, while they start (node and the service's modules: most of a
 * start's CPU), opens the store once: checks it and applies the migrations. A worker asks for its
 * configuration once its modules are loaded and gets it only after that (performance.workersFirst;
 * off: the store is opened before forking); a database that fails its check stops the workers
 * unconfigured and the primary with the same line and exit code as a single process. Each worker
 * then runs the ordinary `serve` path (opens the store, builds the app, listens; the cluster
 * shares the listening socket among them). The primary prints the service URLs once, restarts a worker that dies unexpectedly (with backoff), and on
 * SIGTERM / SIGINT asks every worker to shut down gracefully and exits 0 once they all have.
 *
 * Correctness does not depend on which worker answers: every fact that matters (tokens,
 * revocations, tickets) lives in the store, which all workers share (SQLite in WAL mode on one
 * machine, or PostgreSQL).
 */
import cluster, { type Worker } from 'node:cluster';
import { fileURLToPath } from 'node:url';
import { InvalidArgumentError } from 'commander';
import type { Config } from '../config/config.js';
import type { Store } from '../store/store.js';
import { openCliStore } from './open-cli-store.js';
import { CliError, EXIT_DB_DAMAGED, EXIT_USAGE, type CliIo } from './cli-io.js';
import type { IntegrityCheckResult } from '../store/sqlite/background-check.js';
import { parseDatabaseUrl } from '../store/open-store.js';
import { MAX_WORKERS, parseWorkers } from './workers-count.js';

/** Messages between the primary and its workers. */
export type ClusterMessage =
  | { readonly type: 'svcapi-auth:ready' }
  | { readonly type: 'svcapi-auth:config'; readonly config: Config }
  | { readonly type: 'svcapi-auth:listening'; readonly text: string }
  | { readonly type: 'svcapi-auth:shutdown' };

/** A worker that ran this long before dying is restarted at once; quicker deaths back off. */
const STABLE_AFTER_MS = 30_000;
const MAX_BACKOFF_MS = 30_000;

/** commander's parser for `--workers`. */
export function workersArg(text: string): number {
  const n = parseWorkers(text);
  if (n === null) throw new InvalidArgumentError(`expected a number from 1 to ${MAX_WORKERS}, or auto.`);
  return n;
}

/** The number of processes `serve` runs: the flag, else SVCAPI_WORKERS, else 1. */
export function resolveWorkers(flag: number | undefined, env: NodeJS.ProcessEnv): number {
  if (flag !== undefined) return flag;
  const fromEnv = env.SVCAPI_WORKERS;
  if (fromEnv === undefined || fromEnv.trim() === '') return 1;
  const n = parseWorkers(fromEnv);
  if (n === null) throw new CliError(`invalid configuration SVCAPI_WORKERS: expected a number from 1 to ${MAX_WORKERS}, or auto, got ${JSON.stringify(fromEnv)}`, EXIT_USAGE);
  return n;
}

/** `serve`: one process (the default), or a primary with workers. */
export async function serveCommand(config: Config, io: CliIo, workersFlag?: number): Promise<number> {
  const workers = resolveWorkers(workersFlag, io.env);
  // The primary serves nothing itself: it never loads the service's modules, only the workers do.
  if (workers <= 1) return (await import('./serve.js')).serve(config, io);
  return runPrimary(config, io, workers);
}

interface Slot {
  worker: Worker | null;
  startedAt: number;
  failures: number;
  timer: NodeJS.Timeout | null;
}

async function runPrimary(config: Config, io: CliIo, count: number): Promise<number> {
  // Once, here; the workers' own migration step then finds nothing to do (and would be safe anyway).
  // Also the one integrity check (PRAGMA quick_check): the workers do not repeat it. On a SQLite
  // file it runs in the background while the workers start and serve (as in serve.ts), the
  // store kept open until it is done; damage found stops them all.
  const background = config.performance.sqliteCheckInBackground;
  const location = parseDatabaseUrl(config.databaseUrl);
  let checked: (result: IntegrityCheckResult | null) => void = () => undefined;
  const checkResult = new Promise<IntegrityCheckResult | null>((resolve) => {
    checked = resolve;
  });
  const openStore = async (): Promise<Store> => {
    const opened = await openCliStore(config.databaseUrl, {
      create: true, integrityCheck: background ? 'background' : true, onIntegrityCheck: (result) => checked(result),
    });
    // PostgreSQL, memory, or a check made before opening: nothing more to wait for.
    if (!background || location.kind !== 'sqlite' || location.path === ':memory:') checked(null);
    return opened;
  };
  // Off (performance.workersFirst: false): the store is opened, checked and migrated before any worker starts.
  let storeOpened: Promise<Store> | null = config.performance.workersFirst ? null : Promise.resolve(await openStore());
  let store: Store | null = null;
  const closeStore = async (): Promise<void> => {
    const open = store;
    store = null;
    await open?.close();
  };
  /** Why the store could not be opened (the workers are then stopped unconfigured and this is thrown). */
  let openFailure: unknown = null;

  const log = (text: string): void => {
    io.stderr.write(`svcapi-auth primary ${process.pid}: ${text}\n`);
  };

  // The workers start with the primary's node flags and environment (cluster's defaults), so
  // the memory settings of the deployment (deploy/: MALLOC_ARENA_MAX, NODE_OPTIONS, node's
  // flags) reach them too.
  cluster.setupPrimary({ exec: fileURLToPath(new URL('./cluster-worker.js', import.meta.url)), args: [], silent: false });

  const code = await new Promise<number>((resolve) => {
    const slots: Slot[] = Array.from({ length: count }, () => ({ worker: null, startedAt: 0, failures: 0, timer: null }));
    let announced = false;
    /** Live workers that listen; allServing once all `count` of them did at the same time. */
    const serving = new Set<Worker>();
    let allServing = false;
    let stopping = false;
    let exitCode = 0;
    let killTimer: NodeJS.Timeout | undefined;

    const live = (): Worker[] => slots.flatMap((s) => (s.worker === null ? [] : [s.worker]));

    const finishIfDone = (): void => {
      if (!stopping || live().length > 0 || slots.some((s) => s.timer !== null)) return;
      if (killTimer !== undefined) clearTimeout(killTimer);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      process.off('SIGHUP', onHangUp);
      io.signal?.removeEventListener('abort', onAbort);
      cluster.removeListener('exit', onExit);
      resolve(exitCode);
    };

    const fork = (slot: Slot): void => {
      slot.timer = null;
      const worker = cluster.fork();
      slot.worker = worker;
      slot.startedAt = Date.now();
      worker.on('message', (message: ClusterMessage) => {
        // The worker asks once its listener is in place (a message sent earlier could be lost, so
        // a worker still starting when the shutdown began is told now).
        // Its configuration only once the store is open, checked and migrated here.
        if (message.type === 'svcapi-auth:ready') {
          startOthers();
          void opened.then((ok) => {
            if (!worker.isConnected()) return;
            worker.send(stopping || !ok ? { type: 'svcapi-auth:shutdown' } satisfies ClusterMessage : { type: 'svcapi-auth:config', config } satisfies ClusterMessage);
          });
        } else if (message.type === 'svcapi-auth:listening') {
          if (!announced) {
            announced = true;
            io.stdout.write(message.text);
            io.stdout.write(`Workers: ${count} (primary pid ${process.pid})\n`);
          }
          // The service answers from the first worker on; the others join it (staggered, they
          // start later): said once, when all of them serve.
          serving.add(worker);
          if (!allServing && serving.size === count) {
            allServing = true;
            log(`all ${count} workers serving`);
          }
        }
      });
    };

    /** Stops every worker; `reason` null: quietly (the store could not be opened, which is told once, as without workers). */
    const shutdown = (reason: string | null): void => {
      if (stopping) return;
      stopping = true;
      if (reason !== null) log(`${reason}: stopping ${live().length} worker(s)`);
      for (const slot of slots) {
        if (slot.timer !== null) clearTimeout(slot.timer);
        slot.timer = null;
      }
      for (const worker of live()) {
        if (worker.isConnected()) worker.send({ type: 'svcapi-auth:shutdown' } satisfies ClusterMessage);
        else worker.process.kill('SIGTERM');
      }
      // Workers bound their own shutdown (drain + in-flight timeout); this only catches a hung one.
      const graceMs = config.shutdown.drainDelayMs + config.shutdown.timeoutMs + 10_000;
      killTimer = setTimeout(() => {
        for (const worker of live()) {
          log(`worker ${worker.process.pid} did not stop in time; killing it`);
          exitCode = 1;
          worker.process.kill('SIGKILL');
        }
      }, graceMs);
      killTimer.unref();
      finishIfDone();
    };

    const onExit = (worker: Worker, code: number | null, signal: string | null): void => {
      serving.delete(worker);
      const slot = slots.find((s) => s.worker === worker);
      if (slot === undefined) return;
      slot.worker = null;
      const how = signal !== null ? `signal ${signal}` : `code ${code}`;
      if (stopping) {
        if (code !== 0) {
          exitCode = 1;
          log(`worker ${worker.process.pid} exited with ${how} while stopping`);
        }
        finishIfDone();
        return;
      }
      if (!announced) {
        // Not one worker got as far as listening: the configuration or the environment is wrong,
        // and restarting would only repeat it.
        log(`worker ${worker.process.pid} exited with ${how} before the service started; giving up`);
        exitCode = 1;
        shutdown('start-up failed');
        return;
      }
      slot.failures = Date.now() - slot.startedAt >= STABLE_AFTER_MS ? 1 : slot.failures + 1;
      const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** (slot.failures - 1));
      log(`worker ${worker.process.pid} exited unexpectedly with ${how}; starting a new one in ${delay} ms`);
      slot.timer = setTimeout(() => fork(slot), delay);
    };

    /** logrotate moved the log file: every worker reopens its own. */
    function onHangUp(): void {
      for (const worker of live()) worker.process.kill('SIGHUP');
    }

    function onSignal(signal: NodeJS.Signals): void {
      shutdown(signal);
    }
    function onAbort(): void {
      shutdown('abort');
    }

    cluster.on('exit', onExit);
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    process.on('SIGHUP', onHangUp);
    io.signal?.addEventListener('abort', onAbort, { once: true });
    /**
     * The workers after the first (performance.workersStaggered): they start once the first has
     * loaded its modules (it asks for its configuration), which gives it a core to itself for the
     * costliest part of a start, so the service answers sooner (docs/fast-paths.md: ready 975 →
     * 843 ms median with 2 workers); off, with it. A first worker that dies before that stops the
     * start anyway (onExit), so the others are never needed.
     */
    function startOthers(): void {
      if (othersStarted || stopping) return;
      othersStarted = true;
      for (const slot of slots.slice(1)) fork(slot);
    }
    let othersStarted = false;
    fork(slots[0] as Slot);
    if (!config.performance.workersStaggered) startOthers();
    // With the workers starting (or, switched off, already opened before them).
    storeOpened ??= openStore();
    const opened = storeOpened.then((s) => {
      store = s;
      return true;
    }, (error: unknown) => {
      openFailure = error;
      exitCode = 1;
      shutdown(null);
      return false;
    });

    void checkResult.then(async (result) => {
      await opened;
      await closeStore();
      if (result === null || stopping) return;
      if (result.kind === 'damaged') {
        io.stderr.write(`error: ${result.error.message}\n`);
        exitCode = EXIT_DB_DAMAGED;
        shutdown('database damaged');
      } else if (result.kind === 'not-run') {
        log(`the database check (quick_check) could not run; the file was not checked: ${result.reason}`);
      }
    });
  });
  // A store still opening when the workers were all gone (a stop during the start) is closed once open.
  await storeOpened?.then(() => undefined, () => undefined);
  await closeStore();
  // Told as a single process tells it (runCli: one line, the database's exit code).
  if (openFailure !== null) throw openFailure;
  return code;
}
