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
 *
 * Tokens the memory does not hold at all will be read from the store whatever the revisions say
 * (a fleet's checks: nearly all of them). Such a token rides on the turn's read instead
 * (currentWithToken, RevisionStore.revisionsWithTokens): its row and the revisions come from one
 * snapshot, one read transaction on SQLite, one statement and round trip on PostgreSQL, instead of
 * a revisions read and then a lookup. It is still read after its request arrived, and its row is
 * labelled with exactly the revision it was read under.
 */
import type { RevisionStore, RevisionsWithTokens, StoreRevisions, TokenRecord } from '../store/store.js';

export interface RevisionGate {
  /** The store's revisions, as read after the caller asked. */
  current(): Promise<StoreRevisions>;
  /**
   * The store's revisions and its row of this token (null: none), read together after the caller
   * asked, handed to `settle`. Callers of one turn asking for the same token share one read and
   * one settle (the first caller's): they get the same promise.
   */
  currentWithToken(tokenHash: string, settle: (read: RevisionsWithToken) => TokenRecord | null): Promise<TokenRecord | null>;
}

export interface RevisionsWithToken {
  readonly revisions: StoreRevisions;
  readonly token: TokenRecord | null;
}

export interface RevisionGateOptions {
  /**
   * At most one read under way (default false): callers arriving while one is under way wait for
   * the next, sent when it returns. For a store with a round trip (PostgreSQL), fewer reads, each
   * shared by more requests. Not wired to a setting: on PostgreSQL it saved no CPU a token check
   * that this VM resolves (bench/switch-cost.mjs, 6 paired rounds, 2026-11-29 08:12-08:17Z: +0.9
   * µs at 16 connections, +1.1 at 64; two earlier runs of 4 rounds had said -2.5 and -2.6).
   */
  readonly oneAtATime?: boolean;
}

const NO_TOKENS: ReadonlyMap<string, TokenRecord> = new Map();

/** One read per event-loop turn, shared by every caller of that turn. */
export function createRevisionGate(store: RevisionStore, options: RevisionGateOptions = {}): RevisionGate {
  interface Turn {
    readonly read: Promise<RevisionsWithTokens>;
    /** read's revisions alone, made at the turn's first current(): one promise for all of its callers. */
    revisions: Promise<StoreRevisions> | null;
    /** The tokens riding on the read: one promise per hash, shared by the turn's callers. */
    readonly tokens: Map<string, Promise<TokenRecord | null>>;
    send(): void;
  }
  const oneAtATime = options.oneAtATime ?? false;
  let next: Turn | null = null;
  let underWay = false;
  const sendNext = (): void => {
    const turn = next;
    if (turn === null) return;
    next = null; // callers from now on wait for the next read
    turn.send();
  };
  const upcoming = (): Turn => {
    if (next !== null) return next;
    const tokens = new Map<string, Promise<TokenRecord | null>>();
    let send = (): void => undefined;
    const read = new Promise<RevisionsWithTokens>((resolve, reject) => {
      send = () => {
        const asked = tokens.size === 0
          ? store.revisions().then((revisions) => ({ revisions, tokens: NO_TOKENS }))
          : store.revisionsWithTokens([...tokens.keys()]);
        if (oneAtATime) {
          underWay = true;
          const done = (): void => {
            underWay = false;
            if (next !== null) setImmediate(sendNext); // after the poll phase that brought this answer
          };
          asked.then(done, done);
        }
        asked.then(resolve, reject);
      };
    });
    const turn: Turn = { read, revisions: null, tokens, send };
    next = turn;
    // The check phase, after the poll phase whose requests asked; one at a time: or when the read under way returns.
    if (!oneAtATime || !underWay) setImmediate(sendNext);
    return turn;
  };
  return {
    current() {
      const turn = upcoming();
      turn.revisions ??= turn.read.then((r) => r.revisions);
      return turn.revisions;
    },
    currentWithToken(tokenHash, settle) {
      const turn = upcoming();
      let answer = turn.tokens.get(tokenHash);
      if (answer === undefined) {
        answer = turn.read.then((r) => settle({ revisions: r.revisions, token: r.tokens.get(tokenHash) ?? null }));
        turn.tokens.set(tokenHash, answer);
      }
      return answer;
    },
  };
}

/** One read per call: for tests and callers outside the serving path. */
export function directRevisions(store: RevisionStore): RevisionGate {
  return {
    current: () => store.revisions(),
    currentWithToken: (tokenHash, settle) => store.revisionsWithTokens([tokenHash])
      .then((r) => settle({ revisions: r.revisions, token: r.tokens.get(tokenHash) ?? null })),
  };
}
