/**
 * The password hasher the service uses: new hashes are argon2id (password-hasher.ts); stored
 * hashes may also be in any format imported from a legacy system (legacy-hashes/stored-hash.ts).
 * Every format other than argon2id with the current parameters "needs rehash", so the service's
 * ordinary upgrade path replaces it with argon2id on the user's next successful login.
 *
 * Timing: verifying a legacy hash (a SHA-1 is microseconds) also runs one argon2id verification
 * against a dummy hash, alongside; a hash that cannot verify at all (needs reset, unknown, over
 * the caps) costs that dummy verification too. So a failed login costs at least one argon2id
 * verification whatever is stored, like an unknown login does.
 */
import { createArgon2Hasher, ARGON2ID_PARAMS, type PasswordHasher } from './password-hasher.js';
import { inspectPasswordHash } from './legacy-hashes/stored-hash.js';
import { randomBytes } from 'node:crypto';

export interface CompositeHasherOptions {
  /** argon2id parameters for new hashes (default OWASP's minimum, ARGON2ID_PARAMS). */
  readonly argon2?: { memoryCost: number; timeCost: number; parallelism: number };
}

export function createPasswordHasher(options: CompositeHasherOptions = {}): PasswordHasher {
  const argon2 = createArgon2Hasher(options.argon2 ?? ARGON2ID_PARAMS);
  let dummy: Promise<string> | undefined;

  /** One argon2id verification whose answer is thrown away. */
  async function dummyVerification(password: string): Promise<void> {
    dummy ??= argon2.hash(randomBytes(24).toString('base64'));
    await argon2.verify(await dummy, password);
  }

  return {
    hash: (password) => argon2.hash(password),

    async verify(passwordHash, password) {
      const found = inspectPasswordHash(passwordHash);
      switch (found.kind) {
        case 'argon2':
          return argon2.verify(passwordHash, password);
        case 'legacy': {
          const [matches] = await Promise.all([
            found.verify(password).catch(() => false), // a corrupt hash fails the login, never the request
            dummyVerification(password),
          ]);
          return matches;
        }
        default:
          await dummyVerification(password);
          return false;
      }
    },

    needsRehash(passwordHash) {
      return inspectPasswordHash(passwordHash).kind !== 'argon2' || argon2.needsRehash(passwordHash);
    },
  };
}
