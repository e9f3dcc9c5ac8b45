import type { StoreMigration } from './store-migrations.js';

/**
 * News attributes: extra per-item values, text by name, for WhatsNew columns a legacy service had
 * besides the usual fields (compatibility profile `whatsNew.columns[].from.attribute`). One JSON
 * object per row rather than a table of its own: they are read with the row, only ever all
 * together, and a change to them is an UPDATE of `news`, so the news revision triggers of
 * migration 5 move with it and WhatsNew's memory (news-cache.ts) sees it on the next request.
 * A CHECK keeps raw SQL from storing anything but an object; the JSON functions that say so are
 * each dialect's own. Adding a column with a constant default rewrites nothing (PostgreSQL 11+).
 */
export const newsAttributes: StoreMigration = {
  version: 9,
  name: 'news attributes',
  sql: {
    sqlite: `
ALTER TABLE news ADD COLUMN attributes TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(attributes) AND json_type(attributes) = 'object');
`,
    postgres: `
ALTER TABLE news ADD COLUMN attributes jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(attributes) = 'object');
`,
  },
};
