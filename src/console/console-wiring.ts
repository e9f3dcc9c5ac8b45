/**
 * The admin console put together from the real parts: the store, the password hasher, the
 * audit trail, the service's own WhatsNew (a service with a clock set to the preview's time) and
 * the wire layer's DataTable writer, compiled once. `serve` calls this; tests may too.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { createAdminAccounts, type ConsoleSessionPolicy } from '../domain/admin-accounts.js';
import { createAdminService } from '../domain/admin-service.js';
import type { AuditRecorder } from '../domain/audit.js';
import type { ThrottlePolicy } from '../domain/login-throttle.js';
import { migrationReport } from '../domain/migration-report.js';
import type { PasswordHasher } from '../domain/password-hasher.js';
import { createAuthService } from '../domain/create-auth-service.js';
import { compileNewsRow } from '../http/news-rows.js';
import { DEFAULT_COMPAT_PROFILE, type NewsTableProfile } from '../contract/compat-profile.js';
import type { Store } from '../store/store.js';
import { compileContract } from '../wire/compiled-contract.js';
import { createConsole, type ConsoleHandler, type MetricSample } from './console-app.js';

export interface ConsoleWiring {
  readonly store: Store;
  /** The service's hasher (argon2id, legacy formats recognised): new passwords, console logins, the migration report. */
  readonly hasher: PasswordHasher;
  /** The audit trail's recorder (ops.audit.record in serve). */
  readonly audit: AuditRecorder;
  /** The service's brute-force settings: the console's login counters use the same limits. */
  readonly throttle: ThrottlePolicy;
  readonly sessions: ConsoleSessionPolicy;
  /** DateTime offsets of the DataTable, as the service writes them (config timeZone). */
  readonly timeZone: string;
  /** WhatsNew's table as the compatibility profile shapes it (columns, maxRows); svcapi-auth's own by default. */
  readonly newsTable?: NewsTableProfile;
  /** Where the move dashboard's figures come from (the service's registry). */
  readonly registry?: Registry;
  readonly logger?: Logger;
}

/** Metric families the move dashboard shows: hash formats, login outcomes, and anything about the legacy service. */
const MOVE_METRIC = /legacy|migrat|passthrough|shadow|password_hashes|logins_total/;

export function wireConsole(w: ConsoleWiring): ConsoleHandler {
  const newsTable = w.newsTable ?? DEFAULT_COMPAT_PROFILE.whatsNew;
  // The same table writer and row mapping the public listener compiles (http/app.ts, operation-handlers.ts).
  const table = compileContract({ timeZone: w.timeZone, newsTable }).table;
  const rowOf = compileNewsRow(newsTable);
  const maxRows = newsTable.maxRows;
  const accounts = createAdminAccounts({ store: w.store, hasher: w.hasher, audit: w.audit, throttle: w.throttle, sessions: w.sessions });
  return createConsole({
    accounts,
    admin: (actor) => createAdminService({ store: w.store, hasher: w.hasher, audit: w.audit, actor, throttle: w.throttle }),
    // The real WhatsNew, with its clock at the preview's time and no cache (a preview is rare).
    preview: (at, input) => createAuthService({
      store: w.store, hasher: w.hasher, clock: { now: () => at }, newsCacheEntries: 0, tokenCacheEntries: 0, ...(maxRows !== null && { maxNews: maxRows }),
    }).whatsNew({ ...input, qtyNews: maxRows === null ? input.qtyNews : Math.min(input.qtyNews, maxRows) }, { sourceIp: '', requestId: 'console-preview' }),
    renderTable: (items) => table.indented(items.map(rowOf), ''),
    attributeColumns: newsTable.columns.flatMap((c) => ('attribute' in c.from ? [{ column: c.name, attribute: c.from.attribute }] : [])),
    loginFailures: async (login, limit) => {
      const [failures, throttled] = await Promise.all([
        w.store.queryAudit({ login, type: 'login.failure', limit }),
        w.store.queryAudit({ login, type: 'login.throttled', limit }),
      ]);
      return [...failures, ...throttled].sort((a, b) => b.id - a.id).slice(0, limit);
    },
    migrationReport: () => migrationReport(w.store, w.hasher),
    shadowDifferences: (limit) => w.store.listShadowDifferences(limit),
    moveMetrics: async () => {
      if (w.registry === undefined) return [];
      const families = await w.registry.getMetricsAsJSON();
      const samples: MetricSample[] = [];
      for (const family of families) {
        if (!MOVE_METRIC.test(family.name)) continue;
        for (const v of family.values) samples.push({ name: (v as { metricName?: string }).metricName ?? family.name, labels: { ...v.labels } as Record<string, string | number>, value: v.value });
      }
      return samples;
    },
    ...(w.logger !== undefined && { logger: w.logger }),
  });
}
