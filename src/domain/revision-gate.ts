/**
 * The store's revisions (RevisionStore.revisions), read once for a whole turn of the event loop.
 *
 * What the domain keeps in memory (access-cache.ts, news-cache.ts) is used only while the
 * revision it was read under is still the current one, so every request needs the current
 * revisions. Reading them is one single-row statement, but on SQLite that costs as much as the
 * token lookup it saves (two WAL-lock system calls and cold caches each time), so one read is
 * shared by every request that asked during the same turn.
 *
 * The read is made in the check phase (setImmediate), after the poll phase that received those
 * requests, never before: each request is judged by a read made after it arrived, so a
 * revocation committed before a client sent its request is always seen (by any process: the CLI,
 * another instance, raw SQL). A request arriving while a read is under way (PostgreSQL) waits for
 * the next one. A failed read fails every request that waited for it; nothing is answered from
 * memory without a fresh read.
 */
import type { RevisionStore, StoreRevisions } from '../store/store.js';

export interface RevisionGate {
  /** The store's revisions, as read after the caller asked. */
  current(): Promise<StoreRevisions>;
}

/** One read per event-loop turn, shared by every caller of that turn. */
export function createRevisionGate(store: RevisionStore): RevisionGate {
  let next: Promise<StoreRevisions> | null = null;
  const read = (resolve: (value: StoreRevisions) => void, reject: (reason: unknown) => void): void => {
    setImmediate(() => {
      next = null; // callers from now on wait for the next read
      store.revisions().then(resolve, reject);
    });
  };
  return {
    current() {
      next ??= new Promise(read);
      return next;
    },
  };
}

/** One read per call: for tests and callers outside the serving path. */
export function directRevisions(store: RevisionStore): RevisionGate {
  return { current: () => store.revisions() };
}
