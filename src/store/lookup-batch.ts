/**
 * Lookups by key asked during one turn of the event loop, answered together (PostgreSQL's
 * findToken). Token checks whose requests arrive together ask together: they wait for the same
 * revisions read (domain/revision-gate.ts) and the ones that miss the memory of checked tokens
 * call findToken one after the other in the same microtask run. Gathered until the next
 * microtask and read as one statement and round trip (`= ANY($1)`) instead of one each, they
 * cost what a fleet's checks, nearly all misses, cost: 72 -> 46 µs CPU per check in the server.
 * SQLite reads each lookup alone: one read transaction per turn saved nothing measurable there.
 *
 * Each lookup still starts after its request arrived (the batch is read in a microtask of the
 * turn that asked), all rows of a batch come from one snapshot, and a key asked twice in a batch
 * is read once. A failed batch fails each of its lookups.
 */
export type BatchRead<V> = (keys: readonly string[]) => Promise<ReadonlyMap<string, V>> | ReadonlyMap<string, V>;

interface Waiter<V> {
  resolve(value: V | null): void;
  reject(error: unknown): void;
}

/** A lookup function that gathers the keys of one turn and reads them `maxBatch` at a time. */
export function lookupPerTurn<V>(read: BatchRead<V>, maxBatch: number): (key: string) => Promise<V | null> {
  let pending: Map<string, Waiter<V>[]> | null = null;

  const settle = (batch: Map<string, Waiter<V>[]>, keys: readonly string[], found: ReadonlyMap<string, V>): void => {
    for (const key of keys) for (const w of batch.get(key) ?? []) w.resolve(found.get(key) ?? null);
  };
  const fail = (batch: Map<string, Waiter<V>[]>, keys: readonly string[], error: unknown): void => {
    for (const key of keys) for (const w of batch.get(key) ?? []) w.reject(error);
  };

  const flush = (): void => {
    const batch = pending;
    pending = null;
    if (batch === null) return;
    const keys = [...batch.keys()];
    for (let from = 0; from < keys.length; from += maxBatch) {
      const slice = keys.slice(from, from + maxBatch);
      try {
        const found = read(slice);
        if (found instanceof Map) settle(batch, slice, found);
        else void (found as Promise<ReadonlyMap<string, V>>).then((rows) => settle(batch, slice, rows), (error: unknown) => fail(batch, slice, error));
      } catch (error) {
        fail(batch, slice, error);
      }
    }
  };

  return (key) => new Promise<V | null>((resolve, reject) => {
    if (pending === null) {
      pending = new Map();
      queueMicrotask(flush);
    }
    const waiting = pending.get(key);
    if (waiting === undefined) pending.set(key, [{ resolve, reject }]);
    else waiting.push({ resolve, reject });
  });
}
