/**
 * PostgreSQL's side of the row mapping (row-mapping.ts): node-postgres hands booleans, Date
 * objects, arrays and parsed jsonb, which the shared mappers turn into the store's records.
 */
import { createRowMappers } from '../row-mapping.js';

export const date = (v: unknown): Date => (v instanceof Date ? v : new Date(String(v)));
export const dateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : date(v));
export const str = (v: unknown): string => String(v);
export const num = (v: unknown): number => Number(v);

/** PostgreSQL's side of the row mapping: booleans, Date objects, arrays, jsonb. */
export const { toApplication, toUser, toNews, toToken, toListedToken, toAudit } = createRowMappers({
  bool: (v) => v === true,
  date,
  idList: (v) => (Array.isArray(v) ? v.map(Number) : []),
  stringList: (v) => (Array.isArray(v) ? v.map(String) : []),
  json: (v) => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>) : null),
});
