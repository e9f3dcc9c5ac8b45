/**
 * Everything `serve` runs beside the public listener, put together in one place: metrics,
 * readiness, the management listener, scheduled housekeeping and the graceful shutdown.
 *
 * serve.ts uses it in this order:
 *   const ops = await createOpsRuntime({ config, store, logger });
 *   ... createAuthService({ hasher: ops.hasher(h), events: ops.metrics.events }),
 *       buildApp({ onRequestDone: ops.metrics.observeRequest, draining: ops.draining }) ...
 *   await app.listen(...); const { managementUrl } = await ops.start();
 *   ... await ops.shutdown(app, reason) on a signal ... finally await ops.close()
 */
import type { AsmxApp } from '../http/app.js';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { PasswordHasher } from '../domain/password-hasher.js';
import { combineAuthEvents, type AuthEvents } from '../domain/auth-events.js';
import type { Store } from '../store/store.js';
import { auditPurgeTask, startHousekeeping, throttlePurgeTask, tokenPurgeTask, type Housekeeping } from './housekeeping.js';
import { createAuditTrail, loadLoginFingerprintKey, type AuditTrail } from './audit-trail.js';
import { startManagementServer, type ManagementMount, type ManagementServer } from './management-server.js';
import { createMetrics, type ServiceMetrics } from './metrics.js';
import { createReadiness, type Readiness } from './readiness.js';
import { gracefulShutdown } from './shutdown.js';
import { packageVersion } from './version.js';

/** `audit` may be left out (tests): retention then defaults to 90 days. */
export type OpsConfig = Pick<Config, 'management' | 'shutdown' | 'housekeeping'> & { readonly audit?: Config['audit'] }
  // Brute-force counters are purged whenever they exist; known-good sources after knownSourceDays (default 30).
  & { readonly bruteForce?: Pick<Config['bruteForce'], 'knownSourceDays'> }
  // Log lines from templates (the audit line too; default true).
  & { readonly accessLogFast?: boolean };

export interface OpsRuntime {
  readonly metrics: ServiceMetrics;
  readonly readiness: Readiness;
  /** The audit trail: log + buffered database writes; flushed by close(). */
  readonly audit: AuditTrail;
  /** Metrics and audit together, for createAuthService `events`. */
  readonly events: AuthEvents;
  /** The hasher with its in-flight operations counted. */
  hasher(inner: PasswordHasher): PasswordHasher;
  /** For buildApp: true once shutdown has begun. */
  readonly draining: () => boolean;
  /**
   * Once the public listener is up: starts the management listener (with the admin console
   * mounted under /admin/ when given) and housekeeping; marks serving.
   */
  start(options?: { readonly console?: ManagementMount }): Promise<{ readonly managementUrl: string | null }>;
  /** Drains and closes the public listener (see shutdown.ts); SIGTERM waits the drain delay, other reasons do not. */
  shutdown(app: AsmxApp, reason: string): Promise<void>;
  /** Stops housekeeping, flushes the audit trail and closes the management listener; idempotent. */
  close(): Promise<void>;
}

export interface OpsRuntimeOptions {
  readonly config: OpsConfig;
  readonly store: Store;
  readonly logger?: Logger;
}

export async function createOpsRuntime(options: OpsRuntimeOptions): Promise<OpsRuntime> {
  const { config, store, logger } = options;
  // The store was opened (and migrated) just before: its version now is the one this build needs.
  const readiness = createReadiness({ store, expectedSchemaVersion: await store.schemaVersion(), logger });
  const metrics = createMetrics({ store, readiness, logger, version: packageVersion() });
  const audit = createAuditTrail({ store, logger, registry: metrics.registry, loginFingerprintKey: await loadLoginFingerprintKey(store), fastLine: config.accessLogFast ?? true });
  const auditRetentionDays = config.audit?.retentionDays ?? 90;
  let management: ManagementServer | undefined;
  let housekeeping: Housekeeping | undefined;
  let closed = false;

  return {
    metrics,
    readiness,
    audit,
    events: combineAuthEvents(metrics.events, audit.events),
    hasher: (inner) => metrics.instrumentHasher(inner),
    draining: () => readiness.draining,
    async start(startOptions = {}) {
      if (config.management.port !== null) {
        try {
          management = await startManagementServer({
            host: config.management.host, port: config.management.port, readiness, registry: metrics.registry, logger,
            ...(startOptions.console !== undefined && { console: startOptions.console }),
          });
        } catch (error) {
          throw new Error(`cannot listen on ${config.management.host}:${config.management.port} (management.port): ${(error as Error).message}`);
        }
      }
      housekeeping = startHousekeeping({
        tasks: [
          tokenPurgeTask(store, config.housekeeping.tokenRetentionMs), ...(auditRetentionDays > 0 ? [auditPurgeTask(store, auditRetentionDays)] : []),
          throttlePurgeTask(store, config.bruteForce?.knownSourceDays ?? 30),
        ],
        intervalMs: config.housekeeping.intervalMs,
        batchSize: config.housekeeping.batchSize,
        batchBudgetMs: config.housekeeping.batchBudgetMs,
        logger,
        onReport: (report) => metrics.housekeepingRun(report),
      });
      // Readiness includes "the database takes writes": a probe now, then every few seconds.
      readiness.startWriteProbe();
      readiness.setServing(true);
      return { managementUrl: management?.url ?? null };
    },
    async shutdown(app, reason) {
      await housekeeping?.stop();
      await gracefulShutdown({
        app,
        readiness,
        drainDelayMs: reason === 'SIGTERM' ? config.shutdown.drainDelayMs : 0,
        timeoutMs: config.shutdown.timeoutMs,
        logger,
      });
      readiness.setServing(false);
    },
    async close() {
      if (closed) return;
      closed = true;
      readiness.setServing(false);
      await readiness.stopWriteProbe();
      await housekeeping?.stop();
      await audit.close();
      await management?.close();
    },
  };
}
