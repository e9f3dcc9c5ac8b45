import type { StoreMigration } from './store-migrations.js';

/**
 * The shadow and front modes (src/compat/shadow.ts) keep the last `legacy.shadow.keep`
 * differences between the old service's answers and ours here, for `compat shadow-report` in
 * another process. Rows are written already redacted (credentials as keyed fingerprints) and
 * pruned to the newest `keep` by each insert.
 */
export const shadowDifferences: StoreMigration = {
  version: 11,
  name: 'shadow differences',
  sql: (d) => `
CREATE TABLE shadow_differences (
  id           ${d.serialId},
  observed_at  ${d.time} NOT NULL,
  mode         ${d.text} NOT NULL CHECK (mode IN ('shadow', 'front')),
  operation    ${d.text},
  binding      ${d.text} NOT NULL,
  request_json ${d.text} NOT NULL,
  legacy_json  ${d.text} NOT NULL,
  ours_json    ${d.text} NOT NULL,
  diff         ${d.text} NOT NULL
);
`,
};
