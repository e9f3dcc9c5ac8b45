/**
 * The text of one DataTable cell, both ways: what a .NET DataSet writes for a value of each
 * column type (DataColumn storage -> XmlConvert.ToString), and what such text means when read
 * back (news import from a legacy service or its CSV export). Pure: no I/O.
 *
 * - int / long: decimal digits, `-` for negatives, within Int32 / Int64.
 * - boolean: `true` / `false` (XmlConvert.ToString(bool)); read: true, false, 1, 0.
 * - decimal: decimal.ToString(InvariantCulture): no exponent, trailing zeros kept (scale).
 * - double: XmlConvert.ToString(double) on .NET Framework (ASMX's runtime): `INF`, `-INF`, `NaN`,
 *   `-0`, else ToString("R"): the 15-digit form when it reads back as the same double, the
 *   17-digit one otherwise, in "G" layout: 1.5, 0.1, 100000000000000, 1E+15, 1E-05, 1E+21.
 * - dateTime: per the profile's `dateTimes`: 'zone' (local time of the zone with that date's
 *   offset, as DataSet writes DateTimeKind.Local and UnspecifiedLocal columns), 'unspecified'
 *   (local time, no offset: DataSetDateTime.Unspecified), 'utc' (UTC with Z). Fractional seconds
 *   only when non-zero, trailing zeros trimmed (the "FFFFFFF" of .NET's round-trip pattern).
 */
import type { NewsColumnType, NewsTableProfile } from '../contract/compat-profile.js';

/** One cell as the domain hands it: null (or a value the column's type cannot hold) omits the element, as DataSet does for DBNull. */
export type Cell = number | string | boolean | Date | null;

export type DateTimeMode = NewsTableProfile['dateTimes'];

const INT32 = [-(2n ** 31n), 2n ** 31n - 1n] as const;
const INT64 = [-(2n ** 63n), 2n ** 63n - 1n] as const;
/** decimal's range: 96-bit integer, scale 0 to 28. */
const DECIMAL_MAX_DIGITS = 29;
const DECIMAL_MAX_SCALE = 28;

const two = (n: number): string => (n < 10 ? `0${n}` : String(n));

/**
 * A zone's UTC offset in minutes at an instant. A zone's offset only changes on the hour (or
 * half hour) in practice, but never within a quarter hour: the Intl lookup (slow) is done once
 * per quarter hour seen, the rest is arithmetic.
 */
export function compileZoneOffset(timeZone: string): (ms: number) => number {
  const fmt = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' });
  const offsets = new Map<number, number>();
  return (ms: number): number => {
    const bucket = Math.floor(ms / 900_000);
    let minutes = offsets.get(bucket);
    if (minutes === undefined) {
      const name = fmt.formatToParts(new Date(bucket * 900_000)).find((p) => p.type === 'timeZoneName')?.value ?? '';
      const m = /GMT([+-])(\d{2}):(\d{2})/.exec(name);
      minutes = m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) : 0;
      if (offsets.size >= 4096) offsets.clear();
      offsets.set(bucket, minutes);
    }
    return minutes;
  };
}

/**
 * Formats a DateTime the way DataSet writes it: `yyyy-MM-ddTHH:mm:ss`, fractional seconds only
 * when non-zero (trailing zeros trimmed), then per `mode`: the zone's UTC offset for that instant
 * as `+hh:mm` ('zone', never `Z`; README "DateTime values"), nothing ('unspecified'), or `Z` ('utc').
 */
export function compileDateTimeFormatter(timeZone: string, mode: DateTimeMode = 'zone'): (value: Date) => string {
  const offsetMinutes = mode === 'utc' ? (): number => 0 : compileZoneOffset(timeZone);
  return (value: Date): string => {
    const utcMs = value.getTime();
    const minutes = offsetMinutes(utcMs);
    const local = new Date(utcMs + minutes * 60_000);
    const year = String(local.getUTCFullYear()).padStart(4, '0');
    const ms = local.getUTCMilliseconds();
    const fraction = ms === 0 ? '' : `.${String(ms).padStart(3, '0').replace(/0+$/, '')}`;
    let suffix = '';
    if (mode === 'utc') suffix = 'Z';
    else if (mode === 'zone') {
      const abs = Math.abs(minutes);
      suffix = `${minutes < 0 ? '-' : '+'}${two(Math.floor(abs / 60))}:${two(abs % 60)}`;
    }
    return `${year}-${two(local.getUTCMonth() + 1)}-${two(local.getUTCDate())}T${two(local.getUTCHours())}:${two(local.getUTCMinutes())}:${two(local.getUTCSeconds())}${fraction}${suffix}`;
  };
}

// --- numbers ---

function integerText(cell: Cell, range: readonly [bigint, bigint]): string | null {
  let value: bigint;
  if (typeof cell === 'number') {
    if (!Number.isSafeInteger(cell)) return null;
    value = BigInt(cell);
  } else if (typeof cell === 'string') {
    const m = /^\s*([+-]?\d{1,25})\s*$/.exec(cell);
    if (!m?.[1]) return null;
    value = BigInt(m[1]);
  } else {
    return null;
  }
  return value < range[0] || value > range[1] ? null : value.toString();
}

/**
 * XmlConvert.ToString(double) as .NET Framework writes it: ToString("R", InvariantInfo), which
 * is "G15" when that parses back to the same double and "G17" otherwise. ("G": fixed notation
 * unless the decimal exponent is at least the precision or below -4; then d.dddE+XX, at least two
 * exponent digits.) .NET Core 3.0+ writes the shortest round-trip digits instead: the same text
 * except for doubles needing 16 or 17 digits.
 */
export function formatXmlDouble(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Infinity) return 'INF';
  if (n === -Infinity) return '-INF';
  if (n === 0) return Object.is(n, -0) ? '-0' : '0';
  const g15 = Math.abs(n).toExponential(14);
  const precision = Number(g15) === Math.abs(n) ? 15 : 17;
  const exp = precision === 15 ? g15 : Math.abs(n).toExponential(16);
  const m = /^(\d)\.(\d+)e([+-]\d+)$/.exec(exp);
  if (!m) return String(n);
  const digits = `${m[1]}${m[2]}`.replace(/0+$/, '');
  const exponent = Number(m[3]);
  const scale = exponent + 1; // .NET's Number.Scale: value = 0.DIGITS x 10^scale
  const sign = n < 0 ? '-' : '';
  if (scale > precision || scale < -3) {
    const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const e = Math.abs(exponent);
    return `${sign}${mantissa}E${exponent < 0 ? '-' : '+'}${e < 10 ? `0${e}` : e}`;
  }
  if (scale <= 0) return `${sign}0.${'0'.repeat(-scale)}${digits}`;
  if (digits.length <= scale) return `${sign}${digits}${'0'.repeat(scale - digits.length)}`;
  return `${sign}${digits.slice(0, scale)}.${digits.slice(scale)}`;
}

/** XmlConvert.ToDouble: optional whitespace, INF / -INF / NaN, or a float literal; null otherwise. */
export function parseXmlDouble(text: string): number | null {
  const t = text.trim();
  if (t === 'INF') return Infinity;
  if (t === '-INF') return -Infinity;
  if (t === 'NaN') return NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t)) return null;
  const n = Number(t);
  return Number.isFinite(n) ? n : null;
}

/** A decimal literal as decimal.ToString writes it (no `+`, no leading zeros, scale kept); null if not one or out of range. */
export function normalizeDecimal(text: string): string | null {
  const m = /^\s*([+-]?)(\d*)(?:\.(\d*))?\s*$/.exec(text);
  if (!m) return null;
  const whole = (m[2] ?? '').replace(/^0+(?=\d)/, '');
  const fraction = m[3] ?? '';
  if (whole === '' && fraction === '') return null;
  if (fraction.length > DECIMAL_MAX_SCALE || (whole.replace(/^0+/, '') + fraction).replace(/^0+/, '').length > DECIMAL_MAX_DIGITS) return null;
  const zero = /^0*$/.test(whole + fraction);
  return `${m[1] === '-' && !zero ? '-' : ''}${whole === '' ? '0' : whole}${fraction === '' ? '' : `.${fraction}`}`;
}

function decimalFromNumber(n: number): string | null {
  if (!Number.isFinite(n)) return null;
  const plain = String(n);
  if (!/e/i.test(plain)) return normalizeDecimal(plain);
  // 1e21 and 1e-7 print with an exponent: the decimal has none.
  return Math.abs(n) >= 1 ? normalizeDecimal(BigInt(Math.trunc(n)).toString()) : normalizeDecimal(n.toFixed(DECIMAL_MAX_SCALE).replace(/0+$/, ''));
}

function booleanOf(cell: Cell): boolean | null {
  if (typeof cell === 'boolean') return cell;
  if (typeof cell === 'number') return cell === 1 ? true : cell === 0 ? false : null;
  if (typeof cell === 'string') {
    const t = cell.trim();
    if (t === 'true' || t === '1') return true;
    if (t === 'false' || t === '0') return false;
  }
  return null;
}

// --- dates ---

const XSD_DATE_TIME = /^\s*(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,7}))?)?)?\s*(Z|[+-]\d{2}:\d{2})?\s*$/;

/**
 * The instant of a wall-clock time in a zone. An ambiguous time (the hour repeated when clocks go
 * back) is taken as standard time, as .NET's TimeZoneInfo does; a time that does not exist (the
 * hour skipped when they go forward) with the offset before the change.
 */
export function zonedTimeToInstant(wallMs: number, offsetAt: (ms: number) => number): number {
  const before = offsetAt(wallMs - 86_400_000);
  const after = offsetAt(wallMs + 86_400_000);
  const fits = [before, after].filter((o) => offsetAt(wallMs - o * 60_000) === o);
  if (fits.length === 0) return wallMs - before * 60_000;
  return wallMs - Math.min(...fits) * 60_000;
}

/**
 * An xs:dateTime (or a CSV export's `yyyy-MM-dd HH:mm:ss.fff`, or a date alone) as an instant:
 * with `Z` or an offset, that instant; without, a wall-clock time in `timeZone`. Sub-millisecond
 * digits are dropped (a Date holds milliseconds). null when it is not one.
 */
export function compileDateTimeParser(timeZone: string): (text: string) => Date | null {
  const offsetAt = compileZoneOffset(timeZone);
  return (text: string): Date | null => {
    const m = XSD_DATE_TIME.exec(text);
    if (!m) return null;
    const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map((v) => Number(v ?? 0)) as [number, number, number, number, number, number];
    const ms = Number((m[7] ?? '').padEnd(3, '0').slice(0, 3) || 0);
    if (year < 1 || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59) return null;
    const wall = new Date(0);
    wall.setUTCFullYear(year, month - 1, day);
    wall.setUTCHours(hour, minute, second, ms);
    if (wall.getUTCDate() !== day) return null; // 2021-02-30
    const zone = m[8];
    if (zone === undefined) return new Date(zonedTimeToInstant(wall.getTime(), offsetAt));
    if (zone === 'Z') return wall;
    const sign = zone.startsWith('-') ? -1 : 1;
    const offset = sign * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6)));
    return new Date(wall.getTime() - offset * 60_000);
  };
}

// --- cells ---

export type CellWriter = (cell: Cell) => string | null;

/**
 * The text DataSet writes for `cell` in a column of `type` (not yet XML-escaped), or null: no
 * element (DBNull, or a value the type cannot hold: an int column never gets "abc", which a .NET
 * reader would refuse, failing the whole table).
 */
export function compileCellWriter(type: NewsColumnType, formatDate: (d: Date) => string, parseDate: (text: string) => Date | null): CellWriter {
  switch (type) {
    case 'int':
      return (cell) => integerText(cell, INT32);
    case 'long':
      return (cell) => integerText(cell, INT64);
    case 'boolean':
      return (cell) => {
        const b = booleanOf(cell);
        return b === null ? null : b ? 'true' : 'false';
      };
    case 'decimal':
      return (cell) => (typeof cell === 'number' ? decimalFromNumber(cell) : typeof cell === 'string' ? normalizeDecimal(cell) : null);
    case 'double':
      return (cell) => {
        const n = typeof cell === 'number' ? cell : typeof cell === 'string' ? parseXmlDouble(cell) : null;
        return n === null ? null : formatXmlDouble(n);
      };
    case 'dateTime':
      return (cell) => {
        const d = cell instanceof Date ? cell : typeof cell === 'string' ? parseDate(cell) : null;
        return d === null || Number.isNaN(d.getTime()) ? null : formatDate(d);
      };
    case 'string':
      return (cell) => {
        if (cell === null) return null;
        if (typeof cell === 'string') return cell;
        if (cell instanceof Date) return formatDate(cell);
        // Object.ToString() of the .NET value a DataSet would have been given.
        if (typeof cell === 'boolean') return cell ? 'True' : 'False';
        return Number.isInteger(cell) ? String(cell) : formatXmlDouble(cell);
      };
  }
}

/** Everything a table's cell writers need, compiled once per table. */
export function compileCellWriters(types: readonly NewsColumnType[], timeZone: string, mode: DateTimeMode): readonly CellWriter[] {
  const formatDate = compileDateTimeFormatter(timeZone, mode);
  const parseDate = compileDateTimeParser(mode === 'utc' ? 'UTC' : timeZone);
  return types.map((type) => compileCellWriter(type, formatDate, parseDate));
}
