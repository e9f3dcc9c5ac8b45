/**
 * What a stored password hash is. Every format is a self-describing string in the users'
 * password-hash column, none of which can be mistaken for another (each starts with its own
 * `$ident$`):
 *
 * | Format                         | Stored as                                                   |
 * |--------------------------------|-------------------------------------------------------------|
 * | argon2id / argon2i / argon2d   | PHC `$argon2id$v=19$m=..,t=..,p=..$salt$hash`               |
 * | ASP.NET Membership, Hashed     | `$aspnet-membership$alg=SHA1$<salt b64>$<hash b64>`         |
 * | ASP.NET Identity v2 / v3       | `$aspnet-identity-v2$<PasswordHash>`, `$aspnet-identity-v3$...` |
 * | bcrypt                         | MCF as is: `$2a$` / `$2b$` / `$2y$`                         |
 * | scrypt                         | PHC `$scrypt$ln=..,r=..,p=..$salt$hash`                     |
 * | PBKDF2                         | `$pbkdf2[-sha1|-sha256|-sha512]$...` (passlib or PHC form)  |
 * | no usable password             | `$needs-reset$<why>`: never verifies; see legacy migration  |
 *
 * Anything else, and any hash over the cost caps (limits.ts), is "invalid": it never verifies.
 */
import { isArgon2String, parseArgon2Params, type Argon2Params } from './argon2-params.js';
import { MEMBERSHIP_PREFIX, parseMembershipHash, verifyMembershipPassword } from './aspnet-membership.js';
import { isIdentityString, parseStoredIdentity, verifyIdentityPassword } from './aspnet-identity.js';
import { isBcryptString, parseBcrypt, verifyBcrypt } from './bcrypt.js';
import { isPbkdf2String, parsePbkdf2, verifyPbkdf2 } from './pbkdf2.js';
import { isScryptString, parseScrypt, verifyScrypt } from './scrypt.js';

export const NEEDS_RESET_PREFIX = '$needs-reset$';

/** Why a user was imported without a usable password. */
export type NeedsResetReason = 'aspnet-membership-encrypted' | 'empty-password';

/** The hash of a user imported without a usable password (it verifies nothing). */
export function needsResetHash(reason: NeedsResetReason): string {
  return `${NEEDS_RESET_PREFIX}${reason}`;
}

export type HashInspection =
  | { readonly kind: 'argon2'; readonly format: Argon2Params['variant']; readonly params: Argon2Params }
  | { readonly kind: 'legacy'; readonly format: string; verify(password: string): Promise<boolean> }
  | { readonly kind: 'needs-reset'; readonly format: 'needs-reset'; readonly reason: string }
  | { readonly kind: 'invalid'; readonly format: 'invalid' | 'unknown'; readonly problem: string };

const invalid = (problem: string): HashInspection => ({ kind: 'invalid', format: 'invalid', problem });

/** Reads a stored hash (without computing anything): its format, and how to verify it. */
export function inspectPasswordHash(stored: string): HashInspection {
  if (isArgon2String(stored)) {
    const params = parseArgon2Params(stored);
    return typeof params === 'string' ? invalid(params) : { kind: 'argon2', format: params.variant, params };
  }
  if (stored.startsWith(MEMBERSHIP_PREFIX)) {
    const h = parseMembershipHash(stored);
    if (typeof h === 'string') return invalid(h);
    return { kind: 'legacy', format: `aspnet-membership-${h.algorithm.toLowerCase()}`, verify: async (pw) => verifyMembershipPassword(h, pw) };
  }
  if (isIdentityString(stored)) {
    const h = parseStoredIdentity(stored);
    if (typeof h === 'string') return invalid(h);
    return { kind: 'legacy', format: `aspnet-identity-v${h.version}`, verify: (pw) => verifyIdentityPassword(h, pw) };
  }
  if (isBcryptString(stored)) {
    const h = parseBcrypt(stored);
    if (typeof h === 'string') return invalid(h);
    return { kind: 'legacy', format: 'bcrypt', verify: (pw) => verifyBcrypt(h, pw) };
  }
  if (isScryptString(stored)) {
    const h = parseScrypt(stored);
    if (typeof h === 'string') return invalid(h);
    return { kind: 'legacy', format: 'scrypt', verify: (pw) => verifyScrypt(h, pw) };
  }
  if (isPbkdf2String(stored)) {
    const h = parsePbkdf2(stored);
    if (typeof h === 'string') return invalid(h);
    return { kind: 'legacy', format: `pbkdf2-${h.digest}`, verify: (pw) => verifyPbkdf2(h, pw) };
  }
  if (stored.startsWith(NEEDS_RESET_PREFIX)) {
    return { kind: 'needs-reset', format: 'needs-reset', reason: stored.slice(NEEDS_RESET_PREFIX.length) };
  }
  return { kind: 'invalid', format: 'unknown', problem: 'not a password hash format svcapi-auth knows' };
}

/** Whether a password could ever verify against this hash here (false: needs reset, unknown, over the caps). */
export function canVerifyPasswordHash(stored: string): boolean {
  const kind = inspectPasswordHash(stored).kind;
  return kind === 'argon2' || kind === 'legacy';
}
