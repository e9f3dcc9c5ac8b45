import { timingSafeEqual } from 'node:crypto';

/** Lone surrogates become U+FFFD, as .NET's and Node's UTF-8 / UTF-16 encoders both do. */
function wellFormed(text: string): string {
  return text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

/** .NET `Encoding.Unicode.GetBytes`: UTF-16 little endian, no byte order mark. */
export function utf16le(text: string): Buffer {
  return Buffer.from(wellFormed(text), 'utf16le');
}

/** .NET `Encoding.UTF8.GetBytes` / Node's UTF-8: no byte order mark. */
export function utf8(text: string): Buffer {
  return Buffer.from(wellFormed(text), 'utf8');
}

/**
 * Exact comparison in time independent of where the inputs differ. Lengths are compared first
 * (the length of a stored hash is no secret: it follows from the format).
 */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Strict standard base64 with padding (what .NET's Convert.ToBase64String writes); null if not. */
export function decodeBase64(text: string): Buffer | null {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  const bytes = Buffer.from(text, 'base64');
  // Round trip: refuses non-canonical trailing bits, so one hash has exactly one spelling.
  return bytes.toString('base64') === text ? bytes : null;
}

/**
 * Unpadded base64 as PHC strings write it, also accepting passlib's "adapted" alphabet ('.' for
 * '+'); null if not. The round-trip check refuses non-canonical trailing bits.
 */
export function decodePhcBase64(text: string): Buffer | null {
  if (!/^[A-Za-z0-9+/.]*$/.test(text) || text.length % 4 === 1) return null;
  const standard = text.replace(/\./g, '+');
  const bytes = Buffer.from(standard, 'base64');
  return bytes.toString('base64').replace(/=+$/, '') === standard ? bytes : null;
}

export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64');
}
