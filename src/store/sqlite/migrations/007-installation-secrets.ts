import type { SqliteMigration } from './sqlite-migrations.js';

/**
 * Secrets of this installation, made once and kept with the data (so every instance, the CLI,
 * a backup and a restore agree on them): the key of the audit trail's login fingerprints
 * (src/domain/audit.ts). Written by Store.installationSecret, never by a migration, so the
 * randomness is Node's.
 */
export const installationSecrets: SqliteMigration = {
  version: 7,
  name: 'installation secrets',
  sql: `
CREATE TABLE installation_secrets (
  name       TEXT    PRIMARY KEY,
  secret     TEXT    NOT NULL,
  created_at INTEGER NOT NULL
);
`,
};
