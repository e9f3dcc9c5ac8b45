import type { PostgresMigration } from './postgres-migrations.js';

/**
 * Twin of the SQLite migration 9: news attributes, extra per-item values (text by name) for
 * WhatsNew columns of the compatibility profile. A jsonb object on the row: a change is an UPDATE
 * of `news`, which the statement trigger of migration 5 turns into a new news revision. Adding a
 * column with a constant default rewrites nothing (PostgreSQL 11+).
 */
export const newsAttributes: PostgresMigration = {
  version: 9,
  name: 'news attributes',
  sql: `
ALTER TABLE news ADD COLUMN attributes jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(attributes) = 'object');
`,
};
