/**
 * Password hashing and the writes every request waits for share libuv's thread pool: argon2
 * queues its work there, and so do the SQLite WAL syncs that each token, ticket and sliding
 * token's use waits for (store/sqlite/wal-sync.ts, one at a time) and the log's writes
 * (ops/fd-writer.ts, one at a time). With every pool thread hashing, those waited for a hash to
 * end: on a machine of 5 cores or more (hashing.maxConcurrent cores - 1 against libuv's 4
 * threads), a GetUserLoginURL took 740–840 ms instead of 3–25 ms while four logins of a
 * 0.3-second hash were under way (2026-11-30, 2 cores, hashing.maxConcurrent 4; its test is
 * test/ops/hashing-threads.test.ts); during a login flood every durable write and the log's
 * writes wait so.
 *
 * So hashing never takes the last POOL_SPARE_THREADS threads: serve cuts hashing.maxConcurrent
 * to the pool's size less those, and says so. The pool's size is fixed when the process first
 * uses it, which for an ES module entry point is before its first line runs; the `svcapi-auth`
 * executable (cli/svcapi-auth.cts) is a CommonJS entry that sizes it for the default first.
 */

/** One for the WAL syncs, one for the log's writes and the rest (DNS lookups, file opens). */
export const POOL_SPARE_THREADS = 2;

/**
 * The number of threads libuv starts (src/threadpool.c `init_threads`): UV_THREADPOOL_SIZE read
 * with atoi, 0 meaning 1, capped at 1024; 4 when it is not set. Read from the environment the
 * process started with (libuv reads it once, at the pool's first use).
 */
export function libuvPoolSize(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.UV_THREADPOOL_SIZE;
  if (text === undefined) return 4;
  const n = Number.parseInt(text.trim(), 10);
  if (!Number.isFinite(n) || n <= 0) return n < 0 ? 1024 : 1;
  return Math.min(n, 1024);
}

/** How many hash operations may run at once in a pool of `poolSize` threads: the setting, cut to leave the spare threads (at least 1). */
export function hashingSlots(maxConcurrent: number, poolSize: number): number {
  return Math.max(1, Math.min(maxConcurrent, poolSize - POOL_SPARE_THREADS));
}
