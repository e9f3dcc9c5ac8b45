/**
 * The access line written from a template (src/ops/access-log.ts) is the line pino writes for
 * the same fields, byte for byte in content; buffered log destinations lose nothing at shutdown;
 * --log-file is reopened on SIGHUP (logrotate).
 */
import { mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createAccessLog, type AccessEntry } from '../../src/ops/access-log.js';
import { createLogDestination } from '../../src/ops/log-destination.js';
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
      destination.close();
      expect(readFileSync(`${file}.1`, 'utf8')).toContain('"msg":"first"');
      const now = readFileSync(file, 'utf8');
      expect(now).not.toContain('"msg":"first"');
      expect(now).toContain('"msg":"second"');
      expect(now).toContain('"msg":"third"');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gathers lines into chunks without losing or reordering one, and keeps lines back until a chunk fills or it is flushed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-logfile-'));
    try {
      const file = join(dir, 'svcapi-auth.log');
      const destination = createLogDestination({ file, stdout: process.stdout, flushMs: 60_000 });
      await destination.ready();
      const logger = createLogger({ level: 'info', stream: destination.stream });
      logger.info({ n: 0 }, 'alone');
      // One short line is neither written nor handed on: no write per line.
      expect(readFileSync(file, 'utf8')).toBe('');
      // Multi-byte text of every UTF-8 length, and lines longer than a chunk (and than its buffer) among them.
      const textOf = (n: number): string => (n % 500 === 0 ? '中😀'.repeat(4000 + n) : 'é中😀'.repeat(n % 7));
      for (let n = 1; n <= 5000; n++) logger.info({ n, text: textOf(n) }, 'line');
      destination.close();
      const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { n: number; text?: string });
      expect(lines.map((l) => l.n)).toEqual(Array.from({ length: 5001 }, (_, i) => i));
      for (const line of lines.slice(1)) expect(line.text).toBe(textOf(line.n));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
