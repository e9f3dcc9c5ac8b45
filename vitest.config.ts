import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Builds dist/ once, for the tests that spawn the real binary (crash safety).
    globalSetup: ['test/global-setup.ts'],
    // argon2 hashing and child-process tests are slow on 2 cores; no test asserts timing.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
