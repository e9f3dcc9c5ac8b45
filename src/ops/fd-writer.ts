/**
 * The writer of serve's buffered log lines (log-destination.ts): chunks of bytes written, in
 * order, to standard output or a file, asynchronously on libuv's pool, up to MAX_WRITE_BYTES a
 * write.
 *
 * It replaced sonic-boom (pino.destination) in buffer mode, which lost and reordered lines
 * whenever its reader fell behind (2026-11-29, a child logging 33 MB into a pipe its parent
 * read a second later lost 41 to 2,833 lines in the middle, one of them cut, in 8 runs of 9):
 * - a full pipe (EAGAIN) was retried after a fixed 100 ms each time, so a backlog drained
 *   slowly: 11.5 MB to a reader that started a second late took 1.92 s (6.0 MB/s, about the
 *   access lines of 20,000 requests a second), 0.19 s here (60 MB/s);
 * - its synchronous flush, which close() ended with, skipped the rest of a write under way or
 *   waiting for its retry (written later or never, after the lines that followed it), and
 *   after a refused retry it misaligned its list of buffer lengths, so later writes were cut;
 * - it retried a full pipe without end at shutdown (log-stall.test.ts).
 * Here a full pipe is tried again after 1 ms, doubling to 64 ms while it stays full; nothing
 * is ever written out of order; and once the process is ending, a reader that takes nothing
 * for STALL_GIVE_UP_MS is given up on.
 *
 * A pipe shared with other processes (`serve --workers`: every worker's standard output is the
 * primary's) takes a write whole, never mixed with another process's, only up to PIPE_BUF bytes
 * (POSIX write(2); Linux pipe(7)); a longer one can be cut where the pipe fills and another
 * worker's write land in the middle of a line (2026-11-29, two processes writing 50,000 lines
 * each into one pipe: 4 to 61 lines of 100,000 torn, in every run, with or without a reader that
 * falls behind). With `wholeLines`, each write is whole lines of at most PIPE_BUF bytes (a line
 * longer than that alone).
 */
import fs from 'node:fs';
import { dirname } from 'node:path';

/** The most written at once: what has piled up while the last write was under way. */
export const MAX_WRITE_BYTES = 1024 * 1024;

/** The most bytes a pipe takes as one write, never mixed with another writer's (Linux pipe(7)). */
export const PIPE_BUF = 4096;

const NEWLINE = 0x0a;

/**
 * Once the process is ending (close, or the exit of a crash), how long a reader that takes
 * nothing is waited for. A reader that takes some of the lines, however slowly, is waited for.
 */
export const STALL_GIVE_UP_MS = 2000;

const FIRST_RETRY_MS = 1;
const LAST_RETRY_MS = 64;

export interface FdWriter {
  /** Queues a chunk (not copied: left alone until reported written) and writes it when it can. */
  write(chunk: Buffer): void;
  /** Reports each write: `bytes` more of what was queued, in order, reached the file or pipe. */
  on(event: 'write', listener: (bytes: number) => void): void;
  /** Settles once the file is open (at once for a descriptor); rejects if it cannot be opened. */
  ready(): Promise<void>;
  /** A file: closes it after the write under way and opens the path again (logrotate). */
  reopen(): void;
  /** From now on a reader that takes nothing for STALL_GIVE_UP_MS is given up on. */
  ending(): void;
  /** Resolves true once everything queued was written, false if the reader was given up on (what is left is dropped). */
  whenWritten(): Promise<boolean>;
  /**
   * Writes what is queued synchronously (an exit, where nothing asynchronous runs any more, or
   * before logrotate's rename), with what `more()` queues first; a write under way is counted as
   * done (writing it again could repeat it). Gives up on a reader as ending() does.
   */
  flushSync(more?: () => void): void;
  /** Bytes queued and not yet written. */
  queuedBytes(): number;
}

export interface FdWriterOptions {
  /** A descriptor (1: standard output) or a file to append to (its directory made if missing). */
  readonly fd?: number;
  readonly file?: string;
  /**
   * Each write whole lines of at most PIPE_BUF bytes (a longer line alone), so that other
   * processes writing to the same pipe never cut a line: `serve --workers` on standard output.
   */
  readonly wholeLines?: boolean;
}

const retryable = (error: NodeJS.ErrnoException): boolean => error.code === 'EAGAIN' || error.code === 'EBUSY' || error.code === 'EINTR';

/** Blocks the thread for `ms` (the synchronous flush at exit, waiting for a full pipe). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

export function createFdWriter(options: FdWriterOptions): FdWriter {
  const queue: Buffer[] = [];
  let queued = 0;
  let fd = options.fd ?? -1;
  let writing = false;
  /** The size of the write under way. */
  let inFlightBytes = 0;
  /** The write under way was counted as written by flushSync: its answer only ends it. */
  let inFlightCounted = false;
  let syncing = false;
  let retryTimer: NodeJS.Timeout | null = null;
  let retryMs = FIRST_RETRY_MS;
  let endingSince: number | null = null;
  let progressAt = 0;
  let gaveUp = false;
  /** A reopen asked for and not yet begun (a write was under way): what settles ready() then. */
  let reopenWanted: { resolve: () => void; reject: (error: unknown) => void } | null = null;
  let reopening = false;
  /** The file could not be opened at all: nothing will be written. */
  let openFailed = false;
  let onWrite: (bytes: number) => void = () => undefined;
  const waiters: ((written: boolean) => void)[] = [];

  /**
   * Opens the file (again, after logrotate moved it: writes wait meanwhile, then go to the new
   * file, and the old one is closed). A reopen that fails keeps writing to the old file.
   */
  const open = (): Promise<void> => new Promise<void>((resolve, reject) => {
    const file = options.file as string;
    reopening = true;
    const done = (error: NodeJS.ErrnoException | null, opened?: number): void => {
      reopening = false;
      if (error !== null || opened === undefined) {
        if (fd < 0) openFailed = true;
        reject(error ?? new Error(`cannot open ${file}`));
      } else {
        const old = fd;
        fd = opened;
        if (old >= 0) fs.close(old, () => undefined);
        resolve();
      }
      pump();
    };
    fs.mkdir(dirname(file), { recursive: true }, (mkdirError) => {
      if (mkdirError) done(mkdirError);
      else fs.open(file, 'a', (error, opened) => done(error, opened));
    });
  });
  let opening: Promise<void> = options.file === undefined ? Promise.resolve() : open();
  opening.catch(() => undefined); // surfaced by ready()

  const settle = (written: boolean): void => {
    for (const waiter of waiters.splice(0)) waiter(written);
  };
  /** `n` bytes from the front of the queue are written. */
  const consume = (n: number): void => {
    let left = n;
    while (left > 0) {
      const head = queue[0] as Buffer;
      if (head.length <= left) {
        left -= head.length;
        queue.shift();
      } else {
        queue[0] = head.subarray(left);
        left = 0;
      }
    }
    queued -= n;
    progressAt = Date.now();
    onWrite(n);
  };
  const giveUp = (): void => {
    gaveUp = true;
    queue.length = 0;
    queued = 0;
    if (retryTimer !== null) clearTimeout(retryTimer);
    retryTimer = null;
    settle(false);
  };
  const stalled = (): boolean => endingSince !== null && Date.now() - Math.max(progressAt, endingSince) >= STALL_GIVE_UP_MS;
  /** What piled up, from the front: whole chunks up to MAX_WRITE_BYTES, or the first one alone if longer. */
  const piled = (): Buffer => {
    if (queue.length === 1 || (queue[0] as Buffer).length >= MAX_WRITE_BYTES) return queue[0] as Buffer;
    const parts: Buffer[] = [];
    let size = 0;
    for (const chunk of queue) {
      if (size > 0 && size + chunk.length > MAX_WRITE_BYTES) break;
      parts.push(chunk);
      size += chunk.length;
    }
    return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, size);
  };
  /** Whole lines from the front, PIPE_BUF bytes at most; a longer first line alone. */
  const frontLines = (): Buffer => {
    const head = queue[0] as Buffer;
    // The first PIPE_BUF bytes queued (the first chunk's own bytes when it holds that many).
    let window = head.subarray(0, PIPE_BUF);
    if (window.length < PIPE_BUF && queue.length > 1) {
      const parts: Buffer[] = [];
      let size = 0;
      for (const chunk of queue) {
        parts.push(chunk);
        size += chunk.length;
        if (size >= PIPE_BUF) break;
      }
      window = Buffer.concat(parts, Math.min(size, PIPE_BUF));
    }
    if (window.length === queued) return window;
    const cut = window.lastIndexOf(NEWLINE);
    if (cut >= 0) return window.subarray(0, cut + 1);
    // A line longer than PIPE_BUF: alone, to its end (no write keeps it from being cut).
    const end = head.indexOf(NEWLINE);
    return end >= 0 ? head.subarray(0, end + 1) : head;
  };
  const next = options.wholeLines === true ? frontLines : piled;

  function pump(): void {
    if (writing || syncing || reopening || retryTimer !== null) return;
    if (fd < 0) {
      if (openFailed) settle(queued === 0);
      return;
    }
    if (reopenWanted !== null) {
      const settleReopen = reopenWanted;
      reopenWanted = null;
      open().then(settleReopen.resolve, settleReopen.reject);
      return;
    }
    if (queue.length === 0) {
      settle(true);
      return;
    }
    const buffer = next();
    writing = true;
    inFlightBytes = buffer.length;
    fs.write(fd, buffer, (error: NodeJS.ErrnoException | null, written: number) => {
      writing = false;
      if (inFlightCounted) {
        inFlightCounted = false;
        pump();
        return;
      }
      if (gaveUp) return;
      if (error) {
        // A full pipe (or a file that refused the write): tried again soon, and again less
        // often while it stays so; the lines wait (log-destination.ts bounds how many).
        if (!retryable(error) && error.code !== 'ENOSPC' && error.code !== 'EIO') {
          // A reader that is gone (EPIPE) or a descriptor that is no more: nothing will take them.
          giveUp();
          return;
        }
        if (stalled()) {
          giveUp();
          return;
        }
        // Not unref'd: at shutdown close() waits on it (a serving process is kept alive anyway).
        retryTimer = setTimeout(() => {
          retryTimer = null;
          pump();
        }, retryMs);
        retryMs = Math.min(retryMs * 2, LAST_RETRY_MS);
        return;
      }
      retryMs = FIRST_RETRY_MS;
      if (written > 0) consume(written);
      else if (stalled()) {
        giveUp();
        return;
      }
      pump();
    });
  }

  return {
    write(chunk) {
      if (gaveUp || chunk.length === 0) return;
      queue.push(chunk);
      queued += chunk.length;
      pump();
    },
    on(_event, listener) {
      onWrite = listener;
    },
    ready: () => opening,
    reopen() {
      if (options.file === undefined) return;
      // ready() answers for this reopen from now on, even while the write under way delays it.
      if (reopenWanted === null) {
        opening = new Promise<void>((resolve, reject) => {
          reopenWanted = { resolve, reject };
        });
        opening.catch(() => undefined);
      }
      pump();
    },
    ending() {
      if (endingSince !== null) return;
      endingSince = Date.now();
      // A retry waiting on its timer is made now: the give-up counts from here.
      if (retryTimer !== null) {
        clearTimeout(retryTimer);
        retryTimer = null;
        retryMs = FIRST_RETRY_MS;
        pump();
      }
    },
    whenWritten() {
      if (gaveUp || (fd < 0 && openFailed)) return Promise.resolve(queued === 0);
      if (queued === 0 && !writing) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        waiters.push(resolve);
        pump();
      });
    },
    flushSync(more) {
      syncing = true;
      try {
        more?.();
      } finally {
        syncing = false;
      }
      if (gaveUp || fd < 0) return;
      if (retryTimer !== null) clearTimeout(retryTimer);
      retryTimer = null;
      // The write under way is on the pool and will finish without us: counted as written, as
      // writing it again could repeat it (it stays under way, so a reopen waits for it).
      if (writing && !inFlightCounted) {
        inFlightCounted = true;
        consume(inFlightBytes);
      }
      const wasEnding = endingSince !== null;
      endingSince ??= Date.now();
      let wait = FIRST_RETRY_MS;
      while (queue.length > 0) {
        const buffer = next();
        let written = 0;
        try {
          written = fs.writeSync(fd, buffer);
        } catch (error) {
          if (!retryable(error as NodeJS.ErrnoException) || stalled()) {
            giveUp();
            return;
          }
          sleepSync(wait);
          wait = Math.min(wait * 2, LAST_RETRY_MS);
          continue;
        }
        wait = FIRST_RETRY_MS;
        if (written > 0) consume(written);
      }
      // Before a rename (not an exit): a reader that stalls later is waited for again.
      if (!wasEnding) endingSince = null;
      settle(true);
    },
    queuedBytes: () => queued,
  };
}
