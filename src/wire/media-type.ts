/**
 * Content-Type parsing (RFC 9110 §8.3): the lower-cased media type and its parameters.
 * Used to tell SOAP 1.1 (`text/xml`) from SOAP 1.2 (`application/soap+xml; action="..."`) and
 * form posts, and to find the request charset.
 */
export interface MediaType {
  /** Lower-cased `type/subtype`, or '' when the header is missing or empty. */
  readonly type: string;
  /** Parameter names lower-cased, values unquoted. */
  readonly params: ReadonlyMap<string, string>;
}

const NO_PARAMS: ReadonlyMap<string, string> = new Map();

export function parseMediaType(header: string | undefined): MediaType {
  if (header === undefined || header === '') return { type: '', params: NO_PARAMS };
  const semi = header.indexOf(';');
  const type = (semi < 0 ? header : header.slice(0, semi)).trim().toLowerCase();
  if (semi < 0) return { type, params: NO_PARAMS };
  const params = new Map<string, string>();
  // name=value or name="quoted \" value", separated by semicolons.
  const re = /;\s*([^=;\s]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  const rest = header.slice(semi);
  let m: RegExpExecArray | null;
  while ((m = re.exec(rest)) !== null) {
    const name = (m[1] ?? '').toLowerCase();
    const value = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : (m[3] ?? '').trim();
    if (!params.has(name)) params.set(name, value);
  }
  return { type, params };
}

/** Char.IsWhiteSpace over what a header value can hold (Node decodes header bytes as Latin-1). */
function isDotnetWhiteSpace(code: number): boolean {
  return code === 0x20 || (code >= 0x09 && code <= 0x0d) || code === 0x85 || code === 0xa0;
}

/** The characters ContentType.GetParameter trims from a value: `Trim(' ', '\'', '"', '\t')`. */
function isParameterValueTrim(code: number): boolean {
  return code === 0x20 || code === 0x27 || code === 0x22 || code === 0x09;
}

/** An ASCII case-insensitive `startsWith` (String.Compare ... OrdinalIgnoreCase over `lowerName.length` characters). */
function startsWithIgnoreCase(text: string, at: number, lowerName: string): boolean {
  if (text.length - at < lowerName.length) return false;
  for (let i = 0; i < lowerName.length; i++) {
    let c = text.charCodeAt(at + i);
    if (c >= 0x41 && c <= 0x5a) c += 0x20;
    if (c !== lowerName.charCodeAt(i)) return false;
  }
  return true;
}

/**
 * A Content-Type parameter exactly as ASMX reads it (System.Web.Services ContentType.GetParameter,
 * used for the SOAP 1.2 `action`), which is not RFC 9110: the header is split at every `;`
 * (quotes do not protect one), the first piece after the media type whose start, white space
 * skipped, is the name in any case wins (so `actionX=1` counts as `action`), and its value is
 * everything after the next `=`, with spaces, tabs and both kinds of quote trimmed from either
 * end (no backslash unescaping). Undefined when no piece matches. `lowerName` is lower-case ASCII.
 */
export function aspNetContentTypeParameter(header: string | undefined, lowerName: string): string | undefined {
  if (header === undefined) return undefined;
  const pieces = header.split(';');
  for (let p = 1; p < pieces.length; p++) {
    const piece = pieces[p] as string;
    let start = 0;
    while (start < piece.length && isDotnetWhiteSpace(piece.charCodeAt(start))) start++;
    if (!startsWithIgnoreCase(piece, start, lowerName)) continue;
    const equals = piece.indexOf('=', start + lowerName.length);
    if (equals < 0) continue;
    let from = equals + 1;
    let to = piece.length;
    while (from < to && isParameterValueTrim(piece.charCodeAt(from))) from++;
    while (to > from && isParameterValueTrim(piece.charCodeAt(to - 1))) to--;
    return piece.slice(from, to);
  }
  return undefined;
}
