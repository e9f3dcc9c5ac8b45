/**
 * `serve`'s log of the SQLite WAL runaway switch (src/ops/wal-runaway-watch.ts): a warning with
 * the WAL's size when the serving connection checkpoints at its own commits again, an info line
 * when the WAL has started over, and what was reported before the logger existed written once it
 * does; and the two gauges an operator watches beside it (the switch, the `-wal` file's size).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/ops/logger.js';
import { createMetrics } from '../../src/ops/metrics.js';
import { walFileBytes, walRunawayWatch } from '../../src/ops/wal-runaway-watch.js';
import type { Store } from '../../src/store/store.js';
import { sink } from './support.js';

const lines = (text: string): Record<string, unknown>[] => text.trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);

describe('WAL runaway log', () => {
  it('warns with the WAL\'s size when the runaway switch goes on, and says when it goes off', () => {
    const out = sink();
    const watch = walRunawayWatch();
    watch.log(createLogger({ level: 'info', stream: out.stream }));
    watch.report(true, 270 * 1024 * 1024);
    watch.report(false, 3 * 1024 * 1024);
    const [on, off] = lines(out.text());
    expect(on).toMatchObject({ level: 40, walMiB: 270 });
    expect(String(on?.msg)).toMatch(/WAL past its bound.*other processes kept committing/);
    expect(off).toMatchObject({ level: 30, walMiB: 3 });
    expect(String(off?.msg)).toMatch(/WAL started over/);
  });

  it('keeps what was reported before the logger existed, and writes it once it does', () => {
    const out = sink();
    const watch = walRunawayWatch();
    watch.report(true, 300 * 1024 * 1024);
    expect(out.text()).toBe('');
    watch.log(createLogger({ level: 'info', stream: out.stream }));
    expect(lines(out.text())).toMatchObject([{ level: 40, walMiB: 300 }]);
  });
});

describe('WAL gauges', () => {
  const gauge = (text: string, name: string): number | undefined => {
    const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    return match === null ? undefined : Number(match[1]);
  };

  it('report the -wal file\'s size on disk and the runaway switch at each scrape', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-wal-gauge-'));
    try {
      const db = join(dir, 'auth.db');
      const watch = walRunawayWatch();
      const metrics = createMetrics({ store: {} as Store, processMetrics: false });
      metrics.reportSqliteWal({ walBytes: () => walFileBytes(db), runaway: watch.runaway });

      // No -wal file yet (SQLite makes it at the first write): 0, not an error.
      let text = await metrics.registry.metrics();
      expect(gauge(text, 'svcapi_auth_sqlite_wal_bytes')).toBe(0);
      expect(gauge(text, 'svcapi_auth_sqlite_wal_runaway')).toBe(0);

      writeFileSync(`${db}-wal`, Buffer.alloc(12_345));
      watch.report(true, 270 * 1024 * 1024);
      text = await metrics.registry.metrics();
      expect(gauge(text, 'svcapi_auth_sqlite_wal_bytes')).toBe(12_345);
      expect(gauge(text, 'svcapi_auth_sqlite_wal_runaway')).toBe(1);

      watch.report(false, 0);
      expect(gauge(await metrics.registry.metrics(), 'svcapi_auth_sqlite_wal_runaway')).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('are absent unless the store is a SQLite file', async () => {
    const text = await createMetrics({ store: {} as Store, processMetrics: false }).registry.metrics();
    expect(text).not.toContain('sqlite_wal');
  });
});
