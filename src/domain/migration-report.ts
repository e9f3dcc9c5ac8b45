/**
 * `svcapi-auth users migration-report`: how many users are on each password hash
 * format, read with the same code that verifies hashes, so the report says exactly what a login
 * would meet. Formats other than argon2id with the current parameters are upgraded on the
 * user's next successful login; "needs-reset", "invalid" and "unknown" never verify here.
 * Also how many live sessions the old service issued (origin `legacy`: brought by `import
 * tokens` or stored by token adoption), so the operator sees them dwindle, and what token
 * passthrough's checks, relays and adoptions came to over the last 7 and 30 days, summed over
 * every `serve` on the database (legacy-token-tally.ts), with the last time the old service
 * vouched for a token: what tells the operator when passthrough can be turned off
 * (docs/cutover.md).
 */
import type { AccountStore, LegacyTally, LegacyTallyKind, LegacyTallyStore, TokenStore } from '../store/store.js';
import type { PasswordHasher } from './password-hasher.js';
import { inspectPasswordHash } from './legacy-hashes/stored-hash.js';
import { TOKEN_ADOPTION_RESULTS } from './legacy-token-adoption.js';
import { LEGACY_TOKEN_CHECK_RESULTS, LOGIN_URL_RELAY_RESULTS } from './legacy-token-passthrough.js';
import { DAY_MS, utcDay } from './legacy-token-tally.js';

export type HashStatus = 'current' | 'upgraded-on-login' | 'cannot-log-in';

export interface MigrationReport {
  readonly users: number;
  /** Most users first. */
  readonly formats: readonly { readonly format: string; readonly users: number; readonly status: HashStatus }[];
  /** Users the legacy service vouched for at their first login here (lazy migration). */
  readonly migratedByLegacyService: number;
  /** Live session tokens the old service issued (imported or adopted), as of the report. */
  readonly legacyTokensLive: number;
  readonly passthrough: PassthroughReport;
}

/** How many of one result over the last 7 and the last 30 UTC days, today included. */
export interface PassthroughCount {
  readonly result: string;
  readonly last7Days: number;
  readonly last30Days: number;
}

/** Token passthrough's tallies (legacy-token-tally.ts) as of the report, every instance summed. */
export interface PassthroughReport {
  /** The UTC day the windows end with (the report's), `YYYY-MM-DD`. */
  readonly today: string;
  /** The oldest day on record, or null when nothing was ever counted. */
  readonly countedSince: string | null;
  /** Checks of old tokens by result, every result in LEGACY_TOKEN_CHECK_RESULTS' order (then any other on record). */
  readonly checks: readonly PassthroughCount[];
  /** GetUserLoginURL relays to the old service, by result. */
  readonly relays: readonly PassthroughCount[];
  /** Adoptions tried, by result. */
  readonly adoptions: readonly PassthroughCount[];
  /**
   * The last check of an old token the old service vouched for: `valid` (its fresh yes) or
   * `cached_valid` (a yes of it kept for `legacy.passthroughCacheSeconds`): a client still using
   * an old token. null: never (in the days kept).
   */
  readonly lastVouchedAt: Date | null;
  /** Whole days from it to the report. */
  readonly lastVouchedDaysAgo: number | null;
}

/** The results of a check that the old service vouched for. */
const VOUCHED: ReadonlySet<string> = new Set(['valid', 'cached_valid']);

/** The passthrough section of the report from the tallies' rows, as of `now`. */
export function passthroughReport(rows: readonly LegacyTally[], now: Date): PassthroughReport {
  const nowMs = now.getTime();
  const today = utcDay(nowMs);
  const from7 = utcDay(nowMs - 6 * DAY_MS);
  const from30 = utcDay(nowMs - 29 * DAY_MS);
  const counts = (kind: LegacyTallyKind, known: readonly string[]): PassthroughCount[] => {
    const byResult = new Map<string, { last7Days: number; last30Days: number }>(known.map((r) => [r, { last7Days: 0, last30Days: 0 }]));
    for (const row of rows) {
      if (row.kind !== kind) continue;
      let entry = byResult.get(row.result);
      if (entry === undefined) {
        entry = { last7Days: 0, last30Days: 0 };
        byResult.set(row.result, entry);
      }
      // A day after today (another instance's clock ahead) counts in both windows.
      if (row.day >= from7) entry.last7Days += row.count;
      if (row.day >= from30) entry.last30Days += row.count;
    }
    return [...byResult].map(([result, c]) => ({ result, ...c }));
  };
  let lastVouched: number | null = null;
  let since: string | null = null;
  for (const row of rows) {
    if (since === null || row.day < since) since = row.day;
    if (row.kind === 'check' && VOUCHED.has(row.result) && row.count > 0 && (lastVouched === null || row.lastAt.getTime() > lastVouched)) lastVouched = row.lastAt.getTime();
  }
  return {
    today,
    countedSince: since,
    checks: counts('check', LEGACY_TOKEN_CHECK_RESULTS),
    relays: counts('relay', LOGIN_URL_RELAY_RESULTS),
    adoptions: counts('adoption', TOKEN_ADOPTION_RESULTS),
    lastVouchedAt: lastVouched === null ? null : new Date(lastVouched),
    lastVouchedDaysAgo: lastVouched === null ? null : Math.max(0, Math.floor((nowMs - lastVouched) / DAY_MS)),
  };
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

export async function migrationReport(store: AccountStore & TokenStore & LegacyTallyStore, hasher: PasswordHasher, pageSize = 1000, now: Date = new Date()): Promise<MigrationReport> {
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
  const passthrough = passthroughReport(await store.listLegacyTallies(), now);
  return { users, formats, migratedByLegacyService: migrated, legacyTokensLive, passthrough };
}
