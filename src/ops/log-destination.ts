/**
 * Where serve's log lines go: standard output, or a file (`--log-file`, reopened on SIGHUP so
 * logrotate can move it away), through a buffered, asynchronous writer (pino's sonic-boom), so a
 * request's access line costs no write system call of its own. The buffer is written out every
 * `flushMs` (config `logFlushMs`, default 250 ms), when it passes 4 KiB, and at shutdown; a
 * crash (kill -9, a fatal signal) loses at most the last interval's lines. `logFlushMs: 0`
 * writes every line at once, as before (the off switch).
 *
 * Lines are gathered here into chunks of CHUNK_BYTES before sonic-boom sees them: its write()
 * measures the UTF-8 length of the whole pending buffer on every call (Buffer.byteLength of a
 * string grown by +=), which made one 250-byte line cost 3.6 µs of CPU; handed 16 KiB chunks it
 * costs 1.3 µs (micro-benchmark of 300,000 access lines, docs/fast-paths.md). The chunks are
 * bytes, each line encoded once into them as it comes: as one string a chunk was flattened
 * (join), measured twice by sonic-boom, encoded for the write and encoded again when the write
 * came back (sonic-boom's release); in its buffer mode sonic-boom only passes the bytes on.
 * Every line of the logger goes through the same gatherer, so lines keep their order.
 */
import { pino, type DestinationStream } from 'pino';

export interface LogDestination {
  readonly stream: DestinationStream;
  /** Settles when the file is open (at once for standard output); reopen() starts a new one. */
  ready(): Promise<void>;
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
/** Lines are handed to sonic-boom in chunks of about this many characters (its maxWrite). */
const CHUNK_BYTES = 16 * 1024;

/** Room for a chunk and the line that ends it (at most 3 UTF-8 bytes per UTF-16 unit); longer lines get their own buffer. */
const SLAB_BYTES = CHUNK_BYTES + 16 * 1024;

/**
 * Gathers lines into one buffer per chunk, each line encoded into it once. A chunk handed on is
 * never written to again (sonic-boom holds it until written): the next one gets a new buffer.
 */
function gatherer(sink: { write(chunk: Buffer): unknown }): { stream: DestinationStream; drain(): void } {
  let slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
  let size = 0;
  const drain = (): void => {
    if (size === 0) return;
    const chunk = slab.subarray(0, size);
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
    size = 0;
    sink.write(chunk);
  };
  const stream: DestinationStream = {
    write(line: string): void {
      if (size + line.length * 3 > slab.length) {
        drain();
        if (line.length * 3 > slab.length) {
          sink.write(Buffer.from(line, 'utf8'));
          return;
        }
      }
      size += slab.write(line, size, 'utf8');
      if (size >= CHUNK_BYTES) drain();
    },
  };
  return { stream, drain };
}

export function createLogDestination(options: LogDestinationOptions): LogDestination {
  const buffered = options.flushMs > 0;
  // A stream that is not the process's own standard output (tests) is written as it is.
  if (options.file === null && options.stdout !== process.stdout) {
    return { stream: options.stdout as DestinationStream, ready: () => Promise.resolve(), flushSync: () => undefined, reopen: () => undefined, close: () => undefined };
  }
  const boom = pino.destination({
    dest: options.file ?? 1,
    sync: !buffered,
    minLength: buffered ? MIN_LENGTH : 0,
    // Buffered, only the gatherer writes to it, in bytes; unbuffered, pino writes its strings.
    ...(buffered && { contentMode: 'buffer' as const }),
    ...(options.file !== null && { mkdir: true, append: true }),
  });
  // Each (re)open listens once for its outcome and removes the other listener, so SIGHUP after
  // SIGHUP (logrotate, daily) leaves no listener behind.
  const opened = (): Promise<void> => new Promise((resolve, reject) => {
    const onReady = (): void => {
      boom.off('error', onError);
      resolve();
    };
    const onError = (error: Error): void => {
      boom.off('ready', onReady);
      reject(error);
    };
    boom.once('ready', onReady);
    boom.once('error', onError);
  });
  let ready = options.file === null || !buffered ? Promise.resolve() : opened();
  ready.catch(() => undefined); // surfaced when awaited
  const gathered = buffered ? gatherer(boom as unknown as { write(chunk: Buffer): unknown }) : null;
  const drain = (): void => gathered?.drain();
  const timer = buffered ? setInterval(() => {
    drain();
    boom.flush();
  }, options.flushMs) : null;
  timer?.unref();
  const flushSync = (): void => {
    drain();
    try {
      boom.flushSync();
    } catch {
      // A pipe that cannot take more right now (EAGAIN): what is left goes out asynchronously.
      boom.flush();
    }
  };
  return {
    stream: gathered?.stream ?? boom,
    ready: () => ready,
    flushSync,
    reopen: () => {
      if (options.file === null) return;
      // What was gathered before the signal belongs to the old file, as sonic-boom's own buffer does.
      drain();
      if (buffered) ready = opened();
      boom.reopen();
    },
    close: () => {
      if (timer !== null) clearInterval(timer);
      flushSync();
    },
  };
}
