/**
 * Dates on the command line (news add --published-at / --expires-at, audit --since / --until):
 * ISO 8601, `2025-03-01` (UTC midnight), `2025-03-01T09:00` (local time), `2025-03-01T09:00:00Z`,
 * `...+01:00`. JavaScript's Date rolls impossible values over (`2027-02-30` becomes March 2nd,
 * `T24:00` the next day), so every field is checked first: a date that does not exist is refused,
 * never moved.
 */
import { InvalidArgumentError } from 'commander';

export type CliDate = { readonly ok: true; readonly date: Date } | { readonly ok: false; readonly message: string };

const SHAPE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-](\d{2}):?(\d{2}))?)?$/;

const EXPECTED = 'expected an ISO 8601 date like 2025-03-01 or 2025-03-01T09:00:00Z.';

function daysInMonth(year: number, month: number): number {
  // Day 0 of the next month is the last day of this one (UTC, so no zone or DST shift).
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

export function parseCliDate(text: string): CliDate {
  const trimmed = text.trim();
  const m = SHAPE.exec(trimmed);
  if (m === null) return { ok: false, message: EXPECTED };
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12) return { ok: false, message: `there is no month ${m[2]} (${trimmed}); ${EXPECTED}` };
  if (day < 1 || day > daysInMonth(year, month)) return { ok: false, message: `${m[1]}-${m[2]} has no day ${m[3]} (${trimmed}); ${EXPECTED}` };
  if (m[4] !== undefined) {
    const [hour, minute, second] = [Number(m[4]), Number(m[5]), Number(m[6] ?? '0')];
    if (hour > 23 || minute > 59 || second > 59) return { ok: false, message: `there is no time of day ${trimmed.slice(11)} (hours 00-23, minutes and seconds 00-59); ${EXPECTED}` };
    if (m[8] !== undefined && (Number(m[8]) > 23 || Number(m[9]) > 59)) return { ok: false, message: `bad UTC offset in ${trimmed}; ${EXPECTED}` };
  }
  const date = new Date(trimmed);
  if (Number.isNaN(date.getTime())) return { ok: false, message: EXPECTED };
  return { ok: true, date };
}

/** parseCliDate for commander: a date that does not parse is a usage error. */
export function dateArg(text: string): Date {
  const parsed = parseCliDate(text);
  if (!parsed.ok) throw new InvalidArgumentError(parsed.message);
  return parsed.date;
}
