import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { keepTickShape } from '../../src/ops/tick-shape.js';
import { requireDist, ROOT } from '../support/server-process.js';

/**
 * A process that runs ticks, with full collections between them while none is queued (as a
 * serving process has at start and in housekeeping), then prints V8's feedback for nextTick:
 * one line per definition site of the tick object's literal, with its state.
 */
function nextTickSites(keep: boolean): string[] {
  const module = pathToFileURL(join(ROOT, 'dist', 'ops', 'tick-shape.js')).href;
  const script = `
    import { keepTickShape } from ${JSON.stringify(module)};
    const keeper = ${keep} ? keepTickShape() : null;
    await keeper?.ready;
    const tick = () => new Promise((resolve) => process.nextTick(resolve));
    for (let round = 0; round < 8; round++) {
      for (let i = 0; i < 200; i++) await tick();
      await new Promise((resolve) => setImmediate(resolve));
      globalThis.gc();
    }
    %DebugPrint(process.nextTick);
    keeper?.stop();`;
  const run = spawnSync(process.execPath, ['--allow-natives-syntax', '--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' });
  expect(run.status, run.stderr).toBe(0);
  return run.stdout.split('\n').filter((line) => /DefineKeyedOwnPropertyInLiteral/.test(line));
}

describe('nextTick\'s tick objects keep one hidden class', () => {
  it('with one tick object kept, no definition site of the tick literal turns megamorphic across full collections', () => {
    requireDist();
    const kept = nextTickSites(true);
    expect(kept.length).toBeGreaterThanOrEqual(2);
    expect(kept.filter((line) => /MEGAMORPHIC/.test(line))).toEqual([]);
    // What it prevents (seen on Node.js 20, 22 and 24): without a tick held, sites turn megamorphic.
    expect(nextTickSites(false).filter((line) => /MEGAMORPHIC/.test(line)).length).toBeGreaterThan(0);
  });

  it('takes a tick object at once and a new one every refresh, until stopped', async () => {
    const keeper = keepTickShape(5);
    await keeper.ready;
    const first = keeper.held();
    expect(first).not.toBeNull();
    await sleep(40);
    const later = keeper.held();
    expect(later).not.toBe(first);
    keeper.stop();
    await sleep(40);
    expect(keeper.held()).toBe(later);
  });
});
