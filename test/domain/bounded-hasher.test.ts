import { describe, expect, it } from 'vitest';
import { createBoundedHasher } from '../../src/domain/bounded-hasher.js';
import type { PasswordHasher } from '../../src/domain/password-hasher.js';
import { ServerBusyError } from '../../src/domain/server-busy-error.js';

/** A hasher whose verifications finish only when the test releases them. */
function gatedHasher(): PasswordHasher & { running: number; peak: number; release(): void } {
  const gates: Array<() => void> = [];
  const h = {
    running: 0,
    peak: 0,
    release: () => gates.shift()?.(),
    hash: async (p: string) => `h$${p}`,
    async verify(_hash: string, _password: string) {
      h.running += 1;
      h.peak = Math.max(h.peak, h.running);
      await new Promise<void>((resolve) => gates.push(resolve));
      h.running -= 1;
      return true;
    },
    needsRehash: () => false,
  };
  return h;
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('bounded password hashing', () => {
  it('runs at most maxConcurrent at once, queues up to maxQueued, refuses the rest at once', async () => {
    const inner = gatedHasher();
    const bounded = createBoundedHasher(inner, { maxConcurrent: 2, maxQueued: 3 });
    const accepted = Array.from({ length: 5 }, () => bounded.verify('x', 'y'));
    await expect(bounded.verify('x', 'y')).rejects.toBeInstanceOf(ServerBusyError);
    await tick();
    expect(bounded.load()).toEqual({ running: 2, queued: 3 });
    for (let i = 0; i < 5; i++) {
      inner.release();
      await tick();
    }
    expect(await Promise.all(accepted)).toEqual([true, true, true, true, true]);
    expect(inner.peak).toBe(2);
    expect(bounded.load()).toEqual({ running: 0, queued: 0 });
  });

  it('frees its slot when the work throws', async () => {
    const failing: PasswordHasher = { hash: async () => 'h', verify: async () => Promise.reject(new Error('boom')), needsRehash: () => false };
    const bounded = createBoundedHasher(failing, { maxConcurrent: 1, maxQueued: 0 });
    await expect(bounded.verify('h', 'p')).rejects.toThrow('boom');
    await expect(bounded.verify('h', 'p')).rejects.toThrow('boom');
    expect(bounded.load()).toEqual({ running: 0, queued: 0 });
  });
});
