import { describe, expect, it } from 'vitest';
import { opaqueString, usernameCaseMapped, usernameCasePreserved } from '../../src/domain/precis.js';
import { checkLogin, legacyLoginKey, loginKey, loginLookupKeys } from '../../src/domain/logins.js';

const value = (r: ReturnType<typeof usernameCaseMapped>): string | null => (r.ok ? r.value : null);

describe('UsernameCaseMapped (RFC 8265 3.3)', () => {
  // RFC 8265 section 3.5, table 3: valid and invalid examples.
  it.each([
    ['juliet@example.com', 'juliet@example.com'],
    ['fussball', 'fussball'],
    ['fu\u00dfball', 'fu\u00dfball'], // sharp s is PVALID (exception), not folded to ss
    ['\u03c0', '\u03c0'],
    ['\u03a3', '\u03c3'], // capital sigma is case-mapped
    ['\u03c3', '\u03c3'],
    ['\u03c2', '\u03c2'], // final sigma is PVALID (exception)
  ])('accepts the RFC example %j as %j', (input, expected) => {
    expect(value(usernameCaseMapped(input))).toBe(expected);
  });

  it.each([
    ['foo bar', 'space'],
    ['', 'empty'],
    ['henry \u2163', 'space and ROMAN NUMERAL FOUR (compatibility)'],
    ['\u265a', 'BLACK CHESS KING (symbol)'],
  ])('refuses the RFC example %j (%s)', (input) => {
    expect(usernameCaseMapped(input).ok).toBe(false);
  });

  it('maps fullwidth letters to their ASCII forms (width mapping)', () => {
    expect(value(usernameCaseMapped('\uff21\uff2c\uff29\uff23\uff25'))).toBe('alice');
    expect(usernameCasePreserved('\uff21lice')).toBe('Alice');
  });

  it.each([
    ['\u202ealice', 'RIGHT-TO-LEFT OVERRIDE'],
    ['ali\u200bce', 'ZERO WIDTH SPACE'],
    ['ali\u200dce', 'ZERO WIDTH JOINER'],
    ['alice\u2066', 'LEFT-TO-RIGHT ISOLATE'],
    ['al\u00adice', 'SOFT HYPHEN'],
    ['ali\u0007ce', 'BEL'],
    ['alice\ufeff', 'BYTE ORDER MARK'],
    ['ali\u115fce', 'HANGUL CHOSEONG FILLER'],
    ['alice\u{e0001}', 'LANGUAGE TAG'],
    ['alice\u{10ffff}', 'a noncharacter'],
    ['alice\u0378', 'an unassigned code point'],
    ['a\u0660b\u06f1', 'Arabic-Indic and extended Arabic-Indic digits together'],
    ['\u05d0a', 'a right-to-left letter followed by a left-to-right one (Bidi Rule)'],
    ['a\u05d0', 'a left-to-right letter followed by a right-to-left one (Bidi Rule)'],
  ])('refuses %j (%s)', (input) => {
    const r = usernameCaseMapped(input);
    expect(r.ok).toBe(false);
  });

  it('accepts right-to-left logins that satisfy the Bidi Rule, and CONTEXTO code points in context', () => {
    expect(value(usernameCaseMapped('\u05e9\u05dc\u05d5\u05dd'))).toBe('\u05e9\u05dc\u05d5\u05dd');
    expect(value(usernameCaseMapped('\u0639\u0644\u064a1'))).toBe('\u0639\u0644\u064a1');
    expect(value(usernameCaseMapped('pa\u00b7ll'))).toBeNull(); // MIDDLE DOT needs l on both sides
    expect(value(usernameCaseMapped('col\u00b7legi'))).toBe('col\u00b7legi');
  });

  it('says why, in words an operator understands', () => {
    expect(usernameCaseMapped('\u202ealice')).toEqual({ ok: false, reason: 'must not contain invisible or control characters (U+202E)' });
    expect(usernameCaseMapped('foo bar')).toEqual({ ok: false, reason: 'must not contain spaces' });
  });
});

describe('OpaqueString (RFC 8265 4.2)', () => {
  // RFC 8265 section 4.3, table 4.
  it.each([
    ['correct horse battery staple', 'correct horse battery staple'],
    ['Correct Horse Battery Staple', 'Correct Horse Battery Staple'], // case is kept
    ['\u03c0\u00df\u00e5', '\u03c0\u00df\u00e5'],
    ['Jack of \u2666s', 'Jack of \u2666s'],
    ['foo\u1680bar', 'foo bar'], // OGHAM SPACE MARK becomes U+0020
  ])('accepts the RFC example %j as %j', (input, expected) => {
    expect(value(opaqueString(input))).toBe(expected);
  });

  it.each([
    ['', 'empty'],
    ['my cat is a \u0009by', 'a TAB (control)'],
    ['pass\u200bword', 'ZERO WIDTH SPACE'],
    ['\u202epassword', 'RIGHT-TO-LEFT OVERRIDE'],
  ])('refuses %j (%s)', (input) => {
    expect(opaqueString(input).ok).toBe(false);
  });

  it('normalises to NFC and maps every non-ASCII space, so one password has one form', () => {
    expect(value(opaqueString('cafe\u0301'))).toBe('caf\u00e9');
    expect(value(opaqueString('a\u00a0b\u3000c\u2003d'))).toBe('a b c d');
    expect(value(opaqueString('\uff21bc'))).toBe('\uff21bc'); // no width mapping for passwords
  });
});

describe('login keys', () => {
  // Every login valid under the profile keeps the key the database already has (NFC + toLowerCase).
  it.each([
    'alice', 'Alice.Smith@example.com', 'J\u00fcrgen', 'Jurgen\u0308', '\u00c9milie', '\u0391\u03b8\u03b7\u03bd\u03ac', '\u041e\u043b\u0435\u0433',
    '\u738b\u5c0f\u660e', '\u3055\u304f\u3089', 'user_01-x+y', 'O\'Brien', 'DENI\u0307Z', 'stra\u00dfe', '\u05d3\u05d5\u05d3',
  ])('the profile key of %j is its existing key', (login) => {
    expect(usernameCaseMapped(login).ok).toBe(true);
    expect(loginKey(login)).toBe(legacyLoginKey(login));
    expect(loginLookupKeys(login)).toEqual([legacyLoginKey(login)]);
  });

  it('a login the profile refuses keeps its existing key, so a user created before can still log in', () => {
    expect(loginKey('Bob Smith')).toBe('bob smith');
    expect(loginKey('\u202eAlice')).toBe('\u202ealice');
    expect(checkLogin('Bob Smith')).toBe('must not contain spaces');
  });

  it('a fullwidth login is looked up by the profile key first, then by the key it had before', () => {
    expect(loginLookupKeys('\uff21lice')).toEqual(['alice', '\uff41lice']);
  });
});
