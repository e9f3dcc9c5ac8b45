/**
 * The process settings of a deployment (docs/operations.md, "Memory" and "Hashing threads") live
 * in the deployment files: the memory ones only act when in place before the process starts, and
 * the hashing threads' nice value is the deployment's choice, not the code's. The systemd unit and the
 * Containerfile must set the same ones, node must accept them where they are written (it refuses
 * to start on a V8 flag in NODE_OPTIONS that NODE_OPTIONS does not allow), and the benchmark must
 * read the same values from the unit (bench/lib/deployed.mjs), so that it measures what ships;
 * `npm start`, the README's way to run it, sets them as well.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/server-process.js';

interface Launch {
  readonly env: Record<string, string>;
  readonly nodeArgs: string[];
}

const EXPECTED: Launch = {
  env: { MALLOC_ARENA_MAX: '1', NODE_OPTIONS: '--max-semi-space-size=4', SVCAPI_HASHING_NICE: '10' },
  nodeArgs: ['--heap-growing-percent=100'],
};

function fromUnit(): Launch {
  const lines = readFileSync(join(ROOT, 'deploy/systemd/svcapi-auth.service'), 'utf8').split('\n').map((l) => l.trim());
  const env: Record<string, string> = {};
  for (const line of lines) {
    const m = /^Environment=([A-Za-z_]\w*)=(.*)$/.exec(line);
    if (m?.[1] !== undefined && m[2] !== undefined) env[m[1]] = m[2];
  }
  const words = (lines.find((l) => l.startsWith('ExecStart=')) ?? '').slice('ExecStart='.length).split(/\s+/);
  const script = words.findIndex((w) => w.endsWith('/dist/cli/svcapi-auth.cjs'));
  return { env, nodeArgs: words.slice(1, script) };
}

function fromContainerfile(): Launch {
  // Continuation lines joined, comments dropped.
  const text = readFileSync(join(ROOT, 'deploy/Containerfile'), 'utf8').split('\n').filter((l) => !l.trimStart().startsWith('#')).join('\n').replace(/\\\n/g, ' ');
  const env: Record<string, string> = {};
  for (const line of text.split('\n').filter((l) => l.startsWith('ENV '))) {
    for (const m of line.slice(4).matchAll(/([A-Za-z_]\w*)=(\S+)/g)) if (m[1] !== undefined && m[2] !== undefined) env[m[1]] = m[2];
  }
  delete env.NODE_ENV;
  const entry = /^ENTRYPOINT (\[.*\])$/m.exec(text)?.[1];
  const words = JSON.parse(entry ?? '[]') as string[];
  const script = words.indexOf('dist/cli/svcapi-auth.cjs');
  return { env, nodeArgs: words.slice(1, script) };
}

describe('deployment files', () => {
  it('the systemd unit and the Containerfile set the same process settings', () => {
    expect(fromUnit()).toEqual(EXPECTED);
    expect(fromContainerfile()).toEqual(EXPECTED);
  });

  it('npm start (the README\'s command) starts the service with them too', () => {
    const start = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts['start'] ?? '';
    const launch = /&& (.*?)\bnode (.*?)dist\/cli\/svcapi-auth\.cjs serve$/.exec(start);
    expect(launch, start).not.toBeNull();
    const env = Object.fromEntries((launch?.[1] ?? '').trim().split(/\s+/).filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as const));
    expect({ env, nodeArgs: (launch?.[2] ?? '').trim().split(/\s+/).filter(Boolean) }).toEqual(EXPECTED);
  });

  it('node starts with them, and the benchmark reads the same from the unit', () => {
    const script = "const { deployedNode } = await import('./bench/lib/deployed.mjs'); console.log(JSON.stringify({ deployed: deployedNode(), env: process.env.MALLOC_ARENA_MAX, execArgv: process.execArgv }));";
    const r = spawnSync(process.execPath, [...EXPECTED.nodeArgs, '--input-type=module', '-e', script], {
      cwd: ROOT, encoding: 'utf8', env: { ...process.env, ...EXPECTED.env },
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as { deployed: Launch; env: string; execArgv: string[] };
    expect(out.deployed).toEqual(EXPECTED);
    expect(out.env).toBe('1');
    expect(out.execArgv).toEqual(expect.arrayContaining(EXPECTED.nodeArgs));
  });
});
