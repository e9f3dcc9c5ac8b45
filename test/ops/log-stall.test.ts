/**
 * A reader of standard output that has stopped (a paused pager, a stuck log collector) does not
 * keep `serve` from ending: sonic-boom retried its full pipe every 100 ms without end, so
 * SIGTERM never ended the process (systemd killed it at TimeoutStopSec). Once the process is
 * ending, a reader that takes nothing for STALL_GIVE_UP_MS is given up on
 * (src/ops/log-destination.ts stallGuard); one that takes lines, however slowly, is waited for.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { STALL_GIVE_UP_MS, stallGuard } from '../../src/ops/log-destination.js';
import { createMetrics } from '../../src/ops/metrics.js';
import type { Store } from '../../src/store/store.js';
import { killAll, requireDist, startServer } from '../support/server-process.js';

const EAGAIN = Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });

describe('the give-up on a stalled reader', () => {
  it('retries a full pipe for as long as the process serves', () => {
    let t = 0;
    const guard = stallGuard(() => t);
    for (t = 0; t <= 600_000; t += 10_000) expect(guard.retry(EAGAIN, 100, 1_000_000)).toBe(true);
  });

  it('once ending, gives up after STALL_GIVE_UP_MS without a byte taken, and waits for a reader that takes some', () => {
    let t = 1_000;
    const guard = stallGuard(() => t);
    guard.ending();
    // Taking bytes, slowly: waited for well past the give-up.
    let left = 1_000_000;
    for (let i = 0; i < 20; i++) {
      t += STALL_GIVE_UP_MS - 100;
      left -= 10;
      expect(guard.retry(EAGAIN, 100, left - 100)).toBe(true);
    }
    // Then nothing more taken: retried until the give-up, not after.
    t += STALL_GIVE_UP_MS - 1;
    expect(guard.retry(EAGAIN, 100, left - 100)).toBe(true);
    t += 1;
    expect(guard.retry(EAGAIN, 100, left - 100)).toBe(false);
  });

  it('counts the give-up from the moment the process began ending, not from an earlier stall', () => {
    let t = 0;
    const guard = stallGuard(() => t);
    guard.retry(EAGAIN, 100, 500);
    t = 60_000;
    guard.ending();
    t += STALL_GIVE_UP_MS - 1;
    expect(guard.retry(EAGAIN, 100, 500)).toBe(true);
    t += 1;
    expect(guard.retry(EAGAIN, 100, 500)).toBe(false);
  });
});

describe('the dropped log lines', () => {
  it('are a counter of every line dropped so far, read at each scrape', async () => {
    let dropped = 0;
    const metrics = createMetrics({ store: {} as Store, processMetrics: false });
    metrics.reportLogDropped(() => dropped);
    const count = async (): Promise<number> => Number(/^svcapi_auth_log_dropped_lines_total (\d+)$/m.exec(await metrics.registry.metrics())?.[1]);
    expect(await count()).toBe(0);
    dropped = 1234;
    expect(await count()).toBe(1234);
    expect(await count()).toBe(1234);
    dropped = 2000;
    expect(await count()).toBe(2000);
  });
});

describe('serve with a stopped reader of standard output', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcapi-log-stall-'));
  afterAll(() => {
    killAll();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps serving while the lines wait, and ends on SIGTERM within seconds, exit 0', async () => {
    requireDist();
    const server = await startServer(['--db', join(dir, 'auth.db')], { SVCAPI_LOG_LEVEL: 'info' });
    const management = /^Management: (http:\/\/\S+)/m.exec(await server.waitForOutput(/^Management: /m))?.[1];
    expect(management).toBeDefined();
    // The reader stops: the pipe (64 KiB) fills, and the access lines wait in the process.
    server.child.stdout?.pause();
    const backlog = async (): Promise<number> => Number(/^svcapi_auth_log_backlog_bytes (\d+)$/m.exec(await (await fetch(`${management}/metrics`)).text())?.[1]);
    for (let i = 0; i < 1500 && (i % 100 !== 99 || (await backlog()) < 128 * 1024); i++) {
      const answer = await fetch(`${server.origin}/Authentication.asmx/ValidateUserToken?token=not-a-token-${i}`);
      expect(answer.status).toBe(200);
      await answer.arrayBuffer();
    }
    expect(await backlog()).toBeGreaterThanOrEqual(128 * 1024);

    const signalled = Date.now();
    server.child.kill('SIGTERM');
    const timeout = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 20_000).unref());
    const outcome = await Promise.race([server.exited, timeout]);
    expect(outcome).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalled).toBeLessThan(STALL_GIVE_UP_MS + 8_000);
  }, 60_000);
});
