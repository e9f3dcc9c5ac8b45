/**
 * `svcapi-auth import membership | identity | users`: every row decided by the documented
 * rules, idempotent, dry run writes nothing, report per format.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { importUsers, parseSqlDate, type CsvRow, type ImportReport } from '../../src/domain/legacy-import.js';
import { parseMachineKey } from '../../src/domain/legacy-hashes/aspnet-membership.js';
import { inspectPasswordHash } from '../../src/domain/legacy-hashes/stored-hash.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { csv, fastHasher, run, vector, VECTORS } from './support.js';

const root = mkdtempSync(join(tmpdir(), 'svcapi-legacy-import-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let counter = 0;
function file(name: string, content: string): string {
  counter += 1;
  const path = join(root, `${counter}-${name}`);
  writeFileSync(path, content);
  return path;
}

const NOW = new Date('2025-06-01T12:00:00Z');
const clock = { now: () => NOW };
const hasher = fastHasher();

const sha1 = vector(VECTORS.membershipHashed, (v) => v.algorithm === 'SHA1' && v.case === 'non-ascii');
const hmac256 = vector(VECTORS.membershipHashed, (v) => v.algorithm === 'HMACSHA256' && v.case === 'ascii');
const aes = vector(VECTORS.membershipEncrypted, (v) => v.case === 'aes-256-cbc/non-ascii');
const MEMBERSHIP_HEADER = ['UserName', 'Email', 'Password', 'PasswordFormat', 'PasswordSalt', 'IsApproved', 'IsLockedOut', 'Applications'];

function rows(header: readonly string[], data: readonly (readonly string[])[]): CsvRow[] {
  return data.map((r, i) => ({ line: i + 2, fields: Object.fromEntries(header.map((h, j) => [h.toLowerCase(), r[j] ?? ''])) }));
}

describe('import rules (domain)', () => {
  let store: Store;
  beforeEach(async () => {
    store = await openStore('sqlite::memory:');
    await store.insertApplication({ appId: 5, name: 'Portal', enabled: true, requireIp: true, loginUrl: null, tokenLifetimeSeconds: 3600, idleTimeoutSeconds: null, defaultLanguage: 'en', trustedCallers: [], createdAt: NOW });
  });
  afterEach(async () => {
    await store.close();
  });

  const deps = (): { store: Store; hasher: typeof hasher; clock: typeof clock } => ({ store, hasher, clock });

  it('Membership: Hashed kept, Clear hashed now, Encrypted decrypted with the key; enabled from IsApproved / IsLockedOut; grants', async () => {
    const data = rows(MEMBERSHIP_HEADER, [
      ['alice', 'a@x', sha1.hash, '1', sha1.salt, 'True', 'False', '2;5'],
      ['Bob', '', 'clear pw ', '0', 'c2FsdHNhbHRzYWx0c2FsdA==', '1', '0', ''],
      ['carol', '', aes.password_enc, '2', aes.salt, 'true', 'false', '5'],
      ['dave', '', sha1.hash, '1', sha1.salt, 'False', 'False', '2'],
      ['erin', '', sha1.hash, '1', sha1.salt, 'True', 'True', '2'],
    ]);
    const machineKey = parseMachineKey('AES', aes.decryptionKey);
    if (typeof machineKey === 'string') throw new Error(machineKey);
    const report = await importUsers(deps(), 'membership', data, { appIds: [2], machineKey });
    expect(report.formats).toEqual({
      'aspnet-membership-sha1': { imported: 3, needsReset: 0, updated: 0, skipped: {} },
      'aspnet-membership-clear': { imported: 1, needsReset: 0, updated: 0, skipped: {} },
      'aspnet-membership-encrypted': { imported: 1, needsReset: 0, updated: 0, skipped: {} },
    });
    const alice = await store.findUserByLoginKey('alice');
    expect(alice).toMatchObject({ enabled: true, appIds: [2, 5], passwordHash: `$aspnet-membership$alg=SHA1$${sha1.salt}$${sha1.hash}`, createdAt: NOW });
    expect(await hasher.verify(alice?.passwordHash ?? '', sha1.password)).toBe(true);
    const bob = await store.findUserByLoginKey('bob');
    expect(bob?.login).toBe('Bob');
    expect(inspectPasswordHash(bob?.passwordHash ?? '').format).toBe('argon2id'); // nothing kept in clear
    expect(await hasher.verify(bob?.passwordHash ?? '', 'clear pw ')).toBe(true); // exactly as stored, spaces included
    const carol = await store.findUserByLoginKey('carol');
    expect(inspectPasswordHash(carol?.passwordHash ?? '').format).toBe('argon2id');
    expect(await hasher.verify(carol?.passwordHash ?? '', aes.password)).toBe(true);
    expect(carol?.appIds).toEqual([2, 5]);
    expect((await store.findUserByLoginKey('dave'))?.enabled).toBe(false); // IsApproved false
    expect((await store.findUserByLoginKey('erin'))?.enabled).toBe(false); // IsLockedOut true
  });

  it('Membership: the --hash-algorithm decides how Hashed rows verify', async () => {
    const data = rows(MEMBERSHIP_HEADER, [['hank', '', hmac256.hash, '1', hmac256.salt, '1', '0', '2']]);
    await importUsers(deps(), 'membership', data, { hashAlgorithm: 'HMACSHA256' });
    const hank = await store.findUserByLoginKey('hank');
    expect(hank?.passwordHash.startsWith('$aspnet-membership$alg=HMACSHA256$')).toBe(true);
    expect(await hasher.verify(hank?.passwordHash ?? '', hmac256.password)).toBe(true);
    // The same row read as SHA1: the Password has the right length but the wrong algorithm; it never verifies.
    const report = await importUsers(deps(), 'membership', rows(MEMBERSHIP_HEADER, [['ivan', '', hmac256.hash, '1', hmac256.salt, '1', '0', '2']]), { hashAlgorithm: 'SHA256' });
    expect(report.formats['aspnet-membership-sha256']).toMatchObject({ imported: 1 });
    expect(await hasher.verify((await store.findUserByLoginKey('ivan'))?.passwordHash ?? '', hmac256.password)).toBe(false);
    // A length that fits no SHA1 hash is refused at import.
    const refused = await importUsers(deps(), 'membership', rows(MEMBERSHIP_HEADER, [['judy', '', hmac256.hash, '1', hmac256.salt, '1', '0', '2']]), {});
    expect(refused.formats['aspnet-membership-sha1']).toMatchObject({ imported: 0, skipped: { 'bad-hash': 1 } });
  });

  it('Membership: Encrypted without the key is imported with no usable password; a later run with the key fills it in', async () => {
    const data = rows(MEMBERSHIP_HEADER, [['carol', '', aes.password_enc, '2', aes.salt, '1', '0', '2']]);
    const first = await importUsers(deps(), 'membership', data, {});
    expect(first.formats['aspnet-membership-encrypted']).toMatchObject({ imported: 0, needsReset: 1 });
    expect(first.notable).toMatchObject([{ line: 2, login: 'carol', outcome: 'needs-reset' }]);
    const carol = await store.findUserByLoginKey('carol');
    expect(carol).toMatchObject({ enabled: true, passwordHash: '$needs-reset$aspnet-membership-encrypted' });
    expect(await hasher.verify(carol?.passwordHash ?? '', aes.password)).toBe(false);
    // A wrong key changes nothing.
    const wrongKey = parseMachineKey('AES', aes.decryptionKey.replace(/^../, '00'));
    if (typeof wrongKey === 'string') throw new Error(wrongKey);
    expect((await importUsers(deps(), 'membership', data, { machineKey: wrongKey })).formats['aspnet-membership-encrypted']).toMatchObject({ skipped: { exists: 1 } });
    const key = parseMachineKey('AES', aes.decryptionKey);
    if (typeof key === 'string') throw new Error(key);
    const second = await importUsers(deps(), 'membership', data, { machineKey: key });
    expect(second.formats['aspnet-membership-encrypted']).toMatchObject({ updated: 1 });
    expect(await hasher.verify((await store.findUserByLoginKey('carol'))?.passwordHash ?? '', aes.password)).toBe(true);
    const third = await importUsers(deps(), 'membership', data, { machineKey: key });
    expect(third.formats['aspnet-membership-encrypted']).toMatchObject({ updated: 0, skipped: { exists: 1 } });
  });

  it('skips and says why: exists, duplicate, invalid login, no or unknown application, bad format, bad hash, bad row', async () => {
    await store.insertUser({ login: 'Existing', loginKey: 'existing', passwordHash: 'x', enabled: true, appIds: [2], createdAt: NOW });
    const data = rows(MEMBERSHIP_HEADER, [
      ['existing', '', sha1.hash, '1', sha1.salt, '1', '0', '2'],
      ['dup', '', sha1.hash, '1', sha1.salt, '1', '0', '2'],
      ['DUP', '', sha1.hash, '1', sha1.salt, '1', '0', '2'],
      [' spaced', '', sha1.hash, '1', sha1.salt, '1', '0', '2'],
      ['noapp', '', sha1.hash, '1', sha1.salt, '1', '0', ''],
      ['badapp', '', sha1.hash, '1', sha1.salt, '1', '0', '2;99'],
      ['weird', '', sha1.hash, '7', sha1.salt, '1', '0', '2'],
      ['badhash', '', 'not-base64!', '1', sha1.salt, '1', '0', '2'],
      ['badbool', '', sha1.hash, '1', sha1.salt, 'maybe', '0', '2'],
      ['badapps', '', sha1.hash, '1', sha1.salt, '1', '0', '2;x'],
      ['emptyclear', '', '', '0', sha1.salt, '1', '0', '2'],
    ]);
    const report = await importUsers(deps(), 'membership', data, {});
    expect(report.rows).toBe(11);
    expect(report.formats['aspnet-membership-sha1']).toEqual({
      imported: 1, needsReset: 0, updated: 0,
      skipped: { 'exists': 1, 'duplicate': 1, 'invalid-login': 1, 'no-application': 1, 'unknown-application': 1, 'bad-hash': 1, 'bad-row': 2 },
    });
    expect(report.formats.unknown).toMatchObject({ skipped: { 'unsupported-format': 1 } });
    expect(report.formats['aspnet-membership-clear']).toMatchObject({ needsReset: 1 });
    expect(report.notable.map((r) => [r.line, r.outcome])).toEqual([
      [2, 'exists'], [4, 'duplicate'], [5, 'invalid-login'], [6, 'no-application'], [7, 'unknown-application'],
      [8, 'unsupported-format'], [9, 'bad-hash'], [10, 'bad-row'], [11, 'bad-row'], [12, 'needs-reset'],
    ]);
    expect((await store.listUsers()).map((u) => u.login)).toEqual(['dup', 'emptyclear', 'Existing']);
  });

  it('a dry run decides the same and writes nothing', async () => {
    const data = rows(MEMBERSHIP_HEADER, [
      ['alice', '', sha1.hash, '1', sha1.salt, '1', '0', '2'],
      ['bob', '', 'pw', '0', sha1.salt, '1', '0', '2'],
      ['carol', '', aes.password_enc, '2', aes.salt, '1', '0', '2'],
      ['alice', '', sha1.hash, '1', sha1.salt, '1', '0', '2'],
    ]);
    const dry = await importUsers(deps(), 'membership', data, { dryRun: true });
    expect(await store.listUsers()).toEqual([]);
    const real = await importUsers(deps(), 'membership', data, {});
    const strip = (r: ImportReport): unknown => ({ ...r, dryRun: undefined });
    expect(strip(dry)).toEqual(strip(real));
    expect(dry.dryRun).toBe(true);
    expect(await store.listUsers()).toHaveLength(3);
  });

  it('Identity: v2, v3 and Membership triplets; lockout in the future imports the user disabled', async () => {
    const v2 = vector(VECTORS.identity, (v) => v.version === 2 && v.case === '128-chars');
    const v3 = vector(VECTORS.identity, (v) => v.version === 3 && v.case.startsWith('sha512') && v.case.endsWith('/non-ascii'));
    const triplet = vector(VECTORS.identityTriplets, (v) => v.case === 'hashed/ascii');
    const clear = vector(VECTORS.identityTriplets, (v) => v.case === 'clear');
    const header = ['Id', 'UserName', 'PasswordHash', 'LockoutEnd', 'LockoutEnabled'];
    const data = rows(header, [
      ['1', 'v2user', v2.passwordHash, '', '1'],
      ['2', 'v3user', v3.passwordHash, '2020-01-01 00:00:00.0000000 +00:00', 'True'],
      ['3', 'locked', v3.passwordHash, '9999-12-31 23:59:59.9999999 +00:00', 'True'],
      ['4', 'lockout-off', v3.passwordHash, '9999-12-31 23:59:59.9999999 +00:00', 'False'],
      ['5', 'triplet', triplet.passwordHash, 'NULL', '0'],
      ['6', 'cleartriplet', clear.passwordHash, '', ''],
      ['7', 'external', '', '', ''],
      ['8', 'garbage', 'AgAAAA==', '', ''],
    ]);
    const report = await importUsers(deps(), 'identity', data, { appIds: [2] });
    expect(report.formats).toMatchObject({
      'aspnet-identity-v2': { imported: 1 },
      'aspnet-identity-v3': { imported: 3 },
      'membership-triplet-hashed': { imported: 1 },
      'membership-triplet-clear': { imported: 1 },
      'no-password': { skipped: { 'no-password': 1 } },
      'unknown': { skipped: { 'bad-hash': 1 } },
    });
    for (const [login, password, format] of [
      ['v2user', v2.password, 'aspnet-identity-v2'], ['v3user', v3.password, 'aspnet-identity-v3'],
      ['triplet', triplet.password, 'aspnet-membership-sha1'], ['cleartriplet', clear.password, 'argon2id'],
    ] as const) {
      const user = await store.findUserByLoginKey(login);
      expect(inspectPasswordHash(user?.passwordHash ?? '').format, login).toBe(format);
      expect(await hasher.verify(user?.passwordHash ?? '', password), login).toBe(true);
      expect(user?.enabled, login).toBe(true);
    }
    expect((await store.findUserByLoginKey('locked'))?.enabled).toBe(false);
    expect((await store.findUserByLoginKey('lockout-off'))?.enabled).toBe(true);
  });

  it('reads SQL Server dates', () => {
    expect(parseSqlDate('2025-03-01 10:00:00.1234567 +02:00')).toEqual(new Date('2025-03-01T08:00:00.123Z'));
    expect(parseSqlDate('2025-03-01 10:00:00')).toEqual(new Date('2025-03-01T10:00:00Z'));
    expect(parseSqlDate('2025-03-01T10:00:00Z')).toEqual(new Date('2025-03-01T10:00:00Z'));
    expect(parseSqlDate('2025-03-01')).toEqual(new Date('2025-03-01T00:00:00Z'));
    expect(parseSqlDate('01/03/2025')).toBeNull();
  });

  it('users (JSON lines): PHC and MCF strings as they are; costs over the caps refused', async () => {
    const bcrypt = vector(VECTORS.phc, (v) => v.format === 'bcrypt' && v.case === '2y/non-ascii');
    const scrypt = vector(VECTORS.phc, (v) => v.format === 'scrypt' && v.case === 'ln10-r8-p2/ascii');
    const pbkdf2 = vector(VECTORS.phc, (v) => v.format === 'pbkdf2-sha256' && v.case === 'passlib/empty');
    const argon = vector(VECTORS.phc, (v) => v.format === 'argon2i');
    const lines = [
      { line: 1, value: { login: 'b', passwordHash: bcrypt.hash, appIds: [5] } },
      { line: 2, value: { login: 's', passwordHash: scrypt.hash, enabled: false } },
      { line: 3, value: { login: 'p', passwordHash: pbkdf2.hash } },
      { line: 4, value: { login: 'a', passwordHash: argon.hash } },
      { line: 5, value: { login: 'big', passwordHash: '$2b$15$DCq7YPn5Rq63x1Lad4cll.TV4S6ytwfsfvkgY8jIucDrjc8deX1s.' } },
      { line: 6, value: { login: 'md5crypt', passwordHash: '$1$salt$hash' } },
      { line: 7, value: null, error: 'not JSON' },
      { line: 8, value: { login: 'x', passwordHash: pbkdf2.hash, appIds: ['2'] } },
    ];
    const report = await importUsers(deps(), 'users', lines, { appIds: [2] });
    expect(report.formats).toMatchObject({
      'bcrypt': { imported: 1, skipped: { 'over-limits': 1 } },
      'scrypt': { imported: 1 },
      'pbkdf2-sha256': { imported: 1, skipped: { 'bad-row': 1 } },
      'argon2i': { imported: 1 },
      'unknown': { skipped: { 'unsupported-format': 1 } },
      'unreadable': { skipped: { 'bad-row': 1 } },
    });
    expect(await store.findUserByLoginKey('b')).toMatchObject({ passwordHash: bcrypt.hash, appIds: [2, 5], enabled: true });
    expect((await store.findUserByLoginKey('s'))?.enabled).toBe(false);
    for (const [login, v] of [['b', bcrypt], ['s', scrypt], ['p', pbkdf2], ['a', argon]] as const) {
      expect(await hasher.verify((await store.findUserByLoginKey(login))?.passwordHash ?? '', v.password), login).toBe(true);
    }
  });
});

describe('svcapi-auth import (command line)', () => {
  let db: string;
  beforeEach(async () => {
    counter += 1;
    db = `sqlite:${join(root, `db-${counter}`, 'auth.db')}`;
    expect((await run(['migrate', '--db', db])).code).toBe(0); // import fills a database migrate created
  });

  it('imports a Membership CSV (quoted fields, BOM, CRLF), reports per format, and is idempotent', async () => {
    const path = file('membership.csv', `\ufeff${csv(MEMBERSHIP_HEADER, [
      ['alice', 'alice@example.com', sha1.hash, '1', sha1.salt, 'True', 'False', ''],
      ['o"brien, jr', '', 'Clear, "quoted"\npassword', '0', sha1.salt, 'True', 'False', ''],
      ['carol', '', aes.password_enc, '2', aes.salt, 'True', 'False', ''],
    ])}`);
    const dry = await run(['import', 'membership', path, '--app', '2', '--dry-run', '--db', db]);
    expect(dry).toMatchObject({ code: 0, err: '' });
    expect(dry.out).toContain('DRY RUN');
    const first = await run(['import', 'membership', path, '--app', '2', '--db', db]);
    expect(first.code).toBe(0);
    expect(first.out).toMatch(/aspnet-membership-sha1\s+1\s+0\s+0\s+0/);
    expect(first.out).toMatch(/aspnet-membership-clear\s+1\s+0\s+0\s+0/);
    expect(first.out).toMatch(/aspnet-membership-encrypted\s+0\s+1\s+0\s+0/);
    expect(first.out).toContain('line 5  "carol"  aspnet-membership-encrypted  needs-reset'); // o"brien's row spans lines 3-4
    expect(first.out).toContain('user passwd');
    const again = await run(['import', 'membership', path, '--app', '2', '--json', '--db', db]);
    const report = JSON.parse(again.out) as ImportReport;
    expect(report.formats['aspnet-membership-sha1']).toMatchObject({ imported: 0, skipped: { exists: 1 } });
    expect(report.formats['aspnet-membership-clear']).toMatchObject({ imported: 0, skipped: { exists: 1 } });
    expect(report.formats['aspnet-membership-encrypted']).toMatchObject({ needsReset: 0, skipped: { exists: 1 } });

    const keyFile = file('machine.key', `${aes.decryptionKey}\n`);
    const withKey = await run(['import', 'membership', path, '--app', '2', '--decryption-key-file', keyFile, '--json', '--db', db]);
    expect((JSON.parse(withKey.out) as ImportReport).formats['aspnet-membership-encrypted']).toMatchObject({ updated: 1 });
    const store = await openStore(db);
    try {
      const h = fastHasher();
      expect(await h.verify((await store.findUserByLoginKey('o"brien, jr'))?.passwordHash ?? '', 'Clear, "quoted"\npassword')).toBe(true);
      expect(await h.verify((await store.findUserByLoginKey('carol'))?.passwordHash ?? '', aes.password)).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('takes the machine key from the environment too, never from an argument', async () => {
    const path = file('enc.csv', csv(MEMBERSHIP_HEADER, [['carol', '', aes.password_enc, '2', aes.salt, '1', '0', '2']]));
    const viaEnv = await run(['import', 'membership', path, '--json', '--db', db], { SVCAPI_DECRYPTION_KEY: aes.decryptionKey });
    expect((JSON.parse(viaEnv.out) as ImportReport).formats['aspnet-membership-encrypted']).toMatchObject({ imported: 1 });
    expect((await run(['import', 'membership', path, '--decryption-key', aes.decryptionKey, '--db', db])).code).toBe(2);
    expect(await run(['import', 'membership', path, '--db', db], { SVCAPI_DECRYPTION_KEY: 'AutoGenerate,IsolateApps' })).toMatchObject({ code: 1, err: expect.stringContaining('hexadecimal') });
  });

  it('imports an Identity CSV with a tab delimiter, and users from JSON lines', async () => {
    const v3 = vector(VECTORS.identity, (v) => v.version === 3 && v.case.endsWith('/empty'));
    const identity = file('identity.tsv', ['UserName\tPasswordHash\tLockoutEndDateUtc\tApplications', `dora\t${v3.passwordHash}\t\t2`].join('\n'));
    const result = await run(['import', 'identity', identity, '--delimiter', 'tab', '--json', '--db', db]);
    expect((JSON.parse(result.out) as ImportReport).formats['aspnet-identity-v3']).toMatchObject({ imported: 1 });
    const bcrypt = vector(VECTORS.phc, (v) => v.format === 'bcrypt' && v.case === '2b/ascii');
    const jsonl = file('users.jsonl', `${JSON.stringify({ login: 'eve', passwordHash: bcrypt.hash })}\n\n{broken\n`);
    const users = await run(['import', 'users', jsonl, '--app', '2', '--db', db]);
    expect(users.code).toBe(0);
    expect(users.out).toMatch(/bcrypt\s+1/);
    expect(users.out).toContain('line 3  ""  unreadable  bad-row');
  });

  it('refuses files it cannot use, with a message', async () => {
    expect(await run(['import', 'membership', join(root, 'missing.csv'), '--db', db])).toMatchObject({ code: 1, err: expect.stringContaining('cannot read') });
    const noColumns = file('bad.csv', 'Name,Secret\r\nalice,x\r\n');
    expect(await run(['import', 'membership', noColumns, '--db', db])).toMatchObject({ code: 1, err: expect.stringContaining('lacks the column(s) username, password, passwordformat, passwordsalt') });
    expect((await run(['import', 'membership', noColumns, '--hash-algorithm', 'SHA3', '--db', db])).code).toBe(2);
    const ragged = file('ragged.csv', 'UserName,PasswordHash\r\nalice\r\n');
    expect(await run(['import', 'identity', ragged, '--db', db])).toMatchObject({ code: 1, err: expect.stringContaining('not readable CSV') });
  });

  it('migration-report counts users per hash format', async () => {
    const path = file('m.csv', csv(MEMBERSHIP_HEADER, [
      ['alice', '', sha1.hash, '1', sha1.salt, '1', '0', '2'],
      ['bob', '', sha1.hash, '1', sha1.salt, '1', '0', '2'],
      ['carol', '', aes.password_enc, '2', aes.salt, '1', '0', '2'],
      ['dan', '', 'pw', '0', aes.salt, '1', '0', '2'],
    ]));
    await run(['import', 'membership', path, '--db', db]);
    const text = await run(['users', 'migration-report', '--db', db]);
    expect(text.code).toBe(0);
    expect(text.out).toMatch(/aspnet-membership-sha1\s+2\s+upgraded to argon2id at the next login/);
    expect(text.out).toMatch(/argon2id\s+1\s+current/);
    expect(text.out).toMatch(/needs-reset\s+1\s+no usable password/);
    expect(text.out).toContain('Total: 4 user(s); 0 migrated');
    const json = JSON.parse((await run(['user', 'migration-report', '--json', '--db', db])).out) as { users: number; formats: unknown[] };
    expect(json).toEqual({
      users: 4,
      formats: [
        { format: 'aspnet-membership-sha1', users: 2, status: 'upgraded-on-login' },
        { format: 'argon2id', users: 1, status: 'current' },
        { format: 'needs-reset', users: 1, status: 'cannot-log-in' },
      ],
      migratedByLegacyService: 0,
      legacyTokensLive: 0,
      // Nothing counted: serve with token passthrough writes these (passthrough-tally.test.ts).
      passthrough: expect.objectContaining({ countedSince: null, lastVouchedAt: null, lastVouchedDaysAgo: null }),
    });
    expect(text.out).toContain('  nothing counted in the last 30 days\nLast vouched-for legacy token: never\n');
  });
});

describe('the text report of a large re-run', () => {
  it('lists the first 50 rows of each outcome and counts the rest', async () => {
    const sha = vector(VECTORS.membershipHashed, (v) => v.algorithm === 'SHA1' && v.case === 'ascii');
    const path = file('many.csv', csv(MEMBERSHIP_HEADER, Array.from({ length: 60 }, (_, i) => [`user${i}`, '', sha.hash, '1', sha.salt, '1', '0', '2'])));
    const db = `sqlite:${join(root, 'many', 'auth.db')}`;
    expect((await run(['migrate', '--db', db])).code).toBe(0);
    expect((await run(['import', 'membership', path, '--db', db])).code).toBe(0);
    const again = await run(['import', 'membership', path, '--db', db]);
    expect(again.out.match(/ exists: /g)).toHaveLength(50);
    expect(again.out).toContain('... and 10 more exists (--json lists every row)');
    expect(again.out).toMatch(/aspnet-membership-sha1\s+0\s+0\s+0\s+60 \(exists 60\)/);
  });
});
