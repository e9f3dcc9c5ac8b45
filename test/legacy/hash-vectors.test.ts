/**
 * Every legacy format against vectors made by an independent implementation
 * (test/fixtures/legacy/make-vectors.py: hashlib, hmac, openssl, crypt(3), the argon2 reference
 * command): the right password verifies, near misses do not, and the caps refuse crafted costs.
 */
import { describe, expect, it } from 'vitest';
import { createPasswordHasher } from '../../src/domain/composite-password-hasher.js';
import {
  decryptMembershipPassword, fitSaltToKey, formatMembershipHash, membershipHashFromColumns, parseMachineKey, parseMembershipAlgorithm,
} from '../../src/domain/legacy-hashes/aspnet-membership.js';
import { formatIdentityHash, parseIdentityPasswordHash } from '../../src/domain/legacy-hashes/aspnet-identity.js';
import { canVerifyPasswordHash, inspectPasswordHash, needsResetHash } from '../../src/domain/legacy-hashes/stored-hash.js';
import { convertIdentityRow } from '../../src/domain/legacy-import.js';
import { fastHasher, VECTORS } from './support.js';

// Small argon2 parameters for the dummy verifications, so the suite stays fast.
const hasher = fastHasher();

/**
 * The yardstick for "without computing it": the time this hasher takes to verify an ordinary
 * PBKDF2-SHA256 hash of 100,000 iterations (computed in full: the password is wrong). A refusal
 * must cost a fraction of it; a cost over the caps, computed, would cost many times it.
 */
async function computedVerificationMs(): Promise<number> {
  const stored = '$pbkdf2-sha256$100000$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g';
  expect(inspectPasswordHash(stored).kind).not.toBe('invalid');
  const t = performance.now();
  expect(await hasher.verify(stored, 'password')).toBe(false);
  return performance.now() - t;
}

async function expectVerifies(stored: string, password: string, wrong: readonly string[]): Promise<void> {
  expect(await hasher.verify(stored, password), `${stored} with its password`).toBe(true);
  for (const w of wrong) expect(await hasher.verify(stored, w), `${stored} with ${JSON.stringify(w)}`).toBe(false);
}

describe('vectors cover what the issue asks', () => {
  it('non-ASCII, empty and 128-character passwords in every family', () => {
    const passwords = new Set([...VECTORS.membershipHashed, ...VECTORS.identity, ...VECTORS.phc].map((v) => v.password));
    expect(passwords.has('')).toBe(true);
    expect([...passwords].some((p) => p.length === 128)).toBe(true);
    expect([...passwords].some((p) => /[^ -~]/.test(p) && /[\uD800-\uDBFF]/.test(p))).toBe(true);
    for (const algorithm of ['MD5', 'SHA1', 'SHA256', 'SHA384', 'SHA512', 'HMACSHA1', 'HMACSHA256', 'HMACSHA384', 'HMACSHA512']) {
      expect(VECTORS.membershipHashed.filter((v) => v.algorithm === algorithm).map((v) => v.case)).toEqual(expect.arrayContaining(['ascii', 'non-ascii', 'empty', '128-chars']));
    }
    expect(new Set(VECTORS.phc.map((v) => v.format))).toEqual(new Set(['pbkdf2-sha1', 'pbkdf2-sha256', 'pbkdf2-sha512', 'scrypt', 'bcrypt', 'argon2id', 'argon2i']));
  });
});

describe('ASP.NET Membership, PasswordFormat Hashed', () => {
  it.each(VECTORS.membershipHashed.map((v) => [`${v.algorithm} ${v.case}`, v] as const))('%s', async (_name, v) => {
    const algorithm = parseMembershipAlgorithm(v.algorithm);
    if (algorithm === null) throw new Error(v.algorithm);
    const parsed = membershipHashFromColumns(algorithm, v.hash, v.salt);
    if (typeof parsed === 'string') throw new Error(parsed);
    const stored = formatMembershipHash(parsed);
    expect(stored).toBe(`$aspnet-membership$alg=${v.algorithm}$${v.salt}$${v.hash}`);
    expect(inspectPasswordHash(stored).format).toBe(`aspnet-membership-${v.algorithm.toLowerCase()}`);
    expect(hasher.needsRehash(stored)).toBe(true);
    await expectVerifies(stored, v.password, v.wrong);
  });

  it('the algorithm matters: a SHA1 hash does not verify as SHA256 or HMACSHA1', async () => {
    const v = VECTORS.membershipHashed.find((x) => x.algorithm === 'SHA1' && x.case === 'ascii');
    if (!v) throw new Error('vector');
    // Same bytes claimed as HMACSHA1 (same length): the password does not verify.
    expect(await hasher.verify(`$aspnet-membership$alg=HMACSHA1$${v.salt}$${v.hash}`, v.password)).toBe(false);
    // Claimed as SHA256: the length is wrong, refused as malformed.
    expect(membershipHashFromColumns('SHA256', v.hash, v.salt)).toMatch(/20 bytes/);
    expect(inspectPasswordHash(`$aspnet-membership$alg=SHA256$${v.salt}$${v.hash}`).kind).toBe('invalid');
  });

  it('reads the algorithm names HashAlgorithm.Create reads', () => {
    expect(['sha1', 'SHA-256', 'System.Security.Cryptography.HMACSHA512', 'HmacSha384'].map(parseMembershipAlgorithm)).toEqual(['SHA1', 'SHA256', 'HMACSHA512', 'HMACSHA384']);
    expect(parseMembershipAlgorithm('SHA3')).toBeNull();
  });

  it('fits the salt to the HMAC key as EncodePassword does', () => {
    const salt = Buffer.from([1, 2, 3]);
    expect([...fitSaltToKey(salt, 8)]).toEqual([1, 2, 3, 1, 2, 3, 1, 2]);
    expect([...fitSaltToKey(Buffer.from([1, 2, 3, 4, 5, 6, 7, 8, 9]), 8)]).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect([...fitSaltToKey(Buffer.from([9, 8]), 2)]).toEqual([9, 8]);
  });

  it('refuses malformed columns and strings', () => {
    expect(membershipHashFromColumns('SHA1', 'not base64!', 'AAAA')).toMatch(/Password/);
    expect(membershipHashFromColumns('SHA1', 'AAAAAAAAAAAAAAAAAAAAAAAAAAA=', '')).toMatch(/PasswordSalt/);
    for (const bad of ['$aspnet-membership$alg=SHA1$$', '$aspnet-membership$alg=sha1$AAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAA=', '$aspnet-membership$alg=SHA3$AAAA$AAAA', '$aspnet-membership$SHA1$AAAA$AAAA']) {
      expect(inspectPasswordHash(bad).kind, bad).toBe('invalid');
    }
  });
});

describe('ASP.NET Membership, PasswordFormat Encrypted', () => {
  it.each(VECTORS.membershipEncrypted.map((v) => [v.case, v] as const))('%s decrypts with the machine key', (_name, v) => {
    const key = parseMachineKey(v.decryption, v.decryptionKey);
    if (typeof key === 'string') throw new Error(key);
    expect(decryptMembershipPassword(v.password_enc, v.salt, key)).toBe(v.password);
  });

  it('does not decrypt with another key, algorithm or salt', () => {
    const v = VECTORS.membershipEncrypted.find((x) => x.decryption === 'AES' && x.decryptionKey.length === 64 && x.case.endsWith('/ascii'));
    const other = VECTORS.membershipEncrypted.find((x) => x.decryption === 'AES' && x.decryptionKey.length === 32);
    if (!v || !other) throw new Error('vector');
    const wrongKey = parseMachineKey('AES', v.decryptionKey.replace(/^./, (c) => (c === '0' ? '1' : '0')));
    if (typeof wrongKey === 'string') throw new Error(wrongKey);
    expect(decryptMembershipPassword(v.password_enc, v.salt, wrongKey)).toBeNull();
    const wrongSize = parseMachineKey('AES', other.decryptionKey);
    if (typeof wrongSize === 'string') throw new Error(wrongSize);
    expect(decryptMembershipPassword(v.password_enc, v.salt, wrongSize)).toBeNull();
    const key = parseMachineKey('AES', v.decryptionKey);
    if (typeof key === 'string') throw new Error(key);
    expect(decryptMembershipPassword(v.password_enc, Buffer.alloc(16, 7).toString('base64'), key)).toBeNull();
  });

  it('checks the machine key', () => {
    expect(parseMachineKey('AES', 'AutoGenerate,IsolateApps')).toMatch(/hexadecimal/);
    expect(parseMachineKey('AES', 'ABCD')).toMatch(/AES/);
    expect(parseMachineKey('DES', '0011223344556677')).toMatch(/unsupported/);
    expect(parseMachineKey('3des', '00'.repeat(24))).toMatchObject({ decryption: '3DES' });
  });
});

describe('ASP.NET Identity v2 / v3', () => {
  it.each(VECTORS.identity.map((v) => [`v${v.version} ${v.case}`, v] as const))('%s', async (_name, v) => {
    const parsed = parseIdentityPasswordHash(v.passwordHash);
    if (typeof parsed === 'string') throw new Error(parsed);
    const stored = formatIdentityHash(parsed);
    expect(stored).toBe(`$aspnet-identity-v${v.version}$${v.passwordHash}`);
    expect(inspectPasswordHash(stored).format).toBe(`aspnet-identity-v${v.version}`);
    expect(hasher.needsRehash(stored)).toBe(true);
    await expectVerifies(stored, v.password, v.wrong);
  });

  function v3(prf: number, iterations: number, saltLength: number, subkeyLength: number): string {
    const header = Buffer.alloc(13);
    header[0] = 1;
    header.writeUInt32BE(prf, 1);
    header.writeUInt32BE(iterations, 5);
    header.writeUInt32BE(saltLength, 9);
    return Buffer.concat([header, Buffer.alloc(saltLength, 1), Buffer.alloc(subkeyLength, 2)]).toString('base64');
  }

  it('refuses malformed blobs and costs over the caps, at import and at verification', async () => {
    expect(parseIdentityPasswordHash(v3(3, 1000, 16, 32))).toMatch(/PRF/);
    expect(parseIdentityPasswordHash(v3(1, 1000, 8, 32))).toMatch(/salt/);
    expect(parseIdentityPasswordHash(v3(1, 1000, 16, 8))).toMatch(/subkey/);
    expect(parseIdentityPasswordHash(v3(1, 0, 16, 32))).toMatch(/iteration/);
    expect(parseIdentityPasswordHash(v3(1, 1_000_001, 16, 32))).toMatch(/limit/);
    expect(parseIdentityPasswordHash(v3(1, 600_000, 16, 64))).toMatch(/limit/); // 2 blocks
    expect(parseIdentityPasswordHash(v3(2, 1_000_000, 16, 64))).toMatchObject({ iterations: 1_000_000 });
    expect(parseIdentityPasswordHash(Buffer.alloc(48).toString('base64'))).toMatch(/49/);
    expect(parseIdentityPasswordHash(Buffer.from([2, 0, 0]).toString('base64'))).toMatch(/version/);
    const crafted = `$aspnet-identity-v3$${v3(0, 0xffffffff, 16, 32)}`;
    expect(canVerifyPasswordHash(crafted)).toBe(false);
    const computedMs = await computedVerificationMs();
    const started = performance.now();
    expect(await hasher.verify(crafted, 'x')).toBe(false);
    expect((performance.now() - started) / computedMs).toBeLessThan(0.5);
    // The version in the prefix must match the blob's.
    const v = VECTORS.identity.find((x) => x.version === 3);
    if (!v) throw new Error('vector');
    expect(inspectPasswordHash(`$aspnet-identity-v2$${v.passwordHash}`).kind).toBe('invalid');
  });
});

describe('Membership triplets in AspNetUsers.PasswordHash (Microsoft\'s Membership-to-Identity migration)', () => {
  it.each(VECTORS.identityTriplets.map((v) => [v.case, v] as const))('%s', async (_name, v) => {
    const converted = convertIdentityRow({ line: 2, fields: { username: 'u', passwordhash: v.passwordHash } }, {}, new Date());
    if (!converted.ok) throw new Error(converted.detail);
    const p = converted.password;
    const stored = p.kind === 'hash' ? p.hash : p.kind === 'clear' ? await hasher.hash(p.password) : '';
    expect(inspectPasswordHash(stored).format).toBe(v.case === 'clear' ? 'argon2id' : 'aspnet-membership-sha1');
    await expectVerifies(stored, v.password, v.wrong);
  });
});

describe('PHC / MCF strings', () => {
  it.each(VECTORS.phc.map((v) => [`${v.format} ${v.case}`, v] as const))('%s', async (_name, v) => {
    const found = inspectPasswordHash(v.hash);
    expect(found.format).toBe(v.format);
    // Everything but argon2id with at least the service's parameters is upgraded on login.
    expect(createPasswordHasher().needsRehash(v.hash)).toBe(!(v.format === 'argon2id' && v.hash.includes('$m=19456,t=2,p=1$')));
    await expectVerifies(v.hash, v.password, v.wrong);
  });

  it('keeps argon2id with the current parameters as is', async () => {
    const current = await hasher.hash('pw');
    expect(createPasswordHasher().needsRehash(await createPasswordHasher().hash('pw'))).toBe(false);
    expect(await hasher.verify(current, 'pw')).toBe(true);
  });

  it('refuses costs over the caps without computing them', async () => {
    const salt = 'c2FsdHNhbHRzYWx0c2FsdA';
    const hash = 'aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g';
    const crafted = [
      `$pbkdf2-sha256$2000000$${salt}$${hash}`,
      `$pbkdf2-sha256$i=4000000000,l=32$${salt}$${hash}`,
      `$scrypt$ln=20,r=8,p=1$${salt}$${hash}`,
      `$scrypt$ln=14,r=8,p=64$${salt}$${hash}`,
      '$2b$15$DCq7YPn5Rq63x1Lad4cll.TV4S6ytwfsfvkgY8jIucDrjc8deX1s.',
      `$argon2id$v=19$m=4194304,t=2,p=1$${salt}$${hash}`,
      `$argon2id$v=19$m=19456,t=100,p=1$${salt}$${hash}`,
      `$argon2id$v=19$m=19456,t=2,p=255$${salt}$${hash}`,
    ];
    const computedMs = await computedVerificationMs();
    for (const stored of crafted) {
      expect(inspectPasswordHash(stored).kind, stored).toBe('invalid');
      const started = performance.now();
      expect(await hasher.verify(stored, 'password'), stored).toBe(false);
      expect((performance.now() - started) / computedMs, stored).toBeLessThan(0.5);
    }
  });

  it('never verifies a needs-reset marker, an unknown string or a corrupt hash', async () => {
    for (const stored of [needsResetHash('aspnet-membership-encrypted'), '', 'password', '$1$abc$def', '$2b$04$short', '$scrypt$ln=4,r=8,p=1$!!$!!']) {
      expect(canVerifyPasswordHash(stored), stored).toBe(false);
      expect(await hasher.verify(stored, ''), stored).toBe(false);
      expect(hasher.needsRehash(stored)).toBe(true);
    }
  });
});
