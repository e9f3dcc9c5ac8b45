import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { createSecureContext } from 'node:tls';
import type { Config } from '../config/config.js';
import { buildApp } from '../http/app.js';
import { createAuthService } from '../domain/create-auth-service.js';
import { newTicketKey, TICKET_KEY_SECRET } from '../domain/ordered-ticket.js';
import { createPasswordHasher } from '../domain/composite-password-hasher.js';
import { createBoundedHasher } from '../domain/bounded-hasher.js';
import type { LegacyMirror } from '../compat/shadow.js';
import { createLegacyGuard, legacyAnswerRules } from '../domain/legacy-guard.js';
import { systemClock } from '../domain/clock.js';
import { cryptoRandomSource } from '../domain/random-source.js';
import { createLogger } from '../ops/logger.js';
import { walFileBytes, walRunawayWatch } from '../ops/wal-runaway-watch.js';
import { parseDatabaseUrl } from '../store/database-url.js';
import type { Logger } from 'pino';
import { createLogDestination, type LogDestination } from '../ops/log-destination.js';
import { createOpsRuntime, type OpsRuntime } from '../ops/runtime.js';
import { lowerHashingPriority } from '../ops/hashing-priority.js';
import { hashingSlots, libuvPoolSize, POOL_SPARE_THREADS } from '../ops/hashing-threads.js';
import { keepTickShape } from '../ops/tick-shape.js';
import { CliError, type CliIo } from './cli-io.js';
import { databaseFailure, openCliStore } from './open-cli-store.js';
import type { DatabaseError } from '../store/database-errors.js';
import type { IntegrityCheckResult } from '../store/sqlite/background-check.js';
import type { TokenPassthroughWiring } from './legacy-passthrough.js';
import type { ManagementMount } from '../ops/management-server.js';

const PRIORITY_PROBE_DELAY_MS = 1000;
/** The application every legacy deployment has (the spec's GPS, AppID 2): the start-up probe logs into it. */
const GPS_APP_ID = 2;
/** The key of the fingerprints in kept shadow differences (src/compat/shadow-redaction.ts), one per installation. */
const SHADOW_FINGERPRINT_SECRET = 'shadow-fingerprint';

/**
 * The admin console, its modules loaded on its first request: loading them at start cost ~150 ms
 * of CPU (2026-11-26) that most starts never use. A failed load fails that request (500) and is
 * tried again on the next.
 */
function mountedOnFirstUse(load: () => Promise<ManagementMount>): ManagementMount {
  let mount: Promise<ManagementMount> | undefined;
  return {
    async handle(req, res) {
      mount ??= load().catch((error: unknown) => {
        mount = undefined;
        throw error;
      });
      return (await mount).handle(req, res);
    },
  };
}

/** How to write the listening host in a URL a person can open. */
function urlHost(host: string, address: AddressInfo): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  if (address.family === 'IPv6' && host.includes(':')) return `[${host}]`;
  return host;
}

/** The PEM files of --tls-cert / --tls-key, read and checked once at start; undefined for plain HTTP. */
async function readTlsFiles(config: Config): Promise<{ cert: Buffer; key: Buffer } | undefined> {
  if (config.tls.certFile === null || config.tls.keyFile === null) return undefined;
  const read = (path: string, what: string): Promise<Buffer> => readFile(resolve(path)).catch((error: unknown) => {
    throw new CliError(`cannot read the TLS ${what} ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  });
  const pair = { cert: await read(config.tls.certFile, 'certificate'), key: await read(config.tls.keyFile, 'key') };
  try {
    createSecureContext(pair);
  } catch (error) {
    throw new CliError(`cannot use the TLS certificate ${config.tls.certFile} with the key ${config.tls.keyFile}: ${(error as Error).message}`);
  }
  return pair;
}

/** Resolves on SIGINT / SIGTERM, or when the test's signal aborts. */
function stopRequested(io: CliIo): { promise: Promise<string>; dispose: () => void } {
  let dispose = (): void => undefined;
  const promise = new Promise<string>((resolve) => {
    const onSignal = (name: string) => (): void => resolve(name);
    const onInt = onSignal('SIGINT');
    const onTerm = onSignal('SIGTERM');
    // A string reason ('SIGTERM', from a cluster worker's primary) is the reason: SIGTERM drains (src/ops/runtime.ts).
    const abortReason = (): string => (typeof io.signal?.reason === 'string' ? io.signal.reason : 'abort');
    const onAbort = (): void => resolve(abortReason());
    process.once('SIGINT', onInt);
    process.once('SIGTERM', onTerm);
    io.signal?.addEventListener('abort', onAbort, { once: true });
    if (io.signal?.aborted === true) resolve(abortReason());
    dispose = () => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      io.signal?.removeEventListener('abort', onAbort);
    };
  });
  return { promise, dispose: () => dispose() };
}

/**
 * The result of the database check running in the background (integrityCheck 'background'),
 * which may come before the logger exists: logged once there is one; damage also settles
 * `damaged`, which stops the service.
 */
function integrityWatch(): {
  report(result: IntegrityCheckResult): void;
  log(logger: Logger): void;
  readonly damaged: Promise<void>;
  found(): DatabaseError | null;
} {
  let result: IntegrityCheckResult | null = null;
  let logger: Logger | null = null;
  let markDamaged = (): void => undefined;
  const damaged = new Promise<void>((resolve) => {
    markDamaged = resolve;
  });
  const write = (): void => {
    if (result === null || logger === null) return;
    if (result.kind === 'sound') logger.info({ ms: result.ms }, 'database check (quick_check): no damage found');
    else if (result.kind === 'damaged') logger.error({ ms: result.ms }, result.error.message);
    else logger.warn({ reason: result.reason }, 'database check (quick_check) could not run; the file was not checked');
  };
  return {
    report(r) {
      result = r;
      write();
      if (r.kind === 'damaged') markDamaged();
    },
    log(l) {
      logger = l;
      write();
    },
    damaged,
    found: () => (result?.kind === 'damaged' ? result.error : null),
  };
}

export interface ServeHooks {
  /** Where the "Service: ..." lines go once listening (default io.stdout); a cluster worker tells its primary instead. */
  readonly announce?: (text: string) => void;
  /** The database was checked (PRAGMA quick_check) by whoever started us: a cluster worker's primary. */
  readonly integrityChecked?: boolean;
  /** Standard output is shared with other processes (a cluster worker's is its primary's): log writes of whole lines. */
  readonly sharedStdout?: boolean;
}

/**
 * Runs the service until asked to stop: opens (and migrates) the store, builds the HTTP app,
 * listens, prints where it is, and on SIGINT/SIGTERM stops accepting, lets requests in flight
 * finish, then closes the store.
 */
export async function serve(config: Config, io: CliIo, hooks: ServeHooks = {}): Promise<number> {
  // Before the database opens: opening it and the rest of the start are the full collections
  // that would otherwise leave nextTick's definition sites megamorphic (ops/tick-shape.ts).
  const tickShape = config.performance.keepTickShape ? keepTickShape() : null;
  // Creates (0600, in a 0700 directory) and migrates a new database; refuses a damaged or foreign
  // one. A SQLite file is checked whole (quick_check) in the background while the service starts
  // and serves (store/sqlite/background-check.ts); damage found there stops it as at start.
  const integrity = integrityWatch();
  const walRunaway = walRunawayWatch();
  const store = await openCliStore(config.databaseUrl, {
    create: true, groupCommit: config.performance.groupCommit, sqliteMmapBytes: config.performance.sqliteMmapMiB * 1024 * 1024,
    sqliteAsyncSync: config.performance.sqliteAsyncSync, sqliteCheckpointThread: config.performance.sqliteCheckpointThread,
    postgresGenericTokenPlans: config.performance.pgGenericTokenPlans, postgresPoolMax: config.postgresPoolMax,
    integrityCheck: hooks.integrityChecked === true ? false : config.performance.sqliteCheckInBackground ? 'background' : true,
    onIntegrityCheck: integrity.report, onSqliteWalRunaway: walRunaway.report,
  }).catch((error: unknown) => {
    tickShape?.stop();
    throw error;
  });
  const stop = stopRequested(io);
  // Health, metrics, housekeeping and graceful shutdown (src/ops/runtime.ts).
  let ops: OpsRuntime | undefined;
  let prioritySet: Promise<void> | undefined;
  const probeCancel = new AbortController();
  let logs: LogDestination | undefined;
  let mirror: LegacyMirror | undefined;
  let reopenFailed: (error: unknown) => void = () => undefined;
  const reopenLogs = (): void => {
    if (logs === undefined) return;
    logs.reopen();
    logs.ready().catch(reopenFailed);
  };
  let tokenPassthrough: TokenPassthroughWiring | null = null;
  try {
    // Buffered and asynchronous (log-destination.ts): no write per request; flushed at the end.
    logs = createLogDestination({ file: config.logFile, stdout: io.stdout, flushMs: config.logFlushMs, sharedStdout: hooks.sharedStdout === true });
    // A log file that cannot be opened stops the start, rather than a service that logs nothing.
    await logs.ready().catch((error: unknown) => {
      throw new CliError(`cannot open the log file ${config.logFile ?? ''}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    });
    const logger = createLogger({
      level: config.logLevel, pretty: config.logPretty, stream: logs.stream,
      colorize: config.logFile === null && (io.stdout as { isTTY?: boolean }).isTTY === true,
    });
    // After logrotate's SIGHUP: the lines go on to the old file, which says why.
    reopenFailed = (error) => logger.error({ file: config.logFile, code: (error as NodeJS.ErrnoException).code ?? null }, 'cannot reopen the log file; writing on to the file it was');
    process.on('SIGHUP', reopenLogs);
    integrity.log(logger);
    walRunaway.log(logger);
    ops = await createOpsRuntime({ config, store, logger });
    const logDestination = logs;
    ops.metrics.reportLogBacklog(() => logDestination.backlogBytes());
    ops.metrics.reportLogDropped(() => logDestination.droppedLines());
    logDestination.onDropped((lines) => logger.warn({ droppedLines: lines }, 'log lines dropped: standard output (or the log file) took nothing while 16 MiB of them waited; writing again'));
    // The -wal file beside a SQLite database: its size on disk and the runaway switch, at scrape time.
    const location = parseDatabaseUrl(config.databaseUrl);
    if (location.kind === 'sqlite' && location.path !== ':memory:') {
      const databasePath = location.path;
      ops.metrics.reportSqliteWal({ walBytes: () => walFileBytes(databasePath), runaway: walRunaway.runaway });
    }
    // What only talking to the old service needs is loaded only then (as shadow and front
    // mode's modules below, and the console): a start without it loads less (docs/fast-paths.md).
    const legacyWiring = config.legacy.url === null && config.legacy.caFile === null ? null : await import('./legacy-passthrough.js');
    // legacy.caFile: the CA every call to the old service trusts (an https legacy.url).
    const legacyCa = await legacyWiring?.readLegacyCa(config);
    // Lazy migration: logins unknown here are checked once by the old service, whose yes counts
    // only in its token form and after it refused a random login (domain/legacy-guard.ts).
    const legacy = config.legacy.url === null ? null : createLegacyGuard({
      authenticator: (await import('../legacy/soap-legacy-authenticator.js')).createSoapLegacyAuthenticator({ url: config.legacy.url, timeoutMs: config.legacy.timeoutMs, ...(legacyCa !== undefined && { ca: legacyCa }) }),
      // A profile file describes the old service: its token form and its "no", exactly.
      rules: legacyAnswerRules(config.compat.file === null ? null : config.compat.profile),
      clock: systemClock,
      random: cryptoRandomSource,
      onChange: (status) => {
        const fields = { state: status.state, tokenForm: status.tokenForm, failureValueConfirmed: status.failureValueConfirmed };
        if (status.state === 'unsafe') logger.error(fields, `lazy migration refused: ${status.reason}`);
        else if (status.state === 'confirmed' && status.failureValueConfirmed === false) logger.warn(fields, `lazy migration: ${status.reason}`);
        else logger.info(fields, `lazy migration: ${status.reason}`);
      },
    });
    if (legacy !== null) {
      if (new URL(config.legacy.url ?? '').protocol === 'http:') {
        logger.warn({ legacyHost: new URL(config.legacy.url ?? '').host }, 'legacy.url is plain http: passwords of logins unknown here cross the network in clear');
      }
      ops.readiness.reportLegacy(() => legacy.status());
    }
    // Token passthrough: tokens of the old service keep working until legacy.tokenPassthrough's end date.
    tokenPassthrough = legacyWiring?.startTokenPassthrough({ config, logger, metrics: ops.metrics, store, events: ops.events, ...(legacyCa !== undefined && { ca: legacyCa }) }) ?? null;
    // Never every thread of libuv's pool: the WAL syncs and the log's writes need one meanwhile
    // (ops/hashing-threads.ts). The pool is the size the process started with (libuv's own).
    const poolThreads = libuvPoolSize(process.env);
    const hashing = { ...config.hashing, maxConcurrent: hashingSlots(config.hashing.maxConcurrent, poolThreads) };
    if (hashing.maxConcurrent < config.hashing.maxConcurrent) {
      logger.warn({ maxConcurrent: config.hashing.maxConcurrent, hashing: hashing.maxConcurrent, poolThreads },
        `password hashing runs ${hashing.maxConcurrent} at once, not hashing.maxConcurrent's ${config.hashing.maxConcurrent}: libuv's thread pool has ${poolThreads} threads and ${POOL_SPARE_THREADS} stay free for the database's syncs and the log; start the process with UV_THREADPOOL_SIZE=${config.hashing.maxConcurrent + POOL_SPARE_THREADS} for all of them`);
    }
    const hasher = ops.hasher(createBoundedHasher(createPasswordHasher(), hashing));
    // One ticket key for every process and instance on the database (ordered-ticket.ts; made by
    // migration 17, so only read here), loaded whether or not this one issues ordered tickets: it
    // redeems the others'.
    const ticketKey = await store.installationSecret(TICKET_KEY_SECRET, newTicketKey());
    const service = createAuthService({
      store, hasher, ticketTtlSeconds: config.tickets.ttlSeconds, orderedTickets: config.performance.orderedTickets, ticketKey, events: ops.events,
      // A rolling upgrade: while an older instance may still serve, tickets go where it looks for them (migration 18).
      olderVersionServing: ops.readiness.olderVersionServing,
      // The compatibility profile: tokens and tickets in its form, GetUserLoginURL in its shape.
      tokenForm: config.compat.profile.tokens.form, loginUrl: config.compat.profile.loginUrl,
      ...(legacy !== null && { legacy }),
      tokenCacheEntries: config.performance.tokenCacheEntries,
      sessionMemoryEntries: config.performance.sessionMemoryEntries,
      tokenReadWithRevisions: config.performance.tokenReadWithRevisions,
      newsCacheEntries: config.performance.newsCacheEntries,
      ...(tokenPassthrough !== null && { legacyTokens: tokenPassthrough.passthrough }),
      // Brute-force protection (docs/security.md#brute-force-protection).
      ...(config.bruteForce.enabled && { throttle: config.bruteForce }),
      ...(config.compat.profile.whatsNew.maxRows !== null && { maxNews: config.compat.profile.whatsNew.maxRows }),
    });
    const https = await readTlsFiles(config);
    // Shadow and front modes (docs/cutover.md "Front and shadow"): live traffic compared with the old service.
    const legacyUrl = config.legacy.url;
    if (legacyUrl !== null && (config.legacy.mode === 'front' || config.legacy.shadow.rate > 0)) {
      const fingerprintKey = await store.installationSecret(SHADOW_FINGERPRINT_SECRET, randomBytes(32).toString('base64url'));
      const { createLegacyMirror } = await import('../compat/shadow.js');
      mirror = createLegacyMirror({
        settings: { ...config.legacy, url: legacyUrl },
        profile: config.compat.profile, store, fingerprintKey, logger, ...(legacyCa !== undefined && { ca: legacyCa }),
        onResult: ops.metrics.shadowResult, onFront: ops.metrics.frontResult,
        pipelining: config.performance.shadowPipelining, byteCompare: config.performance.shadowByteCompare, batching: config.performance.shadowBatching,
      });
      const m = mirror;
      ops.metrics.reportShadowDepth(() => m.depth());
      ops.metrics.reportShadowCpu(() => m.cpuSeconds());
      const share = `${Math.round(config.legacy.shadow.rate * 10_000) / 100}%`;
      if (config.legacy.mode === 'front') {
        const which = config.legacy.frontOperations.length === 0 ? 'every request' : config.legacy.frontOperations.join(', ');
        logger.warn({ legacyHost: new URL(legacyUrl).host, operations: which, compared: share }, `front mode: the old service answers ${which}; svcapi-auth compares its own answers (${share})`);
      } else {
        logger.info({ legacyHost: new URL(legacyUrl).host, compared: share, stateful: config.legacy.shadow.stateful }, `shadow mode: ${share} of requests also sent to the old service and compared`);
      }
    }
    // Front mode's own answers are computed over a store that keeps nothing they would write
    // (src/store/dry-run-store.ts), without brute-force counters, lazy migration, token
    // passthrough (its GetUserLoginURL relay issues a ticket in the old service) or events.
    const frontService = config.legacy.mode === 'front' ? createAuthService({
      store: (await import('../store/dry-run-store.js')).dryRunStore(store), hasher, ticketTtlSeconds: config.tickets.ttlSeconds, orderedTickets: config.performance.orderedTickets, ticketKey,
      olderVersionServing: ops.readiness.olderVersionServing,
      tokenForm: config.compat.profile.tokens.form, loginUrl: config.compat.profile.loginUrl,
      ...(config.compat.profile.whatsNew.maxRows !== null && { maxNews: config.compat.profile.whatsNew.maxRows }),
    }) : undefined;
    const app = await buildApp({
      service, config, logger, fastAccessLog: config.accessLogFast, onRequestDone: ops.metrics.observeRequest, draining: ops.draining,
      ...(https && { https }), ...(mirror !== undefined && { mirror }), ...(frontService !== undefined && { frontService }),
    });
    try {
      await app.listen({ host: config.host, port: config.port });
    } catch (error) {
      await app.close();
      throw new CliError(`cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`);
    }
    const address = app.server.address() as AddressInfo;
    const base = `${https === undefined ? 'http' : 'https'}://${urlHost(config.host, address)}:${address.port}/Authentication.asmx`;
    let managementUrl: string | null;
    try {
      // The admin console on the management listener only (never the public port).
      const registry = ops.metrics.registry;
      const consoleHandler = config.console.enabled ? mountedOnFirstUse(async () => (await import('../console/console-wiring.js')).wireConsole({
        store, hasher, audit: (event) => ops?.audit.record(event), throttle: config.bruteForce, timeZone: config.timeZone, newsTable: config.compat.profile.whatsNew,
        sessions: { idleTimeoutMs: config.console.idleTimeoutMs, absoluteTimeoutMs: config.console.absoluteTimeoutMs },
        registry, logger,
      })) : undefined;
      ({ managementUrl } = await ops.start(consoleHandler === undefined ? {} : { console: consoleHandler }));
    } catch (error) {
      await app.close();
      throw new CliError((error as Error).message);
    }
    // Finding the hashing threads costs a PBKDF2 job per pool thread (~30 ms of CPU each): it
    // waits a second, so that it does not slow the start (nor that of the other --workers), and
    // is dropped if the service stops first.
    prioritySet = delay(PRIORITY_PROBE_DELAY_MS, undefined, { signal: probeCancel.signal })
      .then(() => lowerHashingPriority(config.hashing.nice))
      .then((result) => {
        if (result.applied) logger.info({ nice: result.nice, threads: result.threads.length, found: result.found }, 'password hashing threads run at a low CPU priority');
        else if (config.hashing.nice !== 0) logger[process.platform === 'linux' ? 'warn' : 'info']({ reason: result.reason }, 'password hashing runs at the normal CPU priority');
      }, () => undefined);
    // The old service's failure value is confirmed at start (and again before a migration if
    // this probe could not reach it), so /health/ready shows early whether migration is safe.
    void legacy?.confirm(GPS_APP_ID);
    const management = managementUrl === null ? '' : `Management: ${managementUrl} (/health/live, /health/ready, /metrics${config.console.enabled ? ', /admin/' : ''})\n`;
    (hooks.announce ?? ((text: string) => io.stdout.write(text)))(`Service: ${base}\nWSDL: ${base}?WSDL\nHelp page: ${base}\n${management}`);

    const reason = await Promise.race([stop.promise, integrity.damaged.then(() => 'database damaged')]);
    logger.info({ reason }, 'shutting down');
    await ops.shutdown(app, reason);
    const damage = integrity.found();
    if (damage !== null) throw databaseFailure(damage) ?? damage;
    return 0;
  } finally {
    tickShape?.stop();
    await mirror?.close();
    probeCancel.abort();
    await prioritySet;
    await ops?.close();
    // Writes token passthrough's tallies: before the store closes.
    await tokenPassthrough?.close();
    stop.dispose();
    await store.close();
    process.off('SIGHUP', reopenLogs);
    await logs?.close();
  }
}
