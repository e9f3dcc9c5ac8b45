import type { StoreMigration } from './store-migrations.js';

/**
 * Where each token was issued, for the operator (console sessions list, `token list`): 'ours'
 * by ValidateUser here, 'legacy' by the old service and brought over by `import tokens`. Rows
 * that exist already were all issued here or by an import made before this column: 'ours' is
 * the default, and the only value a row can hold without being told otherwise.
 *
 * The access revision triggers (migration 6) name their columns, so setting or changing the
 * origin moves nothing there; adding a column with a constant default rewrites no row (on
 * PostgreSQL the CHECK is a scan under the migration's lock, once).
 */
export const tokenOrigin: StoreMigration = {
  version: 12,
  name: 'token origin',
  sql: (d) => `
ALTER TABLE tokens ADD COLUMN origin ${d.text} NOT NULL DEFAULT 'ours' CHECK (origin IN ('ours', 'legacy'));
`,
};
