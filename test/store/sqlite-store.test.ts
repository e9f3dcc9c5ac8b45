import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { COUNT_ACTIVE_SQL, FIND_TOKEN_SQL } from '../../src/store/sqlite/sqlite-tokens.js';
import { applySqliteMigrations, SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations/sqlite-migrations.js';
import { openStore, parseDatabaseUrl } from '../../src/store/open-store.js';
import { describeStoreContract } from './store-contract.js';
import { describeGroupCommitContract } from './group-commit-contract.js';
import { damageNewsPage } from '../support/damaged-sqlite.js';
import { PURGE_THREAD_CACHE_KIB, startPurgeThread } from '../../src/store/sqlite/purge-thread.js';
import { createRequire } from 'node:module';
import type { IntegrityCheckResult } from '../../src/store/sqlite/background-check.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-store-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let fileCounter = 0;
const freshFile = (): string => join(dir, `db-${++fileCounter}`, 'auth.db');

describeStoreContract('SQLite in memory', async () => openStore('sqlite::memory:'));
describeStoreContract('SQLite file (WAL)', async () => openStore(`sqlite:${freshFile()}`));
describeGroupCommitContract('SQLite file (WAL)', () => `sqlite:${freshFile()}`, { groupsEverySmallWrite: true });
describeGroupCommitContract('SQLite file (WAL), fsync inside COMMIT', () => `sqlite:${freshFile()}`, { groupsEverySmallWrite: true, storeOptions: { sqliteAsyncSync: false } });

/** This process's children that are a background check, or a zombie not yet reaped (Linux /proc). */
function checkChildren(): string[] {
  return readdirSync('/proc').filter((pid) => {
    if (!/^\d+$/.test(pid)) return false;
    try {
      // "pid (comm) state ppid ...": the fields after the last ')'.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return Number(ppid) === process.pid && (state === 'Z' || readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('quick_check'));
    } catch {
      return false; // gone meanwhile
    }
  });
}

describe('SQLite adapter specifics', () => {
  it('creates the directory, uses WAL, and records the applied migrations', async () => {
    const path = freshFile();
    const store = await openStore(`sqlite:${path}`);
    await store.close();
    expect(existsSync(path)).toBe(true);
    const db = new Database(path, { readonly: true });
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all()).toEqual(SQLITE_MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
    } finally {
      db.close();
    }
  });

  it('does not re-apply migrations on the next open, and keeps the data', async () => {
    const path = freshFile();
    const first = await openStore(`sqlite:${path}`);
    await first.updateApplication(2, { name: 'GPS renamed' }, new Date());
    await first.close();
    const second = await openStore(`sqlite:${path}`);
    try {
      expect(await second.schemaVersion()).toBe(Math.max(...SQLITE_MIGRATIONS.map((m) => m.version)));
      expect((await second.listApplications()).map((a) => a.name)).toEqual(['GPS renamed']);
    } finally {
      await second.close();
    }
  });

  it('a change to news attributes by raw SQL moves the news revision; a non-object is refused', async () => {
    const path = freshFile();
    const store = await openStore(`sqlite:${path}`);
    try {
      const n = await store.insertNews({ appId: 2, language: 'en', title: 't', body: 'b', url: null, publishedAt: new Date(0), expiresAt: null, minVersion: null, maxVersion: null, membersOnly: false, createdAt: new Date(0), attributes: { Destaque: 'false' } });
      const before = (await store.revisions()).news;
      const db = new Database(path);
      try {
        db.prepare(`UPDATE news SET attributes = json_set(attributes, '$.Destaque', 'true') WHERE news_id = ?`).run(n.newsId);
        expect(() => db.prepare(`UPDATE news SET attributes = '[1]' WHERE news_id = ?`).run(n.newsId)).toThrow(/CHECK/);
      } finally {
        db.close();
      }
      expect((await store.revisions()).news).not.toBe(before);
      expect((await store.getNews(n.newsId))?.attributes).toEqual({ Destaque: 'true' });
    } finally {
      await store.close();
    }
  });

  it('refuses a database migrated by a newer version', () => {
    const path = freshFile();
    openSqliteStore({ path }).close();
    const db = new Database(path);
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, ?, 0)').run('future');
    db.close();
    expect(() => openSqliteStore({ path })).toThrow(/version 99, newer than this svcapi-auth knows/);
  });

  it('with migrate: false, refuses an unmigrated database and names the command to run', () => {
    expect(() => openSqliteStore({ path: freshFile(), migrate: false })).toThrow(/svcapi-auth migrate/);
  });

  it('appends a new token to its application\'s and its user\'s index entries (ordered by expiry), so a ticket writes less than half the pages it did', () => {
    const path = freshFile();
    openSqliteStore({ path }).close();
    const db = new Database(path);
    try {
      expect((db.prepare("SELECT name FROM pragma_index_info('tokens_app')").pluck().all())).toEqual(['app_id', 'expires_at']);
      expect((db.prepare("SELECT name FROM pragma_index_info('tokens_user')").pluck().all())).toEqual(['user_id', 'expires_at']);
      db.prepare("INSERT INTO users (login, login_key, password_hash, enabled, created_at, password_changed_at) VALUES ('u', 'u', 'h', 1, 0, 0)").run();
      const userId = db.prepare('SELECT user_id FROM users').pluck().get() as number;
      db.prepare('INSERT INTO user_applications (user_id, app_id, granted_at) VALUES (?, 2, 0)').run(userId);
      const insert = db.prepare(`INSERT INTO tokens (token_hash, kind, user_id, app_id, issued_at, expires_at, last_used_at) VALUES (?, 'ticket', ${userId}, 2, ?, ? + 120000, ?)`);
      let at = Date.now();
      const batch = (n: number): void => {
        db.transaction(() => {
          for (let i = 0; i < n; i++, at++) insert.run(createHash('sha256').update(`t${at}`).digest('hex'), at, at, at);
        })();
      };
      batch(20_000);
      db.pragma('wal_checkpoint(TRUNCATE)');
      batch(100); // one group commit's tickets, at random places of the primary key
      const log = (db.pragma('wal_checkpoint(PASSIVE)') as { log: number }[])[0]?.log;
      // 155-177 WAL frames here; ordered by the hash within the application and the user (the
      // layout before migration 14), each index took as many random pages again: 363-405.
      expect(log).toBeLessThan(250);
    } finally {
      db.close();
    }
  });

  it('reads the live tokens of a user or an application through their index, with no table scan', () => {
    const db = new Database(':memory:');
    applySqliteMigrations(db);
    const plans = [
      'UPDATE tokens SET revoked_at = 1 WHERE user_id = 1 AND revoked_at IS NULL AND used_at IS NULL AND expires_at > 5',
      'UPDATE tokens SET revoked_at = 1 WHERE app_id = 2 AND revoked_at IS NULL',
      "SELECT token_hash FROM tokens t WHERE t.user_id = 1 AND t.kind = 'session' AND t.revoked_at IS NULL AND t.expires_at > 5 ORDER BY t.issued_at DESC",
    ].map((sql) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail));
    db.close();
    expect(plans.map((p) => p.filter((d) => /^SCAN t(okens)?\b/.test(d)))).toEqual([[], [], []]);
    expect(plans[0]?.some((d) => /USING INDEX tokens_user \(user_id=\? AND expires_at>\?\)/.test(d))).toBe(true);
  });

  it('looks a token up by primary key, with no table scan', () => {
    const db = new Database(':memory:');
    applySqliteMigrations(db);
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${FIND_TOKEN_SQL}`).all('x'.repeat(64)) as { detail: string }[]).map((r) => r.detail);
    db.close();
    expect(plan.some((d) => /SEARCH t USING (PRIMARY KEY|INDEX)/.test(d))).toBe(true);
    expect(plan.filter((d) => /^SCAN /.test(d))).toEqual([]);
  });

  it('looks a token up with one table in its FROM and the rest in subqueries: a join would be planned again at every token (STAT4)', () => {
    const db = new Database(':memory:');
    applySqliteMigrations(db);
    const plan = db.prepare(`EXPLAIN QUERY PLAN ${FIND_TOKEN_SQL}`).all('x'.repeat(64)) as { parent: number; detail: string }[];
    expect(db.prepare('SELECT 1 FROM pragma_compile_options WHERE compile_options = \'ENABLE_STAT4\'').get()).toBeDefined();
    db.close();
    // At the top level: the token's primary-key search, then only subqueries (no second table).
    expect(plan.filter((r) => r.parent === 0).map((r) => r.detail.replace(/ \d+$/, ''))).toEqual([
      'SEARCH t USING PRIMARY KEY (token_hash=?)',
      ...plan.filter((r) => r.parent === 0 && /SUBQUERY/.test(r.detail)).map((r) => r.detail.replace(/ \d+$/, '')),
    ]);
    expect(plan.filter((r) => r.parent === 0 && /SUBQUERY/.test(r.detail))).toHaveLength(5);
  });

  it('on its own connection, purges without the commit fsync, and gives every later commit its fsync back (synchronous FULL), even when the purge fails', async () => {
    const probe = new Database(':memory:');
    const statementProto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as { run: (...args: unknown[]) => unknown };
    probe.close();
    const store = openSqliteStore({ path: freshFile(), purgeThread: false });
    const ran: string[] = [];
    const run = statementProto.run;
    let failNext = false;
    statementProto.run = function (this: { source: string }, ...args: unknown[]): unknown {
      const sql = this.source.trim().split(/\s+/).slice(0, 4).join(' ');
      ran.push(sql);
      if (failNext && sql.startsWith('DELETE FROM tokens')) throw new Error('disk I/O error');
      return run.apply(this, args);
    };
    try {
      expect(await store.purgeExpiredTokens(new Date(), 10)).toBe(0);
      failNext = true;
      await expect(store.purgeExpiredTokens(new Date(), 10)).rejects.toThrow(/disk I\/O/);
      expect(ran).toEqual([
        'PRAGMA synchronous = NORMAL', 'DELETE FROM tickets WHERE', 'DELETE FROM tokens WHERE', 'PRAGMA synchronous = FULL',
        'PRAGMA synchronous = NORMAL', 'DELETE FROM tickets WHERE', 'DELETE FROM tokens WHERE', 'PRAGMA synchronous = FULL',
      ]);
    } finally {
      statementProto.run = run;
      await store.close();
    }
  });

  it('checks the whole file in the background when asked: opened at once, damage reported afterwards with the message of a check before opening', async () => {
    const path = freshFile();
    await (await openStore(`sqlite:${path}`)).close();
    damageNewsPage(path);
    // A check before opening refuses the file: the message the background check must give too.
    const before = (() => {
      try {
        openSqliteStore({ path });
        return null;
      } catch (error) {
        return error as Error;
      }
    })();
    expect(before?.message).toMatch(/is damaged \(.+\); restore it from a backup/);
    const results: IntegrityCheckResult[] = [];
    const reported = new Promise<IntegrityCheckResult>((resolve) => {
      const store = openSqliteStore({ path, integrityCheck: 'background', onIntegrityCheck: (r) => { results.push(r); resolve(r); } });
      // Open and serving before the check is done: it cannot have answered during this synchronous call.
      expect(results).toEqual([]);
      void store.ping().then(() => reported.finally(() => store.close()));
    });
    const result = await reported;
    expect(result.kind).toBe('damaged');
    if (result.kind !== 'damaged') throw new Error('unreachable');
    expect(result.error.problem).toBe('damaged');
    expect(result.error.message).toBe(before?.message);
  });

  it('finds nothing in a sound file in the background, and a store closed first ends its check without a word', async () => {
    const path = freshFile();
    await (await openStore(`sqlite:${path}`)).close();
    const sound = await new Promise<IntegrityCheckResult>((resolve) => {
      const store = openSqliteStore({ path, integrityCheck: 'background', onIntegrityCheck: (r) => { void store.close().then(() => resolve(r)); } });
    });
    expect(sound.kind).toBe('sound');
    const results: IntegrityCheckResult[] = [];
    const closed = openSqliteStore({ path, integrityCheck: 'background', onIntegrityCheck: (r) => results.push(r) });
    // close() resolves once the check's child is gone (killed and reaped, not even a zombie left):
    // it cannot report anything afterwards.
    await closed.close();
    expect(results).toEqual([]);
    if (existsSync('/proc/self/stat')) expect(checkChildren()).toEqual([]);
  });

  it('reads the revisions with a turn\'s tokens in one read transaction; a lone lookup without one', async () => {
    const probe = new Database(':memory:');
    const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as { run: (...a: unknown[]) => unknown; get: (...a: unknown[]) => unknown };
    probe.close();
    const store = await openStore(`sqlite:${freshFile()}`);
    const user = await store.insertUser({ login: 'u', loginKey: 'u', passwordHash: 'h', enabled: true, appIds: [2], createdAt: new Date() });
    if (!user.ok) throw new Error('setup');
    const now = Date.now();
    const hashes = Array.from({ length: 30 }, (_, i) => createHash('sha256').update(`t${i}`).digest('hex'));
    for (const tokenHash of hashes.slice(0, 10)) {
      await store.insertSession({ tokenHash, userId: user.user.userId, appId: 2, clientIp: null, sourceIp: null, issuedAt: new Date(now), expiresAt: new Date(now + 60_000) }, { passwordHash: 'h' });
    }
    const ran: string[] = [];
    const { run, get } = proto;
    const word = (sql: string): string => sql.trim().split(/\s+/).slice(0, 2).join(' ');
    proto.run = function (this: { source: string }, ...a: unknown[]): unknown { ran.push(word(this.source)); return run.apply(this, a); };
    proto.get = function (this: { source: string }, ...a: unknown[]): unknown { ran.push(word(this.source)); return get.apply(this, a); };
    try {
      expect((await store.findToken(hashes[0] ?? ''))?.tokenHash).toBe(hashes[0]);
      expect(ran).toEqual(['SELECT t.token_hash,']);
      // The revisions and a turn's tokens (revision-gate.ts): one read transaction, so one snapshot.
      ran.length = 0;
      const read = await store.revisionsWithTokens(hashes);
      expect([...read.tokens.keys()]).toEqual(hashes.slice(0, 10));
      expect(ran).toEqual(['BEGIN DEFERRED', 'SELECT (SELECT', ...hashes.map(() => 'SELECT t.token_hash,'), 'COMMIT']);
    } finally {
      Object.assign(proto, { run, get });
      await store.close();
    }
  });

  it('purges a file\'s expired tokens on a thread of its own: no DELETE on the serving connection, the rows gone all the same', async () => {
    const probe = new Database(':memory:');
    const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as { run: (...a: unknown[]) => unknown };
    probe.close();
    const store = await openStore(`sqlite:${freshFile()}`);
    const user = await store.insertUser({ login: 'u', loginKey: 'u', passwordHash: 'h', enabled: true, appIds: [2], createdAt: new Date() });
    if (!user.ok) throw new Error('setup');
    const old = new Date('2025-01-01T00:00:00Z');
    const hashes = Array.from({ length: 7 }, (_, i) => createHash('sha256').update(`purge${i}`).digest('hex'));
    for (const tokenHash of hashes) {
      await store.insertSession({ tokenHash, userId: user.user.userId, appId: 2, clientIp: null, sourceIp: null, issuedAt: old, expiresAt: new Date(old.getTime() + 60_000) }, { passwordHash: 'h' });
    }
    const ran: string[] = [];
    const { run } = proto;
    proto.run = function (this: { source: string }, ...a: unknown[]): unknown {
      ran.push(this.source.trim().split(/\s+/)[0] ?? '');
      return run.apply(this, a);
    };
    try {
      expect(await store.purgeExpiredTokens(new Date(), 5)).toBe(5);
      expect(await store.purgeExpiredTokens(new Date(), 5)).toBe(2);
      expect(ran.filter((w) => w === 'DELETE')).toEqual([]);
      for (const hash of hashes) expect(await store.findToken(hash)).toBeNull();
    } finally {
      proto.run = run;
      await store.close();
    }
  });

  it('counts a file\'s active tokens on the purge thread: no scan of the tokens on the serving connection', async () => {
    const probe = new Database(':memory:');
    const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as { get: (...a: unknown[]) => unknown };
    probe.close();
    const store = await openStore(`sqlite:${freshFile()}`);
    const user = await store.insertUser({ login: 'u', loginKey: 'u', passwordHash: 'h', enabled: true, appIds: [2], createdAt: new Date() });
    if (!user.ok) throw new Error('setup');
    const now = new Date();
    for (let i = 0; i < 3; i++) {
      const tokenHash = createHash('sha256').update(`count${i}`).digest('hex');
      await store.insertSession({ tokenHash, userId: user.user.userId, appId: 2, clientIp: null, sourceIp: null, issuedAt: now, expiresAt: new Date(now.getTime() + (i === 0 ? -1 : 60_000)) }, { passwordHash: 'h' });
    }
    const ran: string[] = [];
    const { get } = proto;
    proto.get = function (this: { source: string }, ...a: unknown[]): unknown {
      ran.push(this.source);
      return get.apply(this, a);
    };
    try {
      expect(await store.countActiveTokens(now)).toBe(2);
      expect(ran.filter((sql) => sql === COUNT_ACTIVE_SQL)).toEqual([]);
    } finally {
      proto.get = get;
      await store.close();
    }
  });

  it('keeps a process alive until the purge thread has closed, also when an answer arrives after close() began', async () => {
    // In a process of its own, whose event loop has nothing else to wait for: the answer of a
    // count sent just before close() had unref'd the thread that close() waits for, and the
    // process ended at once with close() unsettled (exit code 13, a shutdown's logs lost).
    const build = inject('distBuild');
    if (!build.ok) throw new Error(`building dist/ failed:\n${build.output}`);
    const path = freshFile();
    await (await openStore(`sqlite:${path}`)).close();
    const root = resolve(import.meta.dirname, '..', '..');
    const script = join(dir, `race-${Date.now()}.mjs`);
    writeFileSync(script, `
      import { createRequire } from 'node:module';
      import { startPurgeThread } from ${JSON.stringify(pathToFileURL(join(root, 'dist/store/sqlite/purge-thread.js')).href)};
      import { COUNT_ACTIVE_SQL } from ${JSON.stringify(pathToFileURL(join(root, 'dist/store/sqlite/sqlite-tokens.js')).href)};
      const thread = startPurgeThread({ path: process.argv[2], sql: 'DELETE FROM tokens WHERE expires_at < @before AND @limit > 0', ticketSql: 'DELETE FROM tickets WHERE expires_at < @before AND @limit > 0', countSql: COUNT_ACTIVE_SQL,
        busyTimeoutMs: 1000, driver: createRequire(${JSON.stringify(`${root}/`)}).resolve('better-sqlite3') });
      await thread.count(Date.now(), '', 'g');
      const answer = thread.count(Date.now(), '', 'g');
      await thread.close();
      console.log('closed', await answer);`);
    const result = spawnSync(process.execPath, [script, path], { encoding: 'utf8', timeout: 30_000 });
    expect({ status: result.status, out: result.stdout.trim() }).toEqual({ status: 0, out: 'closed 0' });
  });

  it('gives the purge thread\'s connection a small page cache (its memory), not the 16 MB default', async () => {
    const path = freshFile();
    await (await openStore(`sqlite:${path}`)).close();
    const thread = startPurgeThread({ path, sql: 'DELETE FROM tokens WHERE expires_at < @before AND @limit > 0', ticketSql: 'DELETE FROM tickets WHERE expires_at < @before AND @limit > 0', countSql: COUNT_ACTIVE_SQL, busyTimeoutMs: 1000, driver: createRequire(import.meta.url).resolve('better-sqlite3') });
    try {
      expect(await thread.cacheKiB()).toBe(PURGE_THREAD_CACHE_KIB);
      expect(PURGE_THREAD_CACHE_KIB).toBeLessThanOrEqual(2048);
      expect(await thread.purge(Date.now(), 10, 'tokens')).toBe(0);
      expect(await thread.purge(Date.now(), 10, 'tickets')).toBe(0);
      expect(await thread.count(Date.now(), '', 'g')).toBe(0);
    } finally {
      await thread.close();
    }
  });

  it.runIf(process.platform === 'linux')('turns the memory map off while the purge thread deletes rows and back on once it is idle (another connection\'s write drops the map at the next read)', async () => {
    const path = freshFile();
    await (await openStore(`sqlite:${path}`)).close();
    const store = openSqliteStore({ path, mmapBytes: 64 * 1024 * 1024, mapResumeMs: 150 });
    const mapped = (): boolean => readFileSync('/proc/self/maps', 'latin1').split('\n').some((line) => line.endsWith(` ${path}`));
    try {
      const user = await store.insertUser({ login: 'u', loginKey: 'u', passwordHash: 'h', enabled: true, appIds: [2], createdAt: new Date() });
      if (!user.ok) throw new Error('setup');
      const old = new Date('2025-01-01T00:00:00Z');
      const live = createHash('sha256').update('live').digest('hex');
      await store.insertSession({ tokenHash: live, userId: user.user.userId, appId: 2, clientIp: null, sourceIp: null, issuedAt: new Date(), expiresAt: new Date(Date.now() + 3_600_000) }, { passwordHash: 'h' });
      for (let i = 0; i < 5; i++) {
        const tokenHash = createHash('sha256').update(`expired${i}`).digest('hex');
        await store.insertSession({ tokenHash, userId: user.user.userId, appId: 2, clientIp: null, sourceIp: null, issuedAt: old, expiresAt: new Date(old.getTime() + 60_000) }, { passwordHash: 'h' });
      }
      expect((await store.findToken(live))?.tokenHash).toBe(live);
      expect(mapped()).toBe(true);
      // Nothing to delete: the map stays (a purge run that finds nothing costs the fleet nothing).
      expect(await store.purgeExpiredTokens(old, 10)).toBe(0);
      expect(mapped()).toBe(true);
      expect(await store.purgeExpiredTokens(new Date(), 10)).toBe(5);
      expect(mapped()).toBe(false);
      // Paused: read with pread, correctly, until the purge has been idle for mapResumeMs.
      expect((await store.findToken(live))?.tokenHash).toBe(live);
      expect(mapped()).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await store.findToken(live))?.tokenHash).toBe(live);
      expect(mapped()).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('finds no token whose user or application row is missing (foreign keys off), as a join would', async () => {
    const path = freshFile();
    const store = await openStore(`sqlite:${path}`);
    const raw = new Database(path);
    try {
      raw.pragma('foreign_keys = OFF');
      const insert = raw.prepare(`INSERT INTO tokens (token_hash, kind, user_id, app_id, issued_at, expires_at, last_used_at)
        VALUES (?, 'session', ?, ?, 0, 9999999999999, 0)`);
      const user = await store.insertUser({ login: 'u', loginKey: 'u', passwordHash: 'h', enabled: true, appIds: [2], createdAt: new Date() });
      if (!user.ok) throw new Error('setup');
      insert.run('a'.repeat(64), user.user.userId, 2);
      insert.run('b'.repeat(64), 424242, 2);
      insert.run('c'.repeat(64), user.user.userId, 77);
      expect(await store.findToken('a'.repeat(64))).toMatchObject({ userId: user.user.userId, userEnabled: true, appEnabled: true, granted: true });
      expect(await store.findToken('b'.repeat(64))).toBeNull();
      expect(await store.findToken('c'.repeat(64))).toBeNull();
    } finally {
      raw.close();
      await store.close();
    }
  });

  it.skipIf(!existsSync('/proc/self/maps'))('maps the file when asked (serve: performance.sqliteMmapMiB), and not by default', async () => {
    const path = freshFile();
    const mapsFile = (): boolean => readFileSync('/proc/self/maps', 'utf8').split('\n').some((l) => l.endsWith(` ${path}`));
    await openSqliteStore({ path }).close(); // the last connection's close checkpoints: pages are read from the file, not the WAL
    const plain = openSqliteStore({ path });
    try {
      expect(await plain.findToken('a'.repeat(64))).toBeNull();
      expect(mapsFile()).toBe(false);
      const mapped = openSqliteStore({ path, mmapBytes: 64 * 1024 * 1024 });
      try {
        expect(await mapped.findToken('a'.repeat(64))).toBeNull();
        expect(mapsFile()).toBe(true);
      } finally {
        await mapped.close();
      }
      expect(mapsFile()).toBe(false); // unmapped with its connection
    } finally {
      await plain.close();
    }
  });

  it('consumes a ticket once across two connections to the same file', async () => {
    const path = freshFile();
    const a = await openStore(`sqlite:${path}`);
    const b = await openStore(`sqlite:${path}`);
    try {
      const user = await a.insertUser({ login: 'u', loginKey: 'u', passwordHash: 'h', enabled: true, appIds: [2], createdAt: new Date() });
      if (!user.ok) throw new Error('setup');
      const tokenHash = 'a'.repeat(64);
      const now = new Date();
      await a.insertTicket({ tokenHash, userId: user.user.userId, appId: 2, clientIp: null, sourceIp: null, issuedAt: now, expiresAt: new Date(now.getTime() + 60_000) });
      expect([await b.consumeTicket(tokenHash, now), await a.consumeTicket(tokenHash, now)]).toEqual([true, false]);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('SQLite access revision', () => {
  it('moves when another connection revokes, disables or deletes by raw SQL, and not when it only uses a token', async () => {
    const path = freshFile();
    const store = await openStore(`sqlite:${path}`);
    const raw = new Database(path);
    try {
      const inserted = await store.insertUser({ login: 'u', loginKey: 'u', passwordHash: 'h', enabled: true, appIds: [2], createdAt: new Date() });
      if (!inserted.ok) throw new Error('setup');
      const hash = 'a'.repeat(64);
      expect(await store.insertSession({ tokenHash: hash, userId: inserted.user.userId, appId: 2, clientIp: null, sourceIp: null, issuedAt: new Date(), expiresAt: new Date(Date.now() + 3600_000) }, { passwordHash: 'h' })).toBe(true);
      const seen = [(await store.revisions()).access];
      const expectMoved = async (what: string): Promise<void> => {
        const revision = (await store.revisions()).access;
        expect(seen, what).not.toContain(revision);
        seen.push(revision);
      };
      raw.prepare('UPDATE tokens SET last_used_at = last_used_at + 1').run();
      raw.prepare('UPDATE users SET last_login_at = 1').run();
      expect((await store.revisions()).access).toBe(seen.at(-1));
      raw.prepare("UPDATE users SET login = 'renamed'").run();
      await expectMoved('rename the user (the login is read with the token)');
      raw.prepare('UPDATE tokens SET revoked_at = 1 WHERE token_hash = ?').run(hash);
      await expectMoved('revoke');
      raw.prepare('UPDATE applications SET enabled = 0').run();
      await expectMoved('disable the application');
      raw.prepare('DELETE FROM user_applications').run();
      await expectMoved('withdraw the grant');
      raw.prepare('UPDATE users SET enabled = 0').run();
      await expectMoved('disable the user');
      raw.prepare('DELETE FROM tokens').run();
      await expectMoved('delete the token');
      // Without its row the revision would stop moving: reads reject instead of answering from memory.
      raw.prepare('DELETE FROM access_revision').run();
      await expect(store.revisions()).rejects.toThrow(/access_revision row is missing/);
    } finally {
      raw.close();
      await store.close();
    }
  });
});

describe('SQLite news revision', () => {
  it('moves on INSERT, UPDATE and DELETE of news by raw SQL from another connection, and the store sees it at once', async () => {
    const path = freshFile();
    const store = await openStore(`sqlite:${path}`);
    const raw = new Database(path);
    try {
      const seen = [(await store.revisions()).news];
      const expectMoved = async (what: string): Promise<void> => {
        const revision = (await store.revisions()).news;
        expect(seen, what).not.toContain(revision);
        seen.push(revision);
      };
      const { id } = raw.prepare(`INSERT INTO news (app_id, language, title, body, published_at, created_at)
        VALUES (2, 'en', 'raw', 'b', 0, 0) RETURNING news_id AS id`).get() as { id: number };
      await expectMoved('INSERT');
      expect((await store.publishedNewsSnapshot({ appId: 2, languages: ['en'], now: new Date(), includeMembersOnly: false })).revision).toBe(seen.at(-1));
      raw.prepare("UPDATE news SET title = 'edited' WHERE news_id = ?").run(id);
      await expectMoved('UPDATE');
      expect((await store.getNews(id))?.title).toBe('edited');
      raw.prepare('DELETE FROM news').run();
      await expectMoved('DELETE without WHERE');
      raw.prepare("UPDATE news SET title = 'none' WHERE news_id = ?").run(id); // no row: nothing changed
      expect((await store.revisions()).news).toBe(seen.at(-1));
      // Without its row the revision would stop moving: reads reject instead of answering stale.
      raw.prepare('DELETE FROM news_revision').run();
      await expect(store.revisions()).rejects.toThrow(/news_revision row is missing/);
      await expect(store.publishedNewsSnapshot({ appId: 2, languages: ['en'], now: new Date(), includeMembersOnly: false })).rejects.toThrow(/news_revision/);
    } finally {
      raw.close();
      await store.close();
    }
  });
});

describe('SQLite brute-force counters', () => {
  it('are shared by two connections to the same file: neither can take a slot the other took', async () => {
    const path = freshFile();
    const a = await openStore(`sqlite:${path}`);
    const b = await openStore(`sqlite:${path}`);
    try {
      const limits = { windowMs: 900_000, maxDelayMs: 900_000, pairMaxAttempts: 5, pairBaseDelayMs: 30_000, loginMaxAttempts: 100, sourceMaxFailures: 50, knownSourceMs: 86_400_000 };
      const now = new Date();
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).reserveLoginAttempt({ loginHash: 'a'.repeat(64), source: '192.0.2.1', now }, limits)));
      expect(results.filter((r) => r.granted)).toHaveLength(5);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('openStore / parseDatabaseUrl', () => {
  it('reads the SQLite URL forms', () => {
    expect(parseDatabaseUrl('sqlite::memory:')).toEqual({ kind: 'sqlite', path: ':memory:' });
    expect(parseDatabaseUrl('sqlite:/var/lib/x.db')).toEqual({ kind: 'sqlite', path: '/var/lib/x.db' });
    expect(parseDatabaseUrl('sqlite:///var/lib/x.db')).toEqual({ kind: 'sqlite', path: '/var/lib/x.db' });
    expect(parseDatabaseUrl('sqlite:./data/x.db')).toEqual({ kind: 'sqlite', path: join(process.cwd(), 'data/x.db') });
    expect(parseDatabaseUrl('/tmp/plain.db')).toEqual({ kind: 'sqlite', path: '/tmp/plain.db' });
    expect(parseDatabaseUrl('postgres://u@h/db')).toEqual({ kind: 'postgres', url: 'postgres://u@h/db' });
  });

  it('rejects empty, file-less and unknown URLs with a clear message', () => {
    expect(() => parseDatabaseUrl('')).toThrow(/empty/);
    expect(() => parseDatabaseUrl('sqlite:')).toThrow(/names no file/);
    expect(() => parseDatabaseUrl('mysql://h/db')).toThrow(/unsupported database URL scheme "mysql:"/);
  });

  it('checks the parameters of a PostgreSQL URL up front', () => {
    expect(parseDatabaseUrl('postgresql://u@h/db?schema=auth_1&pool_max=4')).toEqual({ kind: 'postgres', url: 'postgresql://u@h/db?schema=auth_1&pool_max=4' });
    expect(() => parseDatabaseUrl('postgres://u@h/db?schema=Bad-Name')).toThrow(/invalid schema name/);
    expect(() => parseDatabaseUrl('postgres://u@h/db?pool_max=0')).toThrow(/invalid pool_max/);
  });
});
