/**
 * The `svcapi-auth` executable (package.json bin, npm start, deploy/): dist/cli/svcapi-auth.cjs,
 * a CommonJS entry that sizes libuv's thread pool and then runs main.js
 * (src/cli/svcapi-auth.cts). It must behave as main.js does: the same commands, output and exit
 * codes. Its pool sizing is tested by test/ops/hashing-threads.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, EXECUTABLE, requireDist, ROOT } from '../support/server-process.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-executable-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(script: string, args: readonly string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [script, ...args], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, SVCAPI_LOG_LEVEL: 'warn' } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('the svcapi-auth executable', () => {
  it('is the package\'s bin', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(join(ROOT, pkg.bin['svcapi-auth'] ?? '')).toBe(EXECUTABLE);
  });

  it('runs the commands as main.js does: output and exit codes', () => {
    requireDist();
    for (const args of [['bogus'], ['user', 'list', '--db', `sqlite:${join(dir, 'missing', 'x.db')}`], ['help', 'user']]) {
      expect(run(EXECUTABLE, args)).toEqual(run(BIN, args));
    }
    expect(run(EXECUTABLE, ['bogus']).status).toBe(2);
    const db = join(dir, 'made.db');
    const made = run(EXECUTABLE, ['migrate', '--db', `sqlite:${db}`]);
    expect(made.status, made.stderr).toBe(0);
    expect(existsSync(db)).toBe(true);
    expect(run(EXECUTABLE, ['user', 'list', '--db', `sqlite:${db}`]).status).toBe(0);
  });
});
