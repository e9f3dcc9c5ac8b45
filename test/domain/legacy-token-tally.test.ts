/**
 * Token passthrough's tallies in memory (src/domain/legacy-token-tally.ts): counted per UTC day
 * and result, written by flush() only, one flush at a time, a failed one kept for the next; and
 * the migration report's passthrough section computed from the stored rows.
 */
import { describe, expect, it } from 'vitest';
import { createLegacyTokenTally } from '../../src/domain/legacy-token-tally.js';
import { passthroughReport } from '../../src/domain/migration-report.js';
import { openStore } from '../../src/store/open-store.js';
import type { LegacyTally, LegacyTallyStore } from '../../src/store/store.js';
import { fakeClock, HOUR, SECOND } from '../support/domain-fakes.js';

/** A store that records what it is given, fails while `failing`, and can hold a write open. */
interface RecordingStore extends LegacyTallyStore {
  writes: Array<{ rows: LegacyTally[]; keepFrom: string }>;
  failing: boolean;
  /** While set, a write waits for it (after calling `entered`). */
  hold: Promise<void> | null;
  entered: () => void;
}
function recordingStore(): RecordingStore {
  const rec: RecordingStore = {
    writes: [],
    failing: false,
    hold: null,
    entered: () => undefined,
    async addLegacyTallies(rows: readonly LegacyTally[], keepFrom: string): Promise<void> {
      rec.entered();
      if (rec.hold !== null) await rec.hold;
      if (rec.failing) throw new Error('SQLITE_BUSY: database is locked');
      rec.writes.push({ rows: [...rows], keepFrom });
    },
    async listLegacyTallies(): Promise<readonly LegacyTally[]> {
      return rec.writes.flatMap((w) => w.rows);
    },
  };
  return rec;
}

const summary = (rows: readonly LegacyTally[]): string[] => rows.map((r) => `${r.day} ${r.kind} ${r.result} ${r.count} ${r.lastAt.toISOString()}`).sort();

describe('legacy token tally', () => {
  it('counts per UTC day, kind and result in memory, and writes only when flushed', async () => {
    const clock = fakeClock('2027-01-10T23:59:58.000Z');
    const store = recordingStore();
    const tally = createLegacyTokenTally({ store, clock });
    tally.check('valid');
    tally.check('valid');
    tally.check('invalid');
    tally.relay('relayed');
    clock.advance(2 * SECOND); // midnight UTC: a new day
    tally.check('valid');
    tally.adoption('adopted');
    expect(store.writes).toEqual([]);
    expect(tally.pending()).toBe(6);
    expect(await tally.flush()).toEqual({ ok: true, rows: 5 });
    expect(store.writes).toHaveLength(1);
    expect(store.writes[0]?.keepFrom).toBe('2026-10-13'); // 90 days before the day of the flush
    expect(summary(store.writes[0]?.rows ?? [])).toEqual([
      '2027-01-10 check invalid 1 2027-01-10T23:59:58.000Z',
      '2027-01-10 check valid 2 2027-01-10T23:59:58.000Z',
      '2027-01-10 relay relayed 1 2027-01-10T23:59:58.000Z',
      '2027-01-11 adoption adopted 1 2027-01-11T00:00:00.000Z',
      '2027-01-11 check valid 1 2027-01-11T00:00:00.000Z',
    ]);
    expect(tally.pending()).toBe(0);
    // Nothing new: nothing written.
    expect(await tally.flush()).toEqual({ ok: true, rows: 0 });
    expect(store.writes).toHaveLength(1);
  });

  it('a failed flush keeps its counts, and the next writes them with what came meanwhile', async () => {
    const clock = fakeClock('2027-01-10T12:00:00.000Z');
    const store = recordingStore();
    const tally = createLegacyTokenTally({ store, clock });
    tally.check('valid');
    tally.check('error');
    store.failing = true;
    const failed = await tally.flush();
    expect(failed.ok).toBe(false);
    expect(tally.pending()).toBe(2);
    clock.advance(HOUR);
    tally.check('valid');
    store.failing = false;
    expect(await tally.flush()).toEqual({ ok: true, rows: 2 });
    expect(summary(store.writes.flatMap((w) => w.rows))).toEqual([
      '2027-01-10 check error 1 2027-01-10T12:00:00.000Z',
      '2027-01-10 check valid 2 2027-01-10T13:00:00.000Z',
    ]);
  });

  it('one flush at a time: what is counted during a write goes to the next, nothing twice', async () => {
    const clock = fakeClock('2027-01-10T12:00:00.000Z');
    const store = recordingStore();
    const tally = createLegacyTokenTally({ store, clock });
    let release = (): void => undefined;
    store.hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    const entered = new Promise<void>((resolve) => {
      store.entered = resolve;
    });
    tally.check('valid');
    const first = tally.flush();
    const second = tally.flush();
    await entered;
    store.entered = () => undefined;
    tally.check('invalid'); // while the first write is held
    release();
    store.hold = null;
    expect(await first).toEqual({ ok: true, rows: 1 });
    expect(await second).toEqual({ ok: true, rows: 1 });
    expect(store.writes.map((w) => summary(w.rows))).toEqual([
      ['2027-01-10 check valid 1 2027-01-10T12:00:00.000Z'],
      ['2027-01-10 check invalid 1 2027-01-10T12:00:00.000Z'],
    ]);
  });

  it('flushes of two tallies on one database sum there', async () => {
    const clock = fakeClock('2027-01-10T12:00:00.000Z');
    const store = await openStore('sqlite::memory:');
    try {
      const a = createLegacyTokenTally({ store, clock });
      const b = createLegacyTokenTally({ store, clock });
      for (let i = 0; i < 3; i++) a.check('valid');
      for (let i = 0; i < 4; i++) b.check('valid');
      b.check('circuit_open');
      await Promise.all([a.flush(), b.flush()]);
      a.check('valid');
      await a.flush();
      expect(summary(await store.listLegacyTallies())).toEqual([
        '2027-01-10 check circuit_open 1 2027-01-10T12:00:00.000Z',
        '2027-01-10 check valid 8 2027-01-10T12:00:00.000Z',
      ]);
    } finally {
      await store.close();
    }
  });
});

describe('the migration report\'s passthrough section', () => {
  const row = (day: string, kind: LegacyTally['kind'], result: string, count: number, lastAt = `${day}T10:00:00.000Z`): LegacyTally =>
    ({ day, kind, result, count, lastAt: new Date(lastAt) });

  it('sums the last 7 and 30 UTC days per result, every known result listed, and says when an old token was last vouched for', () => {
    const now = new Date('2027-01-31T08:00:00.000Z');
    const report = passthroughReport([
      row('2026-12-01', 'check', 'valid', 100, '2026-12-01T09:00:00.000Z'), // 61 days ago: in neither window
      row('2027-01-02', 'check', 'valid', 30), // 29 days ago: the 30 days' first
      row('2027-01-24', 'check', 'invalid', 5), // 7 days ago: 30 days only
      row('2027-01-25', 'check', 'cached_valid', 7, '2027-01-25T18:30:00.000Z'), // the 7 days' first
      row('2027-01-31', 'check', 'error', 2),
      row('2027-01-31', 'adoption', 'adopted', 1),
      row('2027-01-30', 'relay', 'relayed', 4),
    ], now);
    expect(report.today).toBe('2027-01-31');
    expect(report.countedSince).toBe('2026-12-01');
    expect(report.checks.map((c) => c.result)).toEqual(['valid', 'invalid', 'error', 'circuit_open', 'overloaded', 'cached_valid', 'cached_invalid', 'unsafe']);
    const checks = Object.fromEntries(report.checks.map((c) => [c.result, [c.last7Days, c.last30Days]]));
    expect(checks).toMatchObject({ valid: [0, 30], invalid: [0, 5], cached_valid: [7, 7], error: [2, 2], circuit_open: [0, 0] });
    expect(report.adoptions.find((c) => c.result === 'adopted')).toEqual({ result: 'adopted', last7Days: 1, last30Days: 1 });
    expect(report.relays.find((c) => c.result === 'relayed')).toEqual({ result: 'relayed', last7Days: 4, last30Days: 4 });
    // cached_valid is a yes of the old service kept in memory: a client still using an old token.
    expect(report.lastVouchedAt).toEqual(new Date('2027-01-25T18:30:00.000Z'));
    expect(report.lastVouchedDaysAgo).toBe(5);
  });

  it('never: no vouched check on record (refusals and trouble are not)', () => {
    const report = passthroughReport([row('2027-01-30', 'check', 'invalid', 3), row('2027-01-30', 'check', 'error', 1)], new Date('2027-01-31T08:00:00.000Z'));
    expect(report.lastVouchedAt).toBeNull();
    expect(report.lastVouchedDaysAgo).toBeNull();
    expect(passthroughReport([], new Date('2027-01-31T08:00:00.000Z'))).toMatchObject({ countedSince: null, lastVouchedAt: null });
  });
});
