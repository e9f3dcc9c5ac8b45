/**
 * The audit trail's writer in `serve`: every event is written to the log at once (level
 * info, under an `audit` key) and appended to the database through a small in-process buffer, in
 * batches: every `flushIntervalMs` (100 ms) or as soon as `batchSize` (100) events wait. A request
 * never waits for the audit write.
 *
 * When the database is unreachable the events stay buffered and the write is retried; the buffer
 * is bounded (`maxBuffered`), and events that do not fit are dropped and counted
 * (svcapi_auth_audit_dropped_total) rather than ever holding up or failing a request. On shutdown
 * (close) what is buffered is flushed.
 *
 * The CLI writes its admin events straight to the store instead (src/cli/main.ts).
 */
import { Counter, Gauge, type Registry } from './prometheus.js';
import type { Logger } from 'pino';
import { AUDIT_EVENT_TYPES, authAuditEvents, LOGIN_FP_SECRET, newLoginFingerprintKey, toAuditEvent, type AuditInput } from '../domain/audit.js';
import type { AuthEvents } from '../domain/auth-events.js';
import type { NewAuditEvent, Store } from '../store/store.js';
import { pinoTarget } from './access-log.js';
import { CounterTallies } from './tallies.js';

export interface AuditTrailOptions {
  readonly store: Pick<Store, 'appendAudit' | 'getUser'>;
  readonly logger?: Logger;
  /** Where the audit metrics go (the service's registry); none without it. */
  readonly registry?: Registry;
  readonly flushIntervalMs?: number;
  readonly batchSize?: number;
  /** Events held at most while the store is slow or down; more are dropped and counted. */
  readonly maxBuffered?: number;
  /** Wait before writing again after a failed write. */
  readonly retryDelayMs?: number;
  readonly now?: () => Date;
  /** The installation's login fingerprint key (loadLoginFingerprintKey); a key of this process without it. */
  readonly loginFingerprintKey?: string;
  /** The audit line from a template (default true; false: through logger.info, the reference). */
  readonly fastLine?: boolean;
}

/** The installation's login fingerprint key, made on first use (audit.ts loginFingerprint). */
export function loadLoginFingerprintKey(store: Pick<Store, 'installationSecret'>): Promise<string> {
  return store.installationSecret(LOGIN_FP_SECRET, newLoginFingerprintKey());
}

export interface AuditStats {
  readonly buffered: number;
  readonly written: number;
  readonly dropped: number;
  readonly writeErrors: number;
}

export interface AuditTrail {
  /** Logs the event and queues it for the database; never throws, never waits. */
  record(input: AuditInput): void;
  /** The domain's outcome events, as audit events (createAuthService `events`). */
  readonly events: AuthEvents;
  /** Writes what is buffered now (and what arrives meanwhile); resolves when done or after a failed write. */
  flush(): Promise<void>;
  /** Flushes, then stops; events recorded afterwards are only logged (and counted as dropped). */
  close(): Promise<void>;
  stats(): AuditStats;
}

/** Rows per store call: one statement / transaction each. */
const WRITE_CHUNK = 500;

/** The event as a log field: every column, the time in ISO 8601. */
function logView(event: NewAuditEvent): Record<string, unknown> {
  return { ...event, at: event.at.toISOString() };
}

const json = (value: string | null): string => (value === null ? 'null' : JSON.stringify(value));

/**
 * Writes the `audit` line: the line `logger.info({ audit: logView(event) }, 'audit')` writes, from
 * a template when the logger allows one (as the access line, access-log.ts): a ticket issued
 * is one line per GetUserLoginURL, and pino's serialiser and redaction pass cost 5 µs of it.
 * Nothing to redact: the event's keys are the columns above, none of them a name pino censors,
 * and its texts were escaped by toAuditEvent. `fast: false` (tests) takes logger.info.
 */
function auditLine(logger: Logger | undefined, fast = true): ((event: NewAuditEvent) => void) | null {
  if (logger === undefined || !logger.isLevelEnabled('info')) return null;
  const target = fast ? pinoTarget(logger) : null;
  if (target === null) return (event) => logger.info({ audit: logView(event) }, 'audit');
  const head = `{"level":${logger.levels.values['info'] ?? 30},"time":`;
  const bindings = `${target.chindings},"audit":{"at":"`;
  return (event) => {
    target.write(`${head}${Date.now()}${bindings}${event.at.toISOString()}","type":${JSON.stringify(event.type)},"reason":${json(event.reason)},` +
      `"requestId":${json(event.requestId)},"appId":${event.appId === null ? 'null' : String(event.appId)},"login":${json(event.login)},` +
      `"sourceIp":${json(event.sourceIp)},"claimedIp":${json(event.claimedIp)},"tokenFp":${json(event.tokenFp)},` +
      `"detail":${event.detail === null ? 'null' : JSON.stringify(event.detail)}},"msg":"audit"}\n`);
  };
}

export function createAuditTrail(options: AuditTrailOptions): AuditTrail {
  const { store, logger } = options;
  const flushIntervalMs = options.flushIntervalMs ?? 100;
  const batchSize = Math.max(1, options.batchSize ?? 100);
  const maxBuffered = Math.max(batchSize, options.maxBuffered ?? 10_000);
  const retryDelayMs = options.retryDelayMs ?? 1000;
  const now = options.now ?? (() => new Date());

  let buffer: NewAuditEvent[] = [];
  let flushing: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let failing = false;
  const counts = { written: 0, dropped: 0, writeErrors: 0 };

  const registers = options.registry === undefined ? [] : [options.registry];
  const recordedTallies = new CounterTallies<'type'>();
  new Counter({
    name: 'svcapi_auth_audit_events_total', help: 'Audit events recorded, by type.', labelNames: ['type'], registers,
    collect() {
      recordedTallies.drainInto(this);
    },
  });
  const dropped = new Counter({ name: 'svcapi_auth_audit_dropped_total', help: 'Audit events not stored: the buffer was full while the database was slow or unreachable (they were still logged).', registers });
  const writeErrors = new Counter({ name: 'svcapi_auth_audit_write_errors_total', help: 'Failed writes of a batch of audit events (retried).', registers });
  new Gauge({
    name: 'svcapi_auth_audit_buffered', help: 'Audit events waiting to be written to the database.', registers,
    collect() {
      this.set(buffer.length);
    },
  });
  const knownTypes = new Set<string>(AUDIT_EVENT_TYPES);
  const writeLine = auditLine(logger, options.fastLine ?? true);

  const drop = (n: number): void => {
    if (n <= 0) return;
    counts.dropped += n;
    dropped.inc(n);
  };

  function schedule(delayMs: number): void {
    if (timer !== undefined || closed) return;
    timer = setTimeout(() => {
      timer = undefined;
      void flush();
    }, delayMs);
    timer.unref();
  }

  async function writeAll(): Promise<void> {
    while (buffer.length > 0) {
      const batch = buffer.slice(0, WRITE_CHUNK);
      try {
        await store.appendAudit(batch);
      } catch (error) {
        counts.writeErrors += 1;
        writeErrors.inc();
        if (!failing) logger?.warn({ err: error, buffered: buffer.length }, 'audit: cannot write to the database; keeping events buffered and retrying');
        failing = true;
        return;
      }
      buffer = buffer.slice(batch.length);
      counts.written += batch.length;
      if (failing) logger?.info({ buffered: buffer.length }, 'audit: writing to the database again');
      failing = false;
    }
  }

  function flush(): Promise<void> {
    if (flushing !== undefined) return flushing;
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (buffer.length === 0) return Promise.resolve();
    flushing = writeAll().finally(() => {
      flushing = undefined;
      if (buffer.length > 0) schedule(failing ? retryDelayMs : flushIntervalMs);
    });
    return flushing;
  }

  function record(input: AuditInput): void {
    let event: NewAuditEvent;
    try {
      event = toAuditEvent(input, now);
      writeLine?.(event);
      const type = knownTypes.has(event.type) ? event.type : 'other';
      recordedTallies.add(type, () => ({ type }));
    } catch {
      return; // an audit problem never reaches the request
    }
    if (closed || buffer.length >= maxBuffered) {
      drop(1);
      return;
    }
    buffer.push(event);
    if (buffer.length >= batchSize) void flush();
    else schedule(failing ? retryDelayMs : flushIntervalMs);
  }

  return {
    record,
    events: authAuditEvents(record, {
      loginOf: async (userId) => (await store.getUser(userId))?.login ?? null,
      ...(options.loginFingerprintKey !== undefined && { loginFingerprintKey: options.loginFingerprintKey }),
    }),
    flush,
    async close() {
      if (closed) return;
      // One last write of everything buffered (waiting for a write in progress first).
      await flushing;
      await flush();
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      if (buffer.length > 0) {
        logger?.error({ lost: buffer.length }, 'audit: events could not be written to the database before shutdown (they are in the log)');
        drop(buffer.length);
        buffer = [];
      }
    },
    stats: () => ({ buffered: buffer.length, ...counts }),
  };
}
