/** A Map that forgets its least recently used entry beyond `max` entries (the domain's caches). */
export interface RecentMap<V> {
  get(key: string): V | undefined;
  set(key: string, value: V): void;
  delete(key: string): void;
}

export function recentMap<V>(max: number): RecentMap<V> {
  const map = new Map<string, V>();
  return {
    get(key) {
      const value = map.get(key);
      if (value !== undefined) {
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
