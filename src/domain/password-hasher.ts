import argon2 from 'argon2';

/**
 * Password hashing behind a small interface: hashes are opaque PHC strings to the rest of the
 * code, so legacy formats (ASP.NET Membership / Identity) can later be verified here and
 * upgraded to argon2id on the next successful login.
 */
export interface PasswordHasher {
  /** A new PHC string for this password, exactly as given. */
  hash(password: string): Promise<string>;
  /** Whether the password matches; false (never a throw) for a hash this hasher cannot read. */
  verify(passwordHash: string, password: string): Promise<boolean>;
  /** Whether a hash that just verified should be replaced by `hash(password)`. */
  needsRehash(passwordHash: string): boolean;
}

/** OWASP's minimum recommendation for argon2id. */
export const ARGON2ID_PARAMS = Object.freeze({ memoryCost: 19456, timeCost: 2, parallelism: 1 });

interface Argon2Phc {
  readonly variant: string;
  readonly version: number;
  readonly m: number;
  readonly t: number;
  readonly p: number;
}

const PHC_ARGON2 = /^\$argon2(id|i|d)\$v=(\d+)\$([a-z]=\d+(?:,[a-z]=\d+)*)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

/** The parameters of an argon2 PHC string, whatever order they are written in; null if it is not one. */
function parseArgon2(phc: string): Argon2Phc | null {
  const match = PHC_ARGON2.exec(phc);
  if (match === null) return null;
  const params = new Map((match[3] ?? '').split(',').map((kv) => [kv.slice(0, 1), Number(kv.slice(2))] as const));
  const m = params.get('m');
  const t = params.get('t');
  const p = params.get('p');
  if (m === undefined || t === undefined || p === undefined || params.size !== 3) return null;
  return { variant: match[1] ?? '', version: Number(match[2]), m, t, p };
}

/**
 * The `argon2` package writes parameters as `m=..,p=..,t=..`; the reference implementation
 * (libargon2, and so PHP, argon2-cffi, most other verifiers) writes and expects `m=..,t=..,p=..`.
 * Stored hashes use the reference order so they stay portable across tools and languages.
 */
function referenceOrder(phc: string): string {
  return phc.replace(/^(\$argon2(?:id|i|d)\$v=\d+\$)([^$]+)(\$)/, (_all, head: string, params: string, tail: string) => {
    const map = new Map(params.split(',').map((kv) => [kv.slice(0, 1), kv] as const));
    const ordered = ['m', 't', 'p'].map((k) => map.get(k));
    if (ordered.some((v) => v === undefined) || map.size !== 3) return `${head}${params}${tail}`;
    return `${head}${ordered.join(',')}${tail}`;
  });
}

/**
 * argon2id through the `argon2` package, whose work runs on the libuv thread pool, so hashing
 * never blocks the event loop.
 */
export function createArgon2Hasher(params: { memoryCost: number; timeCost: number; parallelism: number } = ARGON2ID_PARAMS): PasswordHasher {
  return {
    hash: async (password) => referenceOrder(await argon2.hash(password, { type: argon2.argon2id, ...params })),
    async verify(passwordHash, password) {
      if (parseArgon2(passwordHash) === null) return false;
      try {
        return await argon2.verify(passwordHash, password);
      } catch {
        // A corrupt hash must fail the login, not fault the request.
        return false;
      }
    },
    needsRehash(passwordHash) {
      const phc = parseArgon2(passwordHash);
      if (phc === null) return true;
      // Stronger-than-required parameters are kept; only weaker ones or another variant are upgraded.
      return phc.variant !== 'id' || phc.version !== 19
        || phc.m < params.memoryCost || phc.t < params.timeCost || phc.p < params.parallelism;
    },
  };
}
