import type { StoreMigration } from './store-migrations.js';

/**
 * Users the legacy ASMX service vouched for at their first login here (lazy migration). A row per
 * user, deleted with the user; the password hash itself lives in users as always.
 */
export const legacyMigrations: StoreMigration = {
  version: 2,
  name: 'legacy migrations',
  sql: (d) => `
CREATE TABLE legacy_migrations (
  user_id     ${d.bigint} NOT NULL PRIMARY KEY REFERENCES users (user_id) ON DELETE CASCADE,
  migrated_at ${d.time} NOT NULL
);
`,
};
