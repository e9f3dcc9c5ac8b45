/**
 * `serve`'s log of the SQLite WAL runaway switch (src/ops/wal-runaway-watch.ts): a warning with
 * the WAL's size when the serving connection checkpoints at its own commits again, an info line
 * when the WAL has started over, and what was reported before the logger existed written once it does.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/ops/logger.js';
import { walRunawayWatch } from '../../src/ops/wal-runaway-watch.js';
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
