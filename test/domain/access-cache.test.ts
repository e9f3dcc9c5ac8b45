/**
 * Token validation's memory (issue 9, src/domain/access-cache.ts and revision-gate.ts): every
 * answer exactly what the store gives now, whoever revoked or disabled what, however time
 * passed; one read of the revisions per event-loop turn, never a read made before the request.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createAuthService } from '../../src/domain/service.js';
import { createAdminService, type AdminService } from '../../src/domain/admin-service.js';
import type { AuthService } from '../../src/domain/auth-service.js';
import type { LegacyTokenPassthrough } from '../../src/domain/legacy-token-passthrough.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { counterRandom, ctx, fakeClock, fakeHasher, HOUR, MINUTE, seededRandom, type FakeClock } from '../support/domain-fakes.js';
import { dropSchemas, newSchemaName, postgresForTests, schemaUrl } from '../support/postgres.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-access-cache-'));
const pgAdmin = await postgresForTests();
const schemas: string[] = [];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  if (pgAdmin !== null) await dropSchemas(schemas);
});
let fileCounter = 0;
const freshSqlite = (): string => `sqlite:${join(dir, `db-${++fileCounter}.db`)}`;
const freshPostgres = (): string => {
  const schema = newSchemaName();
  schemas.push(schema);
  return schemaUrl(schema);
};

const PORTAL = 5; // sliding: 30 minutes idle timeout
const LOGINS = ['alice', 'bob'];

/** Counts the store reads the memory exists to avoid. */
function countingStore(store: Store, revisionsDelayMs = 0): { store: Store; revisionReads: () => number; tokenReads: () => number } {
  let revisionReads = 0;
  let tokenReads = 0;
  const counted: Store = {
    ...store,
    revisions: async () => {
      revisionReads++;
      const revisions = await store.revisions();
      if (revisionsDelayMs > 0) await sleep(revisionsDelayMs); // a slow round trip: the value is as of its start
      return revisions;
    },
    findToken: async (hash) => {
      tokenReads++;
      return store.findToken(hash);
    },
  };
  return { store: counted, revisionReads: () => revisionReads, tokenReads: () => tokenReads };
}

interface World {
  store: Store;
  clock: FakeClock;
  admin: AdminService;
  service: AuthService;
  revisionReads: () => number;
  tokenReads: () => number;
  close(): Promise<void>;
}

async function must<T>(result: Promise<{ ok: true; value: T } | { ok: false; message: string }>): Promise<T> {
  const r = await result;
  if (!r.ok) throw new Error(r.message);
  return r.value;
}

async function makeWorld(url: string, options: { tokenCacheEntries?: number; revisionsDelayMs?: number; legacyTokens?: LegacyTokenPassthrough } = {}): Promise<World> {
  const store = await openStore(url);
  const clock = fakeClock();
  const hasher = fakeHasher();
  const admin = createAdminService({ store, hasher, clock });
  const counting = countingStore(store, options.revisionsDelayMs);
  const service = createAuthService({
    store: counting.store, hasher, clock, random: counterRandom(),
    ...(options.tokenCacheEntries !== undefined && { tokenCacheEntries: options.tokenCacheEntries }),
    ...(options.legacyTokens !== undefined && { legacyTokens: options.legacyTokens }),
  });
  await must(admin.addApplication({ appId: PORTAL, name: 'Portal', requireIp: false, loginUrl: 'https://portal.example/in', tokenLifetimeSeconds: 8 * 3600, idleTimeoutSeconds: 30 * 60, defaultLanguage: 'en' }));
  for (const login of LOGINS) await must(admin.addUser({ login, password: 'pw', appIds: [2, PORTAL] }));
  return { store, clock, admin, service, revisionReads: counting.revisionReads, tokenReads: counting.tokenReads, close: () => store.close() };
}

async function login(service: AuthService, appId = 2, who = 'alice'): Promise<string> {
  const outcome = await service.validateUser({ login: who, password: 'pw', appId, ipAddress: null }, ctx);
  if (!outcome.ok) throw new Error('login failed');
  return outcome.token;
}

const valid = async (w: World, token: string): Promise<boolean> => (await w.service.validateUserToken(token, ctx)).valid;

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
      // Kept from its second miss on (the doorkeeper): one more read, then none.
      for (let i = 0; i < 10; i++) expect(await valid(w, token)).toBe(true);
      expect(w.revisionReads() - revisions).toBe(11);
      expect(w.tokenReads() - rows).toBe(2);
      // Logins elsewhere do not empty the memory.
      await login(w.service, 2, 'bob');
      expect(await valid(w, token)).toBe(true);
      expect(w.tokenReads() - rows).toBe(2);
    } finally {
      await w.close();
    }
  });

  it('keeps a token from its second check on, not at its first: a fleet checking each token once in a while keeps nothing', async () => {
    const w = await makeWorld(freshSqlite(), { tokenCacheEntries: 4 });
    try {
      const tokens: string[] = [];
      for (let i = 0; i < 12; i++) tokens.push(await login(w.service, 2, LOGINS[i % 2]));
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
      expect(w.tokenReads() - rows).toBe(6 + 2 + 1 + 3); // every one of them read the store
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

  it('fails the requests of a turn whose revisions read fails, and serves nothing from memory meanwhile', async () => {
    const w = await makeWorld(freshSqlite());
    try {
      const token = await login(w.service);
      expect(await valid(w, token)).toBe(true);
      const broken = createAuthService({
        store: { ...w.store, revisions: async () => { throw new Error('database unavailable'); } },
        hasher: fakeHasher(), clock: w.clock, random: counterRandom(),
      });
      const answers = await Promise.allSettled([broken.validateUserToken(token, ctx), broken.validateUserToken(token, ctx)]);
      expect(answers.map((a) => a.status)).toEqual(['rejected', 'rejected']);
    } finally {
      await w.close();
    }
  });
});

const backends = [
  { name: 'SQLite, writes through another connection', url: freshSqlite },
  { name: 'PostgreSQL, writes through another pool', url: pgAdmin === null ? null : freshPostgres },
];

describe.each(backends)('ValidateUserToken with and without the memory gives the same answers: $name', ({ url }) => {
  it.skipIf(url === null)('over random logins, revocations, disabled users and applications, grants and clock moves', async () => {
    const dbUrl = (url ?? freshSqlite)();
    const cached = await makeWorld(dbUrl);
    const writerStore = await openStore(dbUrl);
    const writer = createAdminService({ store: writerStore, hasher: fakeHasher(), clock: cached.clock });
    const reference = createAuthService({ store: cached.store, hasher: fakeHasher(), clock: cached.clock, random: counterRandom(), tokenCacheEntries: 0 });
    const tiny = createAuthService({ store: cached.store, hasher: fakeHasher(), clock: cached.clock, random: counterRandom(), tokenCacheEntries: 2 });
    try {
      const rnd = seededRandom(11);
      const tokens: string[] = ['garbage', '00000000-0000-0000-0000-000000000000'];
      let positives = 0;
      for (let step = 0; step < (url === freshSqlite ? 300 : 120); step++) {
        const action = rnd.int(14);
        const who = rnd.pick(LOGINS);
        const appId = rnd.pick([2, 2, PORTAL]);
        const admin = rnd.int(2) === 0 ? writer : cached.admin; // another connection, or this one
        if (action < 3) {
          const outcome = await cached.service.validateUser({ login: who, password: 'pw', appId, ipAddress: null }, ctx);
          if (outcome.ok) tokens.push(outcome.token);
        } else if (action === 3) {
          await must(admin.revokeTokens(rnd.int(5) === 0 ? { all: true } : { login: who }));
        } else if (action === 4) {
          await must(admin.setUserEnabled(who, rnd.int(3) !== 0));
        } else if (action === 5) {
          await must(admin.updateApplication(appId, { enabled: rnd.int(3) !== 0 }));
        } else if (action === 6) {
          await (rnd.int(2) === 0 ? admin.grantApplication(who, appId) : admin.revokeApplication(who, appId));
        } else if (action === 7) {
          cached.clock.advance(rnd.pick([1, MINUTE, 20 * MINUTE, 4 * HOUR]));
        } else if (action === 8 && rnd.int(3) === 0) {
          await must(admin.updateApplication(2, { idleTimeoutSeconds: rnd.pick([null, null, 60 * 60]) }));
        } else if (action === 9 && rnd.int(3) === 0) {
          await must(admin.changePassword(who, 'pw'));
        } else if (action === 10 && rnd.int(2) === 0) {
          // Housekeeping: rows expired by this clock go without moving the revision (migration 13).
          await writerStore.purgeExpiredTokens(cached.clock.now(), 1000);
        }
        for (let q = 0; q < 4; q++) {
          const token = rnd.pick(tokens);
          const label = `step ${step}: token #${tokens.indexOf(token)}`;
          const expected = await reference.validateUserToken(token, ctx);
          expect(await cached.service.validateUserToken(token, ctx), label).toEqual(expected);
          expect(await tiny.validateUserToken(token, ctx), label).toEqual(expected);
          if (expected.valid) positives++;
        }
      }
      expect(positives).toBeGreaterThan(20); // the sequence exercised working tokens, not only refusals
    } finally {
      await writerStore.close();
      await cached.close();
    }
  }, 120_000);
});

describe.each(backends)('housekeeping beside the memory: $name', ({ url }) => {
  /** Old-service passthrough that says no and counts how often it was asked (unknown tokens only). */
  const passthrough = (): LegacyTokenPassthrough & { asked: () => number } => {
    let asked = 0;
    return {
      check: async () => {
        asked++;
        return { valid: false };
      },
      loginUrl: async () => null,
      asked: () => asked,
    } as unknown as LegacyTokenPassthrough & { asked: () => number };
  };

  it.skipIf(url === null)('a purge of expired tokens leaves live tokens kept: no store read for them afterwards', async () => {
    const w = await makeWorld((url ?? freshSqlite)());
    try {
      const old = await login(w.service);
      expect(await valid(w, old)).toBe(true);
      w.clock.advance(2 * 24 * HOUR); // old expired a day ago
      const live = await login(w.service, 2, 'bob');
      expect(await valid(w, live)).toBe(true);
      expect(await valid(w, live)).toBe(true); // kept from its second check
      const [revision, rows] = [(await w.store.revisions()).access, w.tokenReads()];
      expect(await w.store.purgeExpiredTokens(new Date(w.clock.now().getTime() - HOUR), 100)).toBe(1);
      expect((await w.store.revisions()).access).toBe(revision);
      for (let i = 0; i < 3; i++) expect(await valid(w, live)).toBe(true);
      expect(w.tokenReads() - rows).toBe(0);
    } finally {
      await w.close();
    }
  });

  it.skipIf(url === null)('a kept token that expired and was then purged is unknown, as without memory: the old service is asked', async () => {
    const dbUrl = (url ?? freshSqlite)();
    const legacy = passthrough();
    const w = await makeWorld(dbUrl, { legacyTokens: legacy });
    const reference = createAuthService({ store: w.store, hasher: fakeHasher(), clock: w.clock, random: counterRandom(), tokenCacheEntries: 0, legacyTokens: legacy });
    try {
      const token = await login(w.service);
      expect(await valid(w, token)).toBe(true);
      expect(await valid(w, token)).toBe(true); // kept from its second check
      w.clock.advance(2 * 24 * HOUR);
      expect(await w.store.purgeExpiredTokens(new Date(w.clock.now().getTime() - HOUR), 100)).toBe(1);
      expect(await valid(w, token)).toBe(false);
      expect(legacy.asked()).toBe(1);
      expect((await reference.validateUserToken(token, ctx)).valid).toBe(false);
      expect(legacy.asked()).toBe(2);
    } finally {
      await w.close();
    }
  });
});
