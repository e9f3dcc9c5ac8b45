/**
 * Password hashing at a low CPU priority (src/ops/hashing-priority.ts): the threads that
 * run argon2id get the nice value, and only they. Checked where it counts: an argon2id hash run
 * afterwards spends its CPU on a thread with the lowered priority, the event loop keeps its own,
 * and the real server does this at start.
 */
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createArgon2Hasher } from '../../src/domain/password-hasher.js';
import { lowerHashingPriority } from '../../src/ops/hashing-priority.js';
import { libuvPoolSize } from '../../src/ops/hashing-threads.js';
import { killAll, requireDist, startServer } from '../support/server-process.js';

const onLinux = process.platform === 'linux';

/** CPU nanoseconds per thread of process `pid`. */
function threadRuntimes(pid: number | 'self' = 'self'): Map<number, number> {
  const dir = `/proc/${pid}/task`;
  return new Map(readdirSync(dir).map((tid) => [Number(tid), Number(readFileSync(`${dir}/${tid}/schedstat`, 'latin1').split(' ')[0])]));
}

/** The nice value of each thread of process `pid` (field 19 of /proc/<pid>/task/<tid>/stat). */
function threadNice(pid: number): Map<number, number> {
  const dir = `/proc/${pid}/task`;
  return new Map(readdirSync(dir).map((tid) => {
    const stat = readFileSync(`${dir}/${tid}/stat`, 'latin1');
    return [Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])];
  }));
}


describe.runIf(onLinux)('lowerHashingPriority (Linux)', () => {
  it('changes nothing when the configured nice value is 0', async () => {
    const before = threadNice(process.pid);
    expect(await lowerHashingPriority(0)).toEqual({ applied: false, reason: 'hashing.nice is 0' });
    expect(threadNice(process.pid)).toEqual(before);
  });

  it('lowers exactly the thread pool, where argon2id then runs; the calling thread keeps its priority', async () => {
    // More rounds than serve's 3: under the whole suite's load (other files' threads busy) a round
    // is often blurred, and this test is about which threads are lowered, not about the retries.
    const result = await lowerHashingPriority(19, { rounds: 8 });
    if (!result.applied) throw new Error(`not applied: ${result.reason}`);
    expect(result.threads).toHaveLength(libuvPoolSize());
    const nice = threadNice(process.pid);
    const own = Number(readlinkSync('/proc/thread-self').split('/').pop());
    expect(nice.get(own)).toBe(0);
    expect(nice.get(process.pid)).toBe(0);
    expect([...nice].filter(([, n]) => n === 19).map(([tid]) => tid).sort((a, b) => a - b)).toEqual(result.threads);

    // A few verifications with the service's own parameters: the thread that did the work is a lowered one.
    const hasher = createArgon2Hasher();
    const hash = await hasher.hash('correct horse');
    for (let i = 0; i < 3; i++) {
      const before = threadRuntimes();
      expect(await hasher.verify(hash, 'correct horse')).toBe(true);
      const after = threadRuntimes();
      const [busiest] = [...after].map(([tid, ns]) => ({ tid, ns: ns - (before.get(tid) ?? ns) })).sort((a, b) => b.ns - a.ns);
      expect(result.threads).toContain(busiest?.tid);
      expect(getPriority(busiest?.tid ?? 0)).toBe(19);
    }
  });
});

describe.runIf(onLinux)('serve (the real binary)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcapi-nice-'));
  afterAll(() => {
    killAll();
    rmSync(dir, { recursive: true, force: true });
  });

  const lowered = async (env: Record<string, string>): Promise<{ niced: number[]; main: number | undefined; log: string }> => {
    requireDist();
    const server = await startServer(['--db', `sqlite:${join(dir, `${Object.values(env).join('-') || 'default'}.db`)}`], { SVCAPI_LOG_LEVEL: 'info', ...env });
    // The probe runs once the service listens; its outcome is logged. (With 0, the default, there is no probe.)
    if ((env.SVCAPI_HASHING_NICE ?? '0') !== '0') await server.waitForOutput(/password hashing (threads run at a low|runs at the normal) CPU priority/);
    const serving = server.child.pid ?? 0;
    const nice = threadNice(serving);
    const niced = [...nice].filter(([, n]) => n !== 0).map(([, n]) => n);
    server.child.kill('SIGKILL');
    return { niced, main: nice.get(serving), log: server.output() };
  };

  it('started as the deployment files start it, its hashing threads run at nice 10, its event loop at 0', async () => {
    const { niced, main, log } = await lowered({ SVCAPI_HASHING_NICE: '10' });
    expect(log).toMatch(/"nice":10,"threads":4,.*password hashing threads run at a low CPU priority/);
    expect(niced).toEqual([10, 10, 10, 10]);
    expect(main).toBe(0);
  });

  it('started bare, every thread runs as the process (the nice value is the deployment\'s)', async () => {
    const bare = await lowered({});
    expect(bare.niced).toEqual([]);
    expect(bare.log).not.toMatch(/CPU priority/);
  });

  it('follows hashing.nice, and leaves every thread alone with 0', async () => {
    expect((await lowered({ SVCAPI_HASHING_NICE: '7', UV_THREADPOOL_SIZE: '2' })).niced).toEqual([7, 7]);
    const off = await lowered({ SVCAPI_HASHING_NICE: '0' });
    expect(off.niced).toEqual([]);
    expect(off.log).not.toMatch(/CPU priority/);
  });
});
