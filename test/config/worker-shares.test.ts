/**
 * The defaults that `serve --workers` shares out among its workers: the hashing of an 8-core
 * machine (defaultHashingLimits) and a PostgreSQL pool's 10 connections (postgresPoolShare). The
 * command resolves its workers before its configuration, so that each worker takes its part
 * instead of a whole process's. The machine's cores are this test's (mocked).
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import type * as ClusterModule from '../../src/cli/cluster.js';
import type { Config } from '../../src/config/config.js';
import type * as OsModule from 'node:os';

vi.mock('node:os', async (importOriginal) => ({ ...(await importOriginal<typeof OsModule>()), availableParallelism: () => 8 }));
const served = vi.hoisted(() => [] as { config: Config; workers: number | undefined }[]);
vi.mock('../../src/cli/cluster.js', async (importOriginal) => ({
  ...(await importOriginal<typeof ClusterModule>()),
  serveCommand: (config: Config, _io: unknown, workers: number | undefined) => {
    served.push({ config, workers });
    return Promise.resolve(0);
  },
}));

const { loadConfig, postgresPoolShare } = await import('../../src/config/load-config.js');
const { runServeCli } = await import('../../src/cli/serve-program.js');

async function serveWith(argv: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<{ config: Config; workers: number | undefined }> {
  served.length = 0;
  const code = await runServeCli(['serve', ...argv], { stdin: new PassThrough(), stdout: new PassThrough(), stderr: new PassThrough(), env });
  expect(code).toBe(0);
  const [call] = served;
  if (call === undefined) throw new Error('serve did not run');
  return call;
}

describe('hashing.maxConcurrent by default, on 8 cores', () => {
  it('is 7 for a process alone, the share of each worker in a cluster, and what the operator set whenever set', () => {
    expect(loadConfig({ env: {} }).hashing.maxConcurrent).toBe(7);
    expect(loadConfig({ env: {}, workers: 8 }).hashing.maxConcurrent).toBe(1);
    expect(loadConfig({ env: {}, workers: 2 }).hashing.maxConcurrent).toBe(4);
    expect(loadConfig({ env: { SVCAPI_HASHING_MAX_CONCURRENT: '3' }, workers: 8 }).hashing.maxConcurrent).toBe(3);
  });

  it('serve --workers auto gives each of its 8 workers one; SVCAPI_WORKERS counts alike; serve alone keeps 7', async () => {
    const auto = await serveWith(['--workers', 'auto']);
    expect(auto.workers).toBe(8);
    expect(auto.config.hashing.maxConcurrent).toBe(1);
    const fromEnv = await serveWith([], { SVCAPI_WORKERS: '2' });
    expect(fromEnv.workers).toBe(2);
    expect(fromEnv.config.hashing.maxConcurrent).toBe(4);
    expect((await serveWith([])).config.hashing.maxConcurrent).toBe(7);
  });
});

describe('a PostgreSQL pool\'s connections by default (the URL\'s pool_max when it has one: postgres-pool-size.test.ts)', () => {
  it('are 10 for a process alone and the workers\' share of 10, at least 2 each', () => {
    expect([1, 2, 3, 4, 5, 8, 64].map(postgresPoolShare)).toEqual([10, 5, 4, 3, 2, 2, 2]);
    expect(loadConfig({ env: {} }).postgresPoolMax).toBe(10);
  });

  it('reach each worker of serve --workers', async () => {
    expect((await serveWith(['--workers', 'auto'])).config.postgresPoolMax).toBe(2);
    expect((await serveWith(['--workers', '2'])).config.postgresPoolMax).toBe(5);
    expect((await serveWith([])).config.postgresPoolMax).toBe(10);
  });
});
