#!/usr/bin/env node
/**
 * The `svcapi-auth` executable (package.json `bin`, `npm start`, deploy/): sizes libuv's thread
 * pool, then runs the command line through main.js.
 *
 * Password hashing shares that pool with the WAL syncs every token and ticket waits for and with
 * the log's writes (ops/hashing-threads.ts). libuv starts UV_THREADPOOL_SIZE threads (4 when it is
 * not set), reading it once, at the pool's first use; for an ES module entry point that is
 * before the module's first line runs (Node reads the module's source on the pool), so the size
 * can only be chosen here, in a CommonJS entry that runs before any of that.
 *
 * The size: the hashing a single process does by default (cores - 1, as
 * domain/bounded-hasher.ts defaultHashingLimits) or SVCAPI_HASHING_MAX_CONCURRENT if larger,
 * plus the threads kept free (ops/hashing-threads.ts POOL_SPARE_THREADS), at least libuv's
 * own 4: 4 on 2 to 3 cores, cores + 1 above. A `serve --workers` worker inherits it (its share
 * of the hashing is smaller). An operator's own UV_THREADPOOL_SIZE is left as it is; a larger
 * hashing.maxConcurrent from a config file is cut to fit by serve, which says so.
 */
// A CommonJS module (see above), where TypeScript writes an import of node:os only this way.
// eslint-disable-next-line @typescript-eslint/no-require-imports
import os = require('node:os');

/** ops/hashing-threads.ts POOL_SPARE_THREADS (an ES module, which this file cannot load before sizing the pool). */
const POOL_SPARE_THREADS = 2;

function poolSize(env: NodeJS.ProcessEnv): number {
  const fromEnv = Number.parseInt(env.SVCAPI_HASHING_MAX_CONCURRENT ?? '', 10);
  const hashing = Math.max(1, os.availableParallelism() - 1, Number.isSafeInteger(fromEnv) ? Math.min(fromEnv, 256) : 0);
  return Math.max(4, hashing + POOL_SPARE_THREADS);
}

if (process.env.UV_THREADPOOL_SIZE === undefined) process.env.UV_THREADPOOL_SIZE = String(poolSize(process.env));

import('./main.js').then((main) => main.runAsEntryPoint()).catch((error: unknown) => {
  process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
