/**
 * Group commit: the small writes that arrive during one turn of the event loop (a token, a
 * login ticket, a brute-force counter...) are handed to the adapter together, which commits them
 * in one transaction, so one commit (one fsync on SQLite, one WAL flush on PostgreSQL) serves
 * them all. Each caller's promise settles only after that commit has returned: the durability
 * promise of the Store (a token handed to a client survives a crash) is unchanged.
 *
 * The batch is handed over in the check phase (setImmediate): the requests read in one poll
 * phase, and the continuations their first reads resolve, all reach their write before it. A
 * microtask would close the batch after the first request's chain, long before the others got
 * there (each socket's data is its own callback). A write waits at most one turn more than it
 * did alone, and no timer is involved: an idle server commits at once.
 */

/** One write's result: what it returned, or the error it alone raised. */
export type WriteOutcome<O> = { readonly ok: true; readonly value: O } | { readonly ok: false; readonly error: unknown };

export interface TurnBatch<I, O> {
  /** Queues `item` for this turn's batch; settles with its own outcome once the batch has committed. */
  add(item: I): Promise<O>;
  /** Hands over what is queued now, without waiting for the end of the turn (close). */
  flushNow(): Promise<void>;
}

/**
 * `commit(items)` writes every item and commits; it returns one outcome per item, in order, or
 * throws (rejects) when the batch as a whole did not commit, which then fails every item.
 */
export function createTurnBatch<I, O>(
  commit: (items: readonly I[]) => readonly WriteOutcome<O>[] | Promise<readonly WriteOutcome<O>[]>,
): TurnBatch<I, O> {
  type Waiting = { readonly item: I; readonly resolve: (value: O) => void; readonly reject: (reason: unknown) => void };
  let queue: Waiting[] = [];
  let scheduled = false;

  async function flush(): Promise<void> {
    scheduled = false;
    const batch = queue;
    queue = [];
    if (batch.length === 0) return;
    let outcomes: readonly WriteOutcome<O>[];
    try {
      outcomes = await commit(batch.map((w) => w.item));
      if (outcomes.length !== batch.length) throw new Error(`a group commit returned ${outcomes.length} outcomes for ${batch.length} writes`);
    } catch (error) {
      for (const w of batch) w.reject(error);
      return;
    }
    batch.forEach((w, i) => {
      const outcome = outcomes[i] as WriteOutcome<O>;
      if (outcome.ok) w.resolve(outcome.value);
      else w.reject(outcome.error);
    });
  }

  return {
    add(item) {
      return new Promise<O>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(() => void flush());
        }
      });
    },
    flushNow() {
      return flush();
    },
  };
}
