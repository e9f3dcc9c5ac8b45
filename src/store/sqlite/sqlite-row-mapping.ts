/**
 * SQLite's side of the row mapping (row-mapping.ts): its values are 0/1 integers, epoch
 * milliseconds, comma lists and JSON text. Shared by every part of the SQLite store.
 */
import { createRowMappers } from '../row-mapping.js';

export const bool = (v: boolean): number => (v ? 1 : 0);
export const ms = (d: Date): number => d.getTime();
export const date = (v: unknown): Date => new Date(Number(v));
export const dateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : new Date(Number(v)));
export const str = (v: unknown): string => String(v);

export const { toApplication, toUser, toNews, toToken, toListedToken, toAudit } = createRowMappers({
  bool: (v) => v === 1,
  date,
  idList: (v) => (v === null || v === undefined || v === '' ? [] : String(v).split(',').map(Number)),
  stringList: (v) => {
    // applications.trusted_callers: a JSON array of strings.
    if (typeof v !== 'string') return [];
    try {
      const parsed: unknown = JSON.parse(v);
      return Array.isArray(parsed) ? parsed.filter((e): e is string => typeof e === 'string') : [];
    } catch {
      return [];
    }
  },
  json: (v) => {
    if (typeof v !== 'string') return null;
    try {
      return JSON.parse(v) as Record<string, unknown>;
    } catch {
      return null;
    }
  },
});
