import type { StoreMigration } from './store-migrations.js';

/**
 * The index of tokens by application (migration 1) goes: no hot query reads it, and every token
 * issued, revoked or purged paid a write into it (on 10 million tokens about a quarter of the
 * token data's pages: 700 MB of the SQLite file, a B-tree page dirtied per token issued and per
 * expired token deleted).
 *
 * Its one reader was the revocation of an application's tokens when the application is
 * disabled (shared-sql.ts revokeAppTokens): an operator's rare act, which now scans the token
 * table instead of the application's part of the index; it updates every live token of the
 * application either way. Deleting an application row, which would need the index for its
 * foreign-key check, is something neither the service nor the CLI does. Revocation by user
 * (tokens_user), the purge (tokens_expires) and lookups by hash (the primary key) are untouched.
 */
export const dropTokensAppIndex: StoreMigration = {
  version: 14,
  name: 'drop tokens_app index',
  sql: () => `
DROP INDEX tokens_app;
`,
};
