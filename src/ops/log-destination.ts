/**
 * Where serve's log lines go: standard output, or a file (`--log-file`, reopened on SIGHUP so
 * logrotate can move it away), through a buffered, asynchronous writer (pino's sonic-boom), so a
 * request's access line costs no write system call of its own. The buffer is written out every
 * `flushMs` (config `logFlushMs`, default 250 ms), when it passes 4 KiB, and at shutdown; a
 * crash (kill -9, a fatal signal) loses at most the last interval's lines. `logFlushMs: 0`
 * writes every line at once, as before (the off switch).
 */
import { pino, type DestinationStream } from 'pino';

export interface LogDestination {
  readonly stream: DestinationStream;
  /** Writes out what is buffered, synchronously (shutdown). */
  flushSync(): void;
  /** Reopens the file (after logrotate moved it); nothing for standard output. */
  reopen(): void;
  /** Stops the flush timer and writes out what is buffered. */
  close(): void;
}

export interface LogDestinationOptions {
  /** A file to append to, or null for `stdout`. */
  readonly file: string | null;
  /** Standard output: process.stdout in production, a capture stream in tests (written directly). */
  readonly stdout: NodeJS.WritableStream;
  readonly flushMs: number;
}

const MIN_LENGTH = 4096;

export function createLogDestination(options: LogDestinationOptions): LogDestination {
  const buffered = options.flushMs > 0;
  // A stream that is not the process's own standard output (tests) is written as it is.
  if (options.file === null && options.stdout !== process.stdout) {
    return { stream: options.stdout as DestinationStream, flushSync: () => undefined, reopen: () => undefined, close: () => undefined };
  }
  const boom = pino.destination({
    dest: options.file ?? 1,
    sync: !buffered,
    minLength: buffered ? MIN_LENGTH : 0,
    ...(options.file !== null && { mkdir: true, append: true }),
  });
  const timer = buffered ? setInterval(() => boom.flush(), options.flushMs) : null;
  timer?.unref();
  const flushSync = (): void => {
    try {
      boom.flushSync();
    } catch {
      // A pipe that cannot take more right now (EAGAIN): what is left goes out asynchronously.
      boom.flush();
    }
  };
  return {
    stream: boom,
    flushSync,
    reopen: () => {
      if (options.file !== null) boom.reopen();
    },
    close: () => {
      if (timer !== null) clearInterval(timer);
      flushSync();
    },
  };
}
