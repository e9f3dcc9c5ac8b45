/**
 * Token validation's memory. One primary-key read per request was most of the cost of
 * ValidateUserToken on SQLite, and the rows it reads change rarely. So rows are kept, and a
 * kept row is used only while it is provably the row the store would return now:
 *
 * - Every row is kept with the access revision (Store.revisions, migration 6) read before the
 *   row itself, and used only while the current revision, read after the request arrived
 *   (revision-gate.ts), is still that one. Triggers in the database move the revision on every
 *   write that can end a session or change how it is judged, whoever makes it (admin service,
 *   CLI in another process, another instance on the same PostgreSQL, raw SQL): a revocation, a
 *   disabled user or application, a withdrawn grant is seen by the very next request.
 * - Issuing and using tokens do not move it, so logins do not empty the memory.
 * - Time is judged on every use, as for a row just read (evaluateToken): a kept token still
 *   expires on time. And once expired by this process's clock it is no longer answered from
 *   memory at all but read again: housekeeping deletes expired rows without moving the revision
 *   (migration 13), and the store then says "unknown" (which token passthrough sends to the old
 *   service) where the kept row would say "expired".
 *
 * What is kept:
 * - session tokens that work at the time they are read and have no idle timeout. A sliding
 *   token's use is written on every request anyway, and a ticket is used once; unknown and
 *   dead tokens are not kept, so guessing tokens cannot fill the memory and always costs a read;
 * - applications (a handful of rows).
 * Both are bounded: tokens are forgotten in the order they were kept, applications least
 * recently used first. And a token is kept only at its second miss among roughly the last
 * `maxTokens` misses (a doorkeeper: bits set by its hash, cleared every `maxTokens` tokens):
 * a fleet whose devices each check their own token every few minutes has a working set far
 * larger than the memory, so every check misses anyway, and keeping each token read cost an
 * entry, an eviction and old-generation garbage for nothing (bench:scale fleet: ~90 MB of the
 * process's own memory and about as much CPU as the lookup itself). Tokens checked again soon
 * are kept from their second check on, as before. Tokens are keyed by their SHA-256 (what the store keeps), never by the
 * token itself.
 * - A token the memory does not hold at all would be read whatever the revisions say: it is read
 *   with them, in the turn's read (revision-gate.ts currentWithToken), and kept, if at all, under
 *   exactly the revision of that snapshot.
 * - Besides the records, every session read that would be kept is also remembered compactly
 *   (session-memory.ts: its expiry under its revision, 22 bytes, admitted at once): a fleet's
 *   working set of a million tokens fits there, where the records' Map holds 50,000. Only a
 *   plain ValidateUserToken asks it (checkToken); what needs the whole row (the owner, a ticket,
 *   WhatsNew and GetUserLoginURL's session) reads the records as before.
 */
import type { AccountStore, Application, TokenRecord, TokenStore } from '../store/store.js';
import { recentMap, type RecentMap } from './recent-map.js';
import { createSessionMemory, type SessionMemory } from './session-memory.js';
import type { RevisionGate } from './revision-gate.js';

export interface AccessCache {
  /** Store.findToken as of now. */
  findToken(tokenHash: string): Promise<TokenRecord | null>;
  /**
   * For a plain session check: a number when the session memory vouches for the token as of now
   * (the session's expiry, epoch ms), otherwise findToken's answer (the row, or null).
   */
  checkToken(tokenHash: string): Promise<number | TokenRecord | null>;
  /** Store.getApplication as of now. */
  getApplication(appId: number): Promise<Application | null>;
}

/** Default of AccessCacheOptions.maxSessions: 1,500,000 fit the table of 2^21 slots (44 MiB). */
const DEFAULT_SESSION_MEMORY_ENTRIES = 1_500_000;

export interface AccessCacheOptions {
  readonly store: Pick<TokenStore, 'findToken'> & Pick<AccountStore, 'getApplication'>;
  readonly revisions: RevisionGate;
  /** Session tokens kept at most (default 50,000); 0 keeps nothing and reads the store every time. */
  readonly maxTokens?: number;
  /**
   * Sessions remembered compactly at most (session-memory.ts; default DEFAULT_SESSION_MEMORY_ENTRIES;
   * 0: none, every check not answered by the records reads the store). Off too with maxTokens 0.
   */
  readonly maxSessions?: number;
  /** Applications kept at most (default 1000). */
  readonly maxApplications?: number;
  /** The clock expiry is judged by, in epoch milliseconds (default Date.now). */
  readonly now?: () => number;
  /**
   * Read a token the memory does not hold with the turn's revisions, in one snapshot (default
   * true; performance.tokenReadWithRevisions); false: the revisions first, then the lookup.
   */
  readonly readWithRevisions?: boolean;
}

/**
 * Tokens seen lately, approximately: two bits per token in a bit set of 16 bits per token the
 * memory keeps (false positives ~1.4%, which only keep a token one check early), all cleared once
 * `capacity` tokens were recorded. `seen` answers whether the token was recorded since and
 * records it. Token keys are SHA-256 hex: their own digits are the bit positions.
 */
function doorkeeper(capacity: number): { seen(key: string): boolean } {
  const size = 2 ** Math.max(10, Math.ceil(Math.log2(capacity * 16)));
  const bits = new Uint32Array(size / 32);
  const mask = size - 1;
  let recorded = 0;
  return {
    seen(key) {
      const a = (Number.parseInt(key.slice(0, 8), 16) >>> 0) & mask;
      const b = (Number.parseInt(key.slice(8, 16), 16) >>> 0) & mask;
      const hasA = (bits[a >>> 5] ?? 0) & (1 << (a & 31));
      const hasB = (bits[b >>> 5] ?? 0) & (1 << (b & 31));
      if (hasA !== 0 && hasB !== 0) return true;
      if (recorded >= capacity) {
        bits.fill(0);
        recorded = 0;
      }
      bits[a >>> 5] = (bits[a >>> 5] ?? 0) | (1 << (a & 31));
      bits[b >>> 5] = (bits[b >>> 5] ?? 0) | (1 << (b & 31));
      recorded += 1;
      return false;
    },
  };
}

interface Kept<T> {
  readonly revision: number;
  readonly value: T;
}

export function createAccessCache(options: AccessCacheOptions): AccessCache {
  const { store, revisions } = options;
  const now = options.now ?? Date.now;
  const prefetch = options.readWithRevisions ?? true;
  const unexpired = (record: TokenRecord): boolean => record.expiresAt.getTime() > now();
  const keepable = (record: TokenRecord): boolean =>
    record.kind === 'session' && record.idleTimeoutSeconds === null && record.revokedAt === null
    && record.userEnabled && record.appEnabled && record.granted && unexpired(record);
  const maxTokens = Math.max(0, Math.trunc(options.maxTokens ?? 50_000));
  if (maxTokens === 0) {
    // The reference behaviour, kept callable: what every kept answer must equal.
    return { findToken: (hash) => store.findToken(hash), checkToken: (hash) => store.findToken(hash), getApplication: (appId) => store.getApplication(appId) };
  }
  const sessions: SessionMemory = createSessionMemory(options.maxSessions ?? DEFAULT_SESSION_MEMORY_ENTRIES);
  /** What a fresh read of a token under `revision` leaves in the session memory. */
  const rememberSession = (tokenHash: string, token: TokenRecord | null, revision: number): void => {
    if (token !== null && keepable(token)) sessions.set(tokenHash, revision, token.expiresAt.getTime());
    else sessions.delete(tokenHash);
  };
  // Read on every request, written on a miss: forgotten in the order they were kept (recent-map.ts).
  const tokens = recentMap<Kept<TokenRecord>>(maxTokens, { byUse: false });
  const applications = recentMap<Kept<Application>>(Math.max(1, Math.trunc(options.maxApplications ?? 1000)));
  const recentTokens = doorkeeper(maxTokens);
  const readingTokens = new Map<string, Kept<Promise<TokenRecord | null>>>();
  const readingApplications = new Map<string, Kept<Promise<Application | null>>>();

  /**
   * The kept value when still current, else a fresh read (kept when `keep` says so), labelled
   * with the revision read before it. Requests that miss the same key under the same revision
   * share one read: nothing that matters committed before the later one's revisions were read,
   * or they would not be the same revision.
   */
  function through<T>(memory: RecentMap<Kept<T>>, reading: Map<string, Kept<Promise<T | null>>>, key: string, read: () => Promise<T | null>,
    keep: (value: T) => boolean, usable: (value: T) => boolean, admit: (key: string) => boolean,
    onRead?: (key: string, fresh: T | null, revision: number) => void): Promise<T | null> {
    return revisions.current().then(({ access }) => {
      const kept = memory.get(key);
      if (kept !== undefined && kept.revision === access && usable(kept.value)) return kept.value;
      const pending = reading.get(key);
      if (pending !== undefined && pending.revision === access) return pending.value;
      // Kept before (now stale or expired): worth keeping again; otherwise the doorkeeper decides.
      const admitted = kept !== undefined || admit(key);
      const value = read().then((fresh) => {
        onRead?.(key, fresh, access);
        if (fresh !== null && admitted && keep(fresh)) memory.set(key, { revision: access, value: fresh });
        else memory.delete(key);
        return fresh;
      }).finally(() => {
        if (reading.get(key)?.value === value) reading.delete(key);
      });
      reading.set(key, { revision: access, value });
      return value;
    });
  }

  /**
   * A token the memory does not hold at all, nor is reading: it will be read whatever the
   * revisions say, so it is read with them, in the same snapshot (revision-gate.ts
   * currentWithToken), and kept, if at all, under exactly that revision.
   */
  function readWithRevisions(tokenHash: string): Promise<TokenRecord | null> {
    // Settled once per turn and token (requests of one turn for one token share the read): one miss for the doorkeeper, as in through().
    return revisions.currentWithToken(tokenHash, ({ revisions: { access }, token }) => {
      rememberSession(tokenHash, token, access);
      if (token !== null && keepable(token) && recentTokens.seen(tokenHash)) tokens.set(tokenHash, { revision: access, value: token });
      else tokens.delete(tokenHash);
      return token;
    });
  }

  const findToken = (tokenHash: string): Promise<TokenRecord | null> => (prefetch && tokens.get(tokenHash) === undefined && !readingTokens.has(tokenHash)
    ? readWithRevisions(tokenHash)
    : through(tokens, readingTokens, tokenHash, () => store.findToken(tokenHash), keepable, unexpired, recentTokens.seen, rememberSession));

  return {
    findToken,
    checkToken(tokenHash) {
      // Not remembered: findToken (with the turn's revisions in one snapshot, when not kept either).
      if (!sessions.holds(tokenHash)) return findToken(tokenHash);
      return revisions.current().then<number | TokenRecord | null>(({ access }) => {
        const until = sessions.validUntil(tokenHash, access, now());
        // Remembered under an older revision, or expired by now: read again, as a stale record is.
        return until >= 0 ? until : findToken(tokenHash);
      });
    },
    getApplication: (appId) => through(applications, readingApplications, String(appId), () => store.getApplication(appId), () => true, () => true, () => true),
  };
}
