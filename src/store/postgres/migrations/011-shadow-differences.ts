import type { PostgresMigration } from './postgres-migrations.js';

/**
 * The shadow and front modes (src/compat/shadow.ts) keep the last `legacy.shadow.keep`
 * differences between the old service's answers and ours here, for `compat shadow-report` in
 * another process. Rows are written already redacted (credentials as keyed fingerprints) and
 * pruned to the newest `keep` by each insert.
 */
export const shadowDifferences: PostgresMigration = {
  version: 11,
  name: 'shadow differences',
  sql: `
CREATE TABLE shadow_differences (
  id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  observed_at  timestamptz NOT NULL,
  mode         text        NOT NULL CHECK (mode IN ('shadow', 'front')),
  operation    text,
  binding      text        NOT NULL,
  request_json text        NOT NULL,
  legacy_json  text        NOT NULL,
  ours_json    text        NOT NULL,
  diff         text        NOT NULL
);
`,
};
