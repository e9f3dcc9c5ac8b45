import type { StoreMigration } from './store-migrations.js';

/**
 * Readiness (src/ops/readiness.ts) proves every few seconds that the database still takes a
 * committed write, by rewriting this one row: a file that turned read-only, a standby, a
 * read-only transaction default or a full disk make /health/ready fail instead of every
 * ValidateUser. One row for all processes and instances: the probe only needs the write to
 * commit, not to keep anything.
 */
export const healthProbe: StoreMigration = {
  version: 8,
  name: 'health probe',
  sql: (d) => `
CREATE TABLE health_probe (
  id        ${d.pick({ sqlite: 'INTEGER', postgres: 'smallint' })} PRIMARY KEY CHECK (id = 1),
  probed_at ${d.time} NOT NULL
);
INSERT INTO health_probe (id, probed_at) VALUES (1, ${d.pick({ sqlite: '0', postgres: "'epoch'" })});
`,
};
