/**
 * Tokens the old service issued, carried across the switch (`svcapi-auth import tokens FILE`):
 * every GPS device and web session holding a live legacy token keeps working the day svcapi-auth
 * takes over, instead of all logging in again at once.
 *
 * Each row names a token, its login, its AppID and its expiry. The token is stored as ours are:
 * only the SHA-256 of its canonical text, never the text; it then validates, expires and is
 * revoked like any token issued here. Rows are never guessed at: an unknown login or application,
 * a user without the grant, an expiry that is no date, an expired token or a text that is no token
 * is reported (by line number and login, never the token) and skipped.
 */
import type { AccountStore, TokenStore } from '../store/store.js';
import type { Clock } from './clock.js';
import { loginKey } from './logins.js';
import { canonicalToken, hashToken } from './tokens.js';
import { parseSqlDate } from './legacy-import.js';

/** One CSV row, keyed by lower-cased header names. */
export interface TokenImportRow {
  readonly line: number;
  readonly fields: Readonly<Record<string, string>>;
}

export interface TokenImportReport {
  readonly rows: number;
  readonly imported: number;
  /** Already here (imported before, or the same token twice in the file). */
  readonly alreadyPresent: number;
  readonly expired: number;
  readonly skipped: readonly TokenImportSkip[];
  readonly dryRun: boolean;
}

export interface TokenImportSkip {
  readonly line: number;
  readonly reason: 'not a token' | 'no such login' | 'no such application' | 'not granted the application' | 'no expiry' | 'bad expiry';
  /** The login as the file has it (never the token). */
  readonly login: string | null;
  readonly appId: number | null;
}

/** Header names accepted for each column (lower case), as legacy tables name them. */
const COLUMNS = {
  token: ['token', 'authtoken', 'tokenid', 'sessiontoken'],
  login: ['login', 'username', 'user', 'loginname'],
  appId: ['appid', 'applicationid', 'app'],
  expiresAt: ['expiresat', 'expires', 'expiry', 'expiration', 'expirationdate', 'expiresutc', 'validuntil'],
  issuedAt: ['issuedat', 'issued', 'createdat', 'created', 'createdutc'],
} as const;

/** The header names the file lacks among the required ones, in words; empty when all are there. */
export function missingTokenColumns(headers: readonly string[]): string[] {
  const have = new Set(headers.map((h) => h.trim().toLowerCase()));
  return (['token', 'login', 'appId', 'expiresAt'] as const).filter((c) => !COLUMNS[c].some((n) => have.has(n))).map((c) => COLUMNS[c][0]);
}

function field(row: TokenImportRow, column: keyof typeof COLUMNS): string | null {
  for (const name of COLUMNS[column]) {
    const value = row.fields[name];
    if (value !== undefined) return value.trim();
  }
  return null;
}

export interface TokenImportDeps {
  readonly store: TokenStore & AccountStore;
  readonly clock: Clock;
}

export async function importLegacyTokens(deps: TokenImportDeps, rows: AsyncIterable<TokenImportRow>, options: { readonly dryRun: boolean }): Promise<TokenImportReport> {
  const { store, clock } = deps;
  const now = clock.now();
  const skipped: TokenImportSkip[] = [];
  const seen = new Set<string>();
  let count = 0;
  let imported = 0;
  let alreadyPresent = 0;
  let expired = 0;
  for await (const row of rows) {
    count++;
    const login = field(row, 'login');
    const appText = field(row, 'appId') ?? '';
    const appId = /^\d{1,10}$/.test(appText) && Number(appText) <= 2147483647 ? Number(appText) : null;
    const skip = (reason: TokenImportSkip['reason']): void => {
      skipped.push({ line: row.line, reason, login, appId });
    };
    const canonical = canonicalToken(field(row, 'token'));
    if (canonical === null) { skip('not a token'); continue; }
    const expiryText = field(row, 'expiresAt');
    if (expiryText === null || expiryText === '' || expiryText.toUpperCase() === 'NULL') { skip('no expiry'); continue; }
    const expiresAt = parseSqlDate(expiryText);
    if (expiresAt === null) { skip('bad expiry'); continue; }
    if (expiresAt.getTime() <= now.getTime()) { expired++; continue; }
    const user = login === null || login === '' ? null : await store.findUserByLoginKey(loginKey(login));
    if (user === null) { skip('no such login'); continue; }
    const app = appId === null ? null : await store.getApplication(appId);
    if (app === null) { skip('no such application'); continue; }
    if (!user.appIds.includes(app.appId)) { skip('not granted the application'); continue; }
    const tokenHash = hashToken(canonical);
    if (seen.has(tokenHash)) { alreadyPresent++; continue; }
    seen.add(tokenHash);
    const issuedText = field(row, 'issuedAt');
    const issuedAt = (issuedText === null ? null : parseSqlDate(issuedText)) ?? now;
    if (options.dryRun) {
      if ((await store.findToken(tokenHash)) === null) imported++;
      else alreadyPresent++;
      continue;
    }
    // Last used now: an idle timeout counts from the switch, not from a use the old service saw.
    const stored = await store.importToken({
      tokenHash, kind: 'session', userId: user.userId, appId: app.appId, clientIp: null, sourceIp: null,
      issuedAt: issuedAt.getTime() > now.getTime() ? now : issuedAt, expiresAt, lastUsedAt: now, usedAt: null, revokedAt: null,
      origin: 'legacy',
    });
    if (stored) imported++;
    else alreadyPresent++;
  }
  return { rows: count, imported, alreadyPresent, expired, skipped, dryRun: options.dryRun };
}
