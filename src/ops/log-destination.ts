/**
 * Where serve's log lines go: standard output, or a file (`--log-file`, reopened on SIGHUP so
 * logrotate can move it away), through a buffered, asynchronous writer (pino's sonic-boom), so a
 * request's access line costs no write system call of its own. The buffer is written out every
 * `flushMs` (config `logFlushMs`, default 250 ms), when it passes 4 KiB, at shutdown, and when
 * an uncaught exception ends the process; kill -9 or another fatal signal loses at most the last
 * interval's lines. `logFlushMs: 0`
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
  /**
   * Stops the flush timer and writes out what is buffered, after the write already under way
   * (at most CLOSE_WAIT_MS for it): every line is in the file or the pipe, in order, when it
   * resolves.
   */
  close(): Promise<void>;
  /** Lines written and not yet taken by standard output or the file, in bytes (0 unbuffered). */
  backlogBytes(): number;
  /** Lines dropped so far because the backlog was at MAX_BACKLOG_BYTES. */
  droppedLines(): number;
  /**
   * Called, from the flush timer, once lines were dropped and the reader has caught up to half
   * of MAX_BACKLOG_BYTES, with how many were dropped since the last call (serve logs a warning).
   */
  onDropped(listener: (lines: number) => void): void;
}

export interface LogDestinationOptions {
  /** A file to append to, or null for `stdout`. */
  readonly file: string | null;
  /** Standard output: process.stdout in production, a capture stream in tests (written directly). */
  readonly stdout: NodeJS.WritableStream;
  readonly flushMs: number;
}

const MIN_LENGTH = 4096;
/** Lines are handed to sonic-boom in chunks of about this many bytes. */
const CHUNK_BYTES = 16 * 1024;
/**
 * The most sonic-boom writes at once: what has piled up while its last write was under way, the
 * chunks joined (its default is 16 KiB, one chunk). It writes one buffer at a time, each write
 * a round trip through libuv's pool that ends in a turn of the event loop, and a busy loop turns
 * every 2-3 ms: at 16 KiB a write the lines of 25,000 requests a second (about 7 MB/s) came
 * faster than they went out, and the backlog grew by 3-4 MB every 10 s for as long as the load
 * lasted (20 MB after a minute). Writing all that waits keeps it at a chunk or two.
 */
const MAX_WRITE_BYTES = 1024 * 1024;

/** Room for a chunk and the line that ends it (at most 3 UTF-8 bytes per UTF-16 unit); longer lines get their own buffer. */
const SLAB_BYTES = CHUNK_BYTES + 16 * 1024;

/**
 * Spare buffers kept for the next chunks. Each chunk is written by sonic-boom within a write
 * system call or two; more chunks than this in flight at once (a reader that falls behind) get
 * new buffers, and those beyond it are left to the garbage collector once written.
 */
const SPARE_SLABS = 4;

/**
 * How long close() waits for sonic-boom's write under way before writing the rest itself. It
 * writes one buffer at a time on libuv's pool, and its synchronous flush leaves the one out to
 * that write: what followed it went to the file first, and the last chunk before shutdown could
 * come after lines written later (a test that read the file at close counted 5,972 of 6,000
 * lines, on a loaded VM). A reader of standard output that has stopped is not waited for longer.
 */
const CLOSE_WAIT_MS = 2000;

/**
 * Once the process is ending (close, or the exit of a crash), how long a reader of standard
 * output that takes nothing is waited for. sonic-boom retries a pipe that is full (EAGAIN) every
 * 100 ms for as long as it stays full, in its synchronous flush too: with a reader that had
 * stopped (a paused pager, a stuck log collector) SIGTERM never ended the process, which systemd
 * killed at TimeoutStopSec (40 s in deploy/systemd) with its lines lost all the same. A reader
 * that takes some of them, however slowly, is waited for.
 */
export const STALL_GIVE_UP_MS = 2000;

/**
 * sonic-boom's retryEAGAIN: while serving, always (lines wait in memory, svcapi_auth_log_backlog_bytes);
 * once ending() was called, until STALL_GIVE_UP_MS pass without a byte taken.
 */
export function stallGuard(now: () => number = Date.now): { retry: (error: unknown, writing: number, waiting: number) => boolean; ending(): void } {
  let endingSince: number | null = null;
  let left = Number.POSITIVE_INFINITY;
  let progressAt = 0;
  return {
    retry(_error, writing, waiting) {
      if (endingSince === null) return true;
      const t = now();
      // The first look after ending() only learns how much is left; fewer bytes later is progress.
      if (left !== Number.POSITIVE_INFINITY && writing + waiting < left) progressAt = t;
      left = Math.min(left, writing + waiting);
      return t - progressAt < STALL_GIVE_UP_MS;
    },
    ending() {
      if (endingSince !== null) return;
      endingSince = now();
      progressAt = endingSince;
    },
  };
}

/**
 * The most log bytes a process keeps waiting for a reader that falls behind. Beyond it new lines
 * are dropped and counted (svcapi_auth_log_dropped_lines_total), and once the reader has caught
 * up to half of it one warning says how many: a reader that stopped (journald stuck, a paused
 * pipe) used to grow the process by every line, 7 MB a second at 25,000 requests a second, until
 * it ran out of memory and took every client's logins and checks with it. A reader that keeps
 * up holds a chunk or two (tens of KB); 16 MiB is two seconds of that load.
 */
export const MAX_BACKLOG_BYTES = 16 * 1024 * 1024;

/** What the gatherer hands its chunks to: sonic-boom in buffer mode, which reports each write's bytes. */
export interface ChunkSink {
  write(chunk: Buffer): unknown;
  /** sonic-boom's 'write' event: `bytes` more of what was handed on, in order, reached the file. */
  on(event: 'write', listener: (bytes: number) => void): unknown;
}

export interface Gatherer {
  readonly stream: DestinationStream;
  /** Hands on what is gathered now. */
  drain(): void;
  /**
   * Before a synchronous flush, which writes out everything handed on without reporting
   * 'write': from then on what is in flight can no longer be told written, so no buffer is
   * reused again (new chunks get new buffers).
   */
  stopReuse(): void;
  /** Bytes gathered or handed on and not yet reported written. */
  backlogBytes(): number;
  /** Lines dropped so far because the backlog was at its bound. */
  droppedLines(): number;
  /** Buffers allocated so far (tests). */
  buffersMade(): number;
}

/**
 * Gathers lines into one buffer per chunk, each line encoded into it once. A chunk handed on is
 * never written to again until sonic-boom has reported every byte of it written: the buffers
 * are then reused. They were first allocated per chunk and left to the garbage collector, and
 * that was most of the service's memory growth under load: at 25,000 requests a second the
 * access lines fill 16 KiB every 0.7 ms, a chunk still in flight at a young-generation
 * collection is promoted, and the old generation's buffers are freed only at a full
 * collection, which V8 puts off until about 64 MiB of external memory has piled up (external
 * memory 40 -> 72 MB and RssAnon 70 -> 128 MB in 60 s of ValidateUserToken at 64 connections;
 * 2.8 MB and flat with the access log off).
 */
export function gatherer(sink: ChunkSink, maxBacklogBytes = MAX_BACKLOG_BYTES): Gatherer {
  const spare: Buffer[] = [];
  let dropped = 0;
  // Chunks handed on and not yet reported written, oldest first: the buffer to reuse (null for
  // a long line given its own) and how many of its bytes are still to be written.
  const inFlight: { readonly slab: Buffer | null; left: number }[] = [];
  let reuse = true;
  let made = 0;
  let handedBytes = 0;
  const newSlab = (): Buffer => {
    const kept = spare.pop();
    if (kept !== undefined) return kept;
    made += 1;
    return Buffer.allocUnsafeSlow(SLAB_BYTES);
  };
  sink.on('write', (bytes) => {
    let left = bytes;
    while (left > 0 && inFlight.length > 0) {
      const first = inFlight[0] as { readonly slab: Buffer | null; left: number };
      const n = Math.min(left, first.left);
      first.left -= n;
      left -= n;
      handedBytes -= n;
      if (first.left > 0) break;
      inFlight.shift();
      if (reuse && first.slab !== null && spare.length < SPARE_SLABS) spare.push(first.slab);
    }
  });
  const handOn = (chunk: Buffer, slab: Buffer | null): void => {
    inFlight.push({ slab, left: chunk.length });
    handedBytes += chunk.length;
    sink.write(chunk);
  };

  let slab = newSlab();
  let size = 0;
  const drain = (): void => {
    if (size === 0) return;
    const full = slab;
    const chunk = full.subarray(0, size);
    slab = newSlab();
    size = 0;
    handOn(chunk, full);
  };
  const stream: DestinationStream = {
    write(line: string): void {
      if (handedBytes + size >= maxBacklogBytes) {
        dropped += 1;
        return;
      }
      if (size + line.length * 3 > slab.length) {
        drain();
        if (line.length * 3 > slab.length) {
          handOn(Buffer.from(line, 'utf8'), null);
          return;
        }
      }
      size += slab.write(line, size, 'utf8');
      if (size >= CHUNK_BYTES) drain();
    },
  };
  return {
    stream,
    drain,
    stopReuse() {
      reuse = false;
      inFlight.length = 0;
      handedBytes = 0;
      spare.length = 0;
    },
    backlogBytes: () => handedBytes + size,
    droppedLines: () => dropped,
    buffersMade: () => made,
  };
}

export function createLogDestination(options: LogDestinationOptions): LogDestination {
  const buffered = options.flushMs > 0;
  // A stream that is not the process's own standard output (tests) is written as it is.
  if (options.file === null && options.stdout !== process.stdout) {
    return {
      stream: options.stdout as DestinationStream, ready: () => Promise.resolve(), flushSync: () => undefined, reopen: () => undefined, close: () => Promise.resolve(),
      backlogBytes: () => 0, droppedLines: () => 0, onDropped: () => undefined,
    };
  }
  const stall = stallGuard();
  const boom = pino.destination({
    dest: options.file ?? 1,
    retryEAGAIN: stall.retry,
    sync: !buffered,
    minLength: buffered ? MIN_LENGTH : 0,
    ...(buffered && { maxWrite: MAX_WRITE_BYTES }),
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
  const gathered = buffered ? gatherer(boom as unknown as ChunkSink) : null;
  const drain = (): void => gathered?.drain();
  let droppedListener: ((lines: number) => void) | null = null;
  let droppedTold = 0;
  const tellDropped = (): void => {
    if (gathered === null || droppedListener === null) return;
    const dropped = gathered.droppedLines();
    if (dropped === droppedTold || gathered.backlogBytes() > MAX_BACKLOG_BYTES / 2) return;
    const lines = dropped - droppedTold;
    droppedTold = dropped;
    droppedListener(lines);
  };
  const timer = buffered ? setInterval(() => {
    tellDropped();
    drain();
    boom.flush();
  }, options.flushMs) : null;
  timer?.unref();
  const flushSync = (): void => {
    drain();
    gathered?.stopReuse();
    try {
      boom.flushSync();
    } catch {
      // A pipe that cannot take more right now (EAGAIN): what is left goes out asynchronously.
      boom.flush();
    }
  };
  /**
   * The process is ending: a reader that takes nothing for STALL_GIVE_UP_MS is given up on, and
   * what it did not take is dropped (sonic-boom destroyed: pino's exit handler then writes
   * nothing either). Standard output is never closed.
   */
  const ending = (): void => {
    stall.ending();
    // A write refused past the give-up is reported as an error: nobody is left to tell.
    boom.on('error', () => undefined);
  };
  const lastFlushSync = (): void => {
    drain();
    gathered?.stopReuse();
    try {
      boom.flushSync();
    } catch {
      boom.destroy();
    }
  };
  // A crash (an uncaught exception) ends the process through 'exit', where nothing asynchronous
  // runs any more: pino's own handler writes out sonic-boom's buffer, this one the lines still
  // gathered here (up to a chunk, the last lines before the crash). kill -9 runs neither.
  const onExit = (): void => {
    try {
      ending();
      lastFlushSync();
    } catch {
      // exiting: nothing more can be done
    }
  };
  if (buffered) process.once('exit', onExit);
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
    async close() {
      process.off('exit', onExit);
      if (timer !== null) clearInterval(timer);
      if (buffered) {
        ending();
        drain();
        // Everything handed on, in order, by sonic-boom's own writes; its callback comes after
        // the last of them (with the error of an fsync a pipe refuses, which changes nothing here).
        await new Promise<void>((resolve) => {
          const giveUp = setTimeout(resolve, CLOSE_WAIT_MS);
          const done = (): void => {
            clearTimeout(giveUp);
            resolve();
          };
          try {
            boom.flush(done);
          } catch {
            done(); // destroyed already: nothing more goes out
          }
        });
        lastFlushSync();
      } else {
        flushSync();
      }
    },
    backlogBytes: () => gathered?.backlogBytes() ?? 0,
    droppedLines: () => gathered?.droppedLines() ?? 0,
    onDropped: (listener) => {
      droppedListener = listener;
    },
  };
}
