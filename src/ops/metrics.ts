/**
 * Prometheus metrics (prom-client), served by the management listener at /metrics.
 *
 * Every label value comes from a fixed set: operation names from the contract (anything else is
 * `none`), bindings and outcomes from the HTTP app, login outcomes from the domain's list, hash
 * formats from a fixed list. No label ever carries user input, so cardinality stays bounded.
 *
 * Each service instance has its own Registry (tests build several in one process).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { collectDefaultMetrics, Counter, Gauge, Registry } from './prometheus.js';
import type { Logger } from 'pino';
import { OPERATIONS } from '../contract/operations.js';
import { LOGIN_OUTCOMES, type AuthEvents } from '../domain/auth-events.js';
import type { PasswordHasher } from '../domain/password-hasher.js';
import type { Binding, RequestDone } from '../http/app.js';
import { SHADOW_OUTCOMES, type FrontOutcome, type ShadowOutcome } from '../compat/shadow-outcomes.js';
import type { Store } from '../store/store.js';
import type { Readiness } from './readiness.js';
import { CounterTallies, TalliedHistogram } from './tallies.js';
import { TOKEN_ADOPTION_RESULTS, type TokenAdoptionResult } from '../domain/legacy-token-adoption.js';
import { LEGACY_TOKEN_CHECK_RESULTS, LOGIN_URL_RELAY_RESULTS, type LegacyTokenCheckResult, type LoginUrlRelayResult, type PassthroughStatus } from '../domain/legacy-token-passthrough.js';

const PREFIX = 'svcapi_auth_';
const OPERATION_NAMES = new Set<string>(OPERATIONS.map((op) => op.name));
const BINDINGS: readonly Binding[] = ['soap11', 'soap12', 'http-get', 'http-post', 'doc', 'none'];

/**
 * The `format` label of the password-hash gauge, from the `$ident$` the store reports (see
 * src/domain/legacy-hashes/stored-hash.ts for the formats). A fixed list: anything else is `other`.
 */
export const HASH_FORMATS = [
  'argon2id', 'argon2i', 'argon2d', 'aspnet-membership', 'aspnet-identity-v2', 'aspnet-identity-v3',
  'bcrypt', 'scrypt', 'pbkdf2', 'needs-reset', 'other',
] as const;
export type HashFormat = (typeof HASH_FORMATS)[number];

export function hashFormat(scheme: string): HashFormat {
  if (/^2[abxy]?$/.test(scheme)) return 'bcrypt';
  if (/^pbkdf2(-sha(1|256|512))?$/.test(scheme)) return 'pbkdf2';
  const known = HASH_FORMATS.find((f) => f === scheme && f !== 'bcrypt' && f !== 'pbkdf2' && f !== 'other');
  return known ?? 'other';
}

export type RequestOutcome = 'ok' | 'fault' | 'client_error' | 'server_error';

/**
 * A value made once per combination of three label values and found again through nested maps
 * keyed by the caller's own strings. Callers pass the contract's operation names and the
 * bindings' and outcomes' constants, whose hashes V8 keeps, so a call neither builds nor hashes
 * a new string: a key built per call was hashed per call (1% of the shadowed server's CPU at
 * saturation, perf 2026-11-28; observeRequest's keys and labels checks, 1-2.5% of a
 * ValidateUserToken, docs/fast-paths.md). `make` says whether to keep what it made: only combinations of the fixed
 * sets are kept, so the maps stay bounded whatever a caller passes.
 */
export function keysOnce<T>(make: (a: string, b: string, c: string) => { readonly value: T; readonly keep: boolean }): (a: string, b: string, c: string) => T {
  const kept = new Map<string, Map<string, Map<string, T>>>();
  return (a, b, c) => {
    const byB = kept.get(a);
    const byC = byB?.get(b);
    const known = byC?.get(c);
    if (known !== undefined) return known;
    const made = make(a, b, c);
    if (made.keep) {
      if (byC !== undefined) byC.set(c, made.value);
      else if (byB !== undefined) byB.set(b, new Map([[c, made.value]]));
      else kept.set(a, new Map([[b, new Map([[c, made.value]])]]));
    }
    return made.value;
  };
}

/**
 * ok: 1xx-3xx; fault: a SOAP binding answered with a fault (ASMX sends faults with status 500,
 * whether the client or the server was at fault); otherwise client_error for 4xx, server_error
 * for 5xx (HTTP GET/POST errors, which ASMX also sends as 500, count as server_error).
 */
export function requestOutcome(binding: Binding, statusCode: number): RequestOutcome {
  if (statusCode < 400) return 'ok';
  if (binding === 'soap11' || binding === 'soap12') return 'fault';
  return statusCode < 500 ? 'client_error' : 'server_error';
}

export interface HousekeepingReport {
  readonly task: string;
  readonly deleted: number;
  readonly ok: boolean;
}

export interface ServiceMetrics {
  readonly registry: Registry;
  /** Subscribe the domain to these (createAuthService `events`). */
  readonly events: AuthEvents;
  /** For buildApp `onRequestDone`. */
  observeRequest(done: RequestDone): void;
  /** The hasher, counting its operations in flight (the hash queue depth gauge). */
  instrumentHasher(hasher: PasswordHasher): PasswordHasher;
  housekeepingRun(report: HousekeepingReport): void;
  /** A comparison with the old service ended (src/compat/shadow.ts). */
  shadowResult(outcome: ShadowOutcome, operation: string | null, binding: string): void;
  /** Front mode: a request passed on to the old service, answered or not. */
  frontResult(outcome: FrontOutcome, operation: string | null, binding: string): void;
  /** The comparisons waiting, read at scrape time. */
  reportShadowDepth(depth: () => number): void;
  /** The CPU seconds charged to shadow work so far (its budget, legacy.shadow.cpuShare), read at scrape time. */
  reportShadowCpu(seconds: () => number): void;
  /** The log lines not yet taken by their reader, in bytes (log-destination.ts), read at scrape time. */
  reportLogBacklog(bytes: () => number): void;
  /** The log lines dropped so far because that backlog was at its bound (log-destination.ts MAX_BACKLOG_BYTES), read at scrape time. */
  reportLogDropped(lines: () => number): void;
  /**
   * A SQLite database on a file: registers the gauges of its `-wal` file (its size on disk, and
   * whether the serving connection checkpoints at its own commits: wal-runaway-watch.ts), read at
   * scrape time.
   */
  reportSqliteWal(status: SqliteWalStatus): void;
  /**
   * Token passthrough (legacy-token-passthrough.ts): registers its metrics (only when it is
   * configured) and returns the observers to give it; `status` is read at scrape time.
   */
  observeLegacyTokens(status: () => PassthroughStatus): LegacyTokenObservers;
}

export interface LegacyTokenObservers {
  readonly onCheck: (result: LegacyTokenCheckResult) => void;
  readonly onRelay: (result: LoginUrlRelayResult) => void;
  readonly onAdoption: (result: TokenAdoptionResult) => void;
}

export interface SqliteWalStatus {
  /** The `-wal` file's size on disk. */
  readonly walBytes: () => number;
  /** The WAL passed its bound and this process's commits checkpoint it until it starts over. */
  readonly runaway: () => boolean;
}

/** The circuit state gauge's values. */
export const CIRCUIT_STATE_VALUES: Readonly<Record<PassthroughStatus['circuit'], number>> = Object.freeze({ closed: 0, half_open: 1, open: 2 });

export interface MetricsOptions {
  readonly store: Store;
  /** Behind the `ready` gauge (a readiness check at scrape time); without it the gauge is absent. */
  readonly readiness?: Readiness;
  readonly now?: () => Date;
  readonly logger?: Logger;
  /** Node.js process metrics: CPU, memory, handles, GC, event-loop lag (default true). */
  readonly processMetrics?: boolean;
  /** The store-backed gauges are counted again at most this often (ms; default STORE_GAUGE_REFRESH_MS). */
  readonly storeGaugeRefreshMs?: number;
  readonly version?: string;
}

/**
 * The gauges read from the store (active tokens, password hash formats) are counted at most once
 * a minute, in the background: a scrape reports the last count and, when it is older than this,
 * starts the next. Counted at every scrape, the active tokens' scan of every token row took 25 s
 * on 10 million tokens (bench:scale's store, SQLite, warm), and a scrape every 15 s would have
 * kept a core busy; on SQLite that scan ran on the event loop, until it moved to the purge
 * thread (sqlite-tokens.ts COUNT_ACTIVE_SQL). The users' GROUP BY took 0.3 s on a million.
 */
export const STORE_GAUGE_REFRESH_MS = 60_000;
/**
 * The first scrape waits this long (ms) for the first count, so that a small installation shows
 * its exact figures at once; a larger one shows 0 until the count is done. Later scrapes never
 * wait, the first count's included.
 */
export const STORE_GAUGE_FIRST_WAIT_MS = 1_000;
/**
 * A count is made again no sooner than this many times as long as the last one took after it
 * ended, so that the counts take at most about a tenth of a core: on 10 million tokens a count
 * takes 25-50 s, and once a minute it would have kept half a core busy.
 */
export const STORE_GAUGE_COST_FACTOR = 10;

/**
 * Runs `count` (which sets its gauge and never throws) when its last run ended more than
 * `refreshMs`, and STORE_GAUGE_COST_FACTOR times its duration, ago; one at a time.
 */
function storeGaugeRefresher(count: () => Promise<void>, refreshMs: number, now: () => number): () => Promise<void> {
  let countedAt = Number.NEGATIVE_INFINITY;
  let lastTookMs = 0;
  let running: Promise<void> | null = null;
  let first = true;
  return async () => {
    if (running === null && now() - countedAt < Math.max(refreshMs, STORE_GAUGE_COST_FACTOR * lastTookMs)) return;
    if (running === null) {
      const startedAt = now();
      running = count().finally(() => {
        countedAt = now();
        lastTookMs = countedAt - startedAt;
        running = null;
      });
    }
    if (first) {
      first = false;
      await Promise.race([running, delay(STORE_GAUGE_FIRST_WAIT_MS, undefined, { ref: false })]);
    }
  };
}

/** A counter of a running total kept elsewhere, read at each scrape: what it grew by since the last one is added. */
function totalCounter(name: string, help: string, registers: Registry[], total: () => number): void {
  let reported = 0;
  new Counter({
    name, help, registers,
    collect() {
      const now = total();
      if (now > reported) {
        this.inc(now - reported);
        reported = now;
      }
    },
  });
}

export function createMetrics(options: MetricsOptions): ServiceMetrics {
  const { store } = options;
  const now = options.now ?? (() => new Date());
  const registry = new Registry();
  const registers = [registry];

  if (options.processMetrics ?? true) collectDefaultMetrics(registry, 20);

  new Gauge({
    name: `${PREFIX}build_info`,
    help: 'Always 1; the labels say which svcapi-auth and Node.js are running.',
    labelNames: ['version', 'node'],
    registers,
  }).set({ version: options.version ?? 'unknown', node: process.version }, 1);

  const readiness = options.readiness;
  if (readiness !== undefined) {
    new Gauge({
      name: `${PREFIX}ready`,
      help: '1 when /health/ready would answer 200 (serving, not draining, store reachable, schema applied), 0 otherwise.',
      registers,
      async collect() {
        this.set((await readiness.check()).ready ? 1 : 0);
      },
    });
    new Gauge({
      name: `${PREFIX}older_version_serving`,
      help: '1 while an instance of an older svcapi-auth version may be serving from the same database (its readiness probe seen within 10 minutes): login tickets then go to the token table, where it looks for them. A rolling upgrade is over when it is 0 on every instance.',
      registers,
      collect() {
        this.set(readiness.olderVersionServing() ? 1 : 0);
      },
    });
  }

  // The per-request series are tallied in plain numbers and read into prom-client at scrape time (tallies.ts).
  const requestTallies = new CounterTallies<'operation' | 'binding' | 'outcome'>();
  new Counter({
    name: `${PREFIX}http_requests_total`,
    help: 'Requests on the public listener by operation (none: no operation was resolved; doc: documentation), binding and outcome (ok, fault, client_error, server_error).',
    labelNames: ['operation', 'binding', 'outcome'],
    registers,
    collect() {
      requestTallies.drainInto(this);
    },
  });
  const duration = new TalliedHistogram(
    `${PREFIX}http_request_duration_seconds`,
    'Time from request received to response written, by operation and binding.',
    ['operation', 'binding'],
    [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registry,
  );

  const logins = new Counter({
    name: `${PREFIX}logins_total`,
    help: 'ValidateUser calls by outcome: success, or the reason the (uniform) failure was returned.',
    labelNames: ['outcome'],
    registers,
  });
  for (const outcome of LOGIN_OUTCOMES) logins.inc({ outcome }, 0);
  const issuedTallies = new CounterTallies<'kind'>();
  const issued = new Counter({
    name: `${PREFIX}tokens_issued_total`, help: 'Session tokens (ValidateUser) and login tickets (GetUserLoginURL) issued.', labelNames: ['kind'], registers,
    collect() {
      issuedTallies.drainInto(this);
    },
  });
  issued.inc({ kind: 'session' }, 0);
  issued.inc({ kind: 'ticket' }, 0);
  const ticketsUsed = new Counter({ name: `${PREFIX}tickets_used_total`, help: 'Login tickets consumed by ValidateUserToken.', registers });
  const validationTallies = new CounterTallies<'result' | 'kind'>();
  new Counter({
    name: `${PREFIX}token_validations_total`,
    help: 'ValidateUserToken calls by result (valid, invalid) and what the text named (session, ticket, unknown; legacy: a token of the old service it vouched for, token passthrough).',
    labelNames: ['result', 'kind'],
    registers,
    collect() {
      validationTallies.drainInto(this);
    },
  });
  const throttleTrips = new Counter({
    name: `${PREFIX}throttle_trips_total`,
    help: 'ValidateUser calls refused by brute-force protection without checking the password, by the counter that refused: pair (one login from one source), login (the login\'s ceiling across sources), source (the source\'s failure ceiling across logins).',
    labelNames: ['scope'],
    registers,
  });
  for (const scope of ['pair', 'login', 'source']) throttleTrips.inc({ scope }, 0);

  let hashesInFlight = 0;
  new Gauge({
    name: `${PREFIX}password_hash_queue_depth`,
    help: 'Password hash computations and verifications in flight (queued for or running on the libuv thread pool).',
    registers,
    collect() {
      this.set(hashesInFlight);
    },
  });

  const scrapeErrors = new Counter({ name: `${PREFIX}scrape_store_errors_total`, help: 'Store queries made for a scrape that failed (the gauge keeps its previous value).', registers });
  const fromStore = async (what: string, read: () => Promise<void>): Promise<void> => {
    try {
      await read();
    } catch (error) {
      scrapeErrors.inc();
      options.logger?.warn({ err: error, metric: what }, 'metrics: store query failed');
    }
  };
  const refreshMs = options.storeGaugeRefreshMs ?? STORE_GAUGE_REFRESH_MS;
  const clockMs = (): number => now().getTime();
  const activeTokens = new Gauge({
    name: `${PREFIX}active_tokens`,
    help: 'Session tokens that work now (not revoked, not past absolute or idle expiry); counted by the store at most once a minute, in the background.',
    registers,
    async collect() {
      await refreshActiveTokens();
    },
  });
  const refreshActiveTokens = storeGaugeRefresher(() => fromStore('active_tokens', async () => activeTokens.set(await store.countActiveTokens(now()))), refreshMs, clockMs);
  const passwordHashes = new Gauge({
    name: `${PREFIX}password_hashes`,
    help: 'Users by password hash format (migration progress towards argon2id); a store GROUP BY at most once a minute, in the background.',
    labelNames: ['format'],
    registers,
    async collect() {
      await refreshPasswordHashes();
    },
  });
  const refreshPasswordHashes = storeGaugeRefresher(() => fromStore('password_hashes', async () => {
    const counts = new Map<HashFormat, number>(HASH_FORMATS.map((f) => [f, 0]));
    for (const { scheme, count } of await store.countPasswordHashSchemes()) {
      const format = hashFormat(scheme);
      counts.set(format, (counts.get(format) ?? 0) + count);
    }
    for (const [format, count] of counts) passwordHashes.set({ format }, count);
  }), refreshMs, clockMs);

  const purged = new Counter({ name: `${PREFIX}housekeeping_deleted_total`, help: 'Rows deleted by scheduled housekeeping, by task.', labelNames: ['task'], registers });
  const runs = new Counter({ name: `${PREFIX}housekeeping_runs_total`, help: 'Housekeeping runs by task and result (ok, error).', labelNames: ['task', 'result'], registers });
  const lastRun = new Gauge({ name: `${PREFIX}housekeeping_last_success_timestamp_seconds`, help: 'When each housekeeping task last completed (Unix time).', labelNames: ['task'], registers });

  // Counted for every sampled request, a dropped one too (at saturation, nearly every request):
  // tallied, as the request counters are (tallies.ts), not a prom-client inc() each.
  const shadowTallies = new CounterTallies<'result' | 'operation' | 'binding'>();
  new Counter({
    name: `${PREFIX}shadow_total`,
    help: 'Requests compared with the old service (shadow and front modes) by result: same, different (kept for compat shadow-report), error (the old service failed, or our answer could not be computed), dropped (the comparison queue was full, or shadow work had used its legacy.shadow.cpuShare of the event loop); by operation and binding of our dispatch.',
    labelNames: ['result', 'operation', 'binding'],
    registers,
    collect() {
      shadowTallies.drainInto(this);
    },
  });
  const frontResults = new Counter({
    name: `${PREFIX}front_requests_total`,
    help: 'Front mode: requests passed on to the old service, by result: forwarded (its answer was relayed), unavailable (it could not be had: 503); by operation and binding.',
    labelNames: ['result', 'operation', 'binding'],
    registers,
  });
  let shadowDepth: () => number = () => 0;
  new Gauge({
    name: `${PREFIX}shadow_queue_depth`,
    help: 'Comparisons with the old service waiting in the queue (legacy.shadow.queue at most).',
    registers,
    collect() {
      this.set(shadowDepth());
    },
  });
  let logBacklog: () => number = () => 0;
  let logDropped: () => number = () => 0;
  totalCounter(`${PREFIX}log_dropped_lines_total`,
    'Log lines dropped because standard output (or --log-file) took nothing while 16 MiB of them waited; a warning says how many once it reads again.',
    registers, () => logDropped());
  new Gauge({
    name: `${PREFIX}log_backlog_bytes`,
    help: 'Log lines written by the service and not yet taken by standard output or the log file, in bytes: it grows while their reader falls behind.',
    registers,
    collect() {
      this.set(logBacklog());
    },
  });
  let shadowCpu: () => number = () => 0;
  totalCounter(`${PREFIX}shadow_cpu_seconds_total`,
    'CPU time charged to shadow and front mode comparisons by their budget (legacy.shadow.cpuShare): what the process spent on them.',
    registers, () => shadowCpu());
  /** Label values from fixed sets only (the request never names a label). */
  const labels = (operation: string | null, binding: string): { operation: string; binding: string } => {
    const b = (BINDINGS as readonly string[]).includes(binding) ? binding : 'none';
    return { operation: operation !== null && OPERATION_NAMES.has(operation) ? operation : b === 'doc' ? 'doc' : 'none', binding: b };
  };

  // shadowResult's tally key, made once per outcome, operation and binding (keysOnce; '' for
  // no operation, whose labels follow from the binding).
  const shadowKey = keysOnce((outcome, operation, binding) => {
    const l = labels(operation, binding);
    return { value: `${outcome}|${l.operation}|${l.binding}`, keep: (operation === '' || l.operation === operation) && l.binding === binding };
  });

  // observeRequest's keys and labels, made once per operation, binding and outcome (keysOnce).
  const requestKeys = keysOnce((operation, binding, outcome) => {
    const l = labels(operation, binding);
    const series = `${l.operation}|${l.binding}`;
    const seriesLabels = { operation: l.operation, binding: l.binding };
    const tallyLabels = { ...seriesLabels, outcome };
    return {
      value: { series, tally: `${series}|${outcome}`, seriesLabels: () => seriesLabels, tallyLabels: () => tallyLabels },
      keep: (operation === '' || l.operation === operation) && l.binding === binding,
    };
  });

  const events: AuthEvents = {
    loginOutcome: (e) => {
      logins.inc({ outcome: e.outcome });
      if (e.outcome === 'throttled') throttleTrips.inc({ scope: e.throttledBy ?? 'pair' });
    },
    tokenIssued: () => issuedTallies.add('session', () => ({ kind: 'session' })),
    ticketIssued: () => issuedTallies.add('ticket', () => ({ kind: 'ticket' })),
    ticketUsed: () => ticketsUsed.inc(),
    tokenValidated: (e) => {
      const result = e.valid ? 'valid' : 'invalid';
      validationTallies.add(`${result}|${e.kind}`, () => ({ result, kind: e.kind }));
    },
  };

  return {
    registry,
    events,
    observeRequest(done) {
      // Only soap11 and soap12 (fixed-set values) make a fault: an unknown binding counts as none.
      const keys = requestKeys(done.operation ?? '', done.binding, requestOutcome(done.binding, done.statusCode));
      requestTallies.add(keys.tally, keys.tallyLabels);
      duration.observe(keys.series, keys.seriesLabels, done.durationMs / 1000);
    },
    instrumentHasher(hasher) {
      const track = async <T>(work: () => Promise<T>): Promise<T> => {
        hashesInFlight += 1;
        try {
          return await work();
        } finally {
          hashesInFlight -= 1;
        }
      };
      return {
        hash: (password) => track(() => hasher.hash(password)),
        verify: (passwordHash, password) => track(() => hasher.verify(passwordHash, password)),
        needsRehash: (passwordHash) => hasher.needsRehash(passwordHash),
      };
    },
    shadowResult(outcome, operation, binding) {
      // The labels, from fixed sets, once per key (bounded). Called for every request shadow mode
      // samples, also each one the budget drops (all but a few hundred at saturation): the key is
      // looked up, not built, as a string built per call was hashed per call (1% of the shadowed
      // server's CPU at saturation, perf 2026-11-28).
      if (!SHADOW_OUTCOMES.includes(outcome)) return;
      shadowTallies.add(shadowKey(outcome, operation ?? '', binding), () => ({ result: outcome, ...labels(operation, binding) }));
    },
    frontResult(outcome, operation, binding) {
      frontResults.inc({ result: outcome === 'forwarded' ? 'forwarded' : 'unavailable', ...labels(operation, binding) });
    },
    reportShadowDepth(depth) {
      shadowDepth = depth;
    },
    reportShadowCpu(seconds) {
      shadowCpu = seconds;
    },
    reportLogBacklog(bytes) {
      logBacklog = bytes;
    },
    reportLogDropped(lines) {
      logDropped = lines;
    },
    reportSqliteWal(status) {
      new Gauge({
        name: `${PREFIX}sqlite_wal_bytes`,
        help: 'Size on disk of the SQLite database\'s -wal file. Kept at its size when the WAL starts over: 64-80 MiB under sustained writes; more only while sqlite_wal_runaway is 1.',
        registers,
        collect() {
          this.set(status.walBytes());
        },
      });
      new Gauge({
        name: `${PREFIX}sqlite_wal_runaway`,
        help: '1 while the SQLite WAL is past four times its bound and this process\'s commits checkpoint it (other processes kept the checkpoint thread from starting it over), else 0.',
        registers,
        collect() {
          this.set(status.runaway() ? 1 : 0);
        },
      });
    },
    observeLegacyTokens(status) {
      const checks = new Counter({
        name: `${PREFIX}legacy_token_checks_total`,
        help: 'Tokens unknown here asked of the legacy service (token passthrough), by result: valid, invalid (it said so), error (no usable answer), circuit_open, overloaded (legacy.maxConcurrent calls in flight), cached_valid, cached_invalid (a kept answer), unsafe (it once said yes to a random token).',
        labelNames: ['result'],
        registers,
      });
      for (const result of LEGACY_TOKEN_CHECK_RESULTS) checks.inc({ result }, 0);
      const relays = new Counter({
        name: `${PREFIX}legacy_login_url_relays_total`,
        help: 'GetUserLoginURL for a token of the legacy service, relayed to its GetUserLoginURL, by result: relayed (its URL returned), none (not an absolute http(s) URL), error, circuit_open, overloaded.',
        labelNames: ['result'],
        registers,
      });
      for (const result of LOGIN_URL_RELAY_RESULTS) relays.inc({ result }, 0);
      const adoptions = new Counter({
        name: `${PREFIX}legacy_token_adoptions_total`,
        help: 'Tokens the legacy service vouched for, offered for storing here (legacy.adoptTokens), by result: adopted (stored), already_stored, unrecognised (its ValidateUserTokenJSON answer is not the profile\'s success layout), unknown_user (no such enabled login here), unknown_app (no application determinable, or not granted / enabled), expired, error (no usable answer, not asked: circuit not closed or no free call, or the store failed).',
        labelNames: ['result'],
        registers,
      });
      for (const result of TOKEN_ADOPTION_RESULTS) adoptions.inc({ result }, 0);
      new Gauge({
        name: `${PREFIX}legacy_token_circuit_state`,
        help: 'The circuit breaker in front of the legacy service\'s token operations: 0 closed (asked), 1 half-open (one call decides), 2 open (not asked; tokens of the legacy service are not valid).',
        registers,
        collect() {
          this.set(CIRCUIT_STATE_VALUES[status().circuit]);
        },
      });
      new Gauge({
        name: `${PREFIX}legacy_token_passthrough_active`,
        help: '1 while token passthrough is on (before legacy.tokenPassthrough\'s end date and the legacy service not found unsafe), 0 otherwise.',
        registers,
        collect() {
          const now = status();
          this.set(now.active && !now.unsafe ? 1 : 0);
        },
      });
      new Gauge({
        name: `${PREFIX}legacy_token_calls_in_flight`,
        help: 'Calls to the legacy service\'s ValidateUserToken, GetUserLoginURL and (adoption) ValidateUserTokenJSON in flight (at most legacy.maxConcurrent).',
        registers,
        collect() {
          this.set(status().inFlight);
        },
      });
      return { onCheck: (result) => checks.inc({ result }), onRelay: (result) => relays.inc({ result }), onAdoption: (result) => adoptions.inc({ result }) };
    },
    housekeepingRun(report) {
      runs.inc({ task: report.task, result: report.ok ? 'ok' : 'error' });
      if (report.deleted > 0) purged.inc({ task: report.task }, report.deleted);
      if (report.ok) lastRun.set({ task: report.task }, Date.now() / 1000);
    },
  };
}
