import { createDecipheriv, createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newTicketKey, ORDERED_TICKET_WINDOW, orderedTicketIssuedAt, orderedTicketText, ticketSeal } from '../../src/domain/ordered-ticket.js';
import { canonicalToken } from '../../src/domain/tokens.js';
import { parseTokenFormName } from '../../src/compat-profile-file.js';
import { loadConfig } from '../../src/config/load-config.js';
import { DEFAULT_TOKEN_FORM, type TokenForm } from '../../src/domain/token-form.js';
import type { RandomSource } from '../../src/domain/random-source.js';

const NOW = Date.parse('2026-11-30T02:10:00.123Z');
const KEY = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';
const seal = ticketSeal(KEY);
/** Bytes 0xa0, 0xa1, ...: what the ticket keeps of them shows where they went. */
const known: RandomSource = { bytes: (n) => Uint8Array.from({ length: n }, (_, i) => 0xa0 + i) };
const form = (name: string): TokenForm => {
  const parsed = parseTokenFormName(name);
  if (parsed === null) throw new Error(name);
  return parsed;
};
/** The first 128 bits of a canonical text, opened with plain AES-128 under the first 128 bits of the key's SHA-256 (not our code). */
const openedBy = (key: string, canonical: string): string => {
  const aesKey = createHash('sha256').update(key).digest().subarray(0, 16);
  const decipher = createDecipheriv('aes-128-ecb', aesKey, null).setAutoPadding(false);
  return decipher.update(Buffer.from(canonical.replaceAll('-', '').slice(0, 32), 'hex')).toString('hex');
};

describe('tickets that carry their issue time, sealed', () => {
  it('seals the issue time (48 bits, big-endian) and 80 random bits in one AES-128 block; a longer form adds random bytes in clear', () => {
    const time = NOW.toString(16).padStart(12, '0');
    const guid = orderedTicketText(known, DEFAULT_TOKEN_FORM, NOW, seal);
    expect(guid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(openedBy(KEY, guid)).toBe(`${time}a6a7a8a9aaabacadaeaf`);
    // Neither the time nor the random bytes show in the text.
    expect(guid.replaceAll('-', '')).not.toContain(time.slice(0, 8));
    expect(guid.replaceAll('-', '')).not.toContain('a6a7a8a9');
    const hex64 = canonicalToken(orderedTicketText(known, form('HEX64'), NOW, seal)) ?? '';
    expect(openedBy(KEY, hex64)).toBe(`${time}a6a7a8a9aaabacadaeaf`);
    expect(hex64.slice(32)).toBe('b0b1b2b3b4b5b6b7b8b9babbbcbdbebf');
    // Issued in the same millisecond, two tickets differ in all their text.
    const counter = ((): RandomSource => {
      let n = 0;
      return { bytes: (len) => Uint8Array.from({ length: len }, () => ++n & 0xff) };
    })();
    const [a, b] = [orderedTicketText(counter, DEFAULT_TOKEN_FORM, NOW, seal), orderedTicketText(counter, DEFAULT_TOKEN_FORM, NOW, seal)];
    expect(a.slice(0, 8)).not.toBe(b.slice(0, 8));
  });

  it('opens the issue time from the canonical text of every form, within the window only, under its own key only', () => {
    for (const name of ['GUID', 'HEX32', 'HEX40', 'HEX64']) {
      const text = orderedTicketText(known, form(name), NOW, seal);
      expect(orderedTicketIssuedAt(canonicalToken(text) ?? '', NOW, seal), name).toBe(NOW);
      expect(orderedTicketIssuedAt(canonicalToken(text.toUpperCase()) ?? '', NOW + 5000, seal), name).toBe(NOW);
    }
    const braced = orderedTicketText(known, { kind: 'guid', case: 'upper', dashes: false, braces: true }, NOW, seal);
    expect(orderedTicketIssuedAt(canonicalToken(braced) ?? '', NOW, seal)).toBe(NOW);
    const canonical = canonicalToken(orderedTicketText(known, DEFAULT_TOKEN_FORM, NOW, seal)) ?? '';
    // A day and an hour back, an hour ahead: the longest ticket lifetime and clocks that differ.
    expect(orderedTicketIssuedAt(canonical, NOW + ORDERED_TICKET_WINDOW.pastMs, seal)).toBe(NOW);
    expect(orderedTicketIssuedAt(canonical, NOW + ORDERED_TICKET_WINDOW.pastMs + 1, seal)).toBeNull();
    expect(orderedTicketIssuedAt(canonical, NOW - ORDERED_TICKET_WINDOW.futureMs, seal)).toBe(NOW);
    expect(orderedTicketIssuedAt(canonical, NOW - ORDERED_TICKET_WINDOW.futureMs - 1, seal)).toBeNull();
    // Another installation's key, a random token, Guid.Empty, a short text: no time in the window.
    expect(orderedTicketIssuedAt(canonical, NOW, ticketSeal(newTicketKey()))).toBeNull();
    expect(orderedTicketIssuedAt('3f2504e0-4f89-11d3-9a0c-0305e82c3301', NOW, seal)).toBeNull();
    expect(orderedTicketIssuedAt('00000000-0000-0000-0000-000000000000', NOW, seal)).toBeNull();
    expect(orderedTicketIssuedAt('abc', NOW, seal)).toBeNull();
  });

  it('looks back at least as far as the longest ticket lifetime the configuration accepts', () => {
    expect(loadConfig({ env: { SVCAPI_TICKET_TTL_SECONDS: '86400' } }).tickets.ttlSeconds).toBe(86_400);
    expect(() => loadConfig({ env: { SVCAPI_TICKET_TTL_SECONDS: '86401' } })).toThrow(/SVCAPI_TICKET_TTL_SECONDS/);
    expect(ORDERED_TICKET_WINDOW.pastMs).toBeGreaterThan(86_400_000);
  });

  it('takes a key of 32 characters or more, new ones from the CSPRNG, and refuses an issue time it cannot write', () => {
    for (const bad of ['', '00', 'f'.repeat(31)]) expect(() => ticketSeal(bad), bad).toThrow(/at least 32 characters/);
    expect(orderedTicketIssuedAt(canonicalToken(orderedTicketText(known, DEFAULT_TOKEN_FORM, NOW, ticketSeal('f'.repeat(32)))) ?? '', NOW, ticketSeal('f'.repeat(32)))).toBe(NOW);
    expect(newTicketKey()).toMatch(/^[0-9a-f]{64}$/);
    expect(newTicketKey()).not.toBe(newTicketKey());
    for (const bad of [-1, 1.5, 2 ** 48, Number.NaN]) expect(() => orderedTicketText(known, DEFAULT_TOKEN_FORM, bad, seal), String(bad)).toThrow(/issue time/);
  });
});
