/**
 * Readiness, as /health/ready reports it: the public listener is serving and not draining, the
 * store answers, and its schema is at least the version this build migrated it to at start.
 */
import type { Store } from '../store/store.js';
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
  check(): Promise<ReadinessReport>;
}

export interface ReadinessOptions {
  readonly store: Store;
  /** The schema version the store had right after opening (and migrating) at start. */
  readonly expectedSchemaVersion: number;
  /** A store check slower than this counts as a failure (default 2000 ms). */
  readonly timeoutMs?: number;
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

export function createReadiness(options: ReadinessOptions): Readiness {
  const timeoutMs = options.timeoutMs ?? 2000;
  let serving = false;
  let draining = false;
  let legacy: (() => LegacyGuardStatus) | null = null;
  return {
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
      const ready = serving && !draining && storeState === 'ok' && schemaOk;
      return {
        ready,
        status: ready ? 'ready' : 'not ready',
        checks: { serving, draining, store: storeState, schema: { current, expected: options.expectedSchemaVersion, ok: schemaOk }, ...(legacy !== null && { legacy: legacy() }) },
      };
    },
  };
}
