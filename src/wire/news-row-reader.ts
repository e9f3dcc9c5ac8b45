/**
 * One row of a legacy news table (cells by column name, from its WhatsNew DataTable or a CSV
 * export) read back through the compatibility profile's `whatsNew.columns`: a column from a
 * field gives that field, one from an attribute gives the attribute (its text as the legacy wrote
 * it), one with a constant is only compared. DateTimes with `Z` or an offset are that instant;
 * without, wall-clock time of the profile's zone (UTC for `dateTimes: 'utc'`).
 */
import type { NewsColumn, NewsFacts, NewsTableProfile } from '../contract/compat-profile.js';
import { compileCellWriters, compileDateTimeParser } from './datatable-values.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

function integer(text: string): number | null {
  const m = /^\s*([+-]?\d{1,16})\s*$/.exec(text);
  const n = m?.[1] === undefined ? NaN : Number(m[1]);
  return Number.isSafeInteger(n) ? n : null;
}

function flag(text: string): boolean | null {
  const t = text.trim().toLowerCase();
  return t === 'true' || t === '1' ? true : t === 'false' || t === '0' ? false : null;
}

export type NewsRowReader = (cells: ReadonlyMap<string, string>) => NewsFacts;

export function compileNewsRowReader(table: NewsTableProfile, timeZone: string): NewsRowReader {
  const parseDate = compileDateTimeParser(table.dateTimes === 'utc' ? 'UTC' : timeZone);
  const writers = compileCellWriters(table.columns.map((c) => c.type), timeZone, table.dateTimes);
  const columns = table.columns.map((column, i) => ({ column, write: writers[i] ?? ((): null => null) }));

  function read(column: NewsColumn, text: string, facts: Mutable<NewsFacts>, unreadable: string[], attributes: Record<string, string>): void {
    const from = column.from;
    if ('attribute' in from) {
      attributes[from.attribute] = text;
      return;
    }
    if ('const' in from) return;
    const bad = (what: string): void => {
      unreadable.push(`${column.name}: not ${what}`);
    };
    switch (from.field) {
      case 'newsId':
      case 'appId': {
        const n = integer(text);
        if (n === null) bad('a whole number');
        else facts[from.field] = n;
        return;
      }
      case 'publishedAt':
      case 'expiresAt': {
        if (text.trim() === '') return;
        const d = parseDate(text);
        if (d === null) bad('a DateTime');
        else facts[from.field] = d;
        return;
      }
      case 'membersOnly': {
        const b = flag(text);
        if (b === null) bad('a boolean');
        else facts.membersOnly = b;
        return;
      }
      default:
        facts[from.field] = text;
    }
  }

  return (cells) => {
    const facts: Mutable<NewsFacts> = { attributes: {}, unreadable: [], constantsDiffering: [] };
    const unreadable: string[] = [];
    const differing: string[] = [];
    const attributes: Record<string, string> = {};
    for (const { column, write } of columns) {
      const text = cells.get(column.name);
      if ('const' in column.from) {
        // Compared as the column writes both: "1.50" and "1.5" differ for a decimal, " 7" and "7" do not for an int.
        if (text !== undefined && write(text) !== write(column.from.const)) differing.push(column.name);
        continue;
      }
      if (text !== undefined) read(column, text, facts, unreadable, attributes);
    }
    return { ...facts, attributes, unreadable, constantsDiffering: differing };
  };
}
