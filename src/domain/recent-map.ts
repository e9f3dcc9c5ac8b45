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
      if (map.size > max) {
        const oldest = map.keys().next();
        if (oldest.done !== true) map.delete(oldest.value);
      }
    },
    delete(key) {
      map.delete(key);
    },
  };
}
