/**
 * Where serve's log lines go: standard output, or a file (`--log-file`, reopened on SIGHUP so
 * logrotate can move it away), through a buffered, asynchronous writer (fd-writer.ts), so a
 * request's access line costs no write system call of its own. The lines are handed to the
 * writer every `flushMs` (config `logFlushMs`, default 250 ms), whenever a chunk fills, at
 * shutdown, and when an uncaught exception ends the process; kill -9 or another fatal signal
 * loses at most the last interval's lines. `logFlushMs: 0` writes every line at once, through
 * pino's synchronous destination (the off switch).
 *
 * Lines are gathered here into chunks of CHUNK_BYTES: handed to sonic-boom one by one, a
 * 250-byte line cost 3.6 µs of CPU, in 16 KiB chunks 1.3 µs (micro-benchmark of 300,000 access
 * lines, docs/fast-paths.md). The chunks are bytes, each line encoded once into them as it
 * comes. Every line of the logger goes through the same gatherer, so lines keep their order.
 */
import { pino, type DestinationStream } from 'pino';
import { createFdWriter } from './fd-writer.js';

export interface LogDestination {
  readonly stream: DestinationStream;
  /** Settles when the file is open (at once for standard output); reopen() starts a new one. */
  ready(): Promise<void>;
  /** Writes out what is buffered, synchronously (shutdown). */
  flushSync(): void;
  /** Reopens the file (after logrotate moved it); nothing for standard output. */
  reopen(): void;
  /**
   * Stops the flush timer and writes out what is buffered, after the write already under way:
   * every line is in the file or the pipe, in order, when it resolves, unless the reader took
   * nothing for STALL_GIVE_UP_MS (fd-writer.ts; what it did not take is then dropped).
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
  /**
   * Standard output is shared with other processes (`serve --workers`: the workers write to the
   * primary's): each write whole lines of at most PIPE_BUF bytes, so none cuts another's lines
   * (fd-writer.ts). A file is opened by each process for appending, where a write lands whole.
   */
  readonly sharedStdout?: boolean;
}

/** Lines are handed to the writer in chunks of about this many bytes. */
const CHUNK_BYTES = 16 * 1024;

/** Room for a chunk and the line that ends it (at most 3 UTF-8 bytes per UTF-16 unit); longer lines get their own buffer. */
const SLAB_BYTES = CHUNK_BYTES + 16 * 1024;

/**
 * Spare buffers kept for the next chunks. Each chunk is written within a write system call or
 * two; more chunks than this in flight at once (a reader that falls behind) get new buffers,
 * and those beyond it are left to the garbage collector once written.
 */
const SPARE_SLABS = 4;

/**
 * The most log bytes a process keeps waiting for a reader that falls behind. Beyond it new lines
 * are dropped and counted (svcapi_auth_log_dropped_lines_total), and once the reader has caught
 * up to half of it one warning says how many: a reader that stopped (journald stuck, a paused
 * pipe) used to grow the process by every line, 7 MB a second at 25,000 requests a second, until
 * it ran out of memory and took every client's logins and checks with it. A reader that keeps
 * up holds a chunk or two (tens of KB); 16 MiB is two seconds of that load.
 */
export const MAX_BACKLOG_BYTES = 16 * 1024 * 1024;

/** What the gatherer hands its chunks to: the writer (fd-writer.ts), which reports each write's bytes. */
export interface ChunkSink {
  write(chunk: Buffer): unknown;
  /** `bytes` more of what was handed on, in order, reached the file. */
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
 * never written to again until the writer has reported every byte of it written: the buffers
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
  // A stream that is not the process's own standard output (tests) is written as it is.
  if (options.file === null && options.stdout !== process.stdout) {
    return {
      stream: options.stdout as DestinationStream, ready: () => Promise.resolve(), flushSync: () => undefined, reopen: () => undefined, close: () => Promise.resolve(),
      backlogBytes: () => 0, droppedLines: () => 0, onDropped: () => undefined,
    };
  }
  if (options.flushMs <= 0) return unbufferedDestination(options.file);
  const writer = createFdWriter(options.file === null ? { fd: 1, wholeLines: options.sharedStdout === true } : { file: options.file });
  const gathered = gatherer(writer);
  const drain = (): void => gathered.drain();
  let droppedListener: ((lines: number) => void) | null = null;
  let droppedTold = 0;
  const tellDropped = (): void => {
    if (droppedListener === null) return;
    const dropped = gathered.droppedLines();
    if (dropped === droppedTold || gathered.backlogBytes() > MAX_BACKLOG_BYTES / 2) return;
    const lines = dropped - droppedTold;
    droppedTold = dropped;
    droppedListener(lines);
  };
  const timer = setInterval(() => {
    tellDropped();
    drain();
  }, options.flushMs);
  timer.unref();
  const flushSync = (): void => {
    gathered.stopReuse();
    // What is gathered is handed on inside, so that it is written now, not started on the pool.
    writer.flushSync(drain);
  };
  // A crash (an uncaught exception) ends the process through 'exit', where nothing asynchronous
  // runs any more: what is gathered and queued is written synchronously (a reader that takes
  // nothing is given up on as at close). kill -9 runs nothing.
  const onExit = (): void => {
    try {
      writer.ending();
      flushSync();
    } catch {
      // exiting: nothing more can be done
    }
  };
  process.once('exit', onExit);
  return {
    stream: gathered.stream,
    ready: () => writer.ready(),
    flushSync,
    reopen: () => {
      if (options.file === null) return;
      // What was gathered before the signal belongs to the old file.
      drain();
      writer.reopen();
    },
    async close() {
      process.off('exit', onExit);
      clearInterval(timer);
      // Every line, in order, by the writer's own writes: it waits for a reader that takes them,
      // however slowly, and gives up on one that takes nothing for STALL_GIVE_UP_MS.
      writer.ending();
      drain();
      await writer.whenWritten();
    },
    backlogBytes: () => gathered.backlogBytes(),
    droppedLines: () => gathered.droppedLines(),
    onDropped: (listener) => {
      droppedListener = listener;
    },
  };
}

/** `logFlushMs: 0`, the off switch: pino's synchronous destination, every line written at once. */
function unbufferedDestination(file: string | null): LogDestination {
  const boom = pino.destination({ dest: file ?? 1, sync: true, minLength: 0, ...(file !== null && { mkdir: true, append: true }) });
  return {
    stream: boom, ready: () => Promise.resolve(), flushSync: () => boom.flushSync(), reopen: () => void (file !== null && boom.reopen()),
    close: () => {
      boom.flushSync();
      return Promise.resolve();
    },
    backlogBytes: () => 0, droppedLines: () => 0, onDropped: () => undefined,
  };
}
