/**
 * The two PRECIS profiles of RFC 8265 this service needs, on the string classes of RFC 8264:
 *
 * - UsernameCaseMapped (RFC 8265 3.3) for logins: width mapping, toLowerCase, NFC, the Bidi Rule
 *   of RFC 5893, then every code point must be valid in the IdentifierClass (letters and digits,
 *   printable ASCII except space; no spaces, symbols, compatibility forms, controls, default
 *   ignorable code points such as U+200B or the bidi overrides U+202A..U+202E).
 * - OpaqueString (RFC 8265 4.2) for passwords: non-ASCII spaces become U+0020, NFC, then every
 *   code point must be valid in the FreeformClass (spaces, symbols and punctuation allowed;
 *   controls, default ignorable code points and unassigned code points are not).
 *
 * No maintained npm package implements RFC 8264/8265 (precis-js implements the obsoleted RFC 7564
 * and was last published in 2015), so the derived-property algorithm of RFC 8264 section 8 is
 * written out here over the Unicode properties of the JavaScript engine (Node's ICU); only the
 * Bidi_Class, which JavaScript regular expressions cannot test, comes from bidi-js.
 *
 * Deliberate deviations, both stricter than the RFC: the join controls U+200C and U+200D
 * (CONTEXTJ) are always refused, as the brief of this service is that no invisible character
 * can be part of a login or a password; and width mapping uses NFKC of the fullwidth/halfwidth
 * code point, which equals its <wide>/<narrow> decomposition for every code point that the
 * IdentifierClass then accepts.
 */
import bidiModule from 'bidi-js';

export type PrecisResult = { readonly ok: true; readonly value: string } | { readonly ok: false; readonly reason: string };

type DerivedProperty = 'PVALID' | 'FREE_PVAL' | 'CONTEXTJ' | 'CONTEXTO' | 'DISALLOWED' | 'UNASSIGNED';

// bidi-js is CommonJS with ES-module typings: Node hands over module.exports (the factory),
// a bundler may hand over the namespace; either works.
type BidiFactory = typeof bidiModule.default;
const bidiFactory: BidiFactory = typeof bidiModule === 'function' ? (bidiModule as unknown as BidiFactory) : bidiModule.default;
const bidi = bidiFactory();

// RFC 5892 section 2.6 (RFC 8264 section 9.6 keeps them).
const EXCEPTIONS: ReadonlyMap<number, DerivedProperty> = new Map<number, DerivedProperty>([
  ...[0x00df, 0x03c2, 0x06fd, 0x06fe, 0x0f0b, 0x3007].map((cp) => [cp, 'PVALID'] as const),
  ...[0x00b7, 0x0375, 0x05f3, 0x05f4, 0x30fb].map((cp) => [cp, 'CONTEXTO'] as const),
  ...range(0x0660, 0x0669).map((cp) => [cp, 'CONTEXTO'] as const),
  ...range(0x06f0, 0x06f9).map((cp) => [cp, 'CONTEXTO'] as const),
  ...[0x0640, 0x07fa, 0x302e, 0x302f, 0x3031, 0x3032, 0x3033, 0x3034, 0x3035, 0x303b].map((cp) => [cp, 'DISALLOWED'] as const),
]);

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

const NONCHARACTER = /\p{Noncharacter_Code_Point}/u;
const UNASSIGNED = /\p{Cn}/u;
const IGNORABLE = /\p{Default_Ignorable_Code_Point}/u;
const CONTROL = /\p{Cc}/u;
const LETTER_DIGITS = /[\p{Ll}\p{Lu}\p{Lo}\p{Nd}\p{Lm}\p{Mn}\p{Mc}]/u;
const OTHER_LETTER_DIGITS = /[\p{Lt}\p{Nl}\p{No}\p{Me}]/u;
const SPACES = /\p{Zs}/u;
const SYMBOLS = /[\p{Sm}\p{Sc}\p{Sk}\p{So}]/u;
const PUNCTUATION = /\p{P}/u;

/** Hangul_Syllable_Type L, V or T (the conjoining jamo), RFC 8264 9.9. */
function isOldHangulJamo(cp: number): boolean {
  return (cp >= 0x1100 && cp <= 0x11ff) || (cp >= 0xa960 && cp <= 0xa97c) || (cp >= 0xd7b0 && cp <= 0xd7c6) || (cp >= 0xd7cb && cp <= 0xd7fb);
}

/** RFC 8264 section 8, with ID_DIS (IdentifierClass) and FREE_PVAL (FreeformClass) as one value. */
function derivedProperty(ch: string): DerivedProperty {
  const cp = ch.codePointAt(0) ?? 0;
  const exception = EXCEPTIONS.get(cp);
  if (exception !== undefined) return exception;
  if (UNASSIGNED.test(ch) && !NONCHARACTER.test(ch)) return 'UNASSIGNED';
  if (cp >= 0x21 && cp <= 0x7e) return 'PVALID';
  if (cp === 0x200c || cp === 0x200d) return 'CONTEXTJ';
  if (isOldHangulJamo(cp)) return 'DISALLOWED';
  if (IGNORABLE.test(ch) || NONCHARACTER.test(ch)) return 'DISALLOWED';
  if (CONTROL.test(ch)) return 'DISALLOWED';
  if (ch.normalize('NFKC') !== ch) return 'FREE_PVAL';
  if (LETTER_DIGITS.test(ch)) return 'PVALID';
  if (OTHER_LETTER_DIGITS.test(ch) || SPACES.test(ch) || SYMBOLS.test(ch) || PUNCTUATION.test(ch)) return 'FREE_PVAL';
  return 'DISALLOWED';
}

/** RFC 5892 Appendix A rules for the CONTEXTO code points, judged on the whole string. */
function contextOk(points: readonly string[], i: number): boolean {
  const cp = points[i]?.codePointAt(0) ?? 0;
  const before = points[i - 1];
  const after = points[i + 1];
  if (cp === 0x00b7) return before === 'l' && after === 'l';
  if (cp === 0x0375) return after !== undefined && /\p{Script=Greek}/u.test(after);
  if (cp === 0x05f3 || cp === 0x05f4) return before !== undefined && /\p{Script=Hebrew}/u.test(before);
  if (cp === 0x30fb) return points.some((p) => /[\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Han}]/u.test(p));
  if (cp >= 0x0660 && cp <= 0x0669) return !points.some((p) => /[\u06f0-\u06f9]/u.test(p));
  if (cp >= 0x06f0 && cp <= 0x06f9) return !points.some((p) => /[\u0660-\u0669]/u.test(p));
  return false;
}

const describe = (ch: string): string => `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;

/** Null when every code point is valid in the class, else why not. */
function checkClass(text: string, freeform: boolean): string | null {
  const points = Array.from(text);
  for (let i = 0; i < points.length; i++) {
    const ch = points[i] ?? '';
    const property = derivedProperty(ch);
    if (property === 'PVALID' || (property === 'FREE_PVAL' && freeform)) continue;
    if (property === 'CONTEXTO' && contextOk(points, i)) continue;
    if (property === 'UNASSIGNED') return `contains an unassigned code point (${describe(ch)})`;
    if (ch === ' ') return 'must not contain spaces';
    if (property === 'FREE_PVAL') return `must not contain ${describe(ch)} (only letters, digits and printable ASCII other than space)`;
    if (IGNORABLE.test(ch) || CONTROL.test(ch)) return `must not contain invisible or control characters (${describe(ch)})`;
    return `must not contain ${describe(ch)}`;
  }
  return null;
}

/** RFC 5893 section 2, for a string that contains a right-to-left code point (RFC 8265 3.3.2 rule 5). */
function checkBidiRule(text: string): string | null {
  const types = Array.from(text, (ch) => bidi.getBidiCharTypeName(ch));
  if (!types.some((t) => t === 'R' || t === 'AL' || t === 'AN')) return null;
  const bad = 'mixes right-to-left and left-to-right text in a way the Bidi Rule (RFC 5893) does not allow';
  const first = types[0];
  if (first !== 'R' && first !== 'AL') return bad; // an L start allows no R, AL or AN (rules 1, 5)
  const allowed = new Set(['R', 'AL', 'AN', 'EN', 'ES', 'CS', 'ET', 'ON', 'BN', 'NSM']);
  if (!types.every((t) => allowed.has(t))) return bad; // rule 2
  let end = types.length - 1;
  while (end > 0 && types[end] === 'NSM') end--;
  if (!['R', 'AL', 'EN', 'AN'].includes(types[end] ?? '')) return bad; // rule 3
  if (types.includes('EN') && types.includes('AN')) return bad; // rule 4
  return null;
}

const WIDE_OR_NARROW = /[\u3000\uff01-\uffee]/gu;

/** Applies `rules` until the output is stable; RFC 8264 section 7 gives up after three more rounds. */
function stable(input: string, rules: (s: string) => PrecisResult): PrecisResult {
  let current = input;
  for (let round = 0; round < 4; round++) {
    const next = rules(current);
    if (!next.ok || next.value === current) return next;
    current = next.value;
  }
  return { ok: false, reason: 'is not stable under the PRECIS rules' };
}

/**
 * RFC 8265 3.3 UsernameCaseMapped enforcement: the comparable form of a login, or why the
 * profile refuses it.
 */
export function usernameCaseMapped(input: string): PrecisResult {
  return stable(input, (text) => {
    if (text.length === 0) return { ok: false, reason: 'must not be empty' };
    const widthMapped = text.replace(WIDE_OR_NARROW, (ch) => ch.normalize('NFKC'));
    const prepared = checkClass(widthMapped, false); // preparation (RFC 8265 3.3.2)
    if (prepared !== null) return { ok: false, reason: prepared };
    const value = widthMapped.toLowerCase().normalize('NFC');
    if (value.length === 0) return { ok: false, reason: 'must not be empty' };
    const problem = checkClass(value, false) ?? checkBidiRule(value);
    return problem === null ? { ok: true, value } : { ok: false, reason: problem };
  });
}

/**
 * UsernameCasePreserved's output for a login that UsernameCaseMapped accepts (width mapped and
 * NFC, case kept): the form a new login is stored in, so that what is shown is what compares.
 */
export function usernameCasePreserved(input: string): string {
  return input.replace(WIDE_OR_NARROW, (ch) => ch.normalize('NFKC')).normalize('NFC');
}

const NON_ASCII_SPACE = /(?!\u0020)\p{Zs}/gu;

/** RFC 8265 4.2 OpaqueString enforcement: the form of a password to hash and compare, or why the profile refuses it. */
export function opaqueString(input: string): PrecisResult {
  return stable(input, (text) => {
    if (text.length === 0) return { ok: false, reason: 'must not be empty' };
    const prepared = checkClass(text, true);
    if (prepared !== null) return { ok: false, reason: prepared };
    const value = text.replace(NON_ASCII_SPACE, ' ').normalize('NFC');
    const problem = checkClass(value, true);
    return problem === null ? { ok: true, value } : { ok: false, reason: problem };
  });
}
