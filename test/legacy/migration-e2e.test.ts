/**
 * End to end: a Membership export and an Identity export are imported with the
 * command line into the database of a running service; their users log in over SOAP with their
 * old passwords, their hashes are upgraded to argon2id in place (nothing else about them
 * changes, earlier tokens keep working), and the old passwords keep working afterwards.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPasswordHasher } from '../../src/domain/composite-password-hasher.js';
import { inspectPasswordHash } from '../../src/domain/legacy-hashes/stored-hash.js';
import { buildRequest, parseResult, type Args } from '../support/asmx-client.js';
import { startApp, type StartedApp } from '../support/start-app.js';
import { csv, run, vector, VECTORS } from './support.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-legacy-e2e-'));
let app: StartedApp;
let db: string;

async function soap(name: string, args: Args): Promise<string | boolean> {
  const req = buildRequest('soap11', name, args);
  const res = await fetch(`${app.url}${req.url}`, { method: req.method, headers: req.headers, body: req.payload ?? null });
  expect(res.status).toBe(200);
  return parseResult('soap11', name, await res.text()) as string | boolean;
}

const login = async (user: string, password: string): Promise<string> => String(await soap('ValidateUser', { login: user, password, AppId: 2, IPAddress: '' }));

const sha1 = vector(VECTORS.membershipHashed, (v) => v.algorithm === 'SHA1' && v.case === 'non-ascii');
const sha1Long = vector(VECTORS.membershipHashed, (v) => v.algorithm === 'SHA1' && v.case === '128-chars');
const hmac512 = vector(VECTORS.membershipHashed, (v) => v.algorithm === 'HMACSHA512' && v.case === 'ascii');
const aes = vector(VECTORS.membershipEncrypted, (v) => v.case === 'aes-128-cbc/ascii');
const v2 = vector(VECTORS.identity, (v) => v.version === 2 && v.case === 'non-ascii');
const v3 = vector(VECTORS.identity, (v) => v.version === 3 && v.case === 'sha256-10000-16-32/128-chars');
const triplet = vector(VECTORS.identityTriplets, (v) => v.case === 'hashed/non-ascii');

/** login -> [password, format imported] */
const USERS: Record<string, [string, string]> = {
  'm.sha1': [sha1.password, 'aspnet-membership-sha1'],
  'm.sha1.long': [sha1Long.password, 'aspnet-membership-sha1'],
  'm.hmacsha512': [hmac512.password, 'aspnet-membership-hmacsha512'],
  'm.clear': ['Clear Pässword', 'argon2id'],
  'm.encrypted': [aes.password, 'argon2id'],
  'i.v2': [v2.password, 'aspnet-identity-v2'],
  'i.v3': [v3.password, 'aspnet-identity-v3'],
  'i.triplet': [triplet.password, 'aspnet-membership-sha1'],
};

beforeAll(async () => {
  // Production's argon2id parameters: the upgraded hashes must be current for `serve` too.
  app = await startApp({ hasher: createPasswordHasher() });
  db = `sqlite:${app.stack.dbPath}`;
  const header = ['UserName', 'Password', 'PasswordFormat', 'PasswordSalt', 'IsApproved', 'IsLockedOut'];
  const membership = join(dir, 'membership.csv');
  writeFileSync(membership, csv(header, [
    ['m.sha1', sha1.hash, '1', sha1.salt, '1', '0'],
    ['m.sha1.long', sha1Long.hash, '1', sha1Long.salt, '1', '0'],
    ['m.clear', 'Clear Pässword', '0', 'AAAAAAAAAAAAAAAAAAAAAA==', '1', '0'],
    ['m.encrypted', aes.password_enc, '2', aes.salt, '1', '0'],
    ['m.locked', sha1.hash, '1', sha1.salt, '1', '1'],
  ]));
  const hmacFile = join(dir, 'membership-hmac.csv');
  writeFileSync(hmacFile, csv(header, [['m.hmacsha512', hmac512.hash, '1', hmac512.salt, '1', '0']]));
  const identity = join(dir, 'identity.csv');
  writeFileSync(identity, csv(['Id', 'UserName', 'PasswordHash', 'LockoutEnd', 'LockoutEnabled'], [
    ['a1', 'i.v2', v2.passwordHash, '', '1'],
    ['a2', 'i.v3', v3.passwordHash, '', '1'],
    ['a3', 'i.triplet', triplet.passwordHash, '', '1'],
  ]));
  const keyFile = join(dir, 'key.hex');
  writeFileSync(keyFile, aes.decryptionKey);
  for (const args of [
    ['import', 'membership', membership, '--app', '2', '--decryption-key-file', keyFile, '--db', db],
    ['import', 'membership', hmacFile, '--app', '2', '--hash-algorithm', 'HMACSHA512', '--db', db],
    ['import', 'identity', identity, '--app', '2', '--db', db],
  ]) {
    const result = await run(args);
    expect(result, args.join(' ')).toMatchObject({ code: 0, err: '' });
  }
});

afterAll(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('imported Membership and Identity users log in with their old passwords', () => {
  it('every user was imported in the expected format', async () => {
    for (const [user, [, format]] of Object.entries(USERS)) {
      const stored = await app.stack.store.findUserByLoginKey(user);
      expect(inspectPasswordHash(stored?.passwordHash ?? '').format, user).toBe(format);
    }
  });

  it.each(Object.keys(USERS))('%s: logs in, gets argon2id in place, and keeps its password', async (user) => {
    const [password] = USERS[user] ?? ['', ''];
    const before = await app.stack.store.findUserByLoginKey(user);
    if (before === null) throw new Error(`${user} was not imported`);

    expect(await login(user, `${password}x`)).toBe('');
    expect((await app.stack.store.findUserByLoginKey(user))?.passwordHash).toBe(before.passwordHash); // a failure changes nothing

    const first = await login(user, password);
    expect(first).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const after = await app.stack.store.findUserByLoginKey(user);
    if (after === null) throw new Error('vanished');
    expect(inspectPasswordHash(after.passwordHash).format).toBe('argon2id');
    expect(createPasswordHasher().needsRehash(after.passwordHash)).toBe(false);
    // Only the hash (and the last login) changed.
    expect({ ...after, passwordHash: '', lastLoginAt: null }).toEqual({ ...before, passwordHash: '', lastLoginAt: null });

    const second = await login(user, password);
    expect(second).not.toBe('');
    expect(second).not.toBe(first);
    expect(await soap('ValidateUserToken', { token: first })).toBe(true);
    expect(await login(user, `${password}x`)).toBe('');
    expect(await login(user.toUpperCase(), password)).not.toBe(''); // logins stay case-insensitive
  });

  it('a user locked out in the old system is imported disabled and cannot log in', async () => {
    expect((await app.stack.store.findUserByLoginKey('m.locked'))?.enabled).toBe(false);
    expect(await login('m.locked', sha1.password)).toBe('');
  });

  it('the migration report shows the move', async () => {
    const report = JSON.parse((await run(['users', 'migration-report', '--json', '--db', db])).out) as { users: number; formats: Array<{ format: string; users: number }> };
    expect(report.users).toBe(9);
    // Every user that logged in is on argon2id now; only the locked-out one is still on its old hash.
    expect(report.formats).toEqual([
      { format: 'argon2id', users: 8, status: 'current' },
      { format: 'aspnet-membership-sha1', users: 1, status: 'upgraded-on-login' },
    ]);
  });
});
