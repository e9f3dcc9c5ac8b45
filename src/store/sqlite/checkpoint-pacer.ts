/**
 * When the background thread checkpoints the WAL (purge-thread.ts checkpoint()): after a commit,
 * once at least `everyMs` have passed since the last checkpoint began, one at a time. Busy, the
 * WAL is copied into the database file about ten times a second off the event loop; idle, not
 * at all. The serving connection keeps an auto-checkpoint of its own, set higher
 * (sqlite-store.ts), which restarts the WAL once the thread has copied nearly all of it: a
 * checkpoint that runs beside the writers never finds the WAL wholly copied, and only a wholly
 * copied WAL is written again from its start. A failed checkpoint is only retried later: the
 * serving connection's own checkpoints keep the WAL bounded regardless.
 */
export interface CheckpointPacer {
  /** A commit happened on the serving connection. */
  committed(): void;
  /** Waits for the checkpoint under way, if any. */
  close(): Promise<void>;
}

export function createCheckpointPacer(checkpoint: () => Promise<unknown>, options: { readonly everyMs?: number; readonly now?: () => number } = {}): CheckpointPacer {
  const everyMs = options.everyMs ?? 100;
  const now = options.now ?? ((): number => performance.now());
  let running: Promise<void> | null = null;
  let lastStarted = Number.NEGATIVE_INFINITY;
  let closed = false;
  return {
    committed() {
      if (closed || running !== null || now() - lastStarted < everyMs) return;
      lastStarted = now();
      running = checkpoint().then(() => undefined, () => undefined).finally(() => {
        running = null;
      });
    },
    async close() {
      closed = true;
      await running;
    },
  };
}
