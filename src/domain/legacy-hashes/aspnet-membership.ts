/**
 * ASP.NET Membership (System.Web.Security.SqlMembershipProvider, .NET Framework 2.0 - 4.8).
 *
 * PasswordFormat 1, "Hashed" (SqlMembershipProvider.EncodePassword), with the provider's
 * hashAlgorithmType:
 * - a plain hash (MD5, SHA1, SHA256, SHA384, SHA512): H(salt bytes || UTF-16LE(password));
 * - a keyed hash (HMACMD5, HMACSHA1, HMACSHA256, HMACSHA384, HMACSHA512): HMAC over
 *   UTF-16LE(password), keyed with the salt fitted to the length of the key the algorithm's
 *   default constructor makes (64 bytes for HMACMD5/SHA1/SHA256, 128 for HMACSHA384/512):
 *   the salt itself when it has that length, its first bytes when longer, else the salt repeated
 *   (the last copy cut short) until the key is full.
 * The salt is PasswordSalt, base64; the result is Password, base64.
 *
 * PasswordFormat 2, "Encrypted": the machineKey's decryption algorithm (AES or 3DES) in CBC mode
 * with an all-zero IV and PKCS#7 padding over salt || UTF-16LE(password), without the random IV
 * block or signature other machineKey data gets (Membership opts out: IVType.None, signData false).
 * Decrypting and dropping the 16 salt bytes gives the password back.
 *
 * Stored here as `$aspnet-membership$alg=<Algorithm>$<salt base64>$<hash base64>`.
 */
import { createDecipheriv, createHash, createHmac } from 'node:crypto';
import { constantTimeEqual, decodeBase64, encodeBase64, utf16le } from './bytes.js';
import { HASH_LIMITS } from './limits.js';

interface AlgorithmSpec {
  readonly digest: 'md5' | 'sha1' | 'sha256' | 'sha384' | 'sha512';
  readonly size: number;
  /** Keyed (HMAC): length of the key `new HMACxxx()` generates, which the salt is fitted to. */
  readonly keySize: number | null;
}

const ALGORITHMS = {
  MD5: { digest: 'md5', size: 16, keySize: null },
  SHA1: { digest: 'sha1', size: 20, keySize: null },
  SHA256: { digest: 'sha256', size: 32, keySize: null },
  SHA384: { digest: 'sha384', size: 48, keySize: null },
  SHA512: { digest: 'sha512', size: 64, keySize: null },
  HMACMD5: { digest: 'md5', size: 16, keySize: 64 },
  HMACSHA1: { digest: 'sha1', size: 20, keySize: 64 },
  HMACSHA256: { digest: 'sha256', size: 32, keySize: 64 },
  HMACSHA384: { digest: 'sha384', size: 48, keySize: 128 },
  HMACSHA512: { digest: 'sha512', size: 64, keySize: 128 },
} as const satisfies Record<string, AlgorithmSpec>;

export type MembershipAlgorithm = keyof typeof ALGORITHMS;
export const MEMBERSHIP_ALGORITHMS = Object.freeze(Object.keys(ALGORITHMS) as MembershipAlgorithm[]);

/**
 * The algorithm named as in web.config (`hashAlgorithmType`), any case, also in the other
 * spellings HashAlgorithm.Create takes (`SHA-256`, `System.Security.Cryptography.SHA256`); null if unknown.
 */
export function parseMembershipAlgorithm(name: string): MembershipAlgorithm | null {
  const upper = name.trim().toUpperCase().replace(/^SYSTEM\.SECURITY\.CRYPTOGRAPHY\./, '').replace(/-/g, '');
  return (MEMBERSHIP_ALGORITHMS as readonly string[]).includes(upper) ? upper as MembershipAlgorithm : null;
}

/** The HMAC key EncodePassword makes from the salt. */
export function fitSaltToKey(salt: Buffer, keySize: number): Buffer {
  if (salt.length === keySize) return salt;
  if (salt.length > keySize) return salt.subarray(0, keySize);
  const key = Buffer.alloc(keySize);
  for (let at = 0; at < keySize; at += salt.length) salt.copy(key, at, 0, Math.min(salt.length, keySize - at));
  return key;
}

/** SqlMembershipProvider.EncodePassword for PasswordFormat Hashed, as bytes. */
export function encodeMembershipPassword(algorithm: MembershipAlgorithm, salt: Buffer, password: string): Buffer {
  const spec: AlgorithmSpec = ALGORITHMS[algorithm];
  const data = utf16le(password);
  if (spec.keySize !== null) return createHmac(spec.digest, fitSaltToKey(salt, spec.keySize)).update(data).digest();
  return createHash(spec.digest).update(salt).update(data).digest();
}

export interface MembershipHash {
  readonly algorithm: MembershipAlgorithm;
  readonly salt: Buffer;
  readonly hash: Buffer;
}

export const MEMBERSHIP_PREFIX = '$aspnet-membership$';

/**
 * Checks a Password / PasswordSalt pair as exported (base64) for an algorithm: a problem
 * message, or the parsed hash.
 */
export function membershipHashFromColumns(algorithm: MembershipAlgorithm, passwordB64: string, saltB64: string): MembershipHash | string {
  const salt = decodeBase64(saltB64.trim());
  const hash = decodeBase64(passwordB64.trim());
  if (salt === null || salt.length === 0) return 'PasswordSalt is not base64 bytes';
  if (salt.length > HASH_LIMITS.maxSaltBytes) return `PasswordSalt is longer than ${HASH_LIMITS.maxSaltBytes} bytes`;
  if (hash === null) return 'Password is not base64';
  const size = ALGORITHMS[algorithm].size;
  if (hash.length !== size) return `Password is ${hash.length} bytes, a ${algorithm} hash is ${size} (is the hash algorithm right?)`;
  return { algorithm, salt, hash };
}

export function formatMembershipHash(h: MembershipHash): string {
  return `${MEMBERSHIP_PREFIX}alg=${h.algorithm}$${encodeBase64(h.salt)}$${encodeBase64(h.hash)}`;
}

/** The parts of a stored `$aspnet-membership$` string; a problem message if it is malformed. */
export function parseMembershipHash(stored: string): MembershipHash | string {
  const parts = stored.split('$');
  if (parts.length !== 5 || parts[0] !== '' || parts[1] !== 'aspnet-membership') return 'not an $aspnet-membership$ string';
  const alg = /^alg=([A-Z0-9]+)$/.exec(parts[2] ?? '')?.[1];
  const algorithm = alg === undefined ? null : parseMembershipAlgorithm(alg);
  if (algorithm === null || algorithm !== alg) return 'unknown Membership hash algorithm';
  return membershipHashFromColumns(algorithm, parts[4] ?? '', parts[3] ?? '');
}

export function verifyMembershipPassword(h: MembershipHash, password: string): boolean {
  return constantTimeEqual(encodeMembershipPassword(h.algorithm, h.salt, password), h.hash);
}

// --- PasswordFormat Encrypted ---

export type MachineKeyDecryption = 'AES' | '3DES';

export interface MachineKey {
  readonly decryption: MachineKeyDecryption;
  readonly key: Buffer;
}

/** The `<machineKey decryption=".." decryptionKey="..">` pair; a problem message if unusable. */
export function parseMachineKey(decryption: string, keyHex: string): MachineKey | string {
  const name = decryption.trim().toUpperCase();
  const hex = keyHex.trim();
  if (!/^(?:[0-9a-fA-F]{2})+$/.test(hex)) return 'the decryption key must be hexadecimal, as in <machineKey decryptionKey="...">';
  const key = Buffer.from(hex, 'hex');
  if (name === 'AES' || name === 'AUTO') {
    if (![16, 24, 32].includes(key.length)) return `an AES decryption key is 32, 48 or 64 hex digits, got ${hex.length}`;
    return { decryption: 'AES', key };
  }
  if (name === '3DES') {
    if (key.length !== 24 && key.length !== 16) return `a 3DES decryption key is 48 (or 32) hex digits, got ${hex.length}`;
    return { decryption: '3DES', key };
  }
  return `unsupported machineKey decryption ${JSON.stringify(decryption)}: use AES or 3DES`;
}

const SALT_SIZE_IN_BYTES = 16;

function cipherName(k: MachineKey): string {
  if (k.decryption === '3DES') return k.key.length === 24 ? 'des-ede3-cbc' : 'des-ede-cbc';
  return `aes-${k.key.length * 8}-cbc`;
}

/**
 * The clear password of an Encrypted row; null when it does not decrypt with this key (bad
 * padding, or the plaintext does not start with the row's salt, which is how a wrong key shows).
 */
export function decryptMembershipPassword(passwordB64: string, saltB64: string, machineKey: MachineKey): string | null {
  const blob = decodeBase64(passwordB64.trim());
  const salt = decodeBase64(saltB64.trim());
  if (blob === null || salt === null || salt.length !== SALT_SIZE_IN_BYTES || blob.length === 0) return null;
  let plain: Buffer;
  try {
    const blockSize = machineKey.decryption === 'AES' ? 16 : 8;
    const decipher = createDecipheriv(cipherName(machineKey), machineKey.key, Buffer.alloc(blockSize));
    plain = Buffer.concat([decipher.update(blob), decipher.final()]);
  } catch {
    return null;
  }
  if (plain.length < SALT_SIZE_IN_BYTES || (plain.length - SALT_SIZE_IN_BYTES) % 2 !== 0) return null;
  if (!constantTimeEqual(plain.subarray(0, SALT_SIZE_IN_BYTES), salt)) return null;
  return plain.subarray(SALT_SIZE_IN_BYTES).toString('utf16le');
}
