/**
 * The service's configuration as the rest of src/ reads it: its shape, the command-line flags that
 * may set part of it, and the log levels. How it is read (defaults, then a config file, then the
 * environment, then flags; checked once at start-up and frozen) is load-config.ts; every setting
 * is listed in docs/configuration.md.
 */
import type { CompatProfile } from '../contract/compat-profile.js';
import type { ThrottlePolicy } from '../domain/login-throttle.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
export const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface Config {
  readonly host: string;
  readonly port: number;
  /** `sqlite:<path>`, `sqlite::memory:` (later `postgres://...`). */
  readonly databaseUrl: string;
  /**
   * PostgreSQL: the connections of a process's pool when the database URL gives no `pool_max`:
   * 10 for a process alone; with `serve --workers N` each worker's share, max(2, ceil(10 / N)), so
   * that the workers of one machine together open about as many as one process did (each opening
   * 10 was 15 N with the token reads' pool, 120 for 8 workers: more than PostgreSQL's default
   * max_connections of 100). Derived from the workers, not a setting of its own: `pool_max` is.
   */
  readonly postgresPoolMax: number;
  readonly http: {
    /** Largest request body accepted, in bytes. */
    readonly maxRequestBytes: number;
    /** How long a client may take to send its body. */
    readonly bodyTimeoutMs: number;
    /** Operations offered over HTTP GET (it puts passwords in URLs): all, none, or a list. */
    readonly httpGet: boolean | readonly string[];
  };
  /**
   * Password hashing capacity: more concurrent work than this fails fast with "Server
   * too busy". `nice`: the CPU priority of the threads that hash (Linux; 0 = as the process),
   * so that logins hold back token checks less (src/ops/hashing-priority.ts).
   */
  readonly hashing: { readonly maxConcurrent: number; readonly maxQueued: number; readonly nice: number };
  /** IANA zone used to write DateTime offsets in WhatsNew, as the legacy server's local time did. */
  readonly timeZone: string;
  readonly tickets: {
    /** Lifetime of a GetUserLoginURL ticket. */
    readonly ttlSeconds: number;
  };
  readonly logLevel: LogLevel;
  /** Human-readable colourised logs instead of JSON lines (for a terminal). */
  readonly logPretty: boolean;
  /** Log lines go to this file instead of standard output (`--log-file`; reopened on SIGHUP). */
  readonly logFile: string | null;
  /** The log buffer is written out this often (ms); 0 writes every line at once. */
  readonly logFlushMs: number;
  /** The access line from a template (ops/access-log.ts); false writes it through logger.info. */
  readonly accessLogFast: boolean;
  /**
   * Speed-ups that can be switched off (docs/architecture.md, "Caches and fast paths"): session
   * tokens and WhatsNew answers kept in memory (entries; 0 reads the store every time), the
   * SOAP request shape memo, WhatsNew tables rendered once per answer (tableMemo)...
   */
  readonly performance: { readonly tokenCacheEntries: number; readonly sessionMemoryEntries: number; readonly tokenReadWithRevisions: boolean; readonly newsCacheEntries: number; readonly shapeMemo: boolean; readonly tableMemo: boolean; readonly shadowPipelining: boolean; readonly shadowByteCompare: boolean; readonly shadowBatching: boolean; readonly groupCommit: boolean; readonly orderedTickets: boolean; readonly sqliteAsyncSync: boolean; readonly sqliteCheckpointThread: boolean; readonly sqliteMmapMiB: number; readonly sqliteCheckInBackground: boolean; readonly workersFirst: boolean; readonly workersStaggered: boolean; readonly pgGenericTokenPlans: boolean; readonly keepTickShape: boolean };
  /**
   * Addresses / CIDRs (or proxy-addr's names loopback, linklocal, uniquelocal) of reverse proxies
   * whose X-Forwarded-For / X-Forwarded-Proto are believed; empty: none, the socket peer is the source.
   */
  readonly trustedProxies: readonly string[];
  /** The health and metrics listener, never the public one; `port: null` turns it off. */
  readonly management: { readonly host: string; readonly port: number | null };
  /** The admin console under /admin/ on the management listener (src/console). */
  readonly console: { readonly enabled: boolean; readonly idleTimeoutMs: number; readonly absoluteTimeoutMs: number };
  readonly shutdown: {
    /** On SIGTERM, how long readiness reports 503 while still serving, so a load balancer drains. */
    readonly drainDelayMs: number;
    /** How long requests in flight may take to finish before connections are cut. */
    readonly timeoutMs: number;
  };
  readonly housekeeping: {
    readonly intervalMs: number;
    /** Rows deleted per short transaction, at most. */
    readonly batchSize: number;
    /** How long one batch should take (ms): its rows are scaled to fit; 0 always deletes batchSize rows. */
    readonly batchBudgetMs: number;
    /** Expired tokens and tickets are kept this long after expiry (for investigation), then deleted. */
    readonly tokenRetentionMs: number;
  };
  /** The config file that was read (absolute path), if any. */
  readonly configFile: string | null;
  /**
   * The old Authentication.asmx: lazy migration asks it about logins unknown here; url
   * null: off. The shadow and front modes (docs/cutover.md "Front and shadow") compare its
   * answers with ours, or let it answer.
   */
  readonly legacy: {
    readonly url: string | null;
    readonly timeoutMs: number;
    readonly allowInsecure: boolean;
    /** PEM file of the certificate(s) trusted for an https legacy.url instead of Node's bundled roots. */
    readonly caFile: string | null;
    /**
     * Token passthrough (docs/cutover.md#passthrough): tokens unknown here are asked of the old
     * service until this instant (ISO 8601, UTC); null: off.
     */
    readonly tokenPassthroughUntil: string | null;
    readonly passthroughCacheSeconds: number;
    readonly passthroughNegativeCacheSeconds: number;
    /**
     * Token adoption (docs/cutover.md#adoption): a token passthrough vouched for is stored here
     * when the old service's ValidateUserTokenJSON names its owner and expiry; false: never.
     */
    readonly adoptTokens: boolean;
    /** Calls to the old service's token operations in flight at most. */
    readonly maxConcurrent: number;
    /** Whole ValidateUserToken / GetUserLoginURL call to the old service. */
    readonly tokenTimeoutMs: number;
    /** Consecutive failures that open the circuit breaker, and how long it stays open. */
    readonly circuitFailures: number;
    readonly circuitCooldownMs: number;
    /** `serve`: svcapi-auth answers; `front`: the old service answers (all operations, or `frontOperations`). */
    readonly mode: 'serve' | 'front';
    /** Front mode: the operations the old service answers; empty: every request. */
    readonly frontOperations: readonly string[];
    readonly shadow: {
      /** Share of requests compared with the old service, 0 to 1 (default 0 in serve mode, 1 in front mode). */
      readonly rate: number;
      /** Comparisons waiting at most; one more is dropped and counted. */
      readonly queue: number;
      /** Comparisons (and requests to the old service for them) at a time. */
      readonly concurrency: number;
      /** Differences kept in the store for `compat shadow-report`. */
      readonly keep: number;
      /** Serve mode: ValidateUser(JSON) and GetUserLoginURL are sent to the old service too (they change its state). */
      readonly stateful: boolean;
      /** Largest answer of the old service read, in bytes. */
      readonly maxResponseBytes: number;
      /** Share of the event loop shadow work may use over the last second (src/compat/shadow-budget.ts); 1: no limit. */
      readonly cpuShare: number;
    };
  };
  /** Brute-force protection of ValidateUser (docs/security.md#brute-force-protection); `enabled: false` turns it off. */
  readonly bruteForce: ThrottlePolicy & { readonly enabled: boolean };
  /** Audit trail: events older than this many days are purged by housekeeping; 0 keeps them. */
  readonly audit: { readonly retentionDays: number };
  /** HTTPS on the public listener: PEM certificate chain and key files; both null: plain HTTP. */
  readonly tls: { readonly certFile: string | null; readonly keyFile: string | null };
  /**
   * The compatibility profile (`--compat FILE`, SVCAPI_COMPAT, `compat.profile`;
   * docs/compat-profile.md): the default profile unless a file is given, read and checked here.
   */
  readonly compat: { readonly file: string | null; readonly profile: CompatProfile };
}

/** Command-line flags as commander hands them over (strings, or numbers once parsed). */
export interface ConfigFlags {
  readonly host?: string;
  readonly port?: string | number;
  /** `--db` */
  readonly db?: string;
  readonly timeZone?: string;
  readonly logLevel?: string;
  /** `--config <path>` */
  readonly config?: string;
  readonly logPretty?: boolean;
  readonly logFile?: string;
  readonly trustedProxies?: string;
  readonly managementHost?: string;
  readonly managementPort?: string | number;
  readonly auditRetentionDays?: string | number;
  readonly tlsCert?: string;
  readonly tlsKey?: string;
  readonly compat?: string;
}

export interface LoadConfigInput {
  readonly flags?: ConfigFlags;
  readonly env?: NodeJS.ProcessEnv;
  /** The processes that will serve (`serve --workers`), for the defaults that share the machine among them; default 1. */
  readonly workers?: number;
}

export const DEFAULT_DATABASE_URL = 'sqlite:./data/svcapi-auth.db';
