/**
 * The written form of a token: how a service writes 128+ random bits as text. Our own tokens use
 * one exact form (a lower-case .NET `Guid.ToString()` by default); the old service's tokens are
 * *recognised* by a form, which may leave the letter case or the braces open, since .NET code
 * writes GUIDs as `ToString()`, `ToString("B")`, `.ToUpper()` and so on.
 *
 * Recognition is the guard of lazy migration: an answer of the old service counts as "it issued
 * a token" only when it has exactly this form and carries real randomness, so a failure value
 * such as Guid.Empty (`00000000-0000-0000-0000-000000000000`), `{00000000-...}` or `LOGIN_FAILED`
 * can never pass for one.
 */

import { DEFAULT_COMPAT_PROFILE, type LetterCase, type TokenForm } from '../contract/compat-profile.js';

export type { LetterCase, TokenForm };

/** What svcapi-auth writes by default: `Guid.ToString()`, lower-case, dashes, no braces. */
export const DEFAULT_TOKEN_FORM: TokenForm = DEFAULT_COMPAT_PROFILE.tokens.form;

/**
 * What an old ASMX service's token is taken to look like when nobody said otherwise: a GUID in
 * D form, in either case, with or without braces (the usual ways .NET writes one).
 */
export const DEFAULT_LEGACY_TOKEN_FORM: TokenForm = Object.freeze({ kind: 'guid', case: 'any', dashes: true, braces: 'optional' });

export const MAX_HEX_DIGITS = 128;

/** The number of random bytes a token of this form carries. */
export function tokenFormBytes(form: TokenForm): number {
  return form.kind === 'guid' ? 16 : Math.ceil(form.length / 2);
}

/** Writes random bytes in the form (the bytes must be tokenFormBytes(form) long). */
export function formatToken(bytes: Uint8Array, form: TokenForm): string {
  if (bytes.length !== tokenFormBytes(form)) throw new Error(`expected ${tokenFormBytes(form)} random bytes, got ${bytes.length}`);
  let hex = Buffer.from(bytes).toString('hex');
  if (form.kind === 'hex') hex = hex.slice(0, form.length);
  if (form.case === 'upper') hex = hex.toUpperCase();
  if (form.kind === 'hex') return hex;
  const body = form.dashes ? `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}` : hex;
  return form.braces === true ? `{${body}}` : body;
}

function digitsClass(letterCase: LetterCase | 'any'): string {
  return letterCase === 'lower' ? '[0-9a-f]' : letterCase === 'upper' ? '[0-9A-F]' : '[0-9a-fA-F]';
}

/** A regular expression matching exactly the texts of the form (anchored). */
export function tokenFormPattern(form: TokenForm): RegExp {
  const d = digitsClass(form.case);
  if (form.kind === 'hex') return new RegExp(`^${d}{${form.length}}$`);
  const body = form.dashes ? `${d}{8}-${d}{4}-${d}{4}-${d}{4}-${d}{12}` : `${d}{32}`;
  const source = form.braces === true ? `\\{${body}\\}` : form.braces === 'optional' ? `(?:${body}|\\{${body}\\})` : body;
  return new RegExp(`^${source}$`);
}

/**
 * True when `text` is a token in this form that carries randomness: exactly the form, and not
 * one hex digit repeated (Guid.Empty, `{00000000-...}`, .NET 9's Guid.AllBitsSet `ffffffff-...`,
 * and their N and upper-case forms are the usual "no" values of .NET code, never issued tokens).
 */
export function isTokenInForm(text: string, form: TokenForm): boolean {
  if (!tokenFormPattern(form).test(text)) return false;
  const digits = text.replace(/[^0-9a-fA-F]/g, '').toLowerCase();
  return !/^(.)\1*$/.test(digits);
}

/** A short description for messages and the readiness report, e.g. "GUID (D form, either case, braces optional)". */
export function describeTokenForm(form: TokenForm): string {
  const letters = form.case === 'any' ? 'either case' : `${form.case}-case`;
  if (form.kind === 'hex') return `${form.length} hex digits, ${letters}`;
  const braces = form.braces === 'optional' ? ', braces optional' : form.braces ? ', in braces' : '';
  return `GUID (${form.dashes ? 'D' : 'N'} form, ${letters}${braces})`;
}
