/**
 * `svcapi-auth export` / `import` between SQLite and PostgreSQL (the system suite: npm run
 * test:system): SQLite -> PostgreSQL -> SQLite. Tokens issued on SQLite keep working on
 * PostgreSQL (they travel as hashes), passwords keep working (hashes travel as they are), and
 * importing twice adds nothing. The SQLite-only checks are in export-import.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createAdminService } from '../../src/domain/admin-service.js';
import { createArgon2Hasher } from '../../src/domain/password-hasher.js';
import { createAuthService } from '../../src/domain/create-auth-service.js';
import { openStore } from '../../src/store/open-store.js';
import { ctx } from '../support/domain-fakes.js';
import { dropSchemas, newSchemaName, postgresForTests, schemaUrl } from '../support/postgres.js';
import { runCliCaptured as cli } from '../support/run-cli.js';

const pgAdmin = await postgresForTests();
const dir = mkdtempSync(join(tmpdir(), 'svcapi-transfer-pg-'));
const schemas: string[] = [];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  if (pgAdmin !== null) await dropSchemas(schemas);
});

const hasher = createArgon2Hasher();
const must = <T>(r: { ok: true; value: T } | { ok: false; message: string }): T => {
  if (!r.ok) throw new Error(r.message);
  return r.value;
};

describe.skipIf(pgAdmin === null)('export / import between SQLite and PostgreSQL', () => {
  it('moves applications, users, news and live tokens; tokens and passwords keep working; a second import adds nothing', async () => {
    // --- a SQLite database in use ---
    const sqliteUrl = `sqlite:${join(dir, 'source.db')}`;
    const source = await openStore(sqliteUrl);
    const admin = createAdminService({ store: source, hasher });
    const service = createAuthService({ store: source, hasher });
    must(await admin.updateApplication(2, { loginUrl: 'http://gps.example/login' }));
    must(await admin.addApplication({ appId: 7, name: 'Portal', requireIp: false, loginUrl: 'https://portal.example/', idleTimeoutSeconds: 600, defaultLanguage: 'pt-BR' }));
    must(await admin.addUser({ login: 'Alice', password: 'alice-pw', appIds: [2, 7] }));
    must(await admin.addUser({ login: 'bob', password: 'bob-pw', appIds: [2], enabled: false }));
    must(await admin.addUser({ login: 'carol', password: 'carol-pw', appIds: [2] }));
    must(await admin.addNews({ appId: 2, title: 'First', body: 'Body & <more>', publishedAt: new Date('2024-01-01T10:00:00Z') }));
    must(await admin.addNews({ appId: 7, title: 'Members', body: 'x', language: 'pt-BR', membersOnly: true, minVersion: '2.1', publishedAt: new Date('2024-02-01T10:00:00Z'), attributes: { Destaque: 'true', Categoria: 'Promoção' } }));

    const login = async (name: string, password: string, appId: number): Promise<string> => {
      const r = await service.validateUser({ login: name, password, appId, ipAddress: '198.51.100.7' }, ctx);
      if (!r.ok) throw new Error(`login ${name} failed`);
      return r.token;
    };
    const onGps = await login('alice', 'alice-pw', 2);
    const onPortal = await login('alice', 'alice-pw', 7);
    const ticketUrl = await service.getUserLoginUrl(onGps, 2, ctx);
    const ticket = new URL(ticketUrl).searchParams.get('ticket') ?? '';
    const carols = await login('carol', 'carol-pw', 2);
    must(await admin.revokeTokens({ login: 'carol' }));
    const sourceAlice = await source.findUserByLoginKey('alice');
    await source.close();

    // --- export ---
    const file = join(dir, 'export.jsonl');
    const exported = await cli(['export', '--db', sqliteUrl, '--output', file]);
    expect(exported.code, exported.err).toBe(0);
    expect(exported.err).toBe('Exported 2 applications, 3 users, 2 news, 3 tokens\n');
    const text = readFileSync(file, 'utf8');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    for (const secret of [onGps, onPortal, ticket, 'alice-pw']) expect(text).not.toContain(secret);
    const records = text.trimEnd().split('\n').map((l) => JSON.parse(l) as { type: string });
    expect(records.map((r) => r.type)).toEqual(['header', 'application', 'application', 'user', 'user', 'user', 'news', 'news', 'token', 'token', 'token']);

    // --- import into a fresh PostgreSQL schema (GPS exists there with other settings) ---
    const schema = newSchemaName();
    schemas.push(schema);
    const pgUrl = schemaUrl(schema);
    expect((await cli(['migrate', '--db', pgUrl])).code).toBe(0); // import fills a database migrate created
    const first = await cli(['import', file, '--db', pgUrl]);
    expect(first.code, first.err).toBe(0);
    expect(first.out).toBe('Imported 1 applications, 3 users, 2 news, 3 tokens\nSkipped (already present or not importable) 1 applications, 0 users, 0 news, 0 tokens\n');
    expect(first.err).toMatch(/AppID 2 exists with other settings; kept them \(--update-applications overwrites\)/);
    const second = await cli(['import', file, '--db', pgUrl, '--update-applications']);
    expect(second.code, second.err).toBe(0);
    expect(second.out).toBe('Imported 0 applications, 0 users, 0 news, 0 tokens\nSkipped (already present or not importable) 1 applications, 3 users, 2 news, 3 tokens\nUpdated 1 existing application(s)\n');

    const target = await openStore(pgUrl);
    try {
      const pgService = createAuthService({ store: target, hasher });
      expect((await pgService.validateUserToken(onGps, ctx)).valid).toBe(true);
      expect((await pgService.validateUserToken(onPortal, ctx)).valid).toBe(true);
      expect((await pgService.validateUserToken(carols, ctx)).valid).toBe(false); // revoked: not moved
      expect([(await pgService.validateUserToken(ticket, ctx)).valid, (await pgService.validateUserToken(ticket, ctx)).valid]).toEqual([true, false]);
      expect((await pgService.validateUser({ login: 'ALICE', password: 'alice-pw', appId: 7, ipAddress: null }, ctx)).ok).toBe(true);
      expect((await pgService.validateUser({ login: 'bob', password: 'bob-pw', appId: 2, ipAddress: null }, ctx)).ok).toBe(false); // still disabled
      expect((await target.getApplication(2))?.loginUrl).toBe('http://gps.example/login');
      expect(await target.getApplication(7)).toMatchObject({ name: 'Portal', requireIp: false, idleTimeoutSeconds: 600, defaultLanguage: 'pt-BR' });
      expect((await target.listNews()).map((n) => [n.appId, n.title, n.body, n.language, n.membersOnly, n.minVersion, n.attributes]))
        .toEqual([[7, 'Members', 'x', 'pt-BR', true, '2.1', { Categoria: 'Promoção', Destaque: 'true' }], [2, 'First', 'Body & <more>', 'en', false, null, {}]]);
      const alice = await target.findUserByLoginKey('alice');
      expect(alice).toMatchObject({ login: 'Alice', appIds: [2, 7], createdAt: sourceAlice?.createdAt, passwordChangedAt: sourceAlice?.passwordChangedAt });
    } finally {
      await target.close();
    }

    // --- and back: PostgreSQL -> a new SQLite file, through standard output ---
    const back = await cli(['export', '--db', pgUrl]);
    expect(back.code, back.err).toBe(0);
    const backFile = join(dir, 'back.jsonl');
    writeFileSync(backFile, back.out);
    const sqliteAgain = `sqlite:${join(dir, 'again.db')}`;
    expect((await cli(['migrate', '--db', sqliteAgain])).code).toBe(0);
    const imported = await cli(['import', backFile, '--db', sqliteAgain, '--update-applications']);
    expect(imported.code, imported.err).toBe(0);
    const again = await openStore(sqliteAgain);
    try {
      const s = createAuthService({ store: again, hasher });
      expect((await s.validateUserToken(onPortal, ctx)).valid).toBe(true);
      expect((await s.validateUser({ login: 'alice', password: 'alice-pw', appId: 2, ipAddress: '198.51.100.7' }, ctx)).ok).toBe(true);
    } finally {
      await again.close();
    }
  });
});
