import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Two suites (docs/testing.md). `npm test` runs the fast one: units and the whole service in
 * process, on SQLite, plus the CLI and the server as child processes. `npm run test:system` runs
 * these files, which need services or programs beside Node (PostgreSQL, Chromium, nginx) or
 * several serving processes at once, then the real SOAP clients (scripts/test-clients.mjs).
 */
const SYSTEM = [
  'test/**/postgres-*.test.ts', // PostgreSQL (test/support/postgres.ts refuses to run in the fast suite)
  'test/multi-instance/**/*.test.ts', // several instances on one PostgreSQL database
  'test/cluster/**/*.test.ts', // serve --workers
  'test/browser/**/*.test.ts', // Chromium
  'test/ops/nginx-proxy.test.ts', // nginx in front, with --workers
];

export default defineConfig({
  test: {
    // Builds dist/ once, for the tests that spawn the real binary (crash safety).
    globalSetup: ['test/global-setup.ts'],
    // argon2 hashing and child-process tests are slow on 2 cores; no test asserts timing.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      // At least two files at once: most of their time is spent waiting on child processes and
      // sockets (vitest's default, one less than the cores, is one file at a time on 2 cores).
      { extends: true, test: { name: 'fast', include: ['test/**/*.test.ts'], exclude: SYSTEM, env: { SVCAPI_TEST_SUITE: 'fast' }, maxWorkers: Math.max(2, availableParallelism() - 1) } },
      // One file at a time: floods, outages and several serving processes each load the machine.
      { extends: true, test: { name: 'system', include: SYSTEM, env: { SVCAPI_TEST_SUITE: 'system' }, maxWorkers: 1 } },
    ],
  },
});
