/**
 * ASP.NET Identity PasswordHasher (Microsoft.AspNet.Identity 2.x, ASP.NET Core Identity),
 * AspNetUsers.PasswordHash, base64 of:
 * - v2: 0x00 | salt (16 bytes) | PBKDF2-HMAC-SHA1, 1000 iterations, subkey (32 bytes): 49 bytes;
 * - v3: 0x01 | PRF (uint32) | iterations (uint32) | salt length (uint32), all big-endian | salt |
 *   subkey (the rest). PRF 0 = HMAC-SHA1, 1 = HMAC-SHA256, 2 = HMAC-SHA512. As .NET requires,
 *   salt and subkey are at least 16 bytes.
 * The password is UTF-8. Stored here as `$aspnet-identity-v2$<base64>` / `$aspnet-identity-v3$<base64>`,
 * the original base64 kept as is.
 */
import { decodeBase64, utf8 } from './bytes.js';
import { checkPbkdf2Cost, pbkdf2Matches, type Pbkdf2Digest } from './pbkdf2.js';

export interface IdentityHash {
  readonly version: 2 | 3;
  readonly digest: Pbkdf2Digest;
  readonly iterations: number;
  readonly salt: Buffer;
  readonly subkey: Buffer;
  /** The original base64 text. */
  readonly base64: string;
}

const PRFS: readonly Pbkdf2Digest[] = ['sha1', 'sha256', 'sha512'];

/** Reads an AspNetUsers.PasswordHash value; a problem message if it is not v2/v3 within the caps. */
export function parseIdentityPasswordHash(text: string): IdentityHash | string {
  const base64 = text.trim();
  const bytes = decodeBase64(base64);
  if (bytes === null || bytes.length === 0) return 'PasswordHash is not base64';
  if (bytes[0] === 0x00) {
    if (bytes.length !== 1 + 16 + 32) return 'an Identity v2 hash is 49 bytes';
    return { version: 2, digest: 'sha1', iterations: 1000, salt: bytes.subarray(1, 17), subkey: bytes.subarray(17), base64 };
  }
  if (bytes[0] === 0x01) {
    if (bytes.length < 13) return 'an Identity v3 hash is at least 13 bytes';
    const prf = bytes.readUInt32BE(1);
    const iterations = bytes.readUInt32BE(5);
    const saltLength = bytes.readUInt32BE(9);
    const digest = PRFS[prf];
    if (digest === undefined) return `unknown Identity v3 PRF ${prf}`;
    if (saltLength < 16 || 13 + saltLength > bytes.length) return 'bad Identity v3 salt length';
    const salt = bytes.subarray(13, 13 + saltLength);
    const subkey = bytes.subarray(13 + saltLength);
    if (subkey.length < 16) return 'an Identity v3 subkey is at least 16 bytes';
    const problem = checkPbkdf2Cost(digest, iterations, salt.length, subkey.length);
    if (problem !== null) return problem;
    return { version: 3, digest, iterations, salt, subkey, base64 };
  }
  return `unknown Identity hash version byte 0x${(bytes[0] ?? 0).toString(16).padStart(2, '0')}`;
}

export function formatIdentityHash(h: IdentityHash): string {
  return `$aspnet-identity-v${h.version}$${h.base64}`;
}

export function isIdentityString(stored: string): boolean {
  return /^\$aspnet-identity-v[23]\$/.test(stored);
}

/** The hash inside a stored `$aspnet-identity-vN$` string (the version must match the blob). */
export function parseStoredIdentity(stored: string): IdentityHash | string {
  const match = /^\$aspnet-identity-v([23])\$([^$]*)$/.exec(stored);
  if (match === null) return 'malformed $aspnet-identity$ string';
  const parsed = parseIdentityPasswordHash(match[2] ?? '');
  if (typeof parsed === 'string') return parsed;
  return String(parsed.version) === match[1] ? parsed : 'the Identity version does not match the hash';
}

export function verifyIdentityPassword(h: IdentityHash, password: string): Promise<boolean> {
  return pbkdf2Matches(utf8(password), h.salt, h.iterations, h.digest, h.subkey);
}
