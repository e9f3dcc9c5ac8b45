/**
 * Importing users from a legacy system, keeping their passwords. Three sources:
 *
 * - **membership**: rows of aspnet_Users + aspnet_Membership (UserName, Password, PasswordFormat,
 *   PasswordSalt, IsApproved, IsLockedOut, optional Applications). Hashed rows keep their hash
 *   (`$aspnet-membership$...`); Clear rows are hashed with argon2id now (nothing is kept in
 *   clear); Encrypted rows are decrypted with the old machineKey and hashed with argon2id, or
 *   without the key imported with no usable password ("needs reset").
 * - **identity**: AspNetUsers rows (UserName, PasswordHash, LockoutEnd / LockoutEndDateUtc,
 *   LockoutEnabled, optional Applications): Identity v2 / v3 hashes, and the
 *   `Password|PasswordFormat|PasswordSalt` triplets of Microsoft's Membership-to-Identity migration.
 * - **users**: JSON lines `{"login", "passwordHash", "enabled"?, "appIds"?}` with PHC / MCF hashes
 *   (argon2, bcrypt, scrypt, PBKDF2) or any format svcapi-auth stores.
 *
 * Rules, the same for every source:
 * - A user is imported **disabled** when the source says it could not log in: IsApproved false,
 *   IsLockedOut true, or an Identity LockoutEnd in the future (with LockoutEnabled not false).
 * - A user imported with **no usable password** ("needs reset": Encrypted without the key, an
 *   empty Clear password) keeps its enabled state but cannot log in until the operator sets a
 *   password (`user passwd`) or, with legacy.url set, the old service vouches for the password
 *   at the first login (legacy-migration.ts). An empty password is never usable, whatever the
 *   format: a Hashed row holding the hash of "" imports with its hash, and the login refuses an
 *   empty password before any hash is consulted (validate-user.ts), as ASP.NET Membership did.
 * - Applications: the row's `Applications` column (`2;5`) plus every `--app`; a row with none,
 *   or naming an application that does not exist here, is skipped.
 * - **Idempotent**: a login already in the database is skipped as "exists" (logins compare
 *   case-insensitively; a second row for the same login in one file is a "duplicate"). The one
 *   exception: a user still waiting for a reset gets the password of a row that now has one
 *   ("updated"), e.g. when the import is run again with the machine key.
 * - Hashes are checked at import: malformed ones and costs over the caps (legacy-hashes/limits.ts)
 *   are skipped with the reason.
 * - A dry run decides every row the same way and writes nothing.
 */
import type { AccountStore } from '../store/store.js';
import type { PasswordHasher } from './password-hasher.js';
import { systemClock, type Clock } from './clock.js';
import { checkLegacyLogin, findUserByLogin, loginKey, storedLogin } from './logins.js';
import { opaqueString } from './precis.js';
import {
  decryptMembershipPassword, formatMembershipHash, membershipHashFromColumns, type MachineKey, type MembershipAlgorithm,
} from './legacy-hashes/aspnet-membership.js';
import { formatIdentityHash, parseIdentityPasswordHash } from './legacy-hashes/aspnet-identity.js';
import { inspectPasswordHash, needsResetHash, NEEDS_RESET_PREFIX, type NeedsResetReason } from './legacy-hashes/stored-hash.js';

export type ImportSource = 'membership' | 'identity' | 'users';

export type SkipReason =
  | 'exists' | 'duplicate' | 'invalid-login' | 'no-application' | 'unknown-application'
  | 'bad-hash' | 'over-limits' | 'no-password' | 'unsupported-format' | 'bad-row';

export type RowOutcome = 'imported' | 'needs-reset' | 'updated' | SkipReason;

/** One row of a CSV export: values by lower-cased column name. */
export interface CsvRow {
  readonly line: number;
  readonly fields: Readonly<Record<string, string>>;
}

/** One line of a JSON-lines file, parsed (or the parse error). */
export interface JsonRow {
  readonly line: number;
  readonly value: unknown;
  readonly error?: string;
}

export interface ImportOptions {
  /** Applications granted to every row, added to the row's own `Applications`. */
  readonly appIds?: readonly number[];
  readonly dryRun?: boolean;
  /** The old `hashAlgorithmType` (membership, and Identity's Membership triplets); default SHA1. */
  readonly hashAlgorithm?: MembershipAlgorithm;
  /** The old `<machineKey>` decryption key, for Encrypted passwords. */
  readonly machineKey?: MachineKey | null;
}

export interface FormatCounts {
  imported: number;
  needsReset: number;
  updated: number;
  skipped: Partial<Record<SkipReason, number>>;
}

export interface RowReport {
  readonly line: number;
  readonly login: string;
  readonly format: string;
  readonly outcome: RowOutcome;
  readonly detail?: string;
}

export interface ImportReport {
  readonly source: ImportSource;
  readonly dryRun: boolean;
  readonly rows: number;
  /** Per source format: how many were imported, imported needing a reset, updated, skipped and why. */
  readonly formats: Readonly<Record<string, FormatCounts>>;
  /** Every row that was not simply imported (skipped, needs reset, updated), in file order. */
  readonly notable: readonly RowReport[];
}

export interface ImportDeps {
  readonly store: AccountStore;
  readonly hasher: PasswordHasher;
  readonly clock?: Clock;
}

// --- turning one source row into a user to create ---

type PasswordSource =
  | { readonly kind: 'hash'; readonly hash: string }
  | { readonly kind: 'clear'; readonly password: string }
  | { readonly kind: 'needs-reset'; readonly reason: NeedsResetReason };

type Conversion =
  | { readonly ok: true; readonly login: string; readonly format: string; readonly password: PasswordSource; readonly enabled: boolean; readonly appIds: readonly number[] }
  | { readonly ok: false; readonly login: string; readonly format: string; readonly reason: SkipReason; readonly detail?: string };

class RowProblem extends Error {
  constructor(readonly reason: SkipReason, message: string) {
    super(message);
  }
}

/** A hash problem message from the legacy-hashes parsers, as a skip reason. */
function hashProblem(message: string): RowProblem {
  return new RowProblem(/over the limit/.test(message) ? 'over-limits' : 'bad-hash', message);
}

/** SQL exports write NULL as an empty field, or (sqlcmd) as the word NULL. */
function optional(row: CsvRow, ...names: string[]): string | null {
  for (const name of names) {
    const value = row.fields[name.toLowerCase()];
    if (value !== undefined && value.trim() !== '' && value.trim().toUpperCase() !== 'NULL') return value.trim();
  }
  return null;
}

function booleanField(row: CsvRow, name: string, fallback: boolean): boolean {
  const value = optional(row, name);
  if (value === null) return fallback;
  if (/^(1|true|yes)$/i.test(value)) return true;
  if (/^(0|false|no)$/i.test(value)) return false;
  throw new RowProblem('bad-row', `${name} is not a boolean: ${JSON.stringify(value)}`);
}

function parseAppList(text: string | null): number[] {
  if (text === null) return [];
  return text.split(/[\s,;]+/).filter((s) => s !== '').map((s) => {
    const n = /^\d{1,10}$/.test(s) ? Number(s) : NaN;
    if (!(n >= 1 && n <= 2147483647)) throw new RowProblem('bad-row', `Applications has a bad AppID: ${JSON.stringify(s)}`);
    return n;
  });
}

/**
 * A SQL Server datetime / datetimeoffset as exported (`2025-03-01 10:00:00.1234567 +00:00`,
 * ISO 8601 ...); without a zone it is UTC (LockoutEndDateUtc). null if unreadable.
 */
export function parseSqlDate(text: string): Date | null {
  const m = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2})?)(?:\.(\d{1,9}))?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i.exec(text.trim());
  if (m === null) return null;
  const time = m[2] === undefined ? '00:00:00' : m[2].length === 5 ? `${m[2]}:00` : m[2];
  const fraction = (m[3] ?? '').padEnd(3, '0').slice(0, 3);
  const zone = m[4] === undefined ? 'Z' : m[4].toUpperCase() === 'Z' ? 'Z' : m[4].replace(/^([+-]\d{2})(\d{2})$/, '$1:$2');
  const date = new Date(`${m[1]}T${time}.${fraction}${zone}`);
  if (Number.isNaN(date.getTime())) return null;
  // JavaScript rolls 2027-02-30 over into March and 24:00 into the next day: a date that does
  // not exist is unreadable, so the wall-clock time read back in its own zone must be the text's.
  const offsetMin = zone === 'Z' ? 0 : (zone.startsWith('-') ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(-2)));
  const wall = new Date(date.getTime() + offsetMin * 60_000).toISOString();
  return wall.slice(0, 10) === m[1] && wall.slice(11, 19) === time ? date : null;
}

/** Hashed / Clear / Encrypted, as a number (0, 1, 2) or a name. */
function passwordFormat(text: string | null): 'clear' | 'hashed' | 'encrypted' | null {
  const v = (text ?? '').trim().toLowerCase();
  if (v === '0' || v === 'clear') return 'clear';
  if (v === '1' || v === 'hashed') return 'hashed';
  if (v === '2' || v === 'encrypted') return 'encrypted';
  return null;
}

/** A Password / PasswordFormat / PasswordSalt combination, as a password to store. */
function membershipPassword(format: 'clear' | 'hashed' | 'encrypted', password: string, salt: string, options: ImportOptions): PasswordSource {
  if (format === 'hashed') {
    const h = membershipHashFromColumns(options.hashAlgorithm ?? 'SHA1', password, salt);
    if (typeof h === 'string') throw hashProblem(h);
    return { kind: 'hash', hash: formatMembershipHash(h) };
  }
  if (format === 'clear') return password === '' ? { kind: 'needs-reset', reason: 'empty-password' } : { kind: 'clear', password };
  const key = options.machineKey ?? null;
  const clear = key === null ? null : decryptMembershipPassword(password, salt, key);
  if (clear === null) return { kind: 'needs-reset', reason: 'aspnet-membership-encrypted' };
  return clear === '' ? { kind: 'needs-reset', reason: 'empty-password' } : { kind: 'clear', password: clear };
}

function convert(login: string, format: string, build: () => Omit<Extract<Conversion, { ok: true }>, 'ok' | 'login' | 'format'>): Conversion {
  try {
    return { ok: true, login, format, ...build() };
  } catch (error) {
    if (error instanceof RowProblem) return { ok: false, login, format, reason: error.reason, detail: error.message };
    throw error;
  }
}

export function convertMembershipRow(row: CsvRow, options: ImportOptions): Conversion {
  const login = row.fields.username ?? '';
  const format = passwordFormat(optional(row, 'PasswordFormat'));
  const algorithm = (options.hashAlgorithm ?? 'SHA1').toLowerCase();
  const label = format === 'hashed' ? `aspnet-membership-${algorithm}` : format === null ? 'unknown' : `aspnet-membership-${format}`;
  if (format === null) return { ok: false, login, format: label, reason: 'unsupported-format', detail: `PasswordFormat ${JSON.stringify(row.fields.passwordformat ?? '')} is not 0, 1 or 2` };
  return convert(login, label, () => ({
    password: membershipPassword(format, row.fields.password ?? '', row.fields.passwordsalt ?? '', options),
    enabled: booleanField(row, 'IsApproved', true) && !booleanField(row, 'IsLockedOut', false),
    appIds: parseAppList(optional(row, 'Applications')),
  }));
}

/** `Password|PasswordFormat|PasswordSalt` (the password part may itself contain '|' when Clear). */
function splitTriplet(text: string): { password: string; format: string; salt: string } | null {
  const last = text.lastIndexOf('|');
  const middle = last <= 0 ? -1 : text.lastIndexOf('|', last - 1);
  if (middle < 0) return null;
  return { password: text.slice(0, middle), format: text.slice(middle + 1, last), salt: text.slice(last + 1) };
}

export function convertIdentityRow(row: CsvRow, options: ImportOptions, now: Date): Conversion {
  const login = row.fields.username ?? '';
  const stored = optional(row, 'PasswordHash');
  const triplet = stored !== null && stored.includes('|') ? splitTriplet(stored) : null;
  const tripletFormat = triplet === null ? null : passwordFormat(triplet.format);
  let label: string;
  if (stored === null) label = 'no-password';
  else if (triplet !== null) label = tripletFormat === null ? 'unknown' : `membership-triplet-${tripletFormat}`;
  else {
    const version = Buffer.from(stored, 'base64')[0];
    label = version === 1 ? 'aspnet-identity-v3' : version === 0 ? 'aspnet-identity-v2' : 'unknown';
  }
  if (stored === null) return { ok: false, login, format: label, reason: 'no-password', detail: 'PasswordHash is empty (external logins only?)' };
  return convert(login, label, () => {
    let password: PasswordSource;
    if (triplet !== null) {
      if (tripletFormat === null) throw new RowProblem('unsupported-format', `the PasswordFormat in ${JSON.stringify('...|' + triplet.format + '|...')} is not 0, 1 or 2`);
      password = membershipPassword(tripletFormat, triplet.password, triplet.salt, options);
    } else {
      const h = parseIdentityPasswordHash(stored);
      if (typeof h === 'string') throw hashProblem(h);
      password = { kind: 'hash', hash: formatIdentityHash(h) };
    }
    const lockoutText = optional(row, 'LockoutEnd', 'LockoutEndDateUtc');
    // An unreadable lockout date is taken as a lockout: importing it disabled is the safe side.
    const lockoutEnd = lockoutText === null ? null : parseSqlDate(lockoutText) ?? new Date(8640000000000000);
    const locked = lockoutEnd !== null && lockoutEnd.getTime() > now.getTime() && booleanField(row, 'LockoutEnabled', true);
    return { password, enabled: !locked, appIds: parseAppList(optional(row, 'Applications')) };
  });
}

export function convertUsersLine(row: JsonRow): Conversion {
  const value = row.value;
  if (row.error !== undefined || typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, login: '', format: 'unreadable', reason: 'bad-row', detail: row.error ?? 'each line must be a JSON object' };
  }
  const record = value as Record<string, unknown>;
  const login = typeof record.login === 'string' ? record.login : '';
  const hash = record.passwordHash;
  if (typeof hash !== 'string') return { ok: false, login, format: 'unreadable', reason: 'bad-row', detail: 'passwordHash must be a string' };
  const found = inspectPasswordHash(hash);
  // A hash refused for its cost or shape is reported under its own scheme ($2b$ -> bcrypt).
  const ident = /^\$([a-z0-9-]+)\$/.exec(hash)?.[1];
  const format = found.format !== 'invalid' || ident === undefined ? found.format : /^2[abxy]?$/.test(ident) ? 'bcrypt' : ident;
  return convert(login, format, () => {
    if (typeof record.login !== 'string') throw new RowProblem('bad-row', 'login must be a string');
    if (record.enabled !== undefined && typeof record.enabled !== 'boolean') throw new RowProblem('bad-row', 'enabled must be true or false');
    const appIds = record.appIds ?? [];
    if (!Array.isArray(appIds) || !appIds.every((n) => Number.isSafeInteger(n) && n >= 1 && n <= 2147483647)) {
      throw new RowProblem('bad-row', 'appIds must be a list of AppIDs');
    }
    let password: PasswordSource;
    if (found.kind === 'argon2' || found.kind === 'legacy') password = { kind: 'hash', hash };
    else if (found.kind === 'needs-reset') password = { kind: 'hash', hash };
    else if (found.format === 'unknown') throw new RowProblem('unsupported-format', found.problem);
    else throw hashProblem(found.problem);
    return { password, enabled: record.enabled !== false, appIds: appIds as number[] };
  });
}

// --- the import ---

/** How many rows are prepared together (clear passwords are hashed in parallel on the thread pool). */
const BATCH = 8;

export async function importUsers(
  deps: ImportDeps,
  source: ImportSource,
  rows: AsyncIterable<CsvRow | JsonRow> | Iterable<CsvRow | JsonRow>,
  options: ImportOptions = {},
): Promise<ImportReport> {
  const { store, hasher } = deps;
  const now = (deps.clock ?? systemClock).now();
  const dryRun = options.dryRun ?? false;
  const formats: Record<string, FormatCounts> = {};
  const notable: RowReport[] = [];
  const seen = new Set<string>();
  const appExists = new Map<number, boolean>();
  let count = 0;

  const counts = (format: string): FormatCounts => (formats[format] ??= { imported: 0, needsReset: 0, updated: 0, skipped: {} });
  const record = (line: number, login: string, format: string, outcome: RowOutcome, detail?: string): void => {
    const c = counts(format);
    if (outcome === 'imported') c.imported += 1;
    else if (outcome === 'needs-reset') c.needsReset += 1;
    else if (outcome === 'updated') c.updated += 1;
    else c.skipped[outcome] = (c.skipped[outcome] ?? 0) + 1;
    if (outcome !== 'imported') notable.push({ line, login, format, outcome, ...(detail !== undefined && { detail }) });
  };

  const toConversion = (row: CsvRow | JsonRow): Conversion => {
    if (source === 'users') return convertUsersLine(row as JsonRow);
    if (source === 'membership') return convertMembershipRow(row as CsvRow, options);
    return convertIdentityRow(row as CsvRow, options, now);
  };

  /** Cheap checks, in file order; what to write, or null when the row was skipped. */
  async function decide(row: CsvRow | JsonRow): Promise<{ line: number; c: Extract<Conversion, { ok: true }>; appIds: number[]; update: { userId: number; expected: string } | null } | null> {
    const c = toConversion(row);
    if (!c.ok) {
      record(row.line, c.login, c.format, c.reason, c.detail);
      return null;
    }
    const loginProblem = checkLegacyLogin(c.login);
    if (loginProblem !== null) {
      record(row.line, c.login, c.format, 'invalid-login', `the login ${loginProblem}`);
      return null;
    }
    const key = loginKey(c.login);
    if (seen.has(key)) {
      record(row.line, c.login, c.format, 'duplicate', 'the same login (case-insensitively) appears earlier in the file');
      return null;
    }
    seen.add(key);
    const appIds = [...new Set([...c.appIds, ...(options.appIds ?? [])])].sort((a, b) => a - b);
    if (appIds.length === 0) {
      record(row.line, c.login, c.format, 'no-application', 'no Applications column value and no --app');
      return null;
    }
    for (const appId of appIds) {
      if (!appExists.has(appId)) appExists.set(appId, (await store.getApplication(appId)) !== null);
      if (appExists.get(appId) !== true) {
        record(row.line, c.login, c.format, 'unknown-application', `no application with AppID ${appId}`);
        return null;
      }
    }
    const existing = await findUserByLogin(store, c.login);
    if (existing === null) return { line: row.line, c, appIds, update: null };
    const usable = c.password.kind !== 'needs-reset' && !(c.password.kind === 'hash' && c.password.hash.startsWith(NEEDS_RESET_PREFIX));
    if (existing.passwordHash.startsWith(NEEDS_RESET_PREFIX) && usable) {
      return { line: row.line, c, appIds, update: { userId: existing.userId, expected: existing.passwordHash } };
    }
    record(row.line, c.login, c.format, 'exists', 'a user with this login already exists');
    return null;
  }

  async function passwordHash(p: PasswordSource): Promise<string> {
    if (p.kind === 'hash') return p.hash;
    if (p.kind === 'needs-reset') return needsResetHash(p.reason);
    // A dry run does not spend an argon2id hash on a password it will not store.
    // Hashed as ValidateUser compares it (PRECIS OpaqueString); a password the profile refuses, as given.
    if (dryRun) return 'dry-run';
    const prepared = opaqueString(p.password);
    return hasher.hash(prepared.ok ? prepared.value : p.password);
  }

  async function flush(batch: Array<NonNullable<Awaited<ReturnType<typeof decide>>>>): Promise<void> {
    const hashes = await Promise.all(batch.map((d) => passwordHash(d.c.password)));
    for (const [i, d] of batch.entries()) {
      const hash = hashes[i] ?? '';
      const needsReset = d.c.password.kind === 'needs-reset' || hash.startsWith(NEEDS_RESET_PREFIX);
      const detail = needsReset ? `imported without a usable password (${d.c.password.kind === 'needs-reset' ? d.c.password.reason : 'needs reset'})` : undefined;
      if (d.update !== null) {
        const done = dryRun || await store.upgradePasswordHash(d.update.userId, d.update.expected, hash);
        record(d.line, d.c.login, d.c.format, done ? 'updated' : 'exists', done ? 'was waiting for a password reset; now has this row\'s password' : 'changed meanwhile');
        continue;
      }
      const created = dryRun || (await store.insertUser({
        login: storedLogin(d.c.login), loginKey: loginKey(d.c.login), passwordHash: hash, enabled: d.c.enabled, appIds: d.appIds, createdAt: now,
      })).ok;
      if (!created) record(d.line, d.c.login, d.c.format, 'exists', 'a user with this login was created meanwhile');
      else record(d.line, d.c.login, d.c.format, needsReset ? 'needs-reset' : 'imported', detail);
    }
  }

  let batch: Array<NonNullable<Awaited<ReturnType<typeof decide>>>> = [];
  for await (const row of rows) {
    count += 1;
    const decided = await decide(row);
    if (decided !== null) batch.push(decided);
    if (batch.length >= BATCH) {
      await flush(batch);
      batch = [];
    }
  }
  await flush(batch);
  return { source, dryRun, rows: count, formats, notable };
}
