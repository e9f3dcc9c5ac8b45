/**
 * Bounds password hashing so it cannot starve the service: at most `maxConcurrent`
 * hash operations run at once (each occupies a core on the libuv thread pool), at most
 * `maxQueued` wait, and anything beyond fails at once with ServerBusyError instead of growing
 * a queue. Token validation never hashes, so it never waits behind this.
 *
 * The default leaves one core to the event loop: argon2id at OWASP parameters costs ~50 ms of
 * CPU, and a full thread pool on a 2-core machine would slow every other request. Hashing never
 * takes all of libuv's pool either (ops/hashing-threads.ts): serve cuts the limit to fit.
 */
import { availableParallelism } from 'node:os';
import type { PasswordHasher } from './password-hasher.js';
import { ServerBusyError } from './server-busy-error.js';

export interface HashingLimits {
  readonly maxConcurrent: number;
  readonly maxQueued: number;
}

/**
 * The default: the machine's cores but one, for a process that serves alone. `serve --workers N`
 * shares them out: each worker takes its part (rounded up, at least one), so that N workers
 * together hash on about as many threads as there are cores; each taking cores - 1 made N times
 * that (56 hashes at once on 8 cores, each holding 19 MiB and a core, and every login N - 1
 * times slower under a flood, for no more logins a second).
 */
export function defaultHashingLimits(workers = 1, cores = availableParallelism()): HashingLimits {
  const spare = Math.max(1, cores - 1);
  return { maxConcurrent: workers <= 1 ? spare : Math.max(1, Math.ceil(spare / workers)), maxQueued: 64 };
}

export interface BoundedHasher extends PasswordHasher {
  /** Operations running and waiting now. */
  load(): { readonly running: number; readonly queued: number };
}

export function createBoundedHasher(inner: PasswordHasher, limits: HashingLimits = defaultHashingLimits()): BoundedHasher {
  let running = 0;
  const waiting: Array<() => void> = [];

  async function slot<T>(work: () => Promise<T>): Promise<T> {
    if (running >= limits.maxConcurrent) {
      if (waiting.length >= limits.maxQueued) throw new ServerBusyError();
      await new Promise<void>((resolve) => waiting.push(resolve));
    } else {
      running += 1;
    }
    try {
      return await work();
    } finally {
      // Hand the slot straight to the next waiter (running stays the same), or free it.
      const next = waiting.shift();
      if (next) next();
      else running -= 1;
    }
  }

  return {
    hash: (password) => slot(() => inner.hash(password)),
    verify: (passwordHash, password) => slot(() => inner.verify(passwordHash, password)),
    needsRehash: (passwordHash) => inner.needsRehash(passwordHash),
    load: () => ({ running, queued: waiting.length }),
  };
}
