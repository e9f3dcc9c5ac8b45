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
