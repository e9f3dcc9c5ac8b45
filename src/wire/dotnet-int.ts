/**
 * Int32 parsing exactly as the two ASMX paths do it.
 *
 * - SOAP (XmlSerializer): `XmlConvert.ToInt32` = trim XML whitespace (space, tab, CR, LF), then
 *   `Int32.Parse(s, AllowLeadingSign | AllowLeadingWhite | AllowTrailingWhite, InvariantInfo)`.
 * - HTTP GET/POST (`Convert.ChangeType(value, typeof(int))`): `NumberStyles.Integer`, whose white
 *   space is U+0009..U+000D and U+0020.
 *
 * Both accept one leading `+` or `-` and ASCII digits only; anything else is a format error and
 * a value outside Int32 is an overflow error, with .NET's two distinct messages.
 */

export type IntParse = { readonly ok: true; readonly value: number } | { readonly ok: false; readonly reason: 'format' | 'overflow' };

const XML_WS = /^[ \t\r\n]*([+-]?)([0-9]+)[ \t\r\n]*$/;
const CLR_WS = /^[\t\n\v\f\r ]*([+-]?)([0-9]+)[\t\n\v\f\r ]*$/;
const INT32_MAX = 2147483647;

function parseWith(pattern: RegExp, text: string): IntParse {
  const m = pattern.exec(text);
  if (m === null) return { ok: false, reason: 'format' };
  const sign = m[1] === '-' ? -1 : 1;
  const digits = (m[2] ?? '').replace(/^0+(?=\d)/, '');
  // Longer than 10 significant digits cannot fit; avoids float rounding on huge inputs.
  if (digits.length > 10) return { ok: false, reason: 'overflow' };
  const magnitude = Number(digits);
  if (magnitude > INT32_MAX + (sign < 0 ? 1 : 0)) return { ok: false, reason: 'overflow' };
  return { ok: true, value: sign * magnitude || 0 };
}

/** XmlConvert.ToInt32, used for SOAP parameters. */
export function parseXmlInt32(text: string): IntParse {
  return parseWith(XML_WS, text);
}

/** Convert.ChangeType(string, Int32), used for HTTP GET/POST parameters. */
export function parseClrInt32(text: string): IntParse {
  return parseWith(CLR_WS, text);
}
