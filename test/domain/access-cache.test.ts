/**
 * Token validation's memory (src/domain/access-cache.ts and revision-gate.ts): every
 * answer exactly what the store gives now, whoever revoked or disabled what, however time
 * passed; one read of the revisions per event-loop turn, never a read made before the request.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createAuthService } from '../../src/domain/create-auth-service.js';
import { counterRandom, ctx, fakeHasher, HOUR, MINUTE } from '../support/domain-fakes.js';
import { accessCacheDifferential, housekeepingBesideMemory, login, LOGINS, makeWorld, must, PORTAL, valid, type World } from '../support/access-cache-world.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-access-cache-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});
let fileCounter = 0;
const freshSqlite = (): string => `sqlite:${join(dir, `db-${++fileCounter}.db`)}`;

/** Twelve sessions on AppID 2, alice's and bob's in turn: more than a memory of four records holds. */
async function twelveLogins(w: World): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < 12; i++) tokens.push(await login(w.service, 2, LOGINS[i % 2]));
  return tokens;
}

describe('token validation memory', () => {
  it('reads the revisions once for all requests of one turn, and a kept token row not at all while nothing changes', async () => {
    const w = await makeWorld(freshSqlite());
    try {
      const token = await login(w.service);
      const [revisions, rows] = [w.revisionReads(), w.tokenReads()];
      const answers = await Promise.all(Array.from({ length: 50 }, () => w.service.validateUserToken(token, ctx)));
      expect(answers.every((a) => a.valid)).toBe(true);
      expect(w.revisionReads() - revisions).toBe(1);
      expect(w.tokenReads() - rows).toBe(1);
      // Remembered at its first read (the session memory): no more reads, one revisions read per turn.
      for (let i = 0; i < 10; i++) expect(await valid(w, token)).toBe(true);
      expect(w.revisionReads() - revisions).toBe(11);
      expect(w.tokenReads() - rows).toBe(1);
      // Logins elsewhere do not empty the memory.
      await login(w.service, 2, 'bob');
      expect(await valid(w, token)).toBe(true);
      expect(w.tokenReads() - rows).toBe(1);
    } finally {
      await w.close();
    }
  });

  it('remembers a fleet of sessions at their first read, more than the records hold, for plain checks only: the owner, WhatsNew and GetUserLoginURL read the row', async () => {
    const w = await makeWorld(freshSqlite(), { tokenCacheEntries: 4 });
    try {
      const tokens = await twelveLogins(w);
      const rows = w.tokenReads();
      for (let round = 0; round < 3; round++) for (const t of tokens) expect(await valid(w, t)).toBe(true);
      expect(w.tokenReads() - rows).toBe(12);
      // A check that shows the owner needs the row: the records do not hold these twelve.
      const owned = await w.service.validateUserToken(tokens[1] ?? '', ctx, { owner: true });
      expect(owned).toEqual({ valid: true, expiresAt: expect.any(Date), owner: { login: 'bob', appId: 2 } });
      expect(w.tokenReads() - rows).toBe(13);
      // So does a session that WhatsNew or GetUserLoginURL judges.
      await w.service.whatsNew({ appToken: tokens[2] ?? '', appId: 2, appVersion: null, language: null, qtyNews: 5 }, ctx);
      expect(w.tokenReads() - rows).toBe(14);
      await w.service.getUserLoginUrl(tokens[3] ?? '', 2, ctx);
      expect(w.tokenReads() - rows).toBe(15);
      expect(await valid(w, tokens[2] ?? '')).toBe(true);
      expect(await valid(w, tokens[3] ?? '')).toBe(true);
      expect(w.tokenReads() - rows).toBe(15);
    } finally {
      await w.close();
    }
  });

  it('without the session memory, keeps a token from its second check on, not at its first: a fleet checking each token once in a while keeps nothing', async () => {
    const w = await makeWorld(freshSqlite(), { tokenCacheEntries: 4, sessionMemoryEntries: 0 });
    try {
      const tokens = await twelveLogins(w);
      const rows = w.tokenReads();
      // A rotation over more tokens than the memory keeps: every check reads, nothing is kept,
      // so no kept token is ever pushed out by one that is not checked again soon.
      for (let round = 0; round < 3; round++) for (const t of tokens) expect(await valid(w, t)).toBe(true);
      expect(w.tokenReads() - rows).toBe(36);
      // Checked again at once: kept at the second check, then read no more.
      const hot = tokens[0] ?? '';
      for (let i = 0; i < 5; i++) expect(await valid(w, hot)).toBe(true);
      expect(w.tokenReads() - rows).toBe(36 + 2);
    } finally {
      await w.close();
    }
  });

  it('keeps only working sessions without idle timeout: unknown, sliding and dead tokens and tickets read the store every time', async () => {
    const w = await makeWorld(freshSqlite());
    try {
      const sliding = await login(w.service, PORTAL);
      const dead = await login(w.service);
      await must(w.admin.revokeTokens({ login: 'alice' }));
      const ticketUrl = await w.service.getUserLoginUrl(await login(w.service, PORTAL), PORTAL, ctx);
      const ticket = new URL(ticketUrl).searchParams.get('ticket') ?? '';
      const rows = w.tokenReads();
      for (let i = 0; i < 3; i++) {
        expect(await valid(w, '00000000-0000-0000-0000-000000000000')).toBe(false);
        expect(await valid(w, dead)).toBe(false);
      }
      expect(await valid(w, ticket)).toBe(true);
      expect(await valid(w, ticket)).toBe(false); // used once
      expect(await valid(w, sliding)).toBe(false); // revoked with the rest of alice's tokens
      const fresh = await login(w.service, PORTAL);
      w.clock.advance(29 * MINUTE);
      expect(await valid(w, fresh)).toBe(true);
      w.clock.advance(29 * MINUTE);
      expect(await valid(w, fresh)).toBe(true); // its uses were recorded: idle expiry slides
      w.clock.advance(31 * MINUTE);
      expect(await valid(w, fresh)).toBe(false);
      // Every one of them read the store; a ticket in issue order is looked for in the tokens table
      // first, then in the tickets table (create-auth-service.ts): two reads a check.
      expect(w.tokenReads() - rows).toBe(6 + 2 * 2 + 1 + 3);
    } finally {
      await w.close();
    }
  });

  it('expires a kept token exactly at its expiry', async () => {
    const w = await makeWorld(freshSqlite());
    try {
      const token = await login(w.service);
      expect(await valid(w, token)).toBe(true);
      w.clock.advance(24 * HOUR - 1);
      expect(await valid(w, token)).toBe(true);
      w.clock.advance(1);
      expect(await valid(w, token)).toBe(false);
    } finally {
      await w.close();
    }
  });

  it('sees a revocation by raw SQL from another connection on the very next request', async () => {
    const url = freshSqlite();
    const w = await makeWorld(url);
    const raw = new Database(url.slice('sqlite:'.length));
    try {
      const token = await login(w.service);
      const other = await login(w.service, 2, 'bob');
      expect(await valid(w, token)).toBe(true);
      expect(await valid(w, other)).toBe(true);
      raw.prepare("UPDATE tokens SET revoked_at = 1 WHERE user_id = (SELECT user_id FROM users WHERE login = 'alice')").run();
      expect(await valid(w, token)).toBe(false);
      expect(await valid(w, other)).toBe(true);
      raw.prepare('UPDATE applications SET enabled = 0 WHERE app_id = 2').run();
      expect(await valid(w, other)).toBe(false);
    } finally {
      raw.close();
      await w.close();
    }
  });

  it('shows a login renamed by raw SQL from another connection on the very next request (the login is read with the token)', async () => {
    const url = freshSqlite();
    const w = await makeWorld(url);
    const raw = new Database(url.slice('sqlite:'.length));
    try {
      const token = await login(w.service);
      const owner = async (): Promise<string | undefined> => {
        const check = await w.service.validateUserToken(token, ctx, { owner: true });
        return check.valid ? check.owner?.login : undefined;
      };
      expect(await owner()).toBe('alice');
      expect(await owner()).toBe('alice'); // kept from its second check
      const rows = w.tokenReads();
      expect(await owner()).toBe('alice');
      expect(w.tokenReads()).toBe(rows);
      raw.prepare("UPDATE users SET login = 'alice.renamed' WHERE login = 'alice'").run();
      expect(await owner()).toBe('alice.renamed');
    } finally {
      raw.close();
      await w.close();
    }
  });

  it('never judges a request by a revisions read that started before it arrived', async () => {
    // A slow round trip (PostgreSQL): the read in flight saw the database before the revocation.
    const w = await makeWorld(freshSqlite(), { revisionsDelayMs: 30 });
    try {
      const token = await login(w.service);
      expect(await valid(w, token)).toBe(true);
      expect(await valid(w, token)).toBe(true); // kept from its second check
      const before = w.service.validateUserToken(token, ctx);
      await nextTurn(); // its read has started
      await must(w.admin.revokeTokens({ login: 'alice' }));
      const after = w.service.validateUserToken(token, ctx); // arrives after the revocation committed
      expect((await after).valid).toBe(false);
      expect((await before).valid).toBe(true); // arrived before: either answer was right, this is the one it got
    } finally {
      await w.close();
    }
  });

  it('reads a token the memory does not hold with the turn\'s revisions, never with a read that started before its request', async () => {
    const w = await makeWorld(freshSqlite(), { revisionsDelayMs: 30 });
    try {
      const token = await login(w.service);
      const [revisions, rows] = [w.revisionReads(), w.tokenReads()];
      const before = w.service.validateUserToken(token, ctx); // not in memory: rides on the turn's read
      await nextTurn(); // that read has started
      await must(w.admin.revokeTokens({ login: 'alice' }));
      const after = w.service.validateUserToken(token, ctx); // arrives after the revocation committed
      expect((await after).valid).toBe(false);
      expect((await before).valid).toBe(true);
      expect(w.revisionReads() - revisions).toBe(2); // one read each, the token with it: no lookup of its own
      expect(w.tokenReads() - rows).toBe(2);
    } finally {
      await w.close();
    }
  });

  it('fails the requests of a turn whose revisions read fails, and serves nothing from memory meanwhile', async () => {
    const w = await makeWorld(freshSqlite());
    try {
      const token = await login(w.service);
      expect(await valid(w, token)).toBe(true);
      const broken = createAuthService({
        store: {
          ...w.store,
          revisions: async () => { throw new Error('database unavailable'); },
          revisionsWithTokens: async () => { throw new Error('database unavailable'); },
        },
        hasher: fakeHasher(), clock: w.clock, random: counterRandom(),
      });
      const answers = await Promise.allSettled([broken.validateUserToken(token, ctx), broken.validateUserToken(token, ctx)]);
      expect(answers.map((a) => a.status)).toEqual(['rejected', 'rejected']);
    } finally {
      await w.close();
    }
  });
});

describe('ValidateUserToken with and without the memory gives the same answers (PostgreSQL: postgres-access-cache.test.ts)', () => {
  it('over random logins, revocations, disabled users and applications, grants and clock moves: SQLite, writes through another connection', async () => {
    await accessCacheDifferential(freshSqlite(), 300);
  }, 120_000);
});

describe('housekeeping beside the memory (PostgreSQL: postgres-access-cache.test.ts)', () => {
  it('a purge of expired tokens leaves live tokens kept, and a kept token purged after its expiry is unknown, as without memory: SQLite', async () => {
    await housekeepingBesideMemory(freshSqlite);
  });
});
