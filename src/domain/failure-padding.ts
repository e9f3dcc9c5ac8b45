/**
 * Equal timing for every ValidateUser failure (issue 6, "No user enumeration"): whatever made a
 * login fail (unknown login, wrong password, disabled, throttled, not granted, bad IP, a password
 * too long to hash), the answer is not sent before the recent median duration of successful
 * logins has passed, so response time does not tell one failure from another, nor from a
 * success. The median of the last `window` successes follows the machine's real speed.
 */

export interface FailurePadding {
  /** Records how long a successful login took. */
  recordSuccess(durationMs: number): void;
  /** Waits until a failure that started at `startedMs` has lasted the median success duration. */
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
  const samples: number[] = [];
  let next = 0;
  let median = options.initialMs ?? 0;

  function recompute(): void {
    const sorted = [...samples].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    median = sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
  }

  return {
    recordSuccess(durationMs: number): void {
      if (!Number.isFinite(durationMs) || durationMs < 0) return;
      if (samples.length < window) samples.push(durationMs);
      else samples[next] = durationMs;
      next = (next + 1) % window;
      recompute();
    },
    async pad(startedMs: number): Promise<void> {
      const remaining = median - (now() - startedMs);
      if (remaining > 1) await sleep(remaining);
    },
    targetMs: () => median,
    now,
  };
}
