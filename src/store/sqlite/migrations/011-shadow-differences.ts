import type { SqliteMigration } from './sqlite-migrations.js';

/**
 * The shadow and front modes (src/compat/shadow.ts) keep the last `legacy.shadow.keep`
 * differences between the old service's answers and ours here, for `compat shadow-report` in
 * another process. Rows are written already redacted (credentials as keyed fingerprints) and
 * pruned to the newest `keep` by each insert.
 */
export const shadowDifferences: SqliteMigration = {
  version: 11,
  name: 'shadow differences',
  sql: `
CREATE TABLE shadow_differences (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  observed_at  INTEGER NOT NULL,
  mode         TEXT    NOT NULL CHECK (mode IN ('shadow', 'front')),
  operation    TEXT,
  binding      TEXT    NOT NULL,
  request_json TEXT    NOT NULL,
  legacy_json  TEXT    NOT NULL,
  ours_json    TEXT    NOT NULL,
  diff         TEXT    NOT NULL
);
`,
};
