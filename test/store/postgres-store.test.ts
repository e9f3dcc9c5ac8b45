/**
 * The PostgreSQL adapter: the shared contract suite on a fresh schema per test, plus what only a
 * networked, multi-connection database can get wrong (concurrent migrations, races between
 * separate pools, lost connections).
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { openStore } from '../../src/store/open-store.js';
import { openPostgresStore, TOKEN_READ_SETTING } from '../../src/store/postgres/postgres-store.js';
import { FIND_TOKEN_SQL, FIND_TOKENS_SQL, REVISIONS_WITH_TOKENS_SQL } from '../../src/store/postgres/postgres-tokens.js';
import { parseTimestamptz } from '../../src/store/postgres/timestamp-parser.js';
import { LATEST_POSTGRES_VERSION, POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations/postgres-migrations.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations/sqlite-migrations.js';
import type { Store, User } from '../../src/store/store.js';
import { describeStoreContract } from './store-contract.js';
import { describeGroupCommitContract } from './group-commit-contract.js';
import { adminQuery, dropSchemas, withAdminClient, newSchemaName, postgresForTests, schemaUrl } from '../support/postgres.js';

const pgAdmin = await postgresForTests();
const schemas: string[] = [];
afterAll(async () => {
  if (pgAdmin !== null) await dropSchemas(schemas);
});

function freshUrl(params: Record<string, string> = {}): { url: string; schema: string } {
  const schema = newSchemaName();
  schemas.push(schema);
  return { url: schemaUrl(schema, params), schema };
}

const hash = (): string => randomBytes(32).toString('hex');
const HOUR = 3600_000;

async function addUser(store: Store, login: string, appIds: number[] = [2]): Promise<User> {
  const r = await store.insertUser({ login, loginKey: login, passwordHash: `h-${login}`, enabled: true, appIds, createdAt: new Date() });
  if (!r.ok) throw new Error('setup');
  return r.user;
}

describe.skipIf(pgAdmin === null)('PostgreSQL store', () => {
  describeStoreContract('PostgreSQL (fresh schema per test)', async () => openStore(freshUrl().url));
  describeGroupCommitContract('PostgreSQL', () => freshUrl().url, { groupsEverySmallWrite: false });

  describe('adapter specifics', () => {
    it('creates its tables in the schema named by ?schema=, and migrates once when several instances start together', async () => {
      const { url, schema } = freshUrl();
      const stores = await Promise.all(Array.from({ length: 4 }, () => openStore(url)));
      try {
        const latest = LATEST_POSTGRES_VERSION;
        expect(await Promise.all(stores.map((s) => s.schemaVersion()))).toEqual([latest, latest, latest, latest]);
        const rows = await adminQuery(`SELECT version, name FROM "${schema}".schema_migrations ORDER BY version`);
        expect(rows).toEqual(POSTGRES_MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
        const tables = await adminQuery<{ table_name: string }>('SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1', [schema]);
        expect(tables.map((t) => t.table_name)).toEqual(expect.arrayContaining(['applications', 'news', 'schema_migrations', 'tokens', 'user_applications', 'users']));
        expect((await stores[0]?.listApplications())?.map((a) => a.appId)).toEqual([2]);
      } finally {
        await Promise.all(stores.map((s) => s.close()));
      }
    });

    it('a change to news attributes by raw SQL moves the news revision; a non-object is refused', async () => {
      const { url, schema } = freshUrl();
      const store = await openStore(url);
      try {
        const n = await store.insertNews({ appId: 2, language: 'en', title: 't', body: 'b', url: null, publishedAt: new Date(0), expiresAt: null, minVersion: null, maxVersion: null, membersOnly: false, createdAt: new Date(0), attributes: { Destaque: 'false' } });
        const before = (await store.revisions()).news;
        await adminQuery(`UPDATE "${schema}".news SET attributes = jsonb_set(attributes, '{Destaque}', '"true"') WHERE news_id = $1`, [n.newsId]);
        await expect(adminQuery(`UPDATE "${schema}".news SET attributes = '[1]' WHERE news_id = $1`, [n.newsId])).rejects.toThrow(/check constraint/);
        expect((await store.revisions()).news).not.toBe(before);
        expect((await store.getNews(n.newsId))?.attributes).toEqual({ Destaque: 'true' });
      } finally {
        await store.close();
      }
    });

    it('has the same migrations as the SQLite adapter, version for version', () => {
      expect(POSTGRES_MIGRATIONS.map((m) => [m.version, m.name])).toEqual(SQLITE_MIGRATIONS.map((m) => [m.version, m.name]));
    });

    it('refuses a schema migrated by a newer version, and with migrate: false an unmigrated one', async () => {
      const { url, schema } = freshUrl();
      await (await openStore(url)).close();
      await adminQuery(`INSERT INTO "${schema}".schema_migrations (version, name) VALUES (99, 'future')`);
      await expect(openStore(url)).rejects.toThrow(/version 99, newer than this svcapi-auth knows/);
      await expect(openStore(freshUrl().url, { migrate: false })).rejects.toThrow(/svcapi-auth migrate/);
    });

    it('looks a token up through the primary key index', async () => {
      const { schema } = freshUrl();
      await (await openStore(schemaUrl(schema))).close();
      const plan = await withAdminClient(async (client) => {
        await client.query(`SET search_path = "${schema}"`);
        await client.query('SET enable_seqscan = off'); // tiny tables: ask whether the index CAN serve it
        return (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${FIND_TOKEN_SQL}`.replace('$1', `'${'a'.repeat(64)}'`))).rows;
      });
      const text = plan.map((r) => r['QUERY PLAN']).join('\n');
      expect(text).toMatch(/Index Scan using tokens_pkey on tokens t/);
    });

    it('sends the token lookups of one turn as one statement, and a later turn\'s as another', async () => {
      const store = await openStore(freshUrl().url);
      const statements = vi.spyOn(pg.Pool.prototype, 'query');
      try {
        const alice = await addUser(store, 'alice');
        const now = Date.now();
        const hashes = Array.from({ length: 40 }, () => hash());
        for (const tokenHash of hashes.slice(0, 20)) {
          expect(await store.insertSession({ tokenHash, userId: alice.userId, appId: 2, clientIp: null, sourceIp: null, issuedAt: new Date(now), expiresAt: new Date(now + HOUR) }, { passwordHash: 'h-alice' })).toBe(true);
        }
        statements.mockClear();
        const answers = await Promise.all(hashes.map((h) => store.findToken(h)));
        expect(statements).toHaveBeenCalledTimes(1);
        expect(answers.map((a) => a !== null)).toEqual(hashes.map((_, i) => i < 20));
        await store.findToken(hashes[0] ?? '');
        expect(statements).toHaveBeenCalledTimes(2);
      } finally {
        statements.mockRestore();
        await store.close();
      }
    });

    it('reads the revisions with a turn\'s tokens as one statement, through the primary key index', async () => {
      const { url, schema } = freshUrl();
      const store = await openStore(url);
      const statements = vi.spyOn(pg.Pool.prototype, 'query');
      try {
        const alice = await addUser(store, 'alice');
        const now = Date.now();
        const hashes = Array.from({ length: 40 }, () => hash());
        for (const tokenHash of hashes.slice(0, 20)) {
          expect(await store.insertSession({ tokenHash, userId: alice.userId, appId: 2, clientIp: null, sourceIp: null, issuedAt: new Date(now), expiresAt: new Date(now + HOUR) }, { passwordHash: 'h-alice' })).toBe(true);
        }
        statements.mockClear();
        const read = await store.revisionsWithTokens(hashes);
        expect(statements).toHaveBeenCalledTimes(1);
        expect([...read.tokens.keys()].sort()).toEqual(hashes.slice(0, 20).sort());
        expect(read.revisions).toEqual(await store.revisions());
      } finally {
        statements.mockRestore();
        await store.close();
      }
      const plan = await withAdminClient(async (client) => {
        await client.query(`SET search_path = "${schema}"`);
        await client.query('SET enable_seqscan = off');
        return (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${REVISIONS_WITH_TOKENS_SQL}`.replace('$1', `ARRAY['${'a'.repeat(64)}', '${'b'.repeat(64)}']`))).rows;
      });
      const text = plan.map((r) => r['QUERY PLAN']).join('\n');
      expect(text).toMatch(/(Index Scan using|Bitmap Index Scan on) tokens_pkey/);
      expect(text).not.toMatch(/Seq Scan on tokens/);
    });

    it('plans a turn\'s token read again at every execution by default, once on a connection set up as the token reads\' are', async () => {
      const { schema } = freshUrl();
      await (await openStore(schemaUrl(schema))).close();
      const counts = await withAdminClient(async (client) => {
        await client.query(`SET search_path = "${schema}"`);
        const read = (): Promise<unknown> => client.query({ name: 'turn_read', text: REVISIONS_WITH_TOKENS_SQL, values: [[hash(), hash(), hash()]] });
        const plans = async (): Promise<unknown> => (await client.query('SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE name = $1', ['turn_read'])).rows[0];
        for (let i = 0; i < 8; i++) await read();
        const before = await plans(); // three hashes are costed below the generic plan's ten: custom plans for ever
        await client.query(`SET ${TOKEN_READ_SETTING.name} = ${TOKEN_READ_SETTING.value}`);
        for (let i = 0; i < 4; i++) await read();
        return { before, after: await plans() };
      });
      expect(counts).toEqual({ before: { generic: 0, custom: 8 }, after: { generic: 4, custom: 8 } });
    });

    it('sends the token reads over connections set up to plan them once, and nothing else; switched off, over the one pool', async () => {
      // A URL's own startup options are kept beside the setting.
      for (const { generic, params } of [{ generic: true, params: {} }, { generic: false, params: {} }, { generic: true, params: { options: '-c work_mem=5MB' } }]) {
        const store = await openPostgresStore({ url: freshUrl(params).url, genericTokenPlans: generic });
        const statements = vi.spyOn(pg.Pool.prototype, 'query');
        try {
          await store.revisionsWithTokens([hash(), hash()]);
          await Promise.all([store.findToken(hash()), store.findToken(hash())]);
          await store.revisions();
          await store.listUserSessions(1, new Date(), 10);
          const pools = statements.mock.contexts as pg.Pool[];
          statements.mockRestore();
          expect(pools).toHaveLength(4);
          const [turnRead, lookups, revisions, listing] = pools;
          const mode = async (pool: pg.Pool | undefined): Promise<unknown> => (await pool?.query<{ m: string }>("SELECT current_setting('plan_cache_mode') AS m"))?.rows[0]?.m;
          expect([await mode(turnRead), await mode(lookups), await mode(revisions), await mode(listing)])
            .toEqual(generic ? ['force_generic_plan', 'force_generic_plan', 'auto', 'auto'] : ['auto', 'auto', 'auto', 'auto']);
          expect(new Set(pools).size).toBe(generic ? 2 : 1);
          if ('options' in params) expect((await turnRead?.query<{ w: string }>('SELECT current_setting(\'work_mem\') AS w'))?.rows[0]?.w).toBe('5MB');
          expect(await revisions?.query<{ p: string }>('SELECT current_setting(\'search_path\') AS p').then((r) => r.rows[0]?.p))
            .toBe(await turnRead?.query<{ p: string }>('SELECT current_setting(\'search_path\') AS p').then((r) => r.rows[0]?.p));
        } finally {
          statements.mockRestore();
          await store.close();
        }
      }
    });

    it('reads the timestamps PostgreSQL writes in any time zone as node-postgres\' own parser does (the token reads\' parser)', async () => {
      const standard = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ, 'text') as (text: string) => Date;
      for (const zone of ['UTC', 'Asia/Kolkata', 'America/St_Johns', 'Asia/Kathmandu', 'Europe/Amsterdam', 'Pacific/Chatham']) {
        const texts = await withAdminClient(async (client) => {
          await client.query(`SET TIME ZONE '${zone}'`);
          // From 1850 (offsets in seconds: local mean time) to 2200, microseconds and all.
          return (await client.query<{ t: string }>(`SELECT (timestamptz '1850-01-01 00:00:00+00' + n * interval '127 days 3 hours 17 minutes 0.000731 seconds')::text AS t
            FROM generate_series(0, 1000) n`)).rows.map((r) => r.t);
        });
        for (const text of texts) expect((parseTimestamptz(text) as Date).getTime(), `${zone}: ${text}`).toBe(standard(text).getTime());
      }
    });

    it('looks a turn\'s tokens up through the primary key index in one statement', async () => {
      const { schema } = freshUrl();
      await (await openStore(schemaUrl(schema))).close();
      const plan = await withAdminClient(async (client) => {
        await client.query(`SET search_path = "${schema}"`);
        await client.query('SET enable_seqscan = off');
        return (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${FIND_TOKENS_SQL}`.replace('$1', `ARRAY['${'a'.repeat(64)}', '${'b'.repeat(64)}']`))).rows;
      });
      const text = plan.map((r) => r['QUERY PLAN']).join('\n');
      expect(text).toMatch(/(Index Scan using|Bitmap Index Scan on) tokens_pkey/);
      expect(text).not.toMatch(/Seq Scan on tokens/);
    });

    it('consumes a ticket exactly once across two pools under concurrent attempts', async () => {
      const { url } = freshUrl();
      const a = await openStore(url);
      const b = await openStore(url);
      try {
        const user = await addUser(a, 'u');
        const now = new Date();
        const tokenHash = hash();
        expect(await a.insertTicket({ tokenHash, userId: user.userId, appId: 2, clientIp: null, sourceIp: null, issuedAt: now, expiresAt: new Date(now.getTime() + 60_000) })).toBe(true);
        const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).consumeTicket(tokenHash, now)));
        expect(results.filter(Boolean)).toHaveLength(1);
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('never leaves a live token issued against a password being changed, a user being disabled or a grant being withdrawn', async () => {
      const { url } = freshUrl();
      const a = await openStore(url);
      const b = await openStore(url);
      try {
        await a.insertApplication({ appId: 7, name: 'Seven', enabled: true, requireIp: false, loginUrl: null, tokenLifetimeSeconds: 3600, idleTimeoutSeconds: null, defaultLanguage: 'en', trustedCallers: [], createdAt: new Date() });
        const changes: ((s: Store, user: User) => Promise<unknown>)[] = [
          (s, u) => s.setPasswordHash(u.userId, 'changed', new Date()),
          (s, u) => s.setUserEnabled(u.userId, false, new Date()),
          (s, u) => s.revokeApplication(u.userId, 7, new Date()),
          (s) => s.updateApplication(7, { enabled: false }, new Date()),
        ];
        for (let i = 0; i < 40; i++) {
          const change = changes[i % changes.length];
          if (change === undefined) throw new Error('unreachable');
          if (i % changes.length === 0) await a.updateApplication(7, { enabled: true }, new Date());
          const user = await addUser(a, `user${i}`, [2, 7]);
          const t = { tokenHash: hash(), userId: user.userId, appId: 7, clientIp: null, sourceIp: null, issuedAt: new Date(), expiresAt: new Date(Date.now() + HOUR) };
          const [inserted] = await Promise.all([a.insertSession(t, { passwordHash: `h-user${i}` }), change(b, user)]);
          const record = await a.findToken(t.tokenHash);
          // Either refused, or issued first and revoked by the change.
          if (inserted) expect(record?.revokedAt, `iteration ${i}`).not.toBeNull();
          else expect(record).toBeNull();
        }
        await a.updateApplication(7, { enabled: true }, new Date());
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('grants brute-force reservations within the limits across two pools under concurrent attempts', async () => {
      const { url } = freshUrl();
      const a = await openStore(url);
      const b = await openStore(url);
      try {
        const limits = {
          windowMs: 900_000, maxDelayMs: 900_000, pairMaxAttempts: 5, pairBaseDelayMs: 30_000, loginMaxAttempts: 30, sourceMaxFailures: 50, knownSourceMs: 86_400_000,
        };
        const now = new Date();
        const pair = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? a : b).reserveLoginAttempt({ loginHash: 'a'.repeat(64), source: '192.0.2.1', now }, limits)));
        expect(pair.filter((r) => r.granted)).toHaveLength(5);
        // 100 sources, two attempts each, on one login: the login ceiling holds (the pair allowances would give 200).
        const login = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b).reserveLoginAttempt(
          { loginHash: 'b'.repeat(64), source: `198.51.100.${i % 100}`, now }, limits)));
        expect(login.filter((r) => r.granted)).toHaveLength(30);
        expect(login.filter((r) => !r.granted && r.refusedBy === 'login')).toHaveLength(170);
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('re-sends a read on a fresh connection after the server dropped the old one', async () => {
      const appName = `svcapi_retry_${randomBytes(4).toString('hex')}`;
      const { url } = freshUrl({ application_name: appName });
      const store = await openStore(url);
      try {
        const user = await addUser(store, 'u');
        await store.getApplication(2); // a pooled, idle connection now exists
        const killed = await adminQuery('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [appName]);
        expect(killed.length).toBeGreaterThan(0);
        expect((await store.getUser(user.userId))?.login).toBe('u');
        expect((await store.getApplication(2))?.name).toBe('GPS');
        await store.ping();
      } finally {
        await store.close();
      }
    });

    it('moves the news revision on INSERT, UPDATE, DELETE and TRUNCATE by another connection with another search_path', async () => {
      const { url, schema } = freshUrl();
      const store = await openStore(url);
      try {
        const seen = [(await store.revisions()).news];
        const expectMoved = async (what: string): Promise<void> => {
          const revision = (await store.revisions()).news;
          expect(seen, what).not.toContain(revision);
          seen.push(revision);
        };
        // The admin connection's search_path does not name the schema: the trigger must still find its row.
        const [inserted] = await adminQuery<{ news_id: string }>(`INSERT INTO "${schema}".news (app_id, language, title, body, published_at, created_at)
          VALUES (2, 'en', 'raw', 'b', now(), now()) RETURNING news_id`);
        await expectMoved('INSERT');
        await adminQuery(`UPDATE "${schema}".news SET title = 'edited' WHERE news_id = $1`, [inserted?.news_id]);
        await expectMoved('UPDATE');
        await adminQuery(`DELETE FROM "${schema}".news WHERE news_id = $1`, [inserted?.news_id]);
        await expectMoved('DELETE');
        await adminQuery(`INSERT INTO "${schema}".news (app_id, language, title, body, published_at, created_at) VALUES (2, 'en', 'x', 'b', now(), now())`);
        await expectMoved('second INSERT');
        await adminQuery(`TRUNCATE "${schema}".news`);
        await expectMoved('TRUNCATE');
        expect(await store.listNews()).toEqual([]);
      } finally {
        await store.close();
      }
    });

    it('moves the access revision at commit, by another connection with another search_path, TRUNCATE included', async () => {
      const { url, schema } = freshUrl();
      const store = await openStore(url);
      try {
        const alice = await addUser(store, 'alice');
        const tokens = [hash(), hash(), hash()];
        for (const tokenHash of tokens) {
          await store.insertSession({ tokenHash, userId: alice.userId, appId: 2, clientIp: null, sourceIp: null, issuedAt: new Date(), expiresAt: new Date(Date.now() + HOUR) }, { passwordHash: 'h-alice' });
        }
        const access = async (): Promise<number> => (await store.revisions()).access;
        const seen = [await access()];
        const expectMoved = async (what: string): Promise<void> => {
          const revision = await access();
          expect(seen, what).not.toContain(revision);
          seen.push(revision);
        };
        await adminQuery(`UPDATE "${schema}".tokens SET last_used_at = now()`);
        await adminQuery(`UPDATE "${schema}".users SET last_login_at = now()`);
        expect(await access()).toBe(seen.at(-1));

        await withAdminClient(async (writer) => {
          await writer.query('BEGIN');
          await writer.query(`UPDATE "${schema}".tokens SET revoked_at = now()`);
          // Not before commit; and the bump waits for commit, so no lock on its row is held yet:
          // another instance's write that moves it goes through at once instead of waiting.
          expect(await access()).toBe(seen.at(-1));
          await adminQuery(`UPDATE "${schema}".applications SET name = 'renamed' WHERE app_id = 2`);
          await expectMoved('another connection updating an application meanwhile');
          await writer.query('COMMIT');
        });
        await expectMoved('three tokens revoked in one transaction');
        await adminQuery(`UPDATE "${schema}".users SET login = 'renamed'`);
        await expectMoved('rename the user (the login is read with the token)');
        await adminQuery(`UPDATE "${schema}".users SET enabled = false`);
        await expectMoved('disable the user');
        await adminQuery(`DELETE FROM "${schema}".user_applications`);
        await expectMoved('withdraw the grant');
        await adminQuery(`DELETE FROM "${schema}".tokens`);
        await expectMoved('delete the tokens');
        await adminQuery(`TRUNCATE "${schema}".tokens`);
        await expectMoved('TRUNCATE');
      } finally {
        await store.close();
      }
    });

    it('reads a snapshot whose revision names exactly the rows it holds, while another pool writes', async () => {
      const { url } = freshUrl();
      const a = await openStore(url);
      const b = await openStore(url);
      try {
        const base = {
          appId: 2, language: 'en', title: 't', body: 'b', url: null, publishedAt: new Date(Date.now() - HOUR), expiresAt: null,
          minVersion: null, maxVersion: null, membersOnly: false, createdAt: new Date(),
        };
        const query = { appId: 2, languages: ['en'], now: new Date(), includeMembersOnly: false };
        const countAt = new Map<number, number>();
        const writes = (async () => {
          for (let i = 0; i < 30; i++) await b.insertNews({ ...base, title: `t${i}` });
        })();
        let reads = 0;
        let done = false;
        void writes.then(() => { done = true; });
        while (!done || reads === 0) {
          const snapshot = await a.publishedNewsSnapshot(query);
          const known = countAt.get(snapshot.revision);
          if (known !== undefined) expect(snapshot.rows.length, `revision ${snapshot.revision}`).toBe(known);
          countAt.set(snapshot.revision, snapshot.rows.length);
          reads++;
        }
        await writes;
        // Every revision seen twice held the same rows; and the rows grow with the revision.
        const ordered = [...countAt.entries()].sort(([r1], [r2]) => r1 - r2).map(([, n]) => n);
        expect(ordered).toEqual([...ordered].sort((x, y) => x - y));
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('fails fast when the server cannot be reached', async () => {
      const started = Date.now();
      await expect(openPostgresStore({ url: 'postgres://postgres@127.0.0.1:1/test?schema=x' })).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(3000);
    });
  });
});
