import { describe, expect, it } from 'vitest';
import { createArgon2Hasher } from '../../src/domain/password-hasher.js';

// Real argon2id: slow-ish (one hash is ~50-100 ms), so a handful of calls only.
describe('argon2id password hasher', () => {
  const hasher = createArgon2Hasher();

  it('hashes with argon2id and the OWASP parameters, written in the reference order', async () => {
    const hash = await hasher.hash('correct horse');
    expect(hash.startsWith('$argon2id$v=19$m=19456,t=2,p=1$')).toBe(true);
    expect(await hasher.verify(hash, 'correct horse')).toBe(true);
    expect(await hasher.verify(hash, 'Correct horse')).toBe(false);
    expect(await hasher.verify(hash, 'correct horse ')).toBe(false);
    expect(hasher.needsRehash(hash)).toBe(false);
  });

  it('salts every hash', async () => {
    expect(await hasher.hash('same')).not.toBe(await hasher.hash('same'));
  });

  it('verifies hashes written in the argon2 package\'s own parameter order', async () => {
    const hash = await hasher.hash('pw');
    const packageOrder = hash.replace('m=19456,t=2,p=1', 'm=19456,p=1,t=2');
    expect(await hasher.verify(packageOrder, 'pw')).toBe(true);
  });

  it('answers false, without throwing, for hashes it cannot read, and asks to re-hash them', async () => {
    for (const bad of ['', 'plaintext', '$argon2id$v=19$m=19456,t=2,p=1$bad', 'AQAAAAEAACcQAAAAE...']) {
      expect(await hasher.verify(bad, 'pw')).toBe(false);
      expect(hasher.needsRehash(bad)).toBe(true);
    }
  });

  it('asks to re-hash weaker parameters but keeps stronger ones', () => {
    const salt = 'c29tZXNhbHRzb21lc2FsdA';
    const digest = 'YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXoxMjM0NTY';
    expect(hasher.needsRehash(`$argon2id$v=19$m=4096,t=2,p=1$${salt}$${digest}`)).toBe(true);
    expect(hasher.needsRehash(`$argon2i$v=19$m=19456,t=2,p=1$${salt}$${digest}`)).toBe(true);
    expect(hasher.needsRehash(`$argon2id$v=19$m=65536,t=3,p=1$${salt}$${digest}`)).toBe(false);
  });
});
