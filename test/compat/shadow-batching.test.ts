/**
 * Shadow mode's batches (src/compat/shadow.ts BATCH, BATCH_WAIT_MS; the pipelined client's cork
 * per turn, src/legacy/pipelined-forwarder.ts): sampled jobs are gathered and their requests go
 * out together, in one write per connection, rather than one write (and one answer to read, and
 * the turns of the event loop they wake) each. Counts only: the socket's writes, and how many
 * requests each read of a stand-in old service carried.
 */
import { createServer, Socket, type AddressInfo, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BATCH, createLegacyMirror, type LegacyMirror, type ShadowJob, type ShadowOutcome } from '../../src/compat/shadow.js';
import { DEFAULT_COMPAT_PROFILE } from '../../src/contract/compat-profile.js';

const BODY = Buffer.from('<r>true</r>');
const ANSWER = Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: text/xml; charset=utf-8\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY.toString()}`);

interface Standin {
  readonly url: string;
  /** Requests received in each read, in order. */
  readonly reads: number[];
  close(): Promise<void>;
}

/** Answers every request with ANSWER, and notes how many requests each read carried. */
async function standin(): Promise<Standin> {
  const reads: number[] = [];
  const server: Server = createServer((socket) => {
    socket.on('error', () => undefined);
    let pending = '';
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1');
      let requests = 0;
      for (;;) {
        const end = pending.indexOf('\r\n\r\n');
        if (end < 0) break;
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(pending.slice(0, end))?.[1] ?? 0);
        if (pending.length < end + 4 + length) break;
        pending = pending.slice(end + 4 + length);
        requests += 1;
        socket.write(ANSWER);
      }
      if (requests > 0) reads.push(requests);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/Authentication.asmx`,
    reads,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A mirror whose batches wait as long as a test may take: only a full batch, or idle(), starts one. */
function mirrorOf(url: string, batching: boolean, counted: ShadowOutcome[]): LegacyMirror {
  return createLegacyMirror({
    settings: { url, timeoutMs: 5000, mode: 'serve', frontOperations: [], shadow: { rate: 1, queue: 256, concurrency: 64, keep: 10, stateful: false, maxResponseBytes: 65536, cpuShare: 1 } },
    profile: DEFAULT_COMPAT_PROFILE, store: { insertShadowDifference: () => Promise.resolve() }, fingerprintKey: 'test-key', batching, batchWaitMs: 60_000,
    onResult: (outcome) => counted.push(outcome),
  });
}

function job(mirror: LegacyMirror, i: number): ShadowJob {
  return {
    mode: 'shadow', operation: 'ValidateUserToken', binding: 'http-get', oursOrigin: 'http://127.0.0.1:1', oursPath: '/Authentication.asmx',
    request: mirror.requestOf('GET', `/Authentication.asmx/ValidateUserToken`, `token=${i}`, {}, Buffer.alloc(0)),
    ours: { status: 200, headers: [['content-type', 'text/xml; charset=utf-8'], ['content-length', String(BODY.length)]], body: BODY },
  };
}

/** Lets the event loop run a few turns (no timers: setImmediate only). */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Turns until `done` holds (the stand-in reads in this process's event loop too). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await turns(1);
}

describe('shadow mode starts its exchanges in batches', () => {
  let legacy: Standin;
  beforeAll(async () => {
    legacy = await standin();
  });
  afterAll(() => legacy.close());

  it('a batch\'s requests go out together, in one write to the socket', async () => {
    const counted: ShadowOutcome[] = [];
    // The connection first (its socket is corked only once it is open).
    const mirror = mirrorOf(legacy.url, true, counted);
    mirror.submit(job(mirror, 0));
    await mirror.idle();
    legacy.reads.length = 0;
    // The socket's writes to the kernel: one per request (undici's own cork and uncork around
    // each), or one for all those placed in a turn.
    const proto = Socket.prototype as unknown as Record<'_write' | '_writev', (...args: unknown[]) => unknown>;
    const writes = [vi.spyOn(proto, '_write'), vi.spyOn(proto, '_writev')];
    let written: number;
    try {
      for (let i = 0; i < BATCH; i++) mirror.submit(job(mirror, i));
      await until(() => legacy.reads.reduce((a, b) => a + b, 0) === BATCH);
      // Ours only (to the stand-in's port): the stand-in's own sockets write the answers.
      const port = Number(new URL(legacy.url).port);
      written = writes.reduce((n, w) => n + w.mock.contexts.filter((socket) => (socket as Socket).remotePort === port).length, 0);
      await mirror.idle();
    } finally {
      for (const w of writes) w.mockRestore();
    }
    expect(counted).toEqual(Array(BATCH + 1).fill('same'));
    expect(written).toBe(1);
    await mirror.close();
  });

  it('jobs sampled turns apart wait for the others (or idle()) and go out together; without batching each goes at once', async () => {
    const sent = 4;
    for (const batching of [true, false]) {
      const counted: ShadowOutcome[] = [];
      const mirror = mirrorOf(legacy.url, batching, counted);
      mirror.submit(job(mirror, 0));
      await mirror.idle();
      legacy.reads.length = 0;
      for (let i = 0; i < sent; i++) {
        mirror.submit(job(mirror, i));
        // Without batching the job goes out at once: the stand-in reads it before the next.
        if (batching) await turns(20);
        else await until(() => legacy.reads.length === i + 1);
      }
      // Gathering: nothing sent yet (the wait is not over, and nobody waits for idle()).
      if (batching) expect(legacy.reads).toEqual([]);
      await mirror.idle();
      expect(counted).toEqual(Array(sent + 1).fill('same'));
      expect(legacy.reads.reduce((a, b) => a + b, 0)).toBe(sent);
      if (batching) expect(legacy.reads.length).toBeLessThanOrEqual(2);
      else expect(legacy.reads).toEqual(Array(sent).fill(1));
      await mirror.close();
    }
  });
});
