/**
 * Password hashing never takes every thread of libuv's pool (src/ops/hashing-threads.ts): the
 * WAL syncs that tokens and tickets wait for, and the log's writes, run on that pool too. And a
 * `serve --workers` cluster shares the hashing out among its workers (defaultHashingLimits).
 */
import argon2 from 'argon2';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { defaultHashingLimits } from '../../src/domain/bounded-hasher.js';
import { createArgon2Hasher } from '../../src/domain/password-hasher.js';
import { hashingSlots, libuvPoolSize, POOL_SPARE_THREADS } from '../../src/ops/hashing-threads.js';
import { createAdminService } from '../../src/domain/admin-service.js';
import { openStore } from '../../src/store/open-store.js';
import { EXECUTABLE, killAll, requireDist, seedTicketWorld, soapResult, startServer, type ServerProcess } from '../support/server-process.js';

describe('libuvPoolSize', () => {
  it('reads UV_THREADPOOL_SIZE as libuv does', () => {
    expect(libuvPoolSize({})).toBe(4);
    expect(libuvPoolSize({ UV_THREADPOOL_SIZE: '8' })).toBe(8);
    expect(libuvPoolSize({ UV_THREADPOOL_SIZE: '0' })).toBe(1);
    expect(libuvPoolSize({ UV_THREADPOOL_SIZE: 'many' })).toBe(1);
    expect(libuvPoolSize({ UV_THREADPOOL_SIZE: '5000' })).toBe(1024);
  });
});

describe('hashingSlots', () => {
  it('leaves the spare threads of the pool free, and hashes at least one at a time', () => {
    expect(POOL_SPARE_THREADS).toBe(2);
    expect(hashingSlots(1, 4)).toBe(1);
    expect(hashingSlots(2, 4)).toBe(2);
    expect(hashingSlots(3, 4)).toBe(2);
    expect(hashingSlots(7, 4)).toBe(2);
    expect(hashingSlots(7, 9)).toBe(7);
    expect(hashingSlots(4, 1)).toBe(1);
  });
});

describe('defaultHashingLimits', () => {
  it('gives a process alone every core but one', () => {
    expect(defaultHashingLimits(1, 2).maxConcurrent).toBe(1);
    expect(defaultHashingLimits(1, 8).maxConcurrent).toBe(7);
    expect(defaultHashingLimits(1, 1).maxConcurrent).toBe(1);
  });
  it('shares them out among the workers of a cluster, at least one each', () => {
    expect(defaultHashingLimits(2, 2).maxConcurrent).toBe(1);
    expect(defaultHashingLimits(8, 8).maxConcurrent).toBe(1);
    expect(defaultHashingLimits(2, 8).maxConcurrent).toBe(4);
    expect(defaultHashingLimits(4, 16).maxConcurrent).toBe(4);
    expect(defaultHashingLimits(32, 4).maxConcurrent).toBe(1);
  });
});

const dir = mkdtempSync(join(tmpdir(), 'svcapi-hashing-threads-'));
afterEach(() => killAll());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** alice (a hash at the service's parameters) and slow, whose hash takes a few hundred ms to verify. */
async function database(name: string): Promise<string> {
  const file = join(dir, `${name}.db`);
  await seedTicketWorld(`sqlite:${file}`);
  const store = await openStore(`sqlite:${file}`);
  try {
    if (!(await createAdminService({ store, hasher: createArgon2Hasher() }).addUser({ login: 'slow', password: 'pw', appIds: [2] })).ok) throw new Error('cannot add slow');
  } finally {
    await store.close();
  }
  // Within the verifier's caps (legacy-hashes/limits.ts), about 16 times the service's own.
  const slowHash = await argon2.hash('pw', { type: argon2.argon2id, memoryCost: 65_536, timeCost: 10, parallelism: 1 });
  const db = new Database(file);
  try {
    db.prepare("UPDATE users SET password_hash = ? WHERE login = 'slow'").run(slowHash);
  } finally {
    db.close();
  }
  return file;
}

async function managementOf(server: ServerProcess): Promise<string> {
  return /Management: (http:\/\/\S+?) /.exec(await server.waitForOutput(/Management: http:\/\/\S+ /))?.[1] ?? '';
}

async function hashesInFlight(management: string): Promise<number> {
  const text = await (await fetch(`${management}/metrics`)).text();
  return Number(/^svcapi_auth_password_hash_queue_depth (\d+)$/m.exec(text)?.[1]);
}

describe('serve with more hashing than libuv\'s pool has threads', () => {
  it('keeps two threads free and says so: a login URL is issued while four slow logins are still hashing', async () => {
    requireDist();
    const file = await database('capped');
    // hashing.maxConcurrent 4 is the default of a 5-core machine; main.js started directly keeps libuv's 4 threads.
    const server = await startServer(['--db', `sqlite:${file}`], { SVCAPI_HASHING_MAX_CONCURRENT: '4' });
    await server.waitForOutput(/password hashing runs 2 at once, not hashing.maxConcurrent's 4: libuv's thread pool has 4 threads.*UV_THREADPOOL_SIZE=6/);
    const management = await managementOf(server);
    const token = String(await soapResult(server.origin, 'ValidateUser', { login: 'alice', password: 'pw', AppId: 2, IPAddress: '' }));
    expect(token).toMatch(/^[0-9a-f-]{36}$/);

    const logins = Array.from({ length: 4 }, () => soapResult(server.origin, 'ValidateUser', { login: 'slow', password: 'pw', AppId: 2, IPAddress: '' }));
    await expect.poll(() => hashesInFlight(management), { timeout: 5000, interval: 10 }).toBe(4);
    // The ticket's insert waits for a WAL sync on the pool. With all four threads hashing it
    // waited for a hash to end (740-840 ms here); now it is answered while every login still hashes.
    const url = new URL(String(await soapResult(server.origin, 'GetUserLoginURL', { token, AppID: 2 })));
    expect(url.searchParams.get('ticket')).toMatch(/^[0-9a-f-]{36}$/);
    expect(await hashesInFlight(management)).toBe(4);
    for (const answer of await Promise.all(logins)) expect(answer).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('the svcapi-auth executable sizes the pool for the hashing first: every hash at once, no warning', async () => {
    requireDist();
    const file = await database('sized');
    // Nice 10 makes serve look for the pool's threads (hashing-priority.ts), which finds exactly the pool's size of them.
    const server = await startServer(['--db', `sqlite:${file}`], { SVCAPI_HASHING_MAX_CONCURRENT: '4', SVCAPI_HASHING_NICE: '10', SVCAPI_LOG_LEVEL: 'info' }, EXECUTABLE);
    const found = await server.waitForOutput(/password hashing threads run at a low CPU priority/, 30_000);
    expect(/"threads":(\d+),[^\n]*password hashing threads run at a low CPU priority/.exec(found)?.[1]).toBe(String(4 + POOL_SPARE_THREADS));
    expect(server.output()).not.toContain('password hashing runs');
    expect(String(await soapResult(server.origin, 'ValidateUser', { login: 'alice', password: 'pw', AppId: 2, IPAddress: '' }))).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('leaves an operator\'s own UV_THREADPOOL_SIZE as it is', async () => {
    requireDist();
    const file = await database('operator');
    const server = await startServer(['--db', `sqlite:${file}`], { SVCAPI_HASHING_MAX_CONCURRENT: '4', UV_THREADPOOL_SIZE: '5' }, EXECUTABLE);
    await server.waitForOutput(/password hashing runs 3 at once, not hashing.maxConcurrent's 4: libuv's thread pool has 5 threads/);
  });
});
