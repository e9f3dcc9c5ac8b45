import type { StoreMigration } from './store-migrations.js';

/**
 * Token passthrough's tallies (src/domain/legacy-token-tally.ts; docs/cutover.md): how the checks
 * of the old service's tokens, their GetUserLoginURL relays and their adoptions ended, per UTC
 * day (`YYYY-MM-DD`) and result, summed over every `serve` process and instance on the database,
 * for the migration report, which runs in another process. `serve` counts in memory and adds
 * what it counted about once a minute (count = count + n, so instances and restarts sum);
 * `last_at` is when the last one counted in the row happened. Counts and times only: no token,
 * fingerprint, login or address. Each write deletes the days older than 90, except each kind and
 * result's newest day, so the report can still say when an old token was last vouched for.
 */
export const legacyTokenTallies: StoreMigration = {
  version: 16,
  name: 'legacy token tallies',
  sql: (d) => `
CREATE TABLE legacy_token_tallies (
  day     ${d.key} NOT NULL,
  kind    ${d.key} NOT NULL CHECK (kind IN ('check', 'relay', 'adoption')),
  result  ${d.key} NOT NULL,
  count   ${d.bigint} NOT NULL CHECK (count >= 0),
  last_at ${d.time} NOT NULL,
  PRIMARY KEY (day, kind, result)
)${d.withoutRowid};
`,
};
