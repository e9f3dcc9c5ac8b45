/**
 * The access line written from a template (src/ops/access-log.ts) is the line pino writes for
 * the same fields, byte for byte in content; buffered log destinations lose nothing at shutdown;
 * --log-file is reopened on SIGHUP (logrotate); the gathering buffers are reused only once
 * written, and a backlog goes out in few writes, so memory stays flat under load.
 */
import { spawnSync } from 'node:child_process';
import fs, { mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it, vi } from 'vitest';
import { ACCESS_PATH_JSON_MAX_BYTES, createAccessLog, loggedPath, type AccessEntry } from '../../src/ops/access-log.js';
import { createLogDestination, gatherer, type LogDestination } from '../../src/ops/log-destination.js';
import type { Logger } from 'pino';
import { createLogger } from '../../src/ops/logger.js';

function capture(): { stream: Writable; lines: () => Record<string, unknown>[]; text: () => string } {
  let text = '';
  const stream = new Writable({ write: (chunk: Buffer, _e, cb) => { text += chunk.toString(); cb(); } });
  return { stream, text: () => text, lines: () => text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>) };
}

const ENTRIES: AccessEntry[] = [
  { reqId: '4f0c1d6e-5b7a-4c2e-9d3f-1a2b3c4d5e6f', method: 'POST', path: '/Authentication.asmx', operation: 'ValidateUserToken', binding: 'soap11', status: 200, durationMs: 0.123, source: '127.0.0.1' },
  { reqId: 'b', method: 'GET', path: '/Authentication.asmx/"quoted"\\\u0001\u2028é', operation: null, binding: 'none', status: 404, durationMs: 12.35, source: '::ffff:10.0.0.1' },
  { reqId: 'c', method: undefined, path: '', operation: null, binding: 'http-get', status: 500, durationMs: 0, source: '' },
];

describe('the access line', () => {
  it('from the template carries exactly what logger.info would, in pino\'s layout', () => {
    const fast = capture();
    const slow = capture();
    const fastLog = createAccessLog(createLogger({ level: 'info', stream: fast.stream }));
    const slowLog = createAccessLog(createLogger({ level: 'info', stream: slow.stream }), { fast: false });
    for (const e of ENTRIES) {
      fastLog?.(e);
      slowLog?.(e);
    }
    const a = fast.lines();
    const b = slow.lines();
    expect(a).toHaveLength(ENTRIES.length);
    for (let i = 0; i < a.length; i++) {
      const { time: t1, ...restA } = a[i] ?? {};
      const { time: t2, ...restB } = b[i] ?? {};
      expect(restA).toStrictEqual(restB);
      expect(Math.abs(Number(t1) - Number(t2))).toBeLessThan(5000);
      expect(Object.keys(a[i] ?? {}).slice(0, 3)).toEqual(['level', 'time', 'service']);
    }
    expect(a[1]?.['path']).toBe(ENTRIES[1]?.path);
  });

  it('cuts a path too long for a line within PIPE_BUF (the size --workers writes whole), saying what it dropped', () => {
    // Every escape at once: a quote (2 bytes of JSON), a control character (6), a 2-byte letter.
    const long = `/Authentication.asmx/${'"\u0001é'.repeat(2000)}`;
    const entry: AccessEntry = { ...(ENTRIES[0] as AccessEntry), path: long, source: 'ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255' };
    const fast = capture();
    const slow = capture();
    createAccessLog(createLogger({ level: 'info', stream: fast.stream }))?.(entry);
    createAccessLog(createLogger({ level: 'info', stream: slow.stream }), { fast: false })?.(entry);
    for (const text of [fast.text(), slow.text()]) expect(Buffer.byteLength(text)).toBeLessThanOrEqual(4096);
    const path = String(fast.lines()[0]?.['path']);
    expect(slow.lines()[0]?.['path']).toBe(path);
    const mark = /…\(\+(\d+)\)$/.exec(path);
    expect(mark).not.toBeNull();
    const kept = path.slice(0, mark?.index);
    expect(long.startsWith(kept)).toBe(true);
    expect(Array.from(kept).length + Number(mark?.[1])).toBe(Array.from(long).length);
    // As much as fits beside the mark's room (16 bytes): the next code point's escape (at most 6) would not have.
    expect(Buffer.byteLength(JSON.stringify(kept))).toBeGreaterThan(ACCESS_PATH_JSON_MAX_BYTES - 16 - 6);
    expect(Buffer.byteLength(JSON.stringify(path))).toBeLessThanOrEqual(ACCESS_PATH_JSON_MAX_BYTES);
  });

  it('keeps every path that fits whole, up to the last byte', () => {
    expect(loggedPath('/Authentication.asmx/ValidateUserToken')).toBe('/Authentication.asmx/ValidateUserToken');
    const fits = 'x'.repeat(ACCESS_PATH_JSON_MAX_BYTES - 2); // with its two quotes, exactly the limit
    expect(loggedPath(fits)).toBe(fits);
    expect(loggedPath(`${fits}x`)).toMatch(/…\(\+\d+\)$/);
    const controls = '\u0001'.repeat(Math.floor((ACCESS_PATH_JSON_MAX_BYTES - 2) / 6));
    expect(loggedPath(controls)).toBe(controls);
    expect(loggedPath(`${controls}\u0001`)).not.toBe(`${controls}\u0001`);
  });

  it('is not written below level info, and pretty printing takes the ordinary path', () => {
    expect(createAccessLog(createLogger({ level: 'warn', stream: capture().stream }))).toBeNull();
    const pretty = capture();
    createAccessLog(createLogger({ level: 'info', pretty: true, colorize: false, stream: pretty.stream }))?.(ENTRIES[0] as AccessEntry);
    expect(pretty.text()).toMatch(/INFO.*request/);
  });
});

describe('the log destination', () => {
  it('buffers lines to a file, writes them out at close, and reopens the file after logrotate moved it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-logfile-'));
    try {
      const file = join(dir, 'logs', 'svcapi-auth.log');
      const destination = createLogDestination({ file, stdout: process.stdout, flushMs: 60_000 });
      const logger = createLogger({ level: 'info', stream: destination.stream });
      await destination.ready(); // sonic-boom opens the file asynchronously
      logger.info('first');
      destination.flushSync();
      renameSync(file, `${file}.1`);
      destination.reopen();
      await destination.ready();
      logger.info('second');
      logger.info('third');
      await destination.close();
      expect(readFileSync(`${file}.1`, 'utf8')).toContain('"msg":"first"');
      const now = readFileSync(file, 'utf8');
      expect(now).not.toContain('"msg":"first"');
      expect(now).toContain('"msg":"second"');
      expect(now).toContain('"msg":"third"');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  /** A buffered destination on a file of a new directory, and a logger on it; the directory is removed afterwards. */
  async function withLogFile(test: (file: string, destination: LogDestination, logger: Logger) => Promise<void>): Promise<void> {
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-logfile-'));
    try {
      const file = join(dir, 'svcapi-auth.log');
      const destination = createLogDestination({ file, stdout: process.stdout, flushMs: 60_000 });
      await destination.ready();
      await test(file, destination, createLogger({ level: 'info', stream: destination.stream }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('gathers lines into chunks without losing or reordering one, and keeps lines back until a chunk fills or it is flushed', async () => {
    await withLogFile(async (file, destination, logger) => {
      logger.info({ n: 0 }, 'alone');
      // One short line is neither written nor handed on: no write per line.
      expect(readFileSync(file, 'utf8')).toBe('');
      // Multi-byte text of every UTF-8 length, and lines longer than a chunk (and than its buffer) among them.
      const textOf = (n: number): string => (n % 500 === 0 ? '中😀'.repeat(4000 + n) : 'é中😀'.repeat(n % 7));
      for (let n = 1; n <= 5000; n++) logger.info({ n, text: textOf(n) }, 'line');
      await destination.close();
      const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { n: number; text?: string });
      expect(lines.map((l) => l.n)).toEqual(Array.from({ length: 5001 }, (_, i) => i));
      for (const line of lines.slice(1)) expect(line.text).toBe(textOf(line.n));
    });
  });

  it('closes after the write under way: every line in the file, in order, when close resolves', async () => {
    await withLogFile(async (file, destination, logger) => {
      // sonic-boom's writes through fs.write each land 50 ms late, as on a loaded disk or a slow
      // pipe: the first chunk handed on is still out when close() begins. Its synchronous flush
      // wrote what followed before it, and returned with that chunk not yet in the file.
      const write = fs.write;
      const late = vi.spyOn(fs, 'write').mockImplementation(((fd: number, buffer: Buffer, callback: (error: NodeJS.ErrnoException | null, written: number) => void) => {
        setTimeout(() => write(fd, buffer, callback), 50);
      }) as unknown as typeof fs.write);
      try {
        const filler = 'x'.repeat(250);
        for (let n = 0; n < 300; n++) logger.info({ n, filler }, 'line');
        expect(late).toHaveBeenCalled();
        await destination.close();
        const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { n: number }).n);
        expect(lines).toEqual(Array.from({ length: 300 }, (_, i) => i));
        expect(destination.backlogBytes()).toBe(0);
      } finally {
        late.mockRestore();
      }
    });
  });

  it('writes out the lines gathered before an uncaught exception ends the process', () => {
    const build = inject('distBuild');
    if (!build.ok) throw new Error(`building dist/ failed:\n${build.output}`);
    const dist = fileURLToPath(new URL('../../dist/ops/', import.meta.url));
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-logfile-'));
    try {
      const file = join(dir, 'svcapi-auth.log');
      // Three short lines: fewer than a chunk, so sonic-boom never saw them before the crash.
      const script = `
        import { createLogDestination } from ${JSON.stringify(join(dist, 'log-destination.js'))};
        import { createLogger } from ${JSON.stringify(join(dist, 'logger.js'))};
        const destination = createLogDestination({ file: process.argv[1], stdout: process.stdout, flushMs: 60000 });
        await destination.ready();
        const logger = createLogger({ level: 'info', stream: destination.stream });
        for (let n = 0; n < 3; n++) logger.info({ n }, 'before the crash');
        setTimeout(() => { throw new Error('a bug'); }, 10);`;
      const run = spawnSync(process.execPath, ['--input-type=module', '-e', script, file], { encoding: 'utf8', timeout: 20_000 });
      expect(run.status).toBe(1);
      expect(run.stderr).toContain('a bug');
      const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { n: number; msg: string });
      expect(lines.map((l) => [l.n, l.msg])).toEqual([[0, 'before the crash'], [1, 'before the crash'], [2, 'before the crash']]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes a backlog out in a few writes, not one 16 KiB chunk per write', async () => {
    await withLogFile(async (file, destination, logger) => {
      // sonic-boom writes through fs.write, this module's object: counted, not changed. The
      // writes are counted rather than turns of the event loop: how many turns pass while one
      // write is on libuv's pool depends on the machine's load (a CI run counted 55 turns where
      // an idle machine counts under 10), the number of writes does not.
      const writes = vi.spyOn(fs, 'write');
      try {
        // About 1.5 MB of lines in one turn, as a busy event loop produces between two turns.
        const filler = 'x'.repeat(250);
        for (let n = 0; n < 6000; n++) logger.info({ n, filler }, 'line');
        const written = Buffer.byteLength(readFileSync(file, 'utf8'));
        expect(destination.backlogBytes()).toBeGreaterThan(1_500_000 - written);
        const lineCount = (): number => readFileSync(file, 'utf8').split('\n').length - 1;
        const until = Date.now() + 10_000;
        while (lineCount() < 5900 && Date.now() < until) await new Promise((resolve) => setImmediate(resolve));
        expect(lineCount()).toBeGreaterThanOrEqual(5900);
        // All but the chunk being filled (16 KiB, ~55 lines) in a few writes of up to 1 MiB; at
        // sonic-boom's default of 16 KiB a write, 123 of them (checked with maxWrite unset).
        expect(writes.mock.calls.length).toBeGreaterThan(0);
        expect(writes.mock.calls.length).toBeLessThan(10);
        // What is left once the last write has been reported (a turn or two after its bytes reach
        // the file): sonic-boom's last few KiB, and the chunk being filled.
        const left = 16 * 1024 + 4096 + 400;
        for (let i = 0; i < 1000 && destination.backlogBytes() >= left; i++) await new Promise((resolve) => setImmediate(resolve));
        expect(destination.backlogBytes()).toBeLessThan(left);
        await destination.close();
        expect(destination.backlogBytes()).toBe(0);
        expect(lineCount()).toBe(6000);
      } finally {
        writes.mockRestore();
      }
    });
  });
});

describe('the gatherer of log lines', () => {
  /** A sink that keeps what it is handed and reports writes when told, as sonic-boom does. */
  function sink(): { write(chunk: Buffer): void; on(event: 'write', listener: (bytes: number) => void): void; handed: { chunk: Buffer; copy: string }[]; report(bytes: number): void } {
    let listener: (bytes: number) => void = () => undefined;
    const handed: { chunk: Buffer; copy: string }[] = [];
    return {
      write: (chunk) => void handed.push({ chunk, copy: chunk.toString('utf8') }),
      on: (_event, l) => void (listener = l),
      handed,
      report: (bytes) => listener(bytes),
    };
  }
  const line = (n: number): string => `{"n":${n},"text":"${'é'.repeat(n % 50)}"}\n`;

  it('reuses a chunk\'s buffer once all of it was reported written, and never before', () => {
    const s = sink();
    const g = gatherer(s);
    let n = 0;
    const until = (chunks: number): void => {
      while (s.handed.length < chunks) g.stream.write(line(n++));
    };
    until(1);
    const first = s.handed[0] as { chunk: Buffer; copy: string };
    // Not reported written: later chunks get buffers of their own and leave it as it was.
    until(6);
    expect(first.chunk.toString('utf8')).toBe(first.copy);
    expect(g.buffersMade()).toBe(7); // six handed on, one being filled
    // Written in two parts (a partial write): reused only after the second.
    s.report(first.chunk.length - 1);
    until(7);
    expect(g.buffersMade()).toBe(8);
    expect(first.chunk.toString('utf8')).toBe(first.copy);
    s.report(1);
    until(8);
    expect(g.buffersMade()).toBe(8);
    // Every chunk reported as it is handed on: no new buffer however many lines follow.
    for (const h of s.handed.slice(1)) s.report(h.chunk.length);
    const before = g.buffersMade();
    for (let i = 0; i < 20_000; i++) {
      const handed = s.handed.length;
      g.stream.write(line(n++));
      for (const h of s.handed.slice(handed)) s.report(h.chunk.length);
    }
    expect(g.buffersMade()).toBe(before);
    g.drain();
    // What each chunk held when handed on is every line, once, in order.
    expect(s.handed.map((h) => h.copy).join('')).toBe(Array.from({ length: n }, (_, i) => line(i)).join(''));
  });

  it('counts a long line given its own buffer, and after a synchronous flush reuses nothing', () => {
    const s = sink();
    const g = gatherer(s);
    g.stream.write(line(1));
    g.stream.write(`{"long":"${'x'.repeat(40_000)}"}\n`);
    expect(s.handed.map((h) => h.chunk.length)).toEqual([Buffer.byteLength(line(1)), 40_012]);
    s.report(Buffer.byteLength(line(1)));
    g.stopReuse();
    s.report(40_012);
    const made = g.buffersMade();
    while (s.handed.length < 4) g.stream.write(line(2));
    expect(g.buffersMade()).toBe(made + 2);
  });

  it('drops and counts the lines that come while its bound is waiting, and takes lines again once the reader catches up', () => {
    const s = sink();
    const bound = 64 * 1024;
    const g = gatherer(s, bound);
    let n = 0;
    for (; n < 5000; n++) g.stream.write(line(n));
    // Held: up to the bound (the line that reaches it is kept whole); the rest dropped, counted.
    expect(g.backlogBytes()).toBeGreaterThanOrEqual(bound);
    expect(g.backlogBytes()).toBeLessThan(bound + 200);
    expect(g.droppedLines()).toBeGreaterThan(0);
    g.drain();
    const handedLines = (): string[] => s.handed.map((h) => h.copy).join('').split('\n').filter((l) => l !== '');
    // Every line kept or counted; the kept ones are the first, whole and in order.
    expect(handedLines().length + g.droppedLines()).toBe(5000);
    expect(handedLines()).toEqual(Array.from({ length: handedLines().length }, (_, i) => line(i).trim()));
    // The reader takes everything: lines are taken again.
    for (const h of s.handed) s.report(h.chunk.length);
    const dropped = g.droppedLines();
    g.stream.write(line(n));
    g.drain();
    expect(g.droppedLines()).toBe(dropped);
    expect(handedLines().at(-1)).toBe(line(n).trim());
  });
});
