/**
 * Equal timing for every ValidateUser failure ("No user enumeration"): whatever made a
 * login fail (unknown login, wrong password, disabled, throttled, not granted, bad IP, a password
 * too long to hash), the answer is not sent before the recent median duration of successful
 * logins has passed, so response time does not tell one failure from another, nor from a
 * success. The median of the last `window` successes (and failed verifications, below) follows
 * the machine's real speed.
 *
 * A failed login that verified a password (a wrong one, or an unknown login against the dummy
 * hash) measured the same cost up to the verification's end, and counts in the same window:
 * otherwise, while nobody logs in successfully (a night of failed attempts), the target stayed
 * at the speed of the last success, and on a machine that had since slowed down (a burst of
 * work, a noisy VM) the failures that skip hashing (throttled, a password too long) were
 * answered faster than the ones that hash: 33 ms against 42 in CI's timing check of
 * 2026-11-29, after 5 successes at the start and 1,400 failures.
 *
 * With lazy migration, a login unknown here (or awaiting a reset) also waits for the old service,
 * which costs far more than a verification (331 ms median against 32 ms for a known login's wrong
 * password, measured against a 300 ms stand-in). So every failure is padded to the larger of the
 * two medians: recent successes, and recent logins that asked the old service (each at most the
 * legacy timeout plus a verification, since the call is cut off there). A known login's wrong
 * password then takes as long as an unknown one's.
 */

export interface FailurePadding {
  /** Records how long a successful login took. */
  recordSuccess(durationMs: number): void;
  /** Records how long a failing login took up to the end of its password verification (the same window as successes). */
  recordVerification(durationMs: number): void;
  /** Records how long a login took up to the old service's answer (lazy migration asked it). */
  recordLegacyCall(durationMs: number): void;
  /** Waits until a failure that started at `startedMs` has lasted the target (targetMs). */
  pad(startedMs: number): Promise<void>;
  /** The current target, for tests and metrics. */
  targetMs(): number;
  /** The clock `pad` measures with (milliseconds). */
  now(): number;
}

export interface PaddingOptions {
  readonly window?: number;
  /** Milliseconds now (performance.now by default). */
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  /** Used until the first success is seen: roughly one argon2id verification. */
  readonly initialMs?: number;
}

export function createFailurePadding(options: PaddingOptions = {}): FailurePadding {
  const window = options.window ?? 64;
  const now = options.now ?? (() => performance.now());
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const successes = createMedianWindow(window, options.initialMs ?? 0);
  const legacyCalls = createMedianWindow(window, 0);
  const target = (): number => Math.max(successes.median(), legacyCalls.median());

  return {
    recordSuccess: (durationMs) => successes.record(durationMs),
    recordVerification: (durationMs) => successes.record(durationMs),
    recordLegacyCall: (durationMs) => legacyCalls.record(durationMs),
    async pad(startedMs: number): Promise<void> {
      const remaining = target() - (now() - startedMs);
      if (remaining > 1) await sleep(remaining);
    },
    targetMs: target,
    now,
  };
}

/** The median of the last `size` durations recorded (`initial` until the first). */
function createMedianWindow(size: number, initial: number): { record(durationMs: number): void; median(): number } {
  const samples: number[] = [];
  let next = 0;
  let median = initial;
  return {
    record(durationMs: number): void {
      if (!Number.isFinite(durationMs) || durationMs < 0) return;
      if (samples.length < size) samples.push(durationMs);
      else samples[next] = durationMs;
      next = (next + 1) % size;
      const sorted = [...samples].sort((a, b) => a - b);
      const mid = sorted.length >> 1;
      median = sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
    },
    median: () => median,
  };
}
