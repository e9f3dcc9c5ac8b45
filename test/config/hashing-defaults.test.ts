/**
 * The hashing default shares an 8-core machine among `serve --workers` processes
 * (defaultHashingLimits): the command resolves its workers before its configuration, so that
 * each worker takes its part instead of cores - 1. The machine's cores are this test's (mocked).
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

const { loadConfig } = await import('../../src/config/load-config.js');
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
