/**
 * Logins are compared through a key computed here, not by the database, so every adapter
 * matches the same way. The key is the output of the PRECIS UsernameCaseMapped profile
 * (RFC 8265; precis.ts): width mapping, toLowerCase, NFC.
 *
 * Databases created before the profile was applied hold `legacyLoginKey` (NFC + toLowerCase).
 * For every login the profile accepts, the two are the same except when the login has
 * fullwidth or halfwidth forms (which the profile maps to their ordinary forms): such a login is
 * looked up under both keys (loginLookupKeys). A login the profile refuses (a space, U+200B, a
 * symbol...) can no longer be created, but a user who has one already keeps logging in: its key
 * stays the legacy key, and `svcapi-auth migrate` lists such users (loginProblems).
 */
import type { AccountStore, UserCredentials } from '../store/store.js';
import { usernameCaseMapped, usernameCasePreserved } from './precis.js';

/** The key of databases written before RFC 8265 was applied. */
export function legacyLoginKey(login: string): string {
  return login.normalize('NFC').toLowerCase();
}

/** The key a login is stored and matched under: the profile's output, or the legacy key of a login the profile refuses. */
export function loginKey(login: string): string {
  const mapped = usernameCaseMapped(login);
  return mapped.ok ? mapped.value : legacyLoginKey(login);
}

/** Keys to look a login up by, in order: its key, then the legacy key when that differs. */
export function loginLookupKeys(login: string): readonly string[] {
  const key = loginKey(login);
  const legacy = legacyLoginKey(login);
  return key === legacy ? [key] : [key, legacy];
}

/** The user a login names, under its key or (for a user created before RFC 8265 was applied) its legacy key. */
export async function findUserByLogin(store: Pick<AccountStore, 'findUserByLoginKey'>, login: string): Promise<UserCredentials | null> {
  for (const key of loginLookupKeys(login)) {
    const user = await store.findUserByLoginKey(key);
    if (user !== null) return user;
  }
  return null;
}

/** Why a new login cannot be created (`user add`), or null when it is acceptable: RFC 8265 UsernameCaseMapped. */
export function checkLogin(login: string): string | null {
  if (login.length === 0) return 'must not be empty';
  if (login.length > 256) return 'must be at most 256 characters';
  const mapped = usernameCaseMapped(login);
  return mapped.ok ? null : mapped.reason;
}

/**
 * Why a login of a user brought over from the old service (import-legacy, lazy migration)
 * cannot be stored, or null: the rules logins had before RFC 8265 was applied. Such a user
 * exists already, under the login the old service accepted; refusing it here would lock them
 * out. A login the profile refuses is kept with its legacy key and listed by `migrate`.
 */
export function checkLegacyLogin(login: string): string | null {
  if (login.length === 0) return 'must not be empty';
  if (login.length > 256) return 'must be at most 256 characters';
  if (login.trim() !== login) return 'must not start or end with whitespace';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(login)) return 'must not contain control characters';
  return null;
}

/**
 * The form a login is stored in: width mapped and NFC (case kept) when the profile accepts it, so
 * what is shown is what compares; as given otherwise (a legacy login, see checkLegacyLogin).
 */
export function storedLogin(login: string): string {
  return usernameCaseMapped(login).ok ? usernameCasePreserved(login) : login;
}

/** Why an existing login would not be accepted today, or null (for the migration check). */
export function loginProblem(login: string): string | null {
  const mapped = usernameCaseMapped(login);
  if (!mapped.ok) return `not valid under RFC 8265 (${mapped.reason}); it still logs in, but no such login can be created`;
  if (mapped.value !== legacyLoginKey(login)) return 'has fullwidth or halfwidth forms; it still logs in, but a new login that differs only in them is not refused';
  return null;
}
