/**
 * Scheduled purge of expired tokens and tickets: small batches, retention kept, the event loop
 * free between batches, failures reported and the schedule going on.
 */
import { createHash } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startHousekeeping, tokenPurgeTask, type HousekeepingTask } from '../../src/ops/housekeeping.js';
import { createMetrics } from '../../src/ops/metrics.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store, User } from '../../src/store/store.js';

const NOW = new Date('2025-06-01T12:00:00.000Z');
const HOUR = 3600_000;
const at = (offsetMs: number): Date => new Date(NOW.getTime() + offsetMs);
let seq = 0;
const hash = (): string => createHash('sha256').update(`t${++seq}`).digest('hex');

let store: Store;
let user: User;

beforeEach(async () => {
  store = await openStore('sqlite::memory:');
  const added = await store.insertUser({ login: 'u', loginKey: 'u', passwordHash: 'h', enabled: true, appIds: [2], createdAt: at(-100 * HOUR) });
  if (!added.ok) throw new Error('no user');
  user = added.user;
});
afterEach(async () => {
  await store.close();
});

async function addTokens(count: number, expiresAt: Date, kind: 'session' | 'ticket' = 'session'): Promise<string[]> {
  const hashes: string[] = [];
  for (let i = 0; i < count; i++) {
    const tokenHash = hash();
    const row = { tokenHash, userId: user.userId, appId: 2, clientIp: null, sourceIp: null, issuedAt: at(-100 * HOUR), expiresAt };
    const ok = kind === 'session' ? await store.insertSession(row, { passwordHash: 'h' }) : await store.insertTicket(row);
    if (!ok) throw new Error('insert refused');
    hashes.push(tokenHash);
  }
  return hashes;
}

describe('housekeeping', () => {
  it('purges tokens and tickets expired longer ago than the retention, in batches, keeping the rest', async () => {
    await addTokens(230, at(-48 * HOUR));
    const usedTickets = await addTokens(15, at(-30 * HOUR), 'ticket');
    for (const t of usedTickets) await store.consumeTicket(t, at(-99 * HOUR));
    const recent = await addTokens(5, at(-1 * HOUR)); // expired, but within the day of retention
    const live = await addTokens(5, at(24 * HOUR));

    const task = tokenPurgeTask(store, 24 * HOUR, () => NOW);
    const batches: number[] = [];
    const counted: HousekeepingTask = { name: task.name, purgeBatch: async (limit) => { const n = await task.purgeBatch(limit); batches.push(n); return n; } };
    const metrics = createMetrics({ store, processMetrics: false });
    const housekeeping = startHousekeeping({ tasks: [counted], intervalMs: 3_600_000, batchSize: 50, pauseMs: 1, onReport: (r) => metrics.housekeepingRun(r) });
    const reports = await housekeeping.runOnce();
    await housekeeping.stop();

    expect(reports).toEqual([{ task: 'tokens', deleted: 245, ok: true }]);
    // The first scheduled run may have overlapped: together they deleted in batches of at most 50.
    expect(batches.every((n) => n <= 50)).toBe(true);
    expect(batches.reduce((a, b) => a + b, 0)).toBe(245);
    for (const t of [...recent, ...live]) expect(await store.findToken(t)).not.toBeNull();
    for (const t of usedTickets) expect(await store.findToken(t)).toBeNull();
    const text = await metrics.registry.metrics();
    expect(text).toContain('svcapi_auth_housekeeping_deleted_total{task="tokens"} 245');
    expect(text).toMatch(/svcapi_auth_housekeeping_runs_total\{task="tokens",result="ok"\} [12]/);
  });

  it('lets other work run between batches', async () => {
    let ticks = 0;
    let batchesSeen = 0;
    const ticksAtBatch: number[] = [];
    const task: HousekeepingTask = {
      name: 'fake',
      async purgeBatch(limit) {
        ticksAtBatch.push(ticks);
        batchesSeen += 1;
        return batchesSeen <= 5 ? limit : 0;
      },
    };
    const ticker = setInterval(() => {
      ticks += 1;
    }, 1);
    const housekeeping = startHousekeeping({ tasks: [task], intervalMs: 3_600_000, batchSize: 10, pauseMs: 5 });
    const reports = await housekeeping.runOnce();
    await housekeeping.stop();
    clearInterval(ticker);
    expect(reports).toEqual([{ task: 'fake', deleted: 50, ok: true }]);
    // Timers fired between every two batches: the purge never held the event loop across batches.
    for (let i = 1; i < ticksAtBatch.length; i++) expect(ticksAtBatch[i]).toBeGreaterThan(ticksAtBatch[i - 1] ?? 0);
  });

  it('sizes batches by the time they take, on the event loop or elsewhere: scaled to the budget, at most batchSize, then paused four times as long', async () => {
    let clock = 0;
    const limits: Record<string, number[]> = { sqlite: [], postgres: [] };
    const pauses: number[] = [];
    const left = { sqlite: 2000, postgres: 2000 };
    // 100 µs per row: synchronously, as a SQLite DELETE holds the event loop; or on the server, as PostgreSQL's.
    const task = (name: 'sqlite' | 'postgres'): HousekeepingTask => ({
      name,
      purgeBatch(limit) {
        limits[name]?.push(limit);
        const n = Math.min(limit, left[name]);
        left[name] -= n;
        if (name === 'sqlite') {
          clock += n / 10;
          return Promise.resolve(n);
        }
        return Promise.resolve().then(() => {
          clock += n / 10;
          return n;
        });
      },
    });
    const housekeeping = startHousekeeping({
      tasks: [task('sqlite'), task('postgres')], intervalMs: 3_600_000, batchSize: 500, batchBudgetMs: 5, pauseMs: 1,
      now: () => clock, sleep: async (ms) => { pauses.push(ms); },
    });
    const reports = await housekeeping.runOnce();
    await housekeeping.stop();
    expect(reports).toEqual([{ task: 'sqlite', deleted: 2000, ok: true }, { task: 'postgres', deleted: 2000, ok: true }]);
    // 500 rows took 50 ms: the next ones get 50 rows (5 ms), and a pause of 4 × 50 ms after the first.
    expect(limits.sqlite?.slice(0, 4)).toEqual([500, 50, 50, 50]);
    expect(pauses.slice(0, 3)).toEqual([200, 20, 20]);
    // A delete that runs elsewhere (a thread, the database server) is paced by its time all the same.
    expect(limits.postgres?.slice(0, 4)).toEqual([500, 50, 50, 50]);
  });

  it('with a budget, grows batches again (at most twofold each) when rows become cheap', async () => {
    let clock = 0;
    const limits: number[] = [];
    let left = 3000;
    let perRowMs = 1;
    const housekeeping = startHousekeeping({
      tasks: [{
        name: 'tokens',
        purgeBatch(limit) {
          limits.push(limit);
          const n = Math.min(limit, left);
          left -= n;
          clock += n * perRowMs;
          perRowMs = 0; // from now on free
          return Promise.resolve(n);
        },
      }],
      intervalMs: 3_600_000, batchSize: 400, batchBudgetMs: 100, now: () => clock, sleep: async () => undefined,
    });
    await housekeeping.runOnce();
    await housekeeping.stop();
    expect(limits.slice(0, 5)).toEqual([400, 100, 200, 400, 400]);
  });

  it('reports a failing task, goes on with the others, and keeps its schedule', async () => {
    // The schedule's clock is faked: the intervals pass when the test says, not in real time.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let failing = 0;
    let healthy = 0;
    const reports: { task: string; ok: boolean }[] = [];
    const housekeeping = startHousekeeping({
      tasks: [
        { name: 'broken', purgeBatch: async () => { failing += 1; throw new Error('database is locked'); } },
        { name: 'fine', purgeBatch: async () => { healthy += 1; return 0; } },
      ],
      intervalMs: 20,
      batchSize: 10,
      onReport: (r) => reports.push({ task: r.task, ok: r.ok }),
    });
    try {
      await vi.advanceTimersByTimeAsync(150);
      await housekeeping.stop();
      // At 0, 20, ... 140 ms: a run, then the next one an interval after it ended.
      expect(failing).toBe(8);
      expect(healthy).toBe(failing);
      expect(reports.slice(0, 2)).toEqual([{ task: 'broken', ok: false }, { task: 'fine', ok: true }]);
      // Nothing runs after stop().
      await vi.advanceTimersByTimeAsync(10 * 20);
      expect(failing).toBe(8);
    } finally {
      vi.useRealTimers();
    }
  });

  it('stop() waits for the batch in progress, then stops between batches', async () => {
    let calls = 0;
    let release: () => void = () => undefined;
    let batchStarted: () => void = () => undefined;
    const firstBatch = new Promise<void>((resolve) => {
      batchStarted = resolve;
    });
    const housekeeping = startHousekeeping({
      tasks: [{ name: 'slow', purgeBatch: (limit) => { calls += 1; batchStarted(); return new Promise<number>((resolve) => { release = () => resolve(limit); }); } }],
      intervalMs: 3_600_000,
      batchSize: 10,
    });
    await firstBatch;
    expect(calls).toBe(1);
    let stopped = false;
    const stopping = housekeeping.stop().then(() => {
      stopped = true;
    });
    for (let i = 0; i < 5; i++) await nextTurn();
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(calls).toBe(1);
  });
});
