/**
 * Text that came from a user or a request, made safe to print on a terminal or in a log: every
 * code point that is invisible or can change how the rest of the line is shown — controls,
 * format characters (the bidi overrides U+202A..U+202E and isolates, zero-width spaces and
 * joiners, U+FEFF), other default-ignorable code points, line and paragraph separators, spaces
 * other than U+0020, surrogates, private use and unassigned code points — is written as
 * `\uXXXX` (UTF-16 units, as in JSON). Everything else is left as it is.
 */
export const UNSAFE_CHAR = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]|(?!\u0020)\p{Zs}/u;
const UNSAFE_ALL = new RegExp(UNSAFE_CHAR.source, 'gu');

/** The `\uXXXX` form of one code point (two escapes for one outside the BMP). */
export function escapeChar(ch: string): string {
  let out = '';
  for (let i = 0; i < ch.length; i++) out += `\\u${ch.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}

/** For a table cell or a message: unsafe code points escaped (a backslash already there is kept as is). */
export function displayText(text: string): string {
  return text.replace(UNSAFE_ALL, escapeChar);
}

/** A quoted string for a message (JSON syntax), with unsafe code points escaped too: same value for a JSON reader. */
export function quoted(text: string): string {
  return displayText(JSON.stringify(text));
}

/** One JSON line whose strings have every unsafe code point escaped (JSON.stringify leaves U+202E as it is). */
export function safeJson(value: unknown): string {
  return displayText(JSON.stringify(value));
}
