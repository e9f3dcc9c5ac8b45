import type { PostgresMigration } from './postgres-migrations.js';

/**
 * Twin of the SQLite migration 7: secrets of this installation, made once and kept with the
 * data (every instance, the CLI, a backup agree on them): the key of the audit trail's login
 * fingerprints (src/domain/audit.ts). Written by Store.installationSecret, never by a migration.
 */
export const installationSecrets: PostgresMigration = {
  version: 7,
  name: 'installation secrets',
  sql: `
CREATE TABLE installation_secrets (
  name       text        PRIMARY KEY,
  secret     text        NOT NULL,
  created_at timestamptz NOT NULL
);
`,
};
