/**
 * XML escaping as .NET's XmlTextWriter does it: `&`, `<`, `>` in text, and `"` too in attributes.
 * Characters XML 1.0 cannot carry at all (C0 controls other than tab/CR/LF, lone surrogates,
 * U+FFFE/U+FFFF) are dropped: .NET would throw mid-response, we never emit a broken document.
 */

// eslint-disable-next-line no-control-regex
const NEEDS_WORK_TEXT = /[&<>\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF\uD800-\uDFFF]/;
// eslint-disable-next-line no-control-regex
const NEEDS_WORK_ATTR = /[&<>"\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF\uD800-\uDFFF]/;
// eslint-disable-next-line no-control-regex
const INVALID_XML_CHARS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function replaceAll(value: string, withQuote: boolean): string {
  let out = value.replace(INVALID_XML_CHARS, '').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  if (withQuote) out = out.replace(/"/g, '&quot;');
  return out;
}

/** Escapes element text. Fast path: most values (tokens, booleans, URLs) need nothing. */
export function escapeXmlText(value: string): string {
  return NEEDS_WORK_TEXT.test(value) ? replaceAll(value, false) : value;
}

/** Escapes an attribute value written between double quotes. */
export function escapeXmlAttr(value: string): string {
  return NEEDS_WORK_ATTR.test(value) ? replaceAll(value, true) : value;
}

/** HttpUtility.HtmlEncode: what ASMX applies to each message of a text/plain error body. */
export function htmlEncode(value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ENTITIES[c] ?? c);
}
const HTML_ENTITIES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
