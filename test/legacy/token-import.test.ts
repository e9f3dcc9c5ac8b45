/**
 * `svcapi-auth import tokens FILE`: the old service's live tokens keep working after the switch,
 * stored only as hashes, until their own expiry; revocation applies to them; nothing is guessed.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseSqlDate } from '../../src/domain/legacy-import.js';
import { hashToken } from '../../src/domain/tokens.js';
import { openStore } from '../../src/store/open-store.js';
import { ctx } from '../support/domain-fakes.js';
import { createTestStack } from '../support/start-app.js';
import { csv, run } from './support.js';

const root = mkdtempSync(join(tmpdir(), 'svcapi-token-import-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const LIVE = '7C9E6679-7425-40DE-944B-E07FC1F90AE7'; // as a .NET legacy writes Guid.ToString().ToUpper()
const LIVE_BRACED = '{3f2504e0-4f89-11d3-9a0c-0305e82c3301}';
const EXPIRED = '6ba7b810-9dad-11d1-80b4-00c04fd430c8';

describe('import tokens', () => {
  it('imported tokens validate until their expiry, as hashes only; revocation applies; unknowns are reported, not guessed', async () => {
    const stack = await createTestStack({ throttle: false });
    try {
      await stack.admin.addUser({ login: 'Alice', password: 'pw-alice', appIds: [2] });
      await stack.admin.addUser({ login: 'bob', password: 'pw-bob', appIds: [2] });
      const in1h = new Date(Date.now() + 3_600_000);
      const sqlTime = in1h.toISOString().replace('T', ' ').replace('Z', ''); // SQL Server style 121, UTC
      const file = join(root, 'tokens.csv');
      writeFileSync(file, csv(['Token', 'UserName', 'AppID', 'ExpiresAt'], [
        [LIVE, 'alice', '2', sqlTime],
        [LIVE_BRACED, 'bob', '2', in1h.toISOString()],
        [EXPIRED, 'alice', '2', '2020-01-01 00:00:00'],
        ['00000000-not-a-token', 'alice', '2', sqlTime],
        ['0b9e6679-7425-40de-944b-e07fc1f90ae7', 'nobody', '2', sqlTime],
        ['1b9e6679-7425-40de-944b-e07fc1f90ae7', 'alice', '99', sqlTime],
        ['2b9e6679-7425-40de-944b-e07fc1f90ae7', 'alice', '2', '2027-02-30 10:00:00'],
      ]));
      const dry = await run(['import', 'tokens', file, '--dry-run', '--json', '--db', `sqlite:${stack.dbPath}`]);
      expect(dry.code).toBe(0);
      expect(JSON.parse(dry.out)).toMatchObject({ rows: 7, imported: 2, expired: 1, dryRun: true });
      expect((await stack.service.validateUserToken(LIVE, ctx)).valid).toBe(false);

      const done = await run(['import', 'tokens', file, '--db', `sqlite:${stack.dbPath}`]);
      expect(done.code).toBe(0);
      expect(done.out).toContain('imported 2, already here 0, expired (not imported) 1, skipped 4');
      for (const [line, reason] of [[5, 'not a token'], [6, 'no such login'], [7, 'no such application'], [8, 'bad expiry']] as const) {
        expect(done.out).toMatch(new RegExp(`line ${line} .*${reason}`));
      }
      // Never the token itself, in the report or the database.
      for (const t of [LIVE, LIVE.toLowerCase(), LIVE_BRACED]) expect(done.out).not.toContain(t);
      expect(readFileSync(stack.dbPath).includes(Buffer.from(LIVE.toLowerCase()))).toBe(false);

      // The clients send the token as the old service gave it: any case, braces as they were.
      const check = await stack.service.validateUserToken(LIVE, ctx);
      expect(check).toStrictEqual({ valid: true, expiresAt: parseSqlDate(sqlTime) });
      expect((await stack.service.validateUserToken(LIVE.toLowerCase(), ctx)).valid).toBe(true);
      expect((await stack.service.validateUserToken(LIVE_BRACED, ctx)).valid).toBe(true);
      expect((await stack.service.validateUserToken(EXPIRED, ctx)).valid).toBe(false);

      // The operator sees which sessions came from the old service: `token list`, text and JSON.
      const ours = await stack.service.validateUser({ login: 'alice', password: 'pw-alice', appId: 2, ipAddress: '' }, ctx);
      expect(ours.ok).toBe(true);
      const oursId = ours.ok ? hashToken(ours.token).slice(0, 12) : '-';
      const legacyId = hashToken(LIVE.toLowerCase()).slice(0, 12);
      const listed = await run(['token', 'list', '--user', 'alice', '--db', `sqlite:${stack.dbPath}`]);
      expect(listed.code).toBe(0);
      expect(listed.out).toMatch(/^ID .* ORIGIN\n/);
      expect(listed.out).toMatch(new RegExp(`^${legacyId} .* legacy$`, 'm'));
      expect(listed.out).toMatch(new RegExp(`^${oursId} .* ours$`, 'm'));
      const json = await run(['token', 'list', '--user', 'alice', '--json', '--db', `sqlite:${stack.dbPath}`]);
      const origins = Object.fromEntries(json.out.trim().split('\n').map((l) => JSON.parse(l) as { id: string; origin: string }).map((t) => [t.id, t.origin]));
      expect(origins).toEqual({ [legacyId]: 'legacy', [oursId]: 'ours' });

      // Idempotent.
      const again = await run(['import', 'tokens', file, '--json', '--db', `sqlite:${stack.dbPath}`]);
      expect(JSON.parse(again.out)).toMatchObject({ imported: 0, alreadyPresent: 2 });
      // The migration report counts the live sessions the old service issued (not ours).
      const report = await run(['users', 'migration-report', '--db', `sqlite:${stack.dbPath}`]);
      expect(report.out).toContain('Live sessions issued by the legacy service (import tokens, token adoption): 2\n');
      expect(JSON.parse((await run(['users', 'migration-report', '--json', '--db', `sqlite:${stack.dbPath}`])).out)).toMatchObject({ legacyTokensLive: 2 });

      // Revocation applies to them like to any token.
      const revoke = await run(['user', 'disable', 'bob', '--db', `sqlite:${stack.dbPath}`]);
      expect(revoke.code).toBe(0);
      expect((await stack.service.validateUserToken(LIVE_BRACED, ctx)).valid).toBe(false);
      const store = await openStore(`sqlite:${stack.dbPath}`);
      try {
        expect(await store.findToken(hashToken(LIVE.toLowerCase()))).toMatchObject({ kind: 'session', expiresAt: parseSqlDate(sqlTime) });
      } finally {
        await store.close();
      }
    } finally {
      await stack.close();
    }
  });

  it('refuses a file without the required columns, naming them', async () => {
    const file = join(root, 'bad.csv');
    writeFileSync(file, csv(['Token', 'Login'], [['x', 'y']]));
    expect((await run(['migrate', '--db', `sqlite:${join(root, 'x.db')}`])).code).toBe(0);
    const result = await run(['import', 'tokens', file, '--db', `sqlite:${join(root, 'x.db')}`]);
    expect(result.code).not.toBe(0);
    expect(result.err).toMatch(/lacks the column\(s\) appid, expiresat/);
  });

  it('reads SQL Server and ISO times, refusing dates that do not exist', () => {
    expect(parseSqlDate('2027-02-28 23:59:59.997')).toEqual(new Date('2027-02-28T23:59:59.997Z'));
    expect(parseSqlDate('2027-03-01T01:00:00-03:00')).toEqual(new Date('2027-03-01T04:00:00Z'));
    for (const bad of ['2027-02-30 10:00:00', '2027-02-28 24:00:00', '2027-13-01', '2026-04-31T00:00:00Z']) expect(parseSqlDate(bad), bad).toBeNull();
  });
});
