/**
 * The rules for news attributes (NewsRecord.attributes): extra per-item values a WhatsNew column
 * of the compatibility profile can show (`{ "attribute": name }`). Names as the profile file
 * accepts them; values are text that XML 1.0 can carry (they end up in a DataTable cell), bounded
 * so an item stays a small row.
 */

export const ATTRIBUTE_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
export const MAX_ATTRIBUTES = 32;
export const MAX_ATTRIBUTE_CHARS = 4000;

// eslint-disable-next-line no-control-regex
const NOT_XML = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when XML 1.0 can carry the text as it is (no C0 control but tab/CR/LF, no lone surrogate). */
export function xmlCarries(text: string): boolean {
  return !NOT_XML.test(text);
}

/** null when the attributes are acceptable, else a message for the operator. */
export function checkNewsAttributes(attributes: Readonly<Record<string, string>>): string | null {
  const names = Object.keys(attributes);
  if (names.length > MAX_ATTRIBUTES) return `at most ${MAX_ATTRIBUTES} attributes per news item, got ${names.length}`;
  for (const name of names) {
    if (!ATTRIBUTE_NAME.test(name)) return `bad attribute name ${JSON.stringify(name)}: 1 to 64 letters, digits, _ . -`;
    const value = attributes[name];
    if (typeof value !== 'string') return `attribute ${name} must be text`;
    if (value.length > MAX_ATTRIBUTE_CHARS) return `attribute ${name} is longer than ${MAX_ATTRIBUTE_CHARS} characters`;
    if (!xmlCarries(value)) return `attribute ${name} holds a character XML cannot carry (a control character)`;
  }
  return null;
}
