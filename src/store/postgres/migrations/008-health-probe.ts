import type { PostgresMigration } from './postgres-migrations.js';

/**
 * Readiness (src/ops/readiness.ts) proves every few seconds that the database still takes a
 * committed write, by rewriting this one row: a standby, a read-only transaction default or a
 * full disk make /health/ready fail instead of every ValidateUser. One row for all instances:
 * the probe only needs the write to commit, not to keep anything.
 */
export const healthProbe: PostgresMigration = {
  version: 8,
  name: 'health probe',
  sql: `
CREATE TABLE health_probe (
  id        smallint    PRIMARY KEY CHECK (id = 1),
  probed_at timestamptz NOT NULL
);
INSERT INTO health_probe (id, probed_at) VALUES (1, 'epoch');
`,
};
