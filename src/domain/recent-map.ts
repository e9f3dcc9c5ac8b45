/**
 * A Map that forgets its oldest entry beyond `max` entries (the domain's caches). Oldest means
 * least recently used, or with `byUse: false` least recently set: a read then costs one Map
 * lookup instead of a delete and a re-insert, for memories read far more often than written
 * (a hot entry is dropped at most once per `max` insertions, and read again).
 */
export interface RecentMap<V> {
  get(key: string): V | undefined;
  set(key: string, value: V): void;
  delete(key: string): void;
}

export function recentMap<V>(max: number, { byUse = true }: { readonly byUse?: boolean } = {}): RecentMap<V> {
  const map = new Map<string, V>();
  // The oldest entry is found by one iterator kept across evictions, not by a new map.keys()
  // each time: a Map keeps deleted entries as holes until it rehashes, and a new iterator walks
  // every hole at the front again. With 50,000 tokens replaced in turn (a fleet, every check a
  // miss) that walk was as dear as the store lookup itself (bench/README.md). A live iterator
  // still yields the entries in insertion order, sees the ones added after it was made, and
  // skips deleted ones: its next entry is always the oldest.
  let oldest: Iterator<string> | null = null;
  const evictOldest = (): void => {
    while (map.size > 0) {
      oldest ??= map.keys();
      const next = oldest.next();
      if (next.done === true) {
        oldest = null; // ran out while entries were deleted behind it: start again from the front
        continue;
      }
      map.delete(next.value);
      return;
    }
  };
  return {
    get(key) {
      const value = map.get(key);
      if (value !== undefined && byUse) {
        // Map keeps insertion order: re-inserting makes it the most recent.
        map.delete(key);
        map.set(key, value);
      }
      return value;
    },
    set(key, value) {
      map.delete(key);
      map.set(key, value);
      if (map.size > max) evictOldest();
    },
    delete(key) {
      map.delete(key);
    },
  };
}
