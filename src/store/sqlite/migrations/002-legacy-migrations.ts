import type { SqliteMigration } from './sqlite-migrations.js';

/**
 * Issue 7: users the legacy ASMX service vouched for at their first login here (lazy migration).
 * A row per user, deleted with the user; the password hash itself lives in users as always.
 */
export const legacyMigrations: SqliteMigration = {
  version: 2,
  name: 'legacy migrations',
  sql: `
CREATE TABLE legacy_migrations (
  user_id     INTEGER NOT NULL PRIMARY KEY REFERENCES users (user_id) ON DELETE CASCADE,
  migrated_at INTEGER NOT NULL
);
`,
};
