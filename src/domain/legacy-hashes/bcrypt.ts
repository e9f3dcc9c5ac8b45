/**
 * bcrypt in the modular crypt format `$2a$` / `$2b$` / `$2y$`, cost, 22 characters of salt and
 * 31 of hash (bcrypt's own base64), as written by OpenBSD, PHP, Python's bcrypt, bcryptjs,
 * Spring, .NET BCrypt.Net... The password is UTF-8; as everywhere, bcrypt reads only its first
 * 72 bytes. Computed with bcryptjs (pure JavaScript, run in small slices between other work).
 */
import bcryptjs from 'bcryptjs';
import { constantTimeEqual } from './bytes.js';
import { HASH_LIMITS } from './limits.js';

export interface BcryptHash {
  readonly cost: number;
  readonly text: string;
}

const BCRYPT = /^\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}$/;

export function isBcryptString(stored: string): boolean {
  return /^\$2[abxy]?\$/.test(stored);
}

export function parseBcrypt(stored: string): BcryptHash | string {
  const match = BCRYPT.exec(stored);
  if (match === null) return 'malformed bcrypt string (only $2a$, $2b$ and $2y$ are read)';
  const cost = Number(match[1]);
  if (cost < 4) return 'bcrypt cost must be at least 4';
  if (cost > HASH_LIMITS.maxBcryptCost) return `bcrypt cost ${cost} is over the limit of ${HASH_LIMITS.maxBcryptCost}`;
  return { cost, text: stored };
}

export async function verifyBcrypt(h: BcryptHash, password: string): Promise<boolean> {
  // Recompute with the stored salt, then compare the whole string in constant time.
  const computed = await bcryptjs.hash(password, h.text.slice(0, 29));
  return constantTimeEqual(Buffer.from(computed), Buffer.from(h.text));
}
