import type { PostgresMigration } from './postgres-migrations.js';

/**
 * Issue 7 (twin of the SQLite migration 2): users the legacy ASMX service vouched for at their
 * first login here (lazy migration). A row per user, deleted with the user.
 */
export const legacyMigrations: PostgresMigration = {
  version: 2,
  name: 'legacy migrations',
  sql: `
CREATE TABLE legacy_migrations (
  user_id     bigint      NOT NULL PRIMARY KEY REFERENCES users (user_id) ON DELETE CASCADE,
  migrated_at timestamptz NOT NULL
);
`,
};
