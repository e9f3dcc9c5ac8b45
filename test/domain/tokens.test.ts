import { describe, expect, it } from 'vitest';
import { canonicalToken, evaluateToken, hashToken, newTokenString } from '../../src/domain/tokens.js';
import { cryptoRandomSource } from '../../src/domain/random-source.js';
import { parseTokenFormName } from '../../src/compat-profile-file.js';
import { isTokenInForm } from '../../src/domain/token-form.js';
import type { TokenRecord } from '../../src/store/store.js';

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('token text', () => {
  it('writes 128 random bits in Guid.ToString() form', () => {
    const bytes = Uint8Array.from({ length: 16 }, (_, i) => i * 17);
    expect(newTokenString({ bytes: () => bytes })).toBe('00112233-4455-6677-8899-aabbccddeeff');
    const real = newTokenString(cryptoRandomSource);
    expect(real).toMatch(GUID);
    expect(newTokenString(cryptoRandomSource)).not.toBe(real);
  });

  it('refuses a random source that returns the wrong number of bytes', () => {
    expect(() => newTokenString({ bytes: () => new Uint8Array(8) })).toThrow(/16/);
  });

  it('accepts the other spellings of the same GUID and nothing else', () => {
    const canonical = '00112233-4455-6677-8899-aabbccddeeff';
    for (const form of [canonical, canonical.toUpperCase(), `{${canonical}}`, `(${canonical})`, ` ${canonical} `, '00112233445566778899aabbccddeeff']) {
      expect(canonicalToken(form)).toBe(canonical);
    }
    for (const bad of [null, undefined, '', 'abc', `${canonical}0`, canonical.replace('a', 'g'), `{${canonical}`, "' OR 1=1 --", 'x'.repeat(10_000)]) {
      expect(canonicalToken(bad)).toBeNull();
    }
  });

  it('writes the profile\'s token form from the random source, 128 bits or more', () => {
    const counting = { bytes: (n: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => (i * 17) % 256) };
    expect(newTokenString(counting, parseTokenFormName('GUID') ?? undefined)).toBe('00112233-4455-6677-8899-AABBCCDDEEFF');
    expect(newTokenString(counting, parseTokenFormName('{guid}') ?? undefined)).toBe('{00112233-4455-6677-8899-aabbccddeeff}');
    expect(newTokenString(counting, parseTokenFormName('GUID-N') ?? undefined)).toBe('00112233445566778899AABBCCDDEEFF');
    expect(newTokenString(counting, parseTokenFormName('hex40') ?? undefined)).toBe('00112233445566778899aabbccddeeff10213243');
    expect(newTokenString(counting, parseTokenFormName('HEX33') ?? undefined)).toMatch(/^[0-9A-F]{33}$/);
    expect(() => newTokenString({ bytes: () => new Uint8Array(16) }, parseTokenFormName('hex64') ?? undefined)).toThrow(/32/);
  });

  it('reads back every form it writes, in either case, to one canonical text', () => {
    for (const name of ['guid', 'GUID', 'guid-n', 'GUID-N', '{guid}', '{GUID}', 'hex32', 'HEX32', 'hex33', 'hex40', 'HEX64', 'hex127', 'hex128']) {
      const form = parseTokenFormName(name);
      if (form === null) throw new Error(name);
      const token = newTokenString(cryptoRandomSource, form);
      expect(isTokenInForm(token, form), name).toBe(true);
      const canonical = canonicalToken(token);
      expect(canonical, name).not.toBeNull();
      // What a client may send back: the same text in another case.
      expect(canonicalToken(token.toUpperCase()), name).toBe(canonical);
      expect(canonicalToken(token.toLowerCase()), name).toBe(canonical);
    }
  });

  it('a hex32 token and a GUID in N form are the same 128 bits, canonicalised alike (lower-case D form)', () => {
    const hex = '00112233445566778899AABBCCDDEEFF';
    expect(canonicalToken(hex)).toBe('00112233-4455-6677-8899-aabbccddeeff');
    expect(canonicalToken(hex.toLowerCase())).toBe(canonicalToken('{00112233-4455-6677-8899-AABBCCDDEEFF}'));
    expect(canonicalToken('A'.repeat(40))).toBe('a'.repeat(40));
    expect(canonicalToken(` ${'B'.repeat(128)} `)).toBe('b'.repeat(128));
    for (const bad of ['a'.repeat(129), 'a'.repeat(31), `{${'a'.repeat(40)}}`, `${'a'.repeat(39)}g`, `${'a'.repeat(20)}-${'a'.repeat(20)}`]) {
      expect(canonicalToken(bad), bad).toBeNull();
    }
  });

  it('hashes with SHA-256 hex', () => {
    expect(hashToken('a')).toBe('ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb');
  });
});

describe('evaluateToken', () => {
  const t0 = new Date('2025-01-01T00:00:00Z');
  const at = (ms: number): Date => new Date(t0.getTime() + ms);
  const record = (overrides: Partial<TokenRecord> = {}): TokenRecord => ({
    tokenHash: 'h', kind: 'session', userId: 1, appId: 2, clientIp: null, sourceIp: null, issuedAt: t0, expiresAt: at(1000),
    lastUsedAt: t0, usedAt: null, revokedAt: null, userEnabled: true, appEnabled: true, granted: true, idleTimeoutSeconds: null, login: 'u', ...overrides,
  });

  it('is valid until the absolute expiry, exclusive', () => {
    expect(evaluateToken(record(), at(999))).toEqual({ valid: true, expiresAt: at(1000) });
    expect(evaluateToken(record(), at(1000))).toEqual({ valid: false });
  });

  it('is invalid when revoked, disabled or no longer granted', () => {
    for (const o of [{ revokedAt: t0 }, { userEnabled: false }, { appEnabled: false }, { granted: false }]) {
      expect(evaluateToken(record(o), at(1))).toEqual({ valid: false });
    }
  });

  it('applies the idle timeout from the last use and reports the sliding expiry', () => {
    const r = record({ expiresAt: at(100_000), idleTimeoutSeconds: 10, lastUsedAt: at(50_000) });
    expect(evaluateToken(r, at(59_999))).toEqual({ valid: true, expiresAt: at(69_999) });
    expect(evaluateToken(r, at(60_000))).toEqual({ valid: false });
    expect(evaluateToken({ ...r, lastUsedAt: at(95_000) }, at(96_000))).toEqual({ valid: true, expiresAt: at(100_000) });
  });

  it('accepts an unused ticket only', () => {
    expect(evaluateToken(record({ kind: 'ticket' }), at(1))).toEqual({ valid: true, expiresAt: at(1000) });
    expect(evaluateToken(record({ kind: 'ticket', usedAt: t0 }), at(1))).toEqual({ valid: false });
  });
});
