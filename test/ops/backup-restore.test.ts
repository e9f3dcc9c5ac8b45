/**
 * `svcapi-auth backup <file>` (SQLite online backup, while the service runs) and
 * `svcapi-auth restore <file>` (refused while the database is in use): a full round trip, and the
 * refusals.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createAdminService } from '../../src/domain/admin-service.js';
import { createArgon2Hasher } from '../../src/domain/password-hasher.js';
import { createAuthService } from '../../src/domain/create-auth-service.js';
import { openStore } from '../../src/store/open-store.js';
import { ctx } from '../support/domain-fakes.js';
import { run } from './support.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-backup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `fn` with the domain on the database, then closes it. */
async function withDomain<T>(dbUrl: string, fn: (d: { admin: ReturnType<typeof createAdminService>; service: ReturnType<typeof createAuthService> }) => Promise<T>): Promise<T> {
  const store = await openStore(dbUrl);
  try {
    const hasher = createArgon2Hasher();
    return await fn({ admin: createAdminService({ store, hasher }), service: createAuthService({ store, hasher }) });
  } finally {
    await store.close();
  }
}

async function startServe(dbUrl: string): Promise<{ base: string; stop: () => Promise<number> }> {
  const out = new PassThrough();
  let text = '';
  const controller = new AbortController();
  const done = run(['serve', '--port', '0', '--db', dbUrl, '--log-level', 'silent'], { stdout: out, signal: controller.signal });
  const base = await new Promise<string>((resolve) => {
    out.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const m = /^Service: (\S+)$/m.exec(text);
      if (m?.[1]) resolve(m[1]);
    });
  });
  return { base, stop: async () => { controller.abort(); return (await done).code; } };
}

const login = (base: string, user: string, password: string): Promise<string> =>
  fetch(`${base}/ValidateUser`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `login=${user}&password=${password}&AppId=2&IPAddress=` })
    .then((r) => r.text())
    .then((t) => /<string xmlns="SVCAPI">([^<]*)<\/string>/.exec(t)?.[1] ?? '');

describe('backup and restore', () => {
  it('round trip: back up while serving, change things, restore with the service stopped, find the backed-up state', async () => {
    const dbUrl = `sqlite:${join(dir, 'live', 'auth.db')}`;
    const backupFile = join(dir, 'backups', 'auth-1.db');
    mkdirSync(join(dir, 'backups')); // backup does not create directories
    const tokenA = await withDomain(dbUrl, async ({ admin, service }) => {
      await admin.addUser({ login: 'alice', password: 'alice-1', appIds: [2] });
      await admin.addUser({ login: 'bob', password: 'bob-1', appIds: [2] });
      const outcome = await service.validateUser({ login: 'alice', password: 'alice-1', appId: 2, ipAddress: null }, ctx);
      return outcome.ok ? outcome.token : '';
    });

    const first = await startServe(dbUrl);
    const tokenB = await login(first.base, 'bob', 'bob-1');
    expect(tokenB).toMatch(/^[0-9a-f-]{36}$/);

    // Online: the service keeps running (and holding the database open) during the backup.
    const backup = await run(['backup', backupFile, '--db', dbUrl]);
    expect(backup.err).toBe('');
    expect(backup).toMatchObject({ code: 0, out: expect.stringMatching(/^Backed up .*auth\.db \(schema version \d+\) to .*auth-1\.db \(\d+ bytes\)\n$/) });
    // The backup is one self-contained file.
    expect(existsSync(`${backupFile}-wal`)).toBe(false);

    // Changes after the backup, through the running service and the admin commands.
    const tokenC = await login(first.base, 'alice', 'alice-1');
    await withDomain(dbUrl, async ({ admin }) => {
      await admin.addUser({ login: 'carol', password: 'carol-1', appIds: [2] });
      await admin.changePassword('alice', 'alice-2'); // revokes tokenA and tokenC
      await admin.setUserEnabled('bob', false); // revokes tokenB
    });

    // Refused while the service has the database open.
    const refused = await run(['restore', backupFile, '--db', dbUrl]);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/is in use \(is svcapi-auth serve running\?\); stop the service first/);
    expect(await login(first.base, 'carol', 'carol-1')).toMatch(/^[0-9a-f-]{36}$/); // nothing was touched

    expect(await first.stop()).toBe(0);
    const restored = await run(['restore', backupFile, '--db', dbUrl]);
    expect(restored.err).toBe('');
    expect(restored.code).toBe(0);
    expect(restored.out).toMatch(/Restored .*auth-1\.db into .*auth\.db \(schema version \d+\)\nThe database it replaced is kept as .*auth\.db\.before-restore\n/);

    // The backed-up state: no carol, alice's old password, bob enabled, the tokens of then valid again.
    await withDomain(dbUrl, async ({ admin, service }) => {
      const users = await admin.listUsers();
      expect(users.ok && users.value.map((u) => [u.login, u.enabled])).toEqual([['alice', true], ['bob', true]]);
      expect((await service.validateUser({ login: 'alice', password: 'alice-1', appId: 2, ipAddress: null }, ctx)).ok).toBe(true);
      expect((await service.validateUser({ login: 'alice', password: 'alice-2', appId: 2, ipAddress: null }, ctx)).ok).toBe(false);
      expect((await service.validateUserToken(tokenA, ctx)).valid).toBe(true);
      expect((await service.validateUserToken(tokenB, ctx)).valid).toBe(true);
      expect((await service.validateUserToken(tokenC, ctx)).valid).toBe(false); // issued after the backup
    });
    // What the restore replaced is kept.
    await withDomain(`sqlite:${join(dir, 'live', 'auth.db.before-restore')}`, async ({ admin }) => {
      const users = await admin.listUsers();
      expect(users.ok && users.value.map((u) => u.login)).toEqual(['alice', 'bob', 'carol']);
    });

    // And the service runs on the restored database.
    const second = await startServe(dbUrl);
    expect(await (await fetch(`${second.base}/ValidateUserToken?token=${tokenB}`)).text()).toContain('true');
    expect(await second.stop()).toBe(0);
  });

  it('backup refuses to overwrite a file unless --force, and restores into a database that does not exist yet', async () => {
    const dbUrl = `sqlite:${join(dir, 'two', 'auth.db')}`;
    await withDomain(dbUrl, async ({ admin }) => {
      await admin.addUser({ login: 'dave', password: 'dave-1', appIds: [2] });
    });
    const file = join(dir, 'two', 'copy.db');
    expect((await run(['backup', file, '--db', dbUrl])).code).toBe(0);
    const again = await run(['backup', file, '--db', dbUrl]);
    expect(again).toMatchObject({ code: 1, err: expect.stringMatching(/copy\.db exists; choose another name or add --force/) });
    expect((await run(['backup', file, '--db', dbUrl, '--force'])).code).toBe(0);

    const fresh = `sqlite:${join(dir, 'elsewhere', 'new.db')}`;
    const restored = await run(['restore', file, '--db', fresh]);
    expect(restored.code).toBe(0);
    expect(restored.out).not.toContain('kept as');
    await withDomain(fresh, async ({ admin }) => {
      const users = await admin.listUsers();
      expect(users.ok && users.value.map((u) => u.login)).toEqual(['dave']);
    });
  });

  it('refuses what it cannot do, saying why', async () => {
    const dbUrl = `sqlite:${join(dir, 'three', 'auth.db')}`;
    await withDomain(dbUrl, async () => undefined);
    const garbage = join(dir, 'garbage.db');
    writeFileSync(garbage, 'this is not a database'.repeat(100));
    expect(await run(['restore', garbage, '--db', dbUrl])).toMatchObject({ code: 5, err: expect.stringMatching(/the backup: .*garbage\.db is not a SQLite database/) });
    const foreign = join(dir, 'foreign.db');
    const other = new Database(foreign);
    other.exec('CREATE TABLE t (x)');
    other.close();
    expect(await run(['restore', foreign, '--db', dbUrl])).toMatchObject({ code: 4, err: expect.stringMatching(/not an svcapi-auth database/) });
    expect(await run(['restore', join(dir, 'missing.db'), '--db', dbUrl])).toMatchObject({ code: 1, err: expect.stringMatching(/there is no backup file/) });
    expect(await run(['backup', join(dir, 'x.db'), '--db', `sqlite:${join(dir, 'nothing-here.db')}`])).toMatchObject({ code: 3, err: expect.stringMatching(/there is no database at/) });
    expect(await run(['backup', join(dir, 'x.db'), '--db', 'sqlite::memory:'])).toMatchObject({ code: 1, err: expect.stringMatching(/in-memory database has nothing to backup/) });

    const pg = await run(['backup', join(dir, 'x.db'), '--db', 'postgres://svc:pg-secret@db.example:5432/auth']);
    expect(pg.code).toBe(1);
    expect(pg.err).toMatch(/for PostgreSQL use pg_dump/);
    expect(pg.err).not.toContain('pg-secret');
    const pgRestore = await run(['restore', join(dir, 'x.db'), '--db', 'postgres://svc:pg-secret@db.example:5432/auth']);
    expect(pgRestore.err).toMatch(/for PostgreSQL use pg_restore/);
    expect(pgRestore.err).not.toContain('pg-secret');
  });
});
