/**
 * Builds dist/ once per test run (tsc -p tsconfig.build.json) so tests that need a real server
 * process (test/crash-safety.test.ts) can spawn `node dist/cli/main.js`. The build is incremental
 * (tsconfig.build.json): an unchanged tree costs a quarter of a full build. A failed build does
 * not fail the whole run: the outcome is handed to the tests, and those that need dist/ report it.
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    distBuild: { ok: boolean; output: string };
  }
}

export default function setup(project: TestProject): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, encoding: 'utf8' });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ? String(result.error) : ''}`;
  project.provide('distBuild', { ok: result.status === 0, output });
}
