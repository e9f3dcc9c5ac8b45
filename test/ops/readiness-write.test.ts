/**
 * Readiness reflects the ability to issue a token: a database that answers reads but refuses
 * writes makes /health/ready 503, with the reason, on SQLite (a real read-only file) and on
 * PostgreSQL (read-only transactions: postgres-readiness-write.test.ts); the write probe runs in the background and /health/ready
 * only reads its kept outcome.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, inject, it, vi } from 'vitest';
import { createReadiness, OLDER_VERSION_WINDOW_MS } from '../../src/ops/readiness.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store, WriteProbe } from '../../src/store/store.js';
import { runCliCaptured, sink } from '../support/run-cli.js';
import { bin, root as projectRoot, run } from './support.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-ready-write-'));
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface ProbeCounter {
  probes: number;
  fail: boolean;
  /** Called as each probe's write returns or throws. */
  probed?: () => void;
}

/** A store whose writes fail as a read-only SQLite file's do, counting the probes. */
function failingWrites(store: Store, counter: ProbeCounter): Store {
  return new Proxy(store, {
    get: (target, prop) => (prop === 'probeWrite'
      ? async (now: Date): Promise<WriteProbe> => {
        counter.probes += 1;
        try {
          if (counter.fail) throw Object.assign(new Error('attempt to write a readonly database'), { code: 'SQLITE_READONLY' });
          return await target.probeWrite(now);
        } finally {
          counter.probed?.();
        }
      }
      : Reflect.get(target, prop)),
  });
}

describe('the write probe', () => {
  it('makes readiness fail with the reason while writes fail, and pass again once they work', async () => {
    const store = await openStore('sqlite::memory:');
    const counter: ProbeCounter = { probes: 0, fail: true };
    const readiness = createReadiness({ store: failingWrites(store, counter), expectedSchemaVersion: await store.schemaVersion(), writeProbeIntervalMs: 40 });
    readiness.setServing(true);
    readiness.startWriteProbe();
    try {
      expect(await readiness.check()).toMatchObject({ ready: false, status: 'not ready', checks: { store: 'ok', write: 'attempt to write a readonly database' } });
      // The next scheduled probe writes; readiness keeps its outcome once the write returned.
      await new Promise<void>((resolve) => {
        counter.probed = resolve;
        counter.fail = false;
      });
      await nextTurn();
      expect(await readiness.check()).toMatchObject({ ready: true, checks: { write: 'ok' } });
    } finally {
      await readiness.stopWriteProbe();
      await store.close();
    }
  });

  it('runs in the background: many checks cost no write of their own', async () => {
    const store = await openStore('sqlite::memory:');
    const counter: ProbeCounter = { probes: 0, fail: false };
    const readiness = createReadiness({ store: failingWrites(store, counter), expectedSchemaVersion: await store.schemaVersion(), writeProbeIntervalMs: 60_000 });
    readiness.setServing(true);
    readiness.startWriteProbe();
    try {
      for (let i = 0; i < 50; i++) expect((await readiness.check()).ready).toBe(true);
      expect(counter.probes).toBe(1);
    } finally {
      await readiness.stopWriteProbe();
      await store.close();
    }
  });

  it('commits a real write on both kinds of store (the health_probe row)', async () => {
    const store = await openStore('sqlite::memory:');
    try {
      // A database no older version ever probed: none is serving.
      await expect(store.probeWrite(new Date('2025-01-01T00:00:00Z'))).resolves.toEqual({ olderVersionMsAgo: null });
    } finally {
      await store.close();
    }
  });
});

/**
 * The review's case, for real: the service runs as a user that may read the database file but
 * not write it (mode 0444, not its owner; the directory writable, so the -shm file can be made).
 * Tests run as root, which writes a 0444 file anyway: the server runs as `nobody`.
 */
describe('an older version on the same database (migration 18)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('counts one as serving until a probe has answered, and until 10 minutes after its last probe; the log says when one appears and when it is gone', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = await openStore('sqlite::memory:');
    let olderVersionMsAgo: number | null = 2000;
    const scripted = new Proxy(store, {
      get: (target, prop) => (prop === 'probeWrite' ? async (): Promise<WriteProbe> => ({ olderVersionMsAgo }) : Reflect.get(target, prop)),
    });
    const logs = sink();
    const readiness = createReadiness({ store: scripted, expectedSchemaVersion: await store.schemaVersion(), writeProbeIntervalMs: 1000, logger: pino(logs.stream) });
    const after = async (ms: number): Promise<boolean> => {
      vi.setSystemTime(Date.now() + ms);
      await readiness.check(); // probes again once the last probe is two periods old
      return readiness.olderVersionServing();
    };
    try {
      // Nothing known before the first probe: tickets go where every version looks.
      expect(readiness.olderVersionServing()).toBe(true);
      expect(await after(0)).toBe(true);
      expect(logs.text()).toMatch(/"lastProbeSecondsAgo":2,.*an instance of an older svcapi-auth version is serving from this database/);
      // Its probes stop: it counts until 10 minutes after the last one, whatever our probes say meanwhile.
      olderVersionMsAgo = 2000 + 5 * 60_000;
      expect(await after(5 * 60_000)).toBe(true);
      olderVersionMsAgo = OLDER_VERSION_WINDOW_MS - 1000;
      expect(await after(OLDER_VERSION_WINDOW_MS - 2000 - 5 * 60_000 - 1000)).toBe(true);
      expect(logs.text()).not.toMatch(/kept in issue order/);
      olderVersionMsAgo = OLDER_VERSION_WINDOW_MS + 2000;
      expect(await after(3000)).toBe(false);
      expect(logs.text()).toMatch(/no instance of an older svcapi-auth version has probed for 10 minutes: login tickets are kept in issue order/);
      // Time alone ends it too, between two probes.
      olderVersionMsAgo = 0;
      expect(await after(3000)).toBe(true);
      vi.setSystemTime(Date.now() + OLDER_VERSION_WINDOW_MS);
      expect(readiness.olderVersionServing()).toBe(false);
      expect(logs.text().match(/is serving from this database/g)).toHaveLength(2);
    } finally {
      await readiness.stopWriteProbe();
      await store.close();
    }
  });

  it('a database no older version probed: none, from the first probe on, and nothing logged', async () => {
    const store = await openStore('sqlite::memory:');
    const logs = sink();
    const readiness = createReadiness({ store, expectedSchemaVersion: await store.schemaVersion(), logger: pino(logs.stream) });
    try {
      readiness.setServing(true);
      expect((await readiness.check()).ready).toBe(true);
      expect(readiness.olderVersionServing()).toBe(false);
      expect(logs.text()).not.toMatch(/older svcapi-auth version/);
    } finally {
      await store.close();
    }
  });
});

describe.skipIf(process.platform === 'win32')('serve on a SQLite file it cannot write', () => {
  it('answers /health/ready 503 with the reason, as ValidateUser fails', async () => {
    const build = inject('distBuild');
    expect(build.ok, build.output).toBe(true);
    const path = join(dir, 'ro', 'auth.db');
    expect((await run(['migrate', '--db', path])).code).toBe(0);
    expect((await runCliCaptured(['user', 'add', 'alice', '--app', '2', '--password-stdin', '--db', path], { stdin: 'pw\n' })).code).toBe(0);
    // A first start has made the installation's secrets; this database is past its first start.
    expect((await run(['audit', '--login', 'alice', '--db', path])).code).toBe(0);
    for (let d = dirname(path); d !== dirname(dir); d = dirname(d)) chmodSync(d, 0o777);
    chmodSync(path, 0o444);

    const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--management-port', '0', '--db', path], {
      cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '' },
      ...(process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {}),
    });
    children.push(child);
    const out = sink();
    let err = '';
    child.stdout.pipe(out.stream);
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    const exited = new Promise<never>((_resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`serve exited (${code}):\n${out.text()}\n${err}`)));
    });
    exited.catch(() => undefined);
    const started = await Promise.race([Promise.all([out.waitFor(/^Service: (\S+)$/m), out.waitFor(/^Management: (\S+)/m)]), exited]);
    const urls = { service: started[0][1] ?? '', management: started[1][1] ?? '' };

    const login = await fetch(`${urls.service}/ValidateUser`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'login=alice&password=pw&AppId=2&IPAddress=',
    });
    expect(login.status).toBe(500);
    expect((await fetch(`${urls.management}/health/live`)).status).toBe(200);
    const ready = await fetch(`${urls.management}/health/ready`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({
      ready: false, status: 'not ready', checks: { serving: true, store: 'ok', schema: { ok: true }, write: 'attempt to write a readonly database' },
    });
    // The operator is told, in the log (written asynchronously: wait for it).
    await expect(out.waitFor(/readiness: the database does not take writes/), err).resolves.toBeTruthy();
  });
});
