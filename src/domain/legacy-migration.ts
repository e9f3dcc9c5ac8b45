/**
 * Lazy migration from the legacy service (config `legacy.url`): while svcapi-auth runs
 * side by side with the old Authentication.asmx, a login that is unknown here, or whose stored
 * hash cannot be verified here (imported without a usable password, or in a format or cost this
 * service refuses), is checked once by the old service's own ValidateUser. When it answers with
 * a token, the user is created here (or its hash replaced) with an argon2id hash of the password
 * just checked, granted the application, recorded as migrated, and the login succeeds as any
 * other. When it says no, times out or fails, the login fails like any other failure. What
 * counts as a yes is legacy-guard.ts's to decide: a token in the old service's form, never
 * "anything but its failure value".
 *
 * A user whose hash *can* be verified here is never sent to the old service: a wrong password
 * is simply wrong (the old service may still accept a password changed here since).
 *
 * The domain knows the old service only through LegacyAuthenticator; the SOAP client lives in
 * src/legacy/.
 */
import type { AccountStore, Application, UserCredentials } from '../store/store.js';
import type { PasswordHasher } from './password-hasher.js';
import type { Clock } from './clock.js';
import { checkLegacyLogin, loginKey, storedLogin } from './logins.js';
import { opaqueString } from './precis.js';
import { canVerifyPasswordHash } from './legacy-hashes/stored-hash.js';
import type { LegacyGuard } from './legacy-guard.js';

export interface LegacyMigrationDeps {
  readonly store: AccountStore;
  readonly hasher: PasswordHasher;
  readonly legacy: LegacyGuard;
  readonly clock: Clock;
}

export interface LegacyAttempt {
  readonly login: string;
  readonly password: string;
  readonly app: Application;
  readonly ipAddress: string | null;
}

export interface LegacyMigration {
  /**
   * For a login whose password did not verify here: asks the old service when the rules above
   * allow it. `user` is the migrated user to continue the login with, or null (not asked, or
   * refused); `asked` says whether the old service was called (its time counts for equal timing).
   */
  attempt(attempt: LegacyAttempt, user: UserCredentials | null): Promise<{ readonly user: UserCredentials | null; readonly asked: boolean }>;
}

export function createLegacyMigration(deps: LegacyMigrationDeps): LegacyMigration {
  const { store, hasher, legacy, clock } = deps;
  return {
    async attempt(a, user) {
      const notAsked = { user: null, asked: false } as const;
      if (!a.app.enabled) return notAsked; // would fail anyway; do not bother the old service
      if (user !== null && (!user.enabled || canVerifyPasswordHash(user.passwordHash))) return notAsked;
      if (user === null && checkLegacyLogin(a.login) !== null) return notAsked; // could not be created here
      let verdict: { readonly vouched: boolean; readonly asked: boolean };
      try {
        verdict = await legacy.vouch(a.login, a.password, a.app.appId, a.ipAddress);
      } catch {
        verdict = { vouched: false, asked: true };
      }
      if (!verdict.vouched) return { user: null, asked: verdict.asked };
      const migrated = await store.migrateLegacyUser({
        login: user?.login ?? storedLogin(a.login),
        loginKey: loginKey(a.login),
        // Hashed as ValidateUser compares it (PRECIS OpaqueString); a password the profile refuses, as sent.
        passwordHash: await hasher.hash(((p) => (p.ok ? p.value : a.password))(opaqueString(a.password))),
        appId: a.app.appId,
        expectedHash: user?.passwordHash ?? null,
        now: clock.now(),
      });
      return { user: migrated, asked: true };
    },
  };
}
