/**
 * `svcapi-auth users migration-report`: how many users are on each password hash
 * format, read with the same code that verifies hashes, so the report says exactly what a login
 * would meet. Formats other than argon2id with the current parameters are upgraded on the
 * user's next successful login; "needs-reset", "invalid" and "unknown" never verify here.
 * Also how many live sessions the old service issued (origin `legacy`: brought by `import
 * tokens` or stored by token adoption), so the operator sees them dwindle; the adoptions
 * themselves happen in `serve` and are counted by its metrics (docs/cutover.md#adoption).
 */
import type { AccountStore, TokenStore } from '../store/store.js';
import type { PasswordHasher } from './password-hasher.js';
import { inspectPasswordHash } from './legacy-hashes/stored-hash.js';

export type HashStatus = 'current' | 'upgraded-on-login' | 'cannot-log-in';

export interface MigrationReport {
  readonly users: number;
  /** Most users first. */
  readonly formats: readonly { readonly format: string; readonly users: number; readonly status: HashStatus }[];
  /** Users the legacy service vouched for at their first login here (lazy migration). */
  readonly migratedByLegacyService: number;
  /** Live session tokens the old service issued (imported or adopted), as of the report. */
  readonly legacyTokensLive: number;
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

export async function migrationReport(store: AccountStore & TokenStore, hasher: PasswordHasher, pageSize = 1000, now: Date = new Date()): Promise<MigrationReport> {
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
  let legacyTokensLive = 0;
  for (let afterHash: string | null = null; ;) {
    const page = await store.listLiveTokens({ liveAt: now, afterHash, limit: pageSize });
    for (const token of page) if (token.origin === 'legacy' && token.kind === 'session') legacyTokensLive += 1;
    const last = page.at(-1);
    if (page.length < pageSize || last === undefined) break;
    afterHash = last.tokenHash;
  }
  return { users, formats, migratedByLegacyService: migrated, legacyTokensLive };
}
