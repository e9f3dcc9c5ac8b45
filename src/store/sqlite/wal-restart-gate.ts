/**
 * Starting the WAL over while the checkpoints run on the purge thread (sqlite-store.ts).
 *
 * SQLite writes a WAL from its beginning again only when a write transaction begins with every
 * frame already copied into the database file (wal.c, walTryBeginRead takes read mark 0 only
 * then, and walRestartLog restarts only from it). SQLite's own checkpoints run inside the
 * writer's COMMIT, so nothing commits while they copy and the next write starts the WAL over.
 * The thread's PASSIVE checkpoints run beside a writer that keeps committing: each copies the
 * frames that were there when it began, the serving connection has added more by the time it
 * ends, and under a steady load no write ever began with all of them copied. The WAL then grew
 * by every frame ever written: 1.7 GB in 22 s of GetUserLoginURL on this VM (2026-11-29), each
 * commit extending the file (ext4 allocating and zeroing pages: 12% of the event loop's CPU).
 *
 * So once the thread reports a WAL of `restartFrames` or more, the next commit of the serving
 * connection waits (asynchronously: the event loop serves reads meanwhile) while the thread
 * copies what is left, then begins with every frame copied and starts the WAL over. That is one
 * wait of a few milliseconds for the writes of one turn, every `restartFrames` frames; the event
 * loop never copies a page or syncs the database file itself. At most one catch-up per check
 * of the thread's (a catch-up that did not lead to a restart, because another process
 * committed meanwhile, is tried again after the thread's next look), and never longer than
 * `timeoutMs` (a thread busy with a long purge batch does not hold the writes).
 *
 * Other processes on the same file (`--workers`) commit without waiting for this one's thread,
 * so a catch-up can miss: past `runawayFrames` the serving connection checkpoints at its own
 * commits again (SQLite's automatic checkpoints, as without the thread) until the WAL has
 * started over.
 */

export interface WalRestartGate {
  /** null: commit now; otherwise wait for the promise (it never rejects), then commit. */
  beforeCommit(): Promise<void> | null;
}

/** The thread's view of the WAL, shared with it (purge-thread.ts writes it after every checkpoint). */
export const WAL_STATE_FRAMES = 0;
/** How many checkpoints the thread has run on its timer (a new look at the WAL). */
export const WAL_STATE_LOOKS = 1;
export const WAL_STATE_LENGTH = 2;

export interface WalRestartGateOptions {
  /** [WAL_STATE_FRAMES, WAL_STATE_LOOKS], written by the thread. */
  readonly state: Int32Array;
  readonly restartFrames: number;
  readonly runawayFrames: number;
  /** Asks the thread for a checkpoint now; settles when it has run. */
  readonly catchUp: () => Promise<unknown>;
  readonly timeoutMs: number;
  /** true: the WAL passed runawayFrames (the serving connection should checkpoint itself); false: it is back under restartFrames. `frames`: the thread's last report. */
  readonly onRunaway: (runaway: boolean, frames: number) => void;
}

export function createWalRestartGate(options: WalRestartGateOptions): WalRestartGate {
  const { state, restartFrames, runawayFrames, catchUp, timeoutMs, onRunaway } = options;
  let caughtUpAtLook = -1;
  let pending: Promise<void> | null = null;
  let runaway = false;

  const waitForCatchUp = (): Promise<void> => new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    timer.unref();
    // A failed catch-up (a busy lock, a thread that ended) only means no restart this time.
    catchUp().then(() => resolve(), () => resolve()).finally(() => clearTimeout(timer));
  });

  return {
    beforeCommit() {
      if (pending !== null) return pending;
      const frames = Atomics.load(state, WAL_STATE_FRAMES);
      if (frames < restartFrames) {
        if (runaway) {
          runaway = false;
          onRunaway(false, frames);
        }
        return null;
      }
      if (frames >= runawayFrames && !runaway) {
        runaway = true;
        onRunaway(true, frames);
      }
      const look = Atomics.load(state, WAL_STATE_LOOKS);
      if (look === caughtUpAtLook) return null;
      caughtUpAtLook = look;
      pending = waitForCatchUp().finally(() => {
        pending = null;
      });
      return pending;
    },
  };
}
