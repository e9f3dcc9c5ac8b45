/**
 * Logins are stored as the operator typed them and matched case-insensitively through a key.
 * The key is computed here, not by the database, so every adapter matches the same way.
 */
export function loginKey(login: string): string {
  return login.normalize('NFC').toLowerCase();
}

/** Why a login cannot be created, or null when it is acceptable. */
export function checkLogin(login: string): string | null {
  if (login.length === 0) return 'must not be empty';
  if (login.length > 256) return 'must be at most 256 characters';
  if (login.trim() !== login) return 'must not start or end with whitespace';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(login)) return 'must not contain control characters';
  return null;
}
