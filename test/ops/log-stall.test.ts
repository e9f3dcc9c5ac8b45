/**
 * The log writer (src/ops/fd-writer.ts) and a reader of standard output that falls behind or
 * stops: every line reaches it once, in order, or is counted as dropped; a full pipe is tried
 * again within milliseconds; and a reader that has stopped (a paused pager, a stuck log
 * collector) does not keep `serve` from ending: sonic-boom retried its full pipe every 100 ms
 * without end, so SIGTERM never ended the process (systemd killed it at TimeoutStopSec). Once
 * the process is ending, a reader that takes nothing for STALL_GIVE_UP_MS is given up on; one
 * that takes lines, however slowly, is waited for.
 */
import { spawn } from 'node:child_process';
import fs, { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createFdWriter, PIPE_BUF, STALL_GIVE_UP_MS } from '../../src/ops/fd-writer.js';
import { createMetrics } from '../../src/ops/metrics.js';
import type { Store } from '../../src/store/store.js';
import { expectOneLine } from '../support/run-cli.js';
import { killAll, requireDist, startServer } from '../support/server-process.js';
import { run } from './support.js';

const eagain = (): NodeJS.ErrnoException => Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
type WriteCallback = (error: NodeJS.ErrnoException | null, written: number) => void;

/** fs.write answered by `answer` (bytes taken, or an error), recording what each call was given. */
function fakeWrites(answer: (buffer: Buffer, call: number) => number | NodeJS.ErrnoException): { calls: Buffer[]; taken: Buffer[]; restore(): void } {
  const calls: Buffer[] = [];
  const taken: Buffer[] = [];
  const spy = vi.spyOn(fs, 'write').mockImplementation(((_fd: number, buffer: Buffer, callback: WriteCallback) => {
    const copy = Buffer.from(buffer);
    calls.push(copy);
    const answered = answer(copy, calls.length);
    const a = typeof answered === 'number' ? Math.min(answered, copy.length) : answered;
    // Taken when the system call runs; its answer comes on a later turn, as from libuv's pool.
    if (typeof a === 'number') taken.push(copy.subarray(0, a));
    setImmediate(() => {
      if (typeof a === 'number') callback(null, a);
      else callback(a, 0);
    });
  }) as unknown as typeof fs.write);
  return { calls, taken, restore: () => spy.mockRestore() };
}

const chunk = (n: number, size = 1000): Buffer => Buffer.from(`${String(n).padStart(6, '0')}${'x'.repeat(size - 7)}\n`);

describe('the log writer', () => {
  it('writes every chunk once, in order, through partial writes and a full pipe tried again within milliseconds', async () => {
    // Every third write refused (a full pipe), the others taking 700 bytes at most.
    const w = fakeWrites((_b, call) => (call % 3 === 0 ? eagain() : 700));
    try {
      const writer = createFdWriter({ fd: 99 });
      let reported = 0;
      writer.on('write', (bytes) => void (reported += bytes));
      const chunks = Array.from({ length: 50 }, (_, i) => chunk(i));
      const started = Date.now();
      for (const c of chunks) writer.write(c);
      expect(await writer.whenWritten()).toBe(true);
      expect(Buffer.concat(w.taken).equals(Buffer.concat(chunks))).toBe(true);
      expect(reported).toBe(50_000);
      expect(writer.queuedBytes()).toBe(0);
      // 70-odd refusals, each tried again after 1 ms (sonic-boom waited 100 ms each: 7 s).
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      w.restore();
    }
  });

  it('writes what piled up while a write was under way in one write of up to 1 MiB', async () => {
    const w = fakeWrites((b) => b.length);
    try {
      const writer = createFdWriter({ fd: 99 });
      for (let i = 0; i < 200; i++) writer.write(chunk(i, 16 * 1024));
      expect(await writer.whenWritten()).toBe(true);
      // The first chunk alone, then what waited meanwhile, 64 chunks (1 MiB) at a time.
      expect(w.calls.map((c) => c.length)).toEqual([16_384, 64 * 16_384, 64 * 16_384, 64 * 16_384, 7 * 16_384]);
    } finally {
      w.restore();
    }
  });

  it('once ending, gives up on a reader that takes nothing for STALL_GIVE_UP_MS, and not on one that takes some', async () => {
    let take = true;
    const w = fakeWrites(() => (take ? 10 : eagain()));
    try {
      const writer = createFdWriter({ fd: 99 });
      writer.write(chunk(1, 100_000));
      writer.ending();
      const started = Date.now();
      const done = writer.whenWritten();
      // Taking 10 bytes a write for a while: still waited for.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(writer.queuedBytes()).toBeLessThan(100_000);
      take = false;
      expect(await done).toBe(false);
      const waited = Date.now() - started;
      expect(waited).toBeGreaterThanOrEqual(300 + STALL_GIVE_UP_MS - 100);
      expect(waited).toBeLessThan(300 + STALL_GIVE_UP_MS + 1500);
      expect(writer.queuedBytes()).toBe(0); // dropped
    } finally {
      w.restore();
    }
  });

  it('at exit writes the rest synchronously after the write under way, which it does not write again', async () => {
    const w = fakeWrites((b) => b.length);
    const sync = vi.spyOn(fs, 'writeSync').mockImplementation(((_fd: number, buffer: Buffer) => {
      w.taken.push(Buffer.from(buffer));
      return buffer.length;
    }) as unknown as typeof fs.writeSync);
    try {
      const writer = createFdWriter({ fd: 99 });
      const chunks = Array.from({ length: 5 }, (_, i) => chunk(i));
      for (const c of chunks) writer.write(c);
      // The first chunk's write is under way (its answer comes on the next turn).
      writer.flushSync();
      await new Promise((resolve) => setImmediate(resolve));
      expect(Buffer.concat(w.taken).equals(Buffer.concat(chunks))).toBe(true);
      expect(writer.queuedBytes()).toBe(0);
    } finally {
      sync.mockRestore();
      w.restore();
    }
  });
});

describe('standard output shared with other processes (serve --workers)', () => {
  it('is written in whole lines of at most PIPE_BUF bytes, a longer line alone, every byte once, in order', async () => {
    // Every third write refused (a full pipe), the others taking 3,000 bytes at most.
    const w = fakeWrites((_b, call) => (call % 3 === 0 ? eagain() : 3000));
    try {
      const writer = createFdWriter({ fd: 99, wholeLines: true });
      const lines = Array.from({ length: 300 }, (_, i) => chunk(i, i === 150 ? 10_000 : 90 + (i % 7) * 40));
      // As the gatherer hands them on: chunks of whole lines (here of 20 lines).
      const chunks = Array.from({ length: 15 }, (_, i) => Buffer.concat(lines.slice(i * 20, i * 20 + 20)));
      for (const c of chunks) writer.write(c);
      expect(await writer.whenWritten()).toBe(true);
      expect(Buffer.concat(w.taken).equals(Buffer.concat(chunks))).toBe(true);
      for (const call of w.calls) {
        expect(call.at(-1)).toBe(0x0a);
        if (call.length > PIPE_BUF) expect(call.indexOf(0x0a)).toBe(call.length - 1); // the long line, alone
      }
      expect(w.calls.filter((c) => c.length > PIPE_BUF).length).toBeGreaterThan(0);
    } finally {
      w.restore();
    }
  });

  it('gets every line of two processes whole and in order, also from a reader that falls behind', async () => {
    requireDist();
    const dist = fileURLToPath(new URL('../../dist/ops/', import.meta.url));
    // Two processes on one pipe, as the workers of serve --workers on the primary's standard
    // output. Written in writes of up to 1 MiB, 2 to 61 lines of such a stream came out torn.
    const script = `
      import { createLogDestination } from ${JSON.stringify(join(dist, 'log-destination.js'))};
      import { createLogger } from ${JSON.stringify(join(dist, 'logger.js'))};
      const destination = createLogDestination({ file: null, stdout: process.stdout, flushMs: 20, sharedStdout: true });
      const logger = createLogger({ level: 'info', stream: destination.stream });
      const filler = 'x'.repeat(200);
      let n = 0;
      const burst = () => {
        for (let k = 0; k < 500 && n < 20000; k++, n++) logger.info({ w: Number(process.argv[1]), n, filler }, 'line');
        if (n < 20000) setImmediate(burst);
        else void destination.close();
      };
      burst();`;
    const one = '"$NODE" --input-type=module -e "$SCRIPT"';
    const child = spawn('bash', ['-c', `${one} 1 & a=$!; ${one} 2 & b=$!; wait $a && wait $b`], {
      stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODE: process.execPath, SCRIPT: script },
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // Read from half a second on: both processes' lines wait on the full pipe meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 500));
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    expect(await exited).toBe(0);
    const seen: Record<number, number[]> = { 1: [], 2: [] };
    const torn: string[] = [];
    for (const line of out.trim().split('\n')) {
      try {
        const { w, n } = JSON.parse(line) as { w: number; n: number };
        seen[w]?.push(n);
      } catch {
        torn.push(line.slice(0, 80));
      }
    }
    expect(torn).toEqual([]);
    for (const w of [1, 2]) expect(seen[w]).toEqual(Array.from({ length: 20000 }, (_, i) => i));
  }, 60_000);
});

describe('the log file', () => {
  // A reopen after its write, and one asked for while the write is under way (landing 50 ms
  // late, as on a loaded disk): ready() answers for that reopen once it is made.
  it.each([['after the write ended', false], ['while the write is under way', true]])('after a reopen that fails %s (logrotate, a path that cannot be made) is written on, nothing lost', async (_when, late) => {
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-log-reopen-'));
    const write = fs.write;
    const slow = late ? vi.spyOn(fs, 'write').mockImplementation(((fd: number, buffer: Buffer, callback: WriteCallback) => {
      setTimeout(() => write(fd, buffer, callback), 50);
    }) as unknown as typeof fs.write) : null;
    try {
      const file = join(dir, 'logs', 'svcapi-auth.log');
      const writer = createFdWriter({ file });
      await writer.ready();
      writer.write(Buffer.from('one\n'));
      if (!late) expect(await writer.whenWritten()).toBe(true);
      renameSync(join(dir, 'logs'), join(dir, 'logs.1'));
      writeFileSync(join(dir, 'logs'), 'not a directory');
      writer.reopen();
      await expect(writer.ready()).rejects.toThrow();
      writer.write(Buffer.from('two\n'));
      expect(await writer.whenWritten()).toBe(true);
      expect(readFileSync(join(dir, 'logs.1', 'svcapi-auth.log'), 'utf8')).toBe('one\ntwo\n');
    } finally {
      slow?.mockRestore();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('that cannot be opened stops serve from starting, in one line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-log-open-'));
    try {
      writeFileSync(join(dir, 'file'), '');
      const r = await run(['serve', '--port', '0', '--db', join(dir, 'auth.db'), '--log-file', join(dir, 'file', 'logs', 'x.log')], { env: { SVCAPI_MANAGEMENT_PORT: 'off' } });
      expectOneLine(r, 1, /cannot open the log file .*x\.log: (ENOTDIR|EEXIST)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a reader of standard output that falls behind', () => {
  it('gets every line in order or counted as dropped, none lost unsaid, and a warning with the count', async () => {
    requireDist();
    const dist = fileURLToPath(new URL('../../dist/ops/', import.meta.url));
    // 100,000 lines of about 330 bytes (33 MB) while nobody reads the pipe; then the parent reads.
    // sonic-boom lost a block of up to 1 MiB in the middle of such a stream (one line cut).
    const script = `
      import { createLogDestination, MAX_BACKLOG_BYTES } from ${JSON.stringify(join(dist, 'log-destination.js'))};
      import { createLogger } from ${JSON.stringify(join(dist, 'logger.js'))};
      const destination = createLogDestination({ file: null, stdout: process.stdout, flushMs: 50 });
      const logger = createLogger({ level: 'info', stream: destination.stream });
      destination.onDropped((lines) => {
        logger.warn({ droppedLines: lines }, 'log lines dropped');
        setTimeout(() => void destination.close().then(() => process.exit(0)), 100);
      });
      setInterval(() => undefined, 1000); // alive until the warning (serve is, while it serves)
      const filler = 'x'.repeat(250);
      for (let n = 0; n < 100000; n++) logger.info({ n, filler }, 'line');
      process.stderr.write(JSON.stringify({ backlog: destination.backlogBytes(), max: MAX_BACKLOG_BYTES, dropped: destination.droppedLines() }) + '\\n');`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no report from the child: ${err}`)), 30_000);
      const check = (): void => {
        if (!err.includes('\n')) return;
        clearTimeout(t);
        resolve();
      };
      child.stderr.on('data', check);
      child.once('exit', check);
    });
    expect(err).toMatch(/^\{/);
    const report = JSON.parse(err.split('\n')[0] ?? '') as { backlog: number; max: number; dropped: number };
    expect(report.backlog).toBeLessThanOrEqual(report.max + 1024);
    expect(report.dropped).toBeGreaterThan(40_000);
    // The parent starts reading only now.
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    expect(await exited).toBe(0);
    const lines = out.trim().split('\n').map((l) => JSON.parse(l) as { n?: number; msg: string; droppedLines?: number });
    const kept = lines.filter((l) => l.msg === 'line');
    expect(kept.map((l) => l.n)).toEqual(Array.from({ length: kept.length }, (_, i) => i));
    expect(lines.at(-1)).toMatchObject({ level: 40, msg: 'log lines dropped', droppedLines: report.dropped });
    expect(kept.length + report.dropped).toBe(100_000);
  }, 60_000);
});

describe('the dropped log lines', () => {
  it('are a counter of every line dropped so far, read at each scrape', async () => {
    let dropped = 0;
    const metrics = createMetrics({ store: {} as Store, processMetrics: false });
    metrics.reportLogDropped(() => dropped);
    const count = async (): Promise<number> => Number(/^svcapi_auth_log_dropped_lines_total (\d+)$/m.exec(await metrics.registry.metrics())?.[1]);
    expect(await count()).toBe(0);
    dropped = 1234;
    expect(await count()).toBe(1234);
    expect(await count()).toBe(1234);
    dropped = 2000;
    expect(await count()).toBe(2000);
  });
});

describe('serve with a stopped reader of standard output', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcapi-log-stall-'));
  afterAll(() => {
    killAll();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps serving while the lines wait, and ends on SIGTERM within seconds, exit 0', async () => {
    requireDist();
    const server = await startServer(['--db', join(dir, 'auth.db')], { SVCAPI_LOG_LEVEL: 'info' });
    const management = /^Management: (http:\/\/\S+)/m.exec(await server.waitForOutput(/^Management: /m))?.[1];
    expect(management).toBeDefined();
    // The reader stops: the pipe (64 KiB) fills, and the access lines wait in the process.
    server.child.stdout?.pause();
    const backlog = async (): Promise<number> => Number(/^svcapi_auth_log_backlog_bytes (\d+)$/m.exec(await (await fetch(`${management}/metrics`)).text())?.[1]);
    for (let i = 0; i < 1500 && (i % 100 !== 99 || (await backlog()) < 128 * 1024); i++) {
      const answer = await fetch(`${server.origin}/Authentication.asmx/ValidateUserToken?token=not-a-token-${i}`);
      expect(answer.status).toBe(200);
      await answer.arrayBuffer();
    }
    expect(await backlog()).toBeGreaterThanOrEqual(128 * 1024);

    const signalled = Date.now();
    server.child.kill('SIGTERM');
    const timeout = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 20_000).unref());
    const outcome = await Promise.race([server.exited, timeout]);
    expect(outcome).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalled).toBeLessThan(STALL_GIVE_UP_MS + 8_000);
  }, 60_000);
});
