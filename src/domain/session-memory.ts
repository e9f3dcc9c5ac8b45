/**
 * A fleet's sessions, kept compactly: for each session token known to work, the revision it
 * was read under and its expiry, in typed arrays (access-cache.ts uses it for ValidateUserToken).
 *
 * Why: a fleet of devices each checking its own token every few minutes has a working set of a
 * million tokens or more. The access cache's records (a Map of objects, 50,000 by default) cannot
 * hold that many, so nearly every fleet check read the store: on SQLite a search of the token,
 * user and grant B-trees, about 7 µs of a check's 27 (bench/README.md, 2026-11-29), at its floor
 * for this schema. Here an entry is 22 bytes in three typed arrays, no object and no garbage:
 * a million sessions take 44 MiB (the table of 2^21 slots), and a check answered here costs a
 * hash-table probe.
 *
 * What an entry says: "under access revision R, this token's row was a session that works and
 * stays working until its expiry" (access-cache.ts keepable: no idle timeout, not revoked, user
 * and application enabled, granted). It is used only while the turn's access revision is still
 * R, and only before its expiry, exactly as a kept record is; every write that could end or
 * change such a session moves the revision (migration 6).
 *
 * Revisions are safe integers of any size (access_revision); a slot holds a 16-bit number for
 * its revision instead, given out in the order revisions are first seen here (the last 64
 * remembered): an entry kept under a revision this memory no longer numbers never answers.
 * Once 65,535 numbers are given out the memory starts again empty, which costs nothing that
 * each new revision does not cost anyway: an entry answers only under the turn's revision.
 *
 * Keys are the first 96 bits of the token's SHA-256 (what the store keeps, as lowercase hex): a
 * token matching a kept one there without being it takes a preimage search of 2^96 hashes, about
 * 2^76 requests against a million kept tokens (the audit trail's fingerprint shows 48 of those
 * bits, which does not shorten a search for a preimage).
 *
 * Layout: open addressing with linear probing over a power-of-two number of slots, at most
 * three quarters full; deletion shifts the entries after it back (no tombstones). It starts at
 * 1,024 slots and doubles as it fills, so a deployment with few tokens holds a few pages, not
 * the largest table. A doubling moves the entries a few slots per call, not all at once (at
 * once, the move from 2^20 to 2^21 slots held the event loop 90 ms in bench:scale's first pass):
 * meanwhile the old table is read too, and an entry leaving it is marked, not shifted, so the
 * move's scan of it misses nothing. At `maxEntries` a new entry replaces one near its home slot.
 */
export interface SessionMemory {
  /** The kept expiry (epoch ms) when the entry was kept under `revision` and `nowMs` is before it; otherwise -1. */
  validUntil(tokenHash: string, revision: number, nowMs: number): number;
  /** Whether an entry is kept for this token, whatever its revision and expiry. */
  holds(tokenHash: string): boolean;
  /** Keeps (or replaces) the entry; a revision that is not a safe integer, or an expiry that is not a positive number, is not kept. */
  set(tokenHash: string, revision: number, expiresAtMs: number): void;
  delete(tokenHash: string): void;
  /** Entries kept. */
  readonly size: number;
}

const INITIAL_SLOTS = 1024;
/** Revisions numbered at once; an older one's entries no longer answer (revisions move rarely: a revocation, a disabled user). */
const REVISIONS_NUMBERED = 64;

/** Eight lowercase hex digits of `s` from `at` as an unsigned 32-bit number (no substring). */
function hexWord(s: string, at: number): number {
  let v = 0;
  for (let i = at; i < at + 8; i++) {
    const c = s.charCodeAt(i);
    // '0'-'9' -> 0-9, 'a'-'f' -> 10-15 (hashToken's digest is lowercase hex; anything else still maps to a fixed value).
    v = (v << 4) | ((c <= 57 ? c - 48 : c - 87) & 15);
  }
  return v >>> 0;
}

/** One table: three key words, the expiry (0: empty; -1: gone, in a table being moved out of) and the revision's number per slot. */
interface Table {
  readonly mask: number;
  readonly keys: Uint32Array;
  readonly expiries: Float64Array;
  readonly numbered: Uint16Array;
}

const table = (slots: number): Table => ({ mask: slots - 1, keys: new Uint32Array(slots * 3), expiries: new Float64Array(slots), numbered: new Uint16Array(slots) });

/** Slots of the old table a call moves while a doubling is under way (it ends long before the next one is due). */
const MOVE_SLOTS = 32;

export function createSessionMemory(maxEntries: number): SessionMemory {
  const max = Math.max(0, Math.trunc(maxEntries));
  let cur = table(INITIAL_SLOTS);
  /** Entries in `cur`. */
  let curSize = 0;
  /** The table before the last doubling, while its entries are moved into `cur`. */
  let old: Table | null = null;
  let oldLive = 0;
  let moveAt = 0;

  // Revision -> the number its entries carry (1 and up).
  const numbers = new Map<number, number>();
  let nextNumber = 1;
  const numberOf = (revision: number): number => {
    const known = numbers.get(revision);
    if (known !== undefined) return known;
    if (nextNumber > 0xffff) {
      // Every number used: start again empty, so that no old entry carries a reused one.
      cur = table(INITIAL_SLOTS);
      curSize = 0;
      old = null;
      oldLive = 0;
      nextNumber = 1;
      numbers.clear();
    }
    const n = nextNumber++;
    numbers.set(revision, n);
    if (numbers.size > REVISIONS_NUMBERED) numbers.delete(numbers.keys().next().value as number);
    return n;
  };

  // The probed hash's words, set by load(): no array or object per call.
  let k0 = 0;
  let k1 = 0;
  let k2 = 0;
  const load = (tokenHash: string): void => {
    k0 = hexWord(tokenHash, 0);
    k1 = hexWord(tokenHash, 8);
    k2 = hexWord(tokenHash, 16);
  };
  /** The slot of `t` holding the loaded key, or -1 - the empty slot where it would go. */
  const find = (t: Table): number => {
    const { keys, expiries, mask } = t;
    let i = k0 & mask;
    for (;;) {
      const expiry = expiries[i] as number;
      if (expiry === 0) return -1 - i;
      const at = i * 3;
      if (expiry > 0 && keys[at] === k0 && keys[at + 1] === k1 && keys[at + 2] === k2) return i;
      i = (i + 1) & mask;
    }
  };
  const put = (t: Table, i: number, revisionNumber: number, expiresAtMs: number): void => {
    const at = i * 3;
    t.keys[at] = k0;
    t.keys[at + 1] = k1;
    t.keys[at + 2] = k2;
    t.expiries[i] = expiresAtMs;
    t.numbered[i] = revisionNumber;
  };
  /** Empties slot i of `cur` and moves back the entries after it that would otherwise be cut off from their home slot. */
  const removeCur = (slot: number): void => {
    const { keys, expiries, numbered, mask } = cur;
    let i = slot;
    let j = slot;
    for (;;) {
      j = (j + 1) & mask;
      if (expiries[j] === 0) break;
      const home = (keys[j * 3] as number) & mask;
      // j's entry may fill the hole at i unless its home lies cyclically in (i, j].
      if (i <= j ? home > i && home <= j : home > i || home <= j) continue;
      keys.copyWithin(i * 3, j * 3, j * 3 + 3);
      expiries[i] = expiries[j] as number;
      numbered[i] = numbered[j] as number;
      i = j;
    }
    expiries[i] = 0;
    curSize -= 1;
  };
  /** An entry of the old table goes: marked, so that neither a probe nor the move's scan stops or misses there. */
  const removeOld = (t: Table, i: number): void => {
    t.expiries[i] = -1;
    oldLive -= 1;
  };
  /** Moves up to `count` slots of the old table into `cur` (all of them with Infinity); clobbers the loaded key. */
  const move = (count: number): void => {
    const from = old;
    if (from === null) return;
    const end = Math.min(from.expiries.length, moveAt + count);
    for (; moveAt < end; moveAt++) {
      const expiry = from.expiries[moveAt] as number;
      if (expiry <= 0) continue;
      k0 = from.keys[moveAt * 3] as number;
      k1 = from.keys[moveAt * 3 + 1] as number;
      k2 = from.keys[moveAt * 3 + 2] as number;
      // A key is in one table only (set() takes it out of the old one first): its slot here is empty.
      put(cur, -1 - find(cur), from.numbered[moveAt] as number, expiry);
      curSize += 1;
      oldLive -= 1;
    }
    if (moveAt >= from.expiries.length) {
      old = null;
      oldLive = 0;
    }
  };
  /** The table and slot holding the loaded key, found in `cur` first; null when neither holds it. */
  let foundIn: Table = cur;
  const lookup = (): number => {
    const i = find(cur);
    if (i >= 0 || old === null) {
      foundIn = cur;
      return i;
    }
    foundIn = old;
    return find(old);
  };

  return {
    validUntil(tokenHash, revision, nowMs) {
      if (curSize + oldLive === 0) return -1;
      move(MOVE_SLOTS);
      load(tokenHash);
      const i = lookup();
      if (i < 0 || foundIn.numbered[i] !== numbers.get(revision)) return -1;
      const expiry = foundIn.expiries[i] as number;
      return nowMs < expiry ? expiry : -1;
    },
    holds(tokenHash) {
      if (curSize + oldLive === 0) return false;
      load(tokenHash);
      return lookup() >= 0;
    },
    set(tokenHash, revision, expiresAtMs) {
      if (max === 0 || !Number.isSafeInteger(revision) || !(expiresAtMs > 0)) return;
      const n = numberOf(revision);
      move(MOVE_SLOTS);
      load(tokenHash);
      let i = find(cur);
      if (i >= 0) {
        put(cur, i, n, expiresAtMs);
        return;
      }
      if (old !== null) {
        const j = find(old);
        if (j >= 0) removeOld(old, j);
      }
      if (curSize + oldLive >= max) {
        // Full: an entry near the new key's home slot makes room (a random one, as keys are
        // hashes; the table is at most three quarters full), or one of the old table.
        if (curSize > 0) {
          let victim = k0 & cur.mask;
          while (cur.expiries[victim] === 0) victim = (victim + 1) & cur.mask;
          removeCur(victim);
        } else if (old !== null) {
          let victim = moveAt;
          while ((old.expiries[victim] as number) <= 0) victim += 1;
          removeOld(old, victim);
        }
      } else if ((curSize + oldLive + 1) * 4 > cur.expiries.length * 3) {
        // A doubling: the last one's move must end first (it does long before: it moves
        // MOVE_SLOTS per call, and this one is due after a quarter of its slots were filled).
        move(Infinity);
        old = cur;
        oldLive = curSize;
        moveAt = 0;
        cur = table(old.expiries.length * 2);
        curSize = 0;
      }
      load(tokenHash); // move() probed with the words of the entries it moved
      i = find(cur);
      put(cur, -1 - i, n, expiresAtMs);
      curSize += 1;
    },
    delete(tokenHash) {
      if (curSize + oldLive === 0) return;
      move(MOVE_SLOTS);
      load(tokenHash);
      const i = lookup();
      if (i < 0) return;
      if (foundIn === cur) removeCur(i);
      else removeOld(foundIn, i);
    },
    get size() {
      return curSize + oldLive;
    },
  };
}
