/**
 * Migration 18: a new instance tells from the readiness probe's row that an instance of an older
 * version is serving from the same database (it looks for login tickets in the tokens table
 * only). The older version is played by the very statement every version from schema 8 to 17
 * probes with, run on the database directly. Run against each adapter
 * (older-version-probes.test.ts, postgres-older-version-probes.test.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';

/** The probe of every version from schema 8 to 17 (sqlite-store.ts / postgres-store.ts before migration 18). */
export const OLD_PROBE = 'INSERT INTO health_probe (id, probed_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at';

/** One database of an adapter, with raw access. */
export interface Database18 {
  /** Migrates it to schema 17, as the previous version left it. */
  migrateTo17(): Promise<void>;
  /** One probe of an older instance, stamped `at` by its clock. */
  oldProbe(at: Date): Promise<void>;
  /** The stamp, as the database holds it (null: none). */
  olderProbedAt(): Promise<number | null>;
  /** A store on it (migrating it to the latest version). */
  open(): Promise<Store>;
}

export function describeOlderVersionProbes(name: string, make: () => Database18): void {
  describe(`older version probes (${name})`, () => {
    it('an older instance probing before and after the upgrade is seen at once and at every later probe; the new instances\' own probes never count', async () => {
      const db = make();
      await db.migrateTo17();
      await db.oldProbe(new Date(Date.now() - 3000));
      const store = await db.open(); // migrates to 18
      try {
        // The probe written before the migration was an older version's.
        const first = (await store.probeWrite(new Date())).olderVersionMsAgo;
        expect(first).toBeGreaterThanOrEqual(2000);
        expect(first).toBeLessThan(60_000);
        // It probes again (every 5 s): stamped anew.
        await db.oldProbe(new Date());
        const again = (await store.probeWrite(new Date())).olderVersionMsAgo;
        expect(again).not.toBeNull();
        expect(again).toBeLessThan(first ?? 0);
        // Ours, from two instances, however many: the stamp stays the older version's.
        const stamp = await db.olderProbedAt();
        const other = await db.open();
        try {
          for (let i = 0; i < 3; i += 1) {
            await store.probeWrite(new Date());
            await other.probeWrite(new Date());
          }
        } finally {
          await other.close();
        }
        expect(await db.olderProbedAt()).toBe(stamp);
      } finally {
        await store.close();
      }
    });

    it('a database whose probes were only ever ours, or that no version ever probed, has no older version', async () => {
      const fresh = make();
      const store = await fresh.open();
      try {
        expect(await store.probeWrite(new Date())).toEqual({ olderVersionMsAgo: null });
        expect(await fresh.olderProbedAt()).toBeNull();
      } finally {
        await store.close();
      }
      // Migrated from 17 where nothing had probed yet (the row of migration 8, at the epoch).
      const unprobed = make();
      await unprobed.migrateTo17();
      const upgraded = await unprobed.open();
      try {
        expect(await upgraded.probeWrite(new Date())).toEqual({ olderVersionMsAgo: null });
      } finally {
        await upgraded.close();
      }
    });
  });
}
