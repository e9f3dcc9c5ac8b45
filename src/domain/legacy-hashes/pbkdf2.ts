/**
 * PBKDF2 (RFC 8018) strings:
 * - passlib's modular form `$pbkdf2$<rounds>$<salt>$<hash>` (HMAC-SHA1), `$pbkdf2-sha256$...`,
 *   `$pbkdf2-sha512$...`, salt and hash in passlib's adapted base64 ('.' for '+', unpadded);
 * - the PHC form `$pbkdf2-sha256$i=<rounds>[,l=<length>]$<salt>$<hash>` (unpadded base64),
 *   also with `-sha1` / `-sha512`.
 * The salt is the decoded bytes; the password is UTF-8.
 */
import { pbkdf2 } from 'node:crypto';
import { promisify } from 'node:util';
import { constantTimeEqual, decodePhcBase64, utf8 } from './bytes.js';
import { HASH_LIMITS } from './limits.js';

const pbkdf2Async = promisify(pbkdf2);

export type Pbkdf2Digest = 'sha1' | 'sha256' | 'sha512';
const DIGEST_SIZE: Record<Pbkdf2Digest, number> = { sha1: 20, sha256: 32, sha512: 64 };

/** A problem message when PBKDF2 with these parameters is outside the caps, else null. */
export function checkPbkdf2Cost(digest: Pbkdf2Digest, iterations: number, saltLength: number, keyLength: number): string | null {
  if (!Number.isSafeInteger(iterations) || iterations < 1) return 'the iteration count must be at least 1';
  if (keyLength < 1 || keyLength > HASH_LIMITS.maxDerivedKeyBytes) return `the derived key must be 1 to ${HASH_LIMITS.maxDerivedKeyBytes} bytes`;
  if (saltLength > HASH_LIMITS.maxSaltBytes) return `the salt must be at most ${HASH_LIMITS.maxSaltBytes} bytes`;
  const work = iterations * Math.ceil(keyLength / DIGEST_SIZE[digest]);
  if (work > HASH_LIMITS.maxPbkdf2Work) return `PBKDF2 work (iterations x blocks) ${work} is over the limit of ${HASH_LIMITS.maxPbkdf2Work}`;
  return null;
}

/** PBKDF2 on the libuv thread pool, compared in constant time. The caller has checked the cost. */
export async function pbkdf2Matches(password: Buffer, salt: Buffer, iterations: number, digest: Pbkdf2Digest, expected: Buffer): Promise<boolean> {
  const derived = await pbkdf2Async(password, salt, iterations, expected.length, digest);
  return constantTimeEqual(derived, expected);
}

export interface Pbkdf2Hash {
  readonly digest: Pbkdf2Digest;
  readonly iterations: number;
  readonly salt: Buffer;
  readonly hash: Buffer;
}

const IDENTS: Record<string, Pbkdf2Digest> = { 'pbkdf2': 'sha1', 'pbkdf2-sha1': 'sha1', 'pbkdf2-sha256': 'sha256', 'pbkdf2-sha512': 'sha512' };

export function isPbkdf2String(stored: string): boolean {
  return /^\$pbkdf2(-sha(1|256|512))?\$/.test(stored);
}

/** The parts of a `$pbkdf2...$` string within the caps; a problem message otherwise. */
export function parsePbkdf2(stored: string): Pbkdf2Hash | string {
  const parts = stored.split('$');
  if (parts.length !== 5 || parts[0] !== '') return 'malformed PBKDF2 string';
  const digest = IDENTS[parts[1] ?? ''];
  if (digest === undefined) return 'unknown PBKDF2 variant';
  const params = parts[2] ?? '';
  let iterations: number;
  let length: number | null = null;
  const passlib = /^([1-9]\d{0,9})$/.exec(params);
  const phc = /^i=([1-9]\d{0,9})(?:,l=([1-9]\d{0,4}))?$/.exec(params);
  if (passlib !== null) iterations = Number(passlib[1]);
  else if (phc !== null) {
    iterations = Number(phc[1]);
    if (phc[2] !== undefined) length = Number(phc[2]);
  } else return 'malformed PBKDF2 parameters';
  const salt = decodePhcBase64(parts[3] ?? '');
  const hash = decodePhcBase64(parts[4] ?? '');
  if (salt === null || hash === null || hash.length === 0) return 'malformed PBKDF2 salt or hash';
  if (length !== null && length !== hash.length) return 'the PBKDF2 hash length does not match l=';
  const problem = checkPbkdf2Cost(digest, iterations, salt.length, hash.length);
  if (problem !== null) return problem;
  return { digest, iterations, salt, hash };
}

export function verifyPbkdf2(h: Pbkdf2Hash, password: string): Promise<boolean> {
  return pbkdf2Matches(utf8(password), h.salt, h.iterations, h.digest, h.hash);
}
