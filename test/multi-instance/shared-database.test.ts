/**
 * Two server processes on one PostgreSQL database behave as one service: every fact that
 * matters (tokens, revocations, single-use tickets) lives in the database, none in a process.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createAdminService } from '../../src/domain/admin-service.js';
import { createArgon2Hasher } from '../../src/domain/password-hasher.js';
import { openStore } from '../../src/store/open-store.js';
import { dropSchemas, newSchemaName, postgresForTests, schemaUrl } from '../support/postgres.js';
import { killAll, requireDist, runCliProcess, seedTicketWorld, soapResult, startServer } from '../support/server-process.js';

const pgAdmin = await postgresForTests();
const schemas: string[] = [];
const dir = mkdtempSync(join(tmpdir(), 'svcapi-shared-db-'));
afterEach(() => killAll());
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  if (pgAdmin !== null) await dropSchemas(schemas);
});

describe('a server on SQLite and the CLI in another process', () => {
  it('a token the server keeps in memory stops working on the very next request after the CLI disables, withdraws or revokes', async () => {
    requireDist();
    const db = `sqlite:${join(dir, 'auth.db')}`;
    const store = await openStore(db);
    try {
      const admin = createAdminService({ store, hasher: createArgon2Hasher() });
      for (const login of ['alice', 'bob', 'carol']) expect((await admin.addUser({ login, password: 'pw', appIds: [2] })).ok).toBe(true);
    } finally {
      await store.close();
    }
    const server = await startServer(['--db', db]);
    const tokens = new Map<string, string>();
    for (const login of ['alice', 'bob', 'carol']) {
      tokens.set(login, String(await soapResult(server.origin, 'ValidateUser', { login, password: 'pw', AppId: 2, IPAddress: '' })));
    }
    const check = async (login: string): Promise<unknown> => soapResult(server.origin, 'ValidateUserToken', { token: tokens.get(login) ?? '' });
    for (const login of tokens.keys()) expect([await check(login), await check(login)]).toEqual([true, true]);

    for (const [login, args] of [['alice', ['user', 'disable', 'alice']], ['bob', ['user', 'revoke-app', 'bob', '--app', '2']], ['carol', ['token', 'revoke', '--user', 'carol']]] as const) {
      const done = await runCliProcess([...args, '--db', db]);
      expect(done.status, done.output).toBe(0);
      expect(await check(login), login).toBe(false);
    }
  });
});

describe.skipIf(pgAdmin === null)('two instances on one PostgreSQL database', () => {
  it('share tokens, revocations and single-use tickets', async () => {
    requireDist();
    const schema = newSchemaName();
    schemas.push(schema);
    const db = schemaUrl(schema);

    await seedTicketWorld(db);

    const [a, b] = await Promise.all([startServer(['--db', db]), startServer(['--db', db])]);

    // A token issued by A validates on B (and on A).
    const token = await soapResult(a.origin, 'ValidateUser', { login: 'alice', password: 'pw', AppId: 2, IPAddress: '' });
    expect(token).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(await soapResult(b.origin, 'ValidateUserToken', { token: String(token) })).toBe(true);
    expect(await soapResult(a.origin, 'ValidateUserToken', { token: String(token) })).toBe(true);

    // A login ticket fetched through A is accepted once across A and B together.
    const loginUrl = await soapResult(a.origin, 'GetUserLoginURL', { token: String(token), AppID: 2 });
    const ticket = new URL(String(loginUrl)).searchParams.get('ticket');
    expect(ticket, String(loginUrl)).toMatch(/^[0-9a-f-]{36}$/);
    const attempts = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      soapResult(i % 2 === 0 ? a.origin : b.origin, 'ValidateUserToken', { token: ticket ?? '' })));
    expect(attempts.filter((r) => r === true)).toHaveLength(1);
    // Each instance opens the other's tickets: one ticket key for the database (ordered-ticket.ts).
    for (const [issuer, redeemer] of [[a, b], [b, a]] as const) {
      const url = await soapResult(issuer.origin, 'GetUserLoginURL', { token: String(token), AppID: 2 });
      const other = new URL(String(url)).searchParams.get('ticket') ?? '';
      expect([await soapResult(redeemer.origin, 'ValidateUserToken', { token: other }), await soapResult(issuer.origin, 'ValidateUserToken', { token: other })]).toEqual([true, false]);
    }

    // Both keep the token's row in memory, yet a revocation through the CLI, another
    // process, holds on the very next request to either.
    const revoked = await runCliProcess(['token', 'revoke', '--user', 'alice', '--db', db]);
    expect(revoked.status, revoked.output).toBe(0);
    expect(await soapResult(a.origin, 'ValidateUserToken', { token: String(token) })).toBe(false);
    expect(await soapResult(b.origin, 'ValidateUserToken', { token: String(token) })).toBe(false);

    a.child.kill('SIGTERM');
    b.child.kill('SIGTERM');
    expect(await a.exited).toEqual({ code: 0, signal: null });
    expect(await b.exited).toEqual({ code: 0, signal: null });
  });
});
