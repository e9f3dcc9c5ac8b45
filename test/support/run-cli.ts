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

export function sink(): { stream: Writable; text: () => string } {
  let text = '';
  return {
    stream: new Writable({
      write(chunk: Buffer | string, _encoding, callback) {
        text += chunk.toString();
        callback();
      },
    }),
    text: () => text,
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
