/** The CLI in-process (`runCli`) with captured output: one helper for every CLI test. */
import { Readable, Writable } from 'node:stream';
import { expect } from 'vitest';
import { runCli } from '../../src/cli/main.js';

export type Stdin = NodeJS.ReadableStream & { isTTY?: boolean };

export interface RunResult {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

export interface RunOptions {
  readonly stdin?: string | Stdin;
  readonly env?: NodeJS.ProcessEnv;
  readonly signal?: AbortSignal;
  /** Where standard output goes instead of the captured text (e.g. to watch a server start). */
  readonly stdout?: Writable;
}

export interface Sink {
  readonly stream: Writable;
  text(): string;
  /**
   * Resolves with the match once what was written matches `pattern` (at once if it already
   * does), e.g. serve's `Service:` line; rejects after `timeoutMs`, so a hang fails the test.
   */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
}

export function sink(): Sink {
  let text = '';
  const waiters = new Set<() => void>();
  return {
    stream: new Writable({
      write(chunk: Buffer | string, _encoding, callback) {
        text += chunk.toString();
        for (const waiter of waiters) waiter();
        callback();
      },
    }),
    text: () => text,
    waitFor: (pattern, timeoutMs = 20_000) => new Promise((resolve, reject) => {
      const check = (): void => {
        const match = pattern.exec(text);
        if (match === null) return;
        done();
        resolve(match);
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`nothing matching ${String(pattern)} written within ${timeoutMs} ms:\n${text}`));
      }, timeoutMs);
      timer.unref();
      const done = (): void => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    }),
  };
}

export async function runCliCaptured(args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  const out = sink();
  const err = sink();
  const stdin: Stdin = typeof options.stdin === 'string' ? Readable.from([Buffer.from(options.stdin)]) : options.stdin ?? Readable.from([]);
  const code = await runCli([...args], {
    stdin, stdout: options.stdout ?? out.stream, stderr: err.stream, env: options.env ?? {}, ...(options.signal && { signal: options.signal }),
  });
  return { code, out: out.text(), err: err.text() };
}

/** A refusal as the CLI must print it: this exit code, one line on stderr, no stack frame. */
export function expectOneLine(r: RunResult, code: number, message: RegExp): void {
  expect(r.code, r.err).toBe(code);
  expect(r.err).toMatch(message);
  expect(r.err.trimEnd().split('\n')).toHaveLength(1);
  expect(r.err).not.toMatch(/\n\s+at /);
}
