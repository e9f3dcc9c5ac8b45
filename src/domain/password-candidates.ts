/**
 * The texts a ValidateUser password is verified as. PRECIS OpaqueString (RFC 8265): passwords are
 * hashed in their prepared form (NFC, non-ASCII spaces as U+0020). A hash made before that was of
 * the text as sent, so when the prepared form differs and does not match, the text as sent is
 * tried too and, if it matches, the hash is redone from the prepared form. Both tries depend only
 * on the input, never on whether the user exists (the dummy hash gets them too), so a
 * verification's count says nothing about the login.
 */
import { opaqueString } from './precis.js';

export interface PasswordCandidates {
  /** Tried first, and what a new hash is made of: the prepared form, or the text as sent when the profile refuses it. */
  readonly first: string;
  /** The text as sent, tried when `first` does not match; null when it is `first`. */
  readonly asSent: string | null;
}

/** A missing password (xsi:nil) is tried as the empty text, which no hash matches. */
const MISSING: PasswordCandidates = Object.freeze({ first: '', asSent: null });

export function passwordCandidates(password: string | null): PasswordCandidates {
  if (password === null) return MISSING;
  const prepared = opaqueString(password);
  if (!prepared.ok || prepared.value === password) return { first: password, asSent: null };
  return { first: prepared.value, asSent: password };
}
