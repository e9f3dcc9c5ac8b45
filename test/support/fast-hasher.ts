/**
 * The service's password hasher (composite-password-hasher.ts) with small argon2id parameters for
 * new hashes and dummy verifications: the same code as in production at a fraction of the cost
 * (35 ms a hash with ARGON2ID_PARAMS, under 1 ms with these, on 2 cores). A hash of any
 * parameters still verifies. The default of createTestStack (start-app.ts); tests about the
 * production parameters or about what hashing costs pass `hasher: createPasswordHasher()`.
 */
import { createPasswordHasher } from '../../src/domain/composite-password-hasher.js';
import type { PasswordHasher } from '../../src/domain/password-hasher.js';

export const fastHasher = (): PasswordHasher => createPasswordHasher({ argon2: { memoryCost: 1024, timeCost: 1, parallelism: 1 } });
