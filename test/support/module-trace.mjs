/**
 * Preloaded with `--import` (NODE_OPTIONS) into a process under test: records which modules it
 * loaded, for tests that assert what a command does not load. Writes, when the process exits,
 * `$SVCAPI_MODULE_TRACE.<pid>`: every URL the ES module loader resolved (module-trace-hooks.mjs,
 * on the loader's thread) and every file in the CommonJS cache (packages loaded with require).
 * Only the main thread of a process records; each process (a cluster worker, the database
 * check's child) writes its own file.
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import process from 'node:process';
import { isMainThread } from 'node:worker_threads';

const base = process.env.SVCAPI_MODULE_TRACE;
if (base !== undefined && base !== '' && isMainThread) {
  const file = `${base}.${process.pid}`;
  writeFileSync(file, '');
  register('./module-trace-hooks.mjs', import.meta.url, { data: { file } });
  const cache = createRequire(import.meta.url).cache;
  process.on('exit', () => appendFileSync(file, Object.keys(cache).map((path) => `cjs ${path}\n`).join('')));
}
