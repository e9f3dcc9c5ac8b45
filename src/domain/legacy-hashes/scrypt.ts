/**
 * scrypt (RFC 7914) in the PHC form passlib writes: `$scrypt$ln=<log2 N>,r=<r>,p=<p>$<salt>$<hash>`,
 * salt and hash unpadded base64 (standard or passlib's '.' for '+'); the salt is the decoded
 * bytes, the password UTF-8, the hash length is the derived key length.
 */
import { scrypt } from 'node:crypto';
import { constantTimeEqual, decodePhcBase64, utf8 } from './bytes.js';
import { HASH_LIMITS } from './limits.js';

export interface ScryptHash {
  readonly logN: number;
  readonly r: number;
  readonly p: number;
  readonly salt: Buffer;
  readonly hash: Buffer;
}

export function isScryptString(stored: string): boolean {
  return stored.startsWith('$scrypt$');
}

/** The parts of a `$scrypt$` string within the caps; a problem message otherwise. */
export function parseScrypt(stored: string): ScryptHash | string {
  const match = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,4}),p=(\d{1,4})\$([^$]*)\$([^$]*)$/.exec(stored);
  if (match === null) return 'malformed scrypt string';
  const logN = Number(match[1]);
  const r = Number(match[2]);
  const p = Number(match[3]);
  const salt = decodePhcBase64(match[4] ?? '');
  const hash = decodePhcBase64(match[5] ?? '');
  if (salt === null || hash === null || hash.length === 0) return 'malformed scrypt salt or hash';
  if (logN < 1 || r < 1 || p < 1) return 'scrypt parameters must be positive';
  if (128 * 2 ** logN * r > HASH_LIMITS.maxScryptMemoryBytes) return `scrypt memory 128*N*r is over the limit of ${HASH_LIMITS.maxScryptMemoryBytes} bytes`;
  if (p > HASH_LIMITS.maxScryptParallelism) return `scrypt parallelism is over the limit of ${HASH_LIMITS.maxScryptParallelism}`;
  if (salt.length > HASH_LIMITS.maxSaltBytes || hash.length > HASH_LIMITS.maxDerivedKeyBytes) return 'scrypt salt or hash too long';
  return { logN, r, p, salt, hash };
}

/** scrypt on the libuv thread pool, compared in constant time. */
export function verifyScrypt(h: ScryptHash, password: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const N = 2 ** h.logN;
    // maxmem must exceed 128*N*r (Node refuses otherwise); the caps bound it.
    scrypt(utf8(password), h.salt, h.hash.length, { N, r: h.r, p: h.p, maxmem: 128 * N * h.r + 1024 * 1024 }, (error, derived) => {
      if (error) reject(error);
      else resolve(constantTimeEqual(derived, h.hash));
    });
  });
}
