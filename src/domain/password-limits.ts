/**
 * Longer passwords fail at login without being hashed (nobody's password is this long,
 * a denial-of-service attacker's is), so the operator tools refuse to set one either.
 */
export const MAX_PASSWORD_BYTES = 1024;

export function passwordTooLong(password: string): boolean {
  return Buffer.byteLength(password, 'utf8') > MAX_PASSWORD_BYTES;
}
