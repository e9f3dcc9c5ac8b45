import type { StoreMigration } from './store-migrations.js';

/**
 * Secrets of this installation, made once and kept with the data (so every instance, the CLI, a
 * backup and a restore agree on them): the key of the audit trail's login fingerprints
 * (src/domain/audit.ts). Written by installationSecret, never by a migration, so the randomness
 * is Node's.
 */
export const installationSecrets: StoreMigration = {
  version: 7,
  name: 'installation secrets',
  sql: (d) => `
CREATE TABLE installation_secrets (
  name       ${d.text} PRIMARY KEY,
  secret     ${d.text} NOT NULL,
  created_at ${d.time} NOT NULL
);
`,
};
