import type { DialectName, SqlDialect } from '../sql-dialect.js';
import { POSTGRES_DIALECT, SQLITE_DIALECT } from '../sql-dialect.js';
import { initialSchema } from './001-initial-schema.js';
import { legacyMigrations } from './002-legacy-migrations.js';
import { bruteForce } from './003-brute-force.js';
import { auditEvents } from './004-audit-events.js';
import { newsRevision } from './005-news-revision.js';
import { accessRevision } from './006-access-revision.js';
import { installationSecrets } from './007-installation-secrets.js';
import { healthProbe } from './008-health-probe.js';
import { newsAttributes } from './009-news-attributes.js';
import { adminConsole } from './010-admin-console.js';
import { shadowDifferences } from './011-shadow-differences.js';
import { tokenOrigin } from './012-token-origin.js';
import { purgeKeepsAccessRevision } from './013-purge-keeps-access-revision.js';
import { dropTokensAppIndex } from './014-drop-tokens-app-index.js';
import { tokenIndexOrder } from './015-token-index-order.js';
import { legacyTokenTallies } from './016-legacy-token-tallies.js';
import { orderedTickets } from './017-ordered-tickets.js';
import { olderVersionProbes } from './018-older-version-probes.js';

/**
 * One schema version, described once for both adapters. Applied in ascending order; never
 * renumber or edit one that has shipped (deployed databases ran it: the SQL each dialect gets
 * must keep building the same schema, test/store/schema-fixture.test.ts), add a new one.
 */
export interface StoreMigration {
  readonly version: number;
  readonly name: string;
  /**
   * The SQL written once with the dialect's words (src/store/sql-dialect.ts), or, where the dialects
   * really differ (triggers, JSON checks), one text per dialect.
   */
  readonly sql: ((dialect: SqlDialect) => string) | { readonly [D in DialectName]: string };
}

/** What an adapter applies: a migration rendered for its dialect. */
export interface DialectMigration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export const STORE_MIGRATIONS: readonly StoreMigration[] = Object.freeze([
  initialSchema, legacyMigrations, bruteForce, auditEvents, newsRevision, accessRevision, installationSecrets, healthProbe, newsAttributes,
  adminConsole, shadowDifferences, tokenOrigin, purgeKeepsAccessRevision, dropTokensAppIndex, tokenIndexOrder,
  legacyTokenTallies, orderedTickets, olderVersionProbes,
]);

const DIALECTS: { readonly [D in DialectName]: SqlDialect } = { sqlite: SQLITE_DIALECT, postgres: POSTGRES_DIALECT };

export function renderMigrations(dialect: DialectName, migrations: readonly StoreMigration[] = STORE_MIGRATIONS): readonly DialectMigration[] {
  return Object.freeze(migrations.map((m) => Object.freeze({
    version: m.version,
    name: m.name,
    sql: typeof m.sql === 'function' ? m.sql(DIALECTS[dialect]) : m.sql[dialect],
  })));
}

export const LATEST_SCHEMA_VERSION = STORE_MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);
