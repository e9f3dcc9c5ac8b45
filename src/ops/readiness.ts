/**
 * Readiness, as /health/ready reports it: the public listener is serving and not draining, the
 * store answers, its schema is at least the version this build migrated it to at start, and it
 * takes writes.
 *
 * The last one is what "able to issue a token" needs and a read cannot show: a SQLite file that
 * turned read-only (or a PostgreSQL standby) answers every SELECT while every ValidateUser
 * fails. A write probe (Store.probeWrite: one row rewritten) runs every few seconds in the
 * background and its outcome is kept, so /health/ready costs no write and a load balancer
 * polling it often adds no load.
 */
import type { Logger } from 'pino';
import type { StoreLifecycle } from '../store/store.js';
import type { LegacyGuardStatus } from '../domain/legacy-guard.js';

export interface ReadinessReport {
  readonly ready: boolean;
  readonly status: 'ready' | 'not ready';
  readonly checks: {
    /** The public listener is up (false before listen and once shutdown began). */
    readonly serving: boolean;
    readonly draining: boolean;
    /** 'ok', or why the store did not answer. */
    readonly store: string;
    readonly schema: { readonly current: number | null; readonly expected: number; readonly ok: boolean };
    /** 'ok', or why the last write probe failed (e.g. "attempt to write a readonly database"). */
    readonly write: string;
    /**
     * Lazy migration's view of the old service (legacy-guard.ts), when one is configured. Not a
     * condition of readiness: a service that refuses to migrate still serves the users it has.
     */
    readonly legacy?: LegacyGuardStatus;
  };
}

export interface Readiness {
  /** Set once the public listener accepts connections. */
  setServing(serving: boolean): void;
  /** Shutdown began: from now on not ready, whatever the store says. */
  startDraining(): void;
  readonly draining: boolean;
  /** Reports lazy migration's state in the details from now on. */
  reportLegacy(status: () => LegacyGuardStatus): void;
  /** Starts the periodic write probe (a first probe at once); idempotent. */
  startWriteProbe(): void;
  /** Stops it and waits for a probe in progress; idempotent. */
  stopWriteProbe(): Promise<void>;
  check(): Promise<ReadinessReport>;
  /**
   * True while an instance of an older version may be serving from the same database: its probe
   * was seen within OLDER_VERSION_WINDOW_MS (Store.probeWrite, migration 18), or no probe of ours
   * has answered yet. Tickets are then issued where it looks for them (create-auth-service.ts).
   */
  olderVersionServing(): boolean;
}

export interface ReadinessOptions {
  readonly store: StoreLifecycle;
  /** The schema version the store had right after opening (and migrating) at start. */
  readonly expectedSchemaVersion: number;
  /** A store check slower than this counts as a failure (default 2000 ms). */
  readonly timeoutMs?: number;
  /** Time between two write probes (default 5000 ms). */
  readonly writeProbeIntervalMs?: number;
  /** Told when the store stops (warn) and starts again (info) taking writes. */
  readonly logger?: Logger;
  readonly now?: () => Date;
}

export const DEFAULT_WRITE_PROBE_INTERVAL_MS = 5000;

/**
 * How long after an older version's last probe it still counts as serving. It probes every
 * 5 seconds (DEFAULT_WRITE_PROBE_INTERVAL_MS, the same in every version since schema 8): ten
 * minutes outlast any stall of its probes, and once the last one is gone tickets go back to issue
 * order that much later, at no other cost.
 */
export const OLDER_VERSION_WINDOW_MS = 10 * 60_000;

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

interface ProbeOutcome {
  /** 'ok' or the reason. */
  readonly state: string;
  readonly at: number;
}

export function createReadiness(options: ReadinessOptions): Readiness {
  const timeoutMs = options.timeoutMs ?? 2000;
  const intervalMs = options.writeProbeIntervalMs ?? DEFAULT_WRITE_PROBE_INTERVAL_MS;
  const now = options.now ?? (() => new Date());
  let serving = false;
  let draining = false;
  let last: ProbeOutcome | null = null;
  let inFlight: Promise<ProbeOutcome> | null = null;
  let timer: NodeJS.Timeout | null = null;
  let legacy: (() => LegacyGuardStatus) | null = null;
  /** Date.now() until which an older version counts as serving; null until a probe has answered. */
  let olderUntil: number | null = null;
  const olderVersionServing = (): boolean => olderUntil === null || Date.now() < olderUntil;

  /** What the log last said: an older version serving (true), none (false), nothing yet (null). */
  let told: boolean | null = null;

  /** Keeps what a probe read back, and tells the operator when an older version appears or is gone. */
  function noteOlderVersion(msAgo: number | null): void {
    olderUntil = msAgo === null ? 0 : Date.now() + OLDER_VERSION_WINDOW_MS - msAgo;
    const older = olderVersionServing();
    const before = told;
    told = older;
    if (older && before !== true) {
      options.logger?.info({ lastProbeSecondsAgo: Math.round((msAgo ?? 0) / 1000) },
        'an instance of an older svcapi-auth version is serving from this database: login tickets go to the token table, where it looks for them, until none has probed for 10 minutes');
    } else if (!older && before === true) {
      options.logger?.info('no instance of an older svcapi-auth version has probed for 10 minutes: login tickets are kept in issue order');
    }
  }

  /** One probe at a time: a check arriving while one runs waits for that one. */
  function probe(): Promise<ProbeOutcome> {
    inFlight ??= (async (): Promise<ProbeOutcome> => {
      let state = 'ok';
      try {
        noteOlderVersion((await withTimeout(options.store.probeWrite(now()), timeoutMs)).olderVersionMsAgo);
      } catch (error) {
        state = (error as Error).message || 'write failed';
      }
      const outcome = { state, at: Date.now() };
      if (state !== 'ok' && last?.state !== state) options.logger?.warn({ reason: state }, 'readiness: the database does not take writes; /health/ready answers 503');
      else if (state === 'ok' && last !== null && last.state !== 'ok') options.logger?.info('readiness: the database takes writes again');
      last = outcome;
      return outcome;
    })().finally(() => {
      inFlight = null;
    });
    return inFlight;
  }

  /**
   * The kept outcome while it is recent; otherwise (no probe yet, the schedule not started, or
   * a probe that hangs past two periods) one probe now.
   */
  async function writeState(): Promise<string> {
    if (last !== null && Date.now() - last.at <= 2 * intervalMs) return last.state;
    return (await probe()).state;
  }

  return {
    olderVersionServing,
    reportLegacy(status) {
      legacy = status;
    },
    setServing(value) {
      serving = value;
    },
    startDraining() {
      draining = true;
    },
    get draining() {
      return draining;
    },
    startWriteProbe() {
      if (timer !== null) return;
      void probe();
      timer = setInterval(() => void probe(), intervalMs);
      timer.unref();
    },
    async stopWriteProbe() {
      if (timer !== null) clearInterval(timer);
      timer = null;
      await inFlight;
    },
    async check() {
      let storeState = 'ok';
      let current: number | null = null;
      try {
        await withTimeout(options.store.ping(), timeoutMs);
        current = await withTimeout(options.store.schemaVersion(), timeoutMs);
      } catch (error) {
        storeState = (error as Error).message || 'unreachable';
      }
      const schemaOk = current !== null && current >= options.expectedSchemaVersion;
      // Not worth a write when the store does not even answer a read.
      const write = storeState === 'ok' ? await writeState() : 'not checked: the store does not answer';
      const ready = serving && !draining && storeState === 'ok' && schemaOk && write === 'ok';
      return {
        ready,
        status: ready ? 'ready' : 'not ready',
        checks: { serving, draining, store: storeState, schema: { current, expected: options.expectedSchemaVersion, ok: schemaOk }, write, ...(legacy !== null && { legacy: legacy() }) },
      };
    },
  };
}
