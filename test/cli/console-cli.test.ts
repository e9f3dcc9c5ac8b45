/**
 * The CLI side of the admin console: `admin add|passwd|remove|list` and a user's sessions with
 * `token list --user` and `token revoke ID`.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createAdminAccounts } from '../../src/domain/admin-accounts.js';
import { createArgon2Hasher } from '../../src/domain/password-hasher.js';
import { createAuthService } from '../../src/domain/create-auth-service.js';
import { openStore } from '../../src/store/open-store.js';
import { ctx } from '../support/domain-fakes.js';
import { runCliCaptured as run } from '../support/run-cli.js';

const root = mkdtempSync(join(tmpdir(), 'svcapi-console-cli-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let counter = 0;

async function freshDb(): Promise<string> {
  counter += 1;
  const db = `sqlite:${join(root, `db-${counter}`, 'auth.db')}`;
  expect((await run(['migrate', '--db', db])).code).toBe(0);
  return db;
}

async function withStore<T>(db: string, fn: (store: Awaited<ReturnType<typeof openStore>>) => Promise<T>): Promise<T> {
  const store = await openStore(db);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

describe('svcapi-auth admin', () => {
  it('adds, lists, re-passwords and removes console accounts, passwords from stdin only', async () => {
    const db = await freshDb();
    const added = await run(['admin', 'add', 'Ann', '--role', 'editor', '--password-stdin', '--db', db], { stdin: 'a long enough password\n' });
    expect(added.err).toBe('');
    expect(added.out).toBe('Added admin account ann (editor)\n');
    expect((await run(['admin', 'add', 'ann', '--password-stdin', '--db', db], { stdin: 'a long enough password\n' })).code).not.toBe(0);
    const short = await run(['admin', 'add', 'bob', '--password-stdin', '--db', db], { stdin: 'short\n' });
    expect(short.code).not.toBe(0);
    expect(short.err).toContain('at least 12');
    expect((await run(['admin', 'add', 'bob', '--role', 'root', '--password-stdin', '--db', db], { stdin: 'x\n' })).code).not.toBe(0);
    const list = await run(['admin', 'list', '--db', db]);
    expect(list.out).toMatch(/^ann {2}editor {2}/m);
    expect(list.out).not.toContain('argon2');
    const login = (password: string): Promise<boolean> => withStore(db, async (store) =>
      (await createAdminAccounts({ store, hasher: createArgon2Hasher() }).login('ann', password, '127.0.0.1')).ok);
    expect(await login('a long enough password')).toBe(true);
    expect((await run(['admin', 'passwd', 'ann', '--password-stdin', '--db', db], { stdin: 'a brand new password\n' })).code).toBe(0);
    expect(await login('a long enough password')).toBe(false);
    expect(await login('a brand new password')).toBe(true);
    expect((await run(['admin', 'remove', 'ann', '--db', db])).out).toBe('Removed admin account ann\n');
    expect((await run(['admin', 'remove', 'ann', '--db', db])).code).not.toBe(0);
    expect((await run(['admin', 'add', 'x', '--password=secret', '--db', db])).code).not.toBe(0);
    const trail = await run(['audit', '--type', 'admin.account.add', '--db', db]);
    expect(trail.out).toContain('ann');
  });
});

describe('svcapi-auth token list / revoke ID', () => {
  it('lists a user\'s live sessions by fingerprint and revokes exactly one of them', async () => {
    const db = await freshDb();
    expect((await run(['user', 'add', 'carol', '--app', '2', '--password-stdin', '--db', db], { stdin: 'carol-pw-1\n' })).code).toBe(0);
    const tokens = await withStore(db, async (store) => {
      const service = createAuthService({ store, hasher: createArgon2Hasher() });
      const out: string[] = [];
      for (let i = 0; i < 2; i += 1) {
        const r = await service.validateUser({ login: 'carol', password: 'carol-pw-1', appId: 2, ipAddress: '198.51.100.1' }, ctx);
        if (!r.ok) throw new Error('login failed');
        out.push(r.token);
      }
      return out;
    });
    const listed = await run(['token', 'list', '--user', 'carol', '--db', db]);
    expect(listed.code).toBe(0);
    for (const t of tokens) expect(listed.out).not.toContain(t);
    const ids = [...listed.out.matchAll(/^([0-9a-f]{12}) /gm)].map((m) => m[1] ?? '');
    expect(ids).toHaveLength(2);
    const json = await run(['token', 'list', '--user', 'carol', '--json', '--db', db]);
    expect(json.out.trim().split('\n').map((l) => (JSON.parse(l) as { id: string }).id).sort()).toEqual([...ids].sort());

    expect((await run(['token', 'revoke', 'zz', '--db', db])).err).toContain('12 hex digits');
    expect((await run(['token', 'revoke', ids[0] ?? '', '--user', 'nobody', '--db', db])).code).not.toBe(0);
    expect((await run(['token', 'revoke', ids[0] ?? '', '--all', '--db', db])).code).not.toBe(0);
    expect((await run(['token', 'revoke', '--db', db])).code).not.toBe(0);
    const revoked = await run(['token', 'revoke', (ids[0] ?? '').toUpperCase(), '--user', 'carol', '--db', db]);
    expect(revoked.err).toBe('');
    expect(revoked.out).toBe(`Revoked session ${ids[0] ?? ''} of "carol" (AppID 2)\n`);
    expect((await run(['token', 'revoke', ids[0] ?? '', '--db', db])).err).toContain('already ended');
    const valid = await withStore(db, async (store) => {
      const service = createAuthService({ store, hasher: createArgon2Hasher() });
      return Promise.all(tokens.map(async (t) => (await service.validateUserToken(t, ctx)).valid));
    });
    const revokedIndex = tokens.findIndex((t) => createHash('sha256').update(t).digest('hex').startsWith(ids[0] ?? '-'));
    expect(revokedIndex).toBeGreaterThanOrEqual(0);
    expect(valid[revokedIndex]).toBe(false);
    expect(valid[1 - revokedIndex]).toBe(true);
    expect((await run(['token', 'list', '--user', 'carol', '--db', db])).out).not.toContain(ids[0] ?? '-');
    // The old forms still work.
    expect((await run(['token', 'revoke', '--user', 'carol', '--db', db])).out).toBe('Revoked 1 token(s)\n');
  });
});
