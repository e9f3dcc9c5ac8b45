/**
 * The CSPRNG drawn in blocks (src/domain/random-source.ts): every call gets bytes no other call
 * got, of the length asked, across refills of the pool and beyond its size.
 */
import { describe, expect, it } from 'vitest';
import { cryptoRandomSource, pooledRandomSource } from '../../src/domain/random-source.js';

describe('the random source', () => {
  it('hands out each byte of the pool once, across refills, in copies the caller owns', () => {
    const source = pooledRandomSource(64);
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const bytes = source.bytes(16);
      expect(bytes).toHaveLength(16);
      seen.add(Buffer.from(bytes).toString('hex'));
      bytes.fill(0); // the caller's copy: the source's later answers do not change
    }
    expect(seen.size).toBe(1000);
    // Lengths that do not divide the pool, and one larger than it.
    expect(source.bytes(40)).toHaveLength(40);
    expect(source.bytes(40)).toHaveLength(40);
    expect(source.bytes(100)).toHaveLength(100);
  });

  it('is what tokens are made from in production: 128-bit draws, all different', () => {
    const draws = new Set(Array.from({ length: 5000 }, () => Buffer.from(cryptoRandomSource.bytes(16)).toString('hex')));
    expect(draws.size).toBe(5000);
  });
});
