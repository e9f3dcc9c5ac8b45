/**
 * `svcapi-auth users migration-report` (issue 7): how many users are on each password hash
 * format, read with the same code that verifies hashes, so the report says exactly what a login
 * would meet. Formats other than argon2id with the current parameters are upgraded on the
 * user's next successful login; "needs-reset", "invalid" and "unknown" never verify here.
 */
import type { AccountStore } from '../store/store.js';
import type { PasswordHasher } from './password-hasher.js';
import { inspectPasswordHash } from './legacy-hashes/stored-hash.js';

export type HashStatus = 'current' | 'upgraded-on-login' | 'cannot-log-in';

export interface MigrationReport {
  readonly users: number;
  /** Most users first. */
  readonly formats: readonly { readonly format: string; readonly users: number; readonly status: HashStatus }[];
  /** Users the legacy service vouched for at their first login here (lazy migration). */
  readonly migratedByLegacyService: number;
}

/** The report's name for a stored hash's format. */
export function hashFormatOf(passwordHash: string, hasher: PasswordHasher): { format: string; status: HashStatus } {
  const found = inspectPasswordHash(passwordHash);
  switch (found.kind) {
    case 'argon2':
      if (!hasher.needsRehash(passwordHash)) return { format: found.format, status: 'current' };
      return { format: found.format === 'argon2id' ? 'argon2id-weak' : found.format, status: 'upgraded-on-login' };
    case 'legacy':
      return { format: found.format, status: 'upgraded-on-login' };
    default:
      return { format: found.format, status: 'cannot-log-in' };
  }
}

export async function migrationReport(store: AccountStore, hasher: PasswordHasher, pageSize = 1000): Promise<MigrationReport> {
  const counts = new Map<string, { users: number; status: HashStatus }>();
  let users = 0;
  let migrated = 0;
  let after = 0;
  for (;;) {
    const page = await store.listPasswordHashes({ afterUserId: after, limit: pageSize });
    for (const row of page) {
      const { format, status } = hashFormatOf(row.passwordHash, hasher);
      const entry = counts.get(format) ?? { users: 0, status };
      entry.users += 1;
      counts.set(format, entry);
      users += 1;
      if (row.legacyMigratedAt !== null) migrated += 1;
      after = row.userId;
    }
    if (page.length < pageSize) break;
  }
  const formats = [...counts.entries()]
    .map(([format, c]) => ({ format, users: c.users, status: c.status }))
    .sort((a, b) => b.users - a.users || a.format.localeCompare(b.format));
  return { users, formats, migratedByLegacyService: migrated };
}
