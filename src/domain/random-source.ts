import { randomBytes, randomFillSync } from 'node:crypto';

/** Where secrets come from; injected so tests can produce known tokens. Production uses the OS CSPRNG. */
export interface RandomSource {
  bytes(length: number): Uint8Array;
}

/** Bytes drawn from the CSPRNG at once; a token or ticket takes 16 to 64 of them. */
const POOL_BYTES = 4096;

/**
 * The CSPRNG (crypto.randomFillSync, the same source as randomBytes), drawn 4 KiB at a time and
 * handed out in slices, as Node's own randomUUID does: one randomBytes(16) call costs ~4 µs
 * here (a job object and a call into OpenSSL each time), a slice of the pool ~0.3 µs. Each slice
 * is copied out and wiped in the pool at once, so the pool holds only bytes not handed out yet
 * (at most 4 KiB: the next ~250 tokens). Larger requests go to randomBytes directly.
 */
export function pooledRandomSource(poolBytes = POOL_BYTES): RandomSource {
  let pool = Buffer.alloc(0);
  let at = 0;
  return {
    bytes(length: number): Uint8Array {
      if (length > poolBytes) return randomBytes(length);
      if (at + length > pool.length) {
        pool.fill(0);
        pool = randomFillSync(Buffer.allocUnsafeSlow(poolBytes));
        at = 0;
      }
      const out = Buffer.from(pool.subarray(at, at + length));
      pool.fill(0, at, at + length);
      at += length;
      return out;
    },
  };
}

export const cryptoRandomSource: RandomSource = Object.freeze(pooledRandomSource());
