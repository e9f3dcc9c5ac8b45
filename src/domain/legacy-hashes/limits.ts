/**
 * Caps on the cost parameters a stored hash may carry. A hash is a string anyone with write access
 * to an import file controls; without caps one crafted row (argon2 m=4 GiB, PBKDF2 with 2^31
 * iterations, scrypt N=2^30) would exhaust memory or hold a CPU for minutes on every login.
 * Checked when a hash is imported (the row is refused as "over-limits") and again before every
 * verification (the login fails, after the same dummy work as any failure).
 */
export const HASH_LIMITS = Object.freeze({
  /**
   * PBKDF2 work: iterations x output blocks (ceil(length / digest size)); covers ASP.NET Identity
   * v2/v3 and $pbkdf2-*$ strings. 1,000,000 is ~10x OWASP's PBKDF2-HMAC-SHA256 advice.
   */
  maxPbkdf2Work: 1_000_000,
  /** scrypt memory, 128 * N * r bytes. */
  maxScryptMemoryBytes: 64 * 1024 * 1024,
  maxScryptParallelism: 16,
  /** bcrypt cost (log2 rounds); 14 is ~1 s in pure JavaScript. */
  maxBcryptCost: 14,
  /** argon2 memory (KiB), passes and lanes. */
  maxArgon2MemoryKiB: 256 * 1024,
  maxArgon2TimeCost: 10,
  maxArgon2Parallelism: 16,
  /** Salts and derived keys longer than these are not real-world hashes. */
  maxSaltBytes: 1024,
  maxDerivedKeyBytes: 1024,
});
