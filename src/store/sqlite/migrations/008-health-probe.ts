import type { SqliteMigration } from './sqlite-migrations.js';

/**
 * Readiness (src/ops/readiness.ts) proves every few seconds that the database still takes a
 * committed write, by rewriting this one row: a file that turned read-only, or a schema that
 * cannot be written, makes /health/ready fail instead of every ValidateUser. One row for all
 * processes: the probe only needs the write to commit, not to keep anything.
 */
export const healthProbe: SqliteMigration = {
  version: 8,
  name: 'health probe',
  sql: `
CREATE TABLE health_probe (
  id        INTEGER PRIMARY KEY CHECK (id = 1),
  probed_at INTEGER NOT NULL
);
INSERT INTO health_probe (id, probed_at) VALUES (1, 0);
`,
};
