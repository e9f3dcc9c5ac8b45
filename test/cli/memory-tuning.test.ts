/**
 * When `serve` starts itself again with its memory settings (src/cli/memory-tuning.ts, issue 9):
 * only a single serving process on Linux that lacks them, never twice, never under a debugger
 * or profiler, and never over an operator's own values. A built server really runs relaunched
 * with them (its process tree holds one service process whose environment carries them).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missingTuning, relaunchTuning } from '../../src/cli/memory-tuning.js';
import { requireDist, startServer, type ServerProcess } from '../support/server-process.js';

const FULL = { env: { MALLOC_ARENA_MAX: '1' }, execArgv: ['--max-semi-space-size=4'] };

describe('relaunchTuning', () => {
  it('relaunches a single serve on Linux with both settings', () => {
    expect(relaunchTuning(['serve', '--port', '0'], {}, [], 'linux')).toEqual(FULL);
    expect(relaunchTuning(['serve', '--workers', '1'], {}, [], 'linux')).toEqual(FULL);
  });

  it('does not relaunch other commands, other platforms, the relaunched process, cluster primaries or attached tools', () => {
    expect(relaunchTuning(['user', 'list'], {}, [], 'linux')).toBeNull();
    expect(relaunchTuning(['serve'], {}, [], 'darwin')).toBeNull();
    expect(relaunchTuning(['serve'], { SVCAPI_RELAUNCHED: '1' }, [], 'linux')).toBeNull();
    expect(relaunchTuning(['serve', '--workers', '4'], {}, [], 'linux')).toBeNull();
    expect(relaunchTuning(['serve', '--workers=auto'], {}, [], 'linux')).toBeNull();
    expect(relaunchTuning(['serve'], { SVCAPI_WORKERS: '2' }, [], 'linux')).toBeNull();
    expect(relaunchTuning(['serve'], {}, ['--cpu-prof'], 'linux')).toBeNull();
    expect(relaunchTuning(['serve'], { NODE_OPTIONS: '--inspect' }, [], 'linux')).toBeNull();
  });

  it('keeps what the operator set and adds only what is missing', () => {
    expect(relaunchTuning(['serve'], { MALLOC_ARENA_MAX: '4', NODE_OPTIONS: '--max_semi_space_size=8' }, [], 'linux')).toBeNull();
    expect(missingTuning({ MALLOC_ARENA_MAX: '2' }, [])).toEqual({ env: {}, execArgv: ['--max-semi-space-size=4'] });
    expect(missingTuning({}, ['--max-semi-space-size=16'])).toEqual({ env: { MALLOC_ARENA_MAX: '1' }, execArgv: [] });
  });
});

describe.runIf(process.platform === 'linux')('a built serve process', () => {
  let server: ServerProcess;
  const dir = mkdtempSync(join(tmpdir(), 'svcapi-tuning-'));
  beforeAll(async () => {
    requireDist();
    server = await startServer(['--db', join(dir, 'db.sqlite')], { NODE_OPTIONS: '' });
  });
  afterAll(async () => {
    server.child.kill('SIGTERM');
    expect(await server.exited).toEqual({ code: 0, signal: null });
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves from a process that runs with the memory settings', () => {
    const children = readFileSync(`/proc/${server.child.pid}/task/${server.child.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    expect(children).toHaveLength(1);
    const env = readFileSync(`/proc/${children[0]}/environ`, 'utf8').split('\0');
    expect(env).toContain('MALLOC_ARENA_MAX=1');
    expect(readFileSync(`/proc/${children[0]}/cmdline`, 'utf8').split('\0')).toContain('--max-semi-space-size=4');
  });
});
