/**
 * The hot path's timestamptz parser (src/store/postgres/timestamp-parser.ts) against node-postgres'
 * own (pg-types, postgres-date): the same Date, or the same value, for every text PostgreSQL's ISO
 * DateStyle writes, and for the shapes it leaves to pg-types. PostgreSQL's side (real server
 * texts in several time zones): postgres-store.test.ts.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { parseTimestamptz } from '../../src/store/postgres/timestamp-parser.js';

const standard = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ, 'text') as (text: string) => unknown;
const pad = (n: number, width = 2): string => String(n).padStart(width, '0');
const same = (text: string): void => {
  const ours = parseTimestamptz(text);
  const theirs = standard(text);
  expect(ours instanceof Date ? ours.getTime() : ours, text).toEqual(theirs instanceof Date ? theirs.getTime() : theirs);
};

/** A small deterministic generator, so a failure names the same text every run. */
function lcg(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return x / 2 ** 32;
  };
}

describe('timestamptz parser', () => {
  it('reads what ISO DateStyle writes as pg-types does: fractions of 0 to 6 digits, offsets in hours, minutes and seconds, either sign', () => {
    const random = lcg(7);
    const int = (n: number): number => Math.floor(random() * n);
    for (let k = 0; k < 20_000; k++) {
      const date = `${pad(1000 + int(9000), 4)}-${pad(1 + int(12))}-${pad(1 + int(28))} ${pad(int(24))}:${pad(int(60))}:${pad(int(60))}`;
      const digits = int(7);
      const fraction = digits === 0 ? '' : `.${String(int(10 ** digits)).padStart(digits, '0')}`;
      const sign = random() < 0.5 ? '+' : '-';
      const offset = [`${sign}${pad(int(15))}`, `${sign}${pad(int(15))}:${pad(int(60))}`, `${sign}${pad(int(15))}:${pad(int(60))}:${pad(int(60))}`][int(3)];
      same(`${date}${fraction}${offset}`);
    }
  });

  it('leaves what it does not read to pg-types: infinity, BC, years outside 1000-9999, no offset, trailing text', () => {
    for (const text of [
      'infinity', '-infinity', '2026-11-25 20:27:41.123+00 BC', '0099-01-01 00:00:00+00', '0999-12-31 23:59:59.999+00',
      '12026-01-01 00:00:00+00', '2026-11-25 20:27:41', '2026-11-25 20:27:41.5', '2026-11-25 20:27:41+00 ', '2026-11-25 20:27:41+0x',
      '2026-11-25T20:27:41+00', '2026-11-25', '1999-12-31 23:59:60+00',
    ]) same(text);
  });

  it('returns a Date for the texts of the token rows', () => {
    const text = '2026-11-25 20:27:41.123+00';
    expect(parseTimestamptz(text)).toEqual(new Date('2026-11-25T20:27:41.123Z'));
    expect(parseTimestamptz('2026-11-25 20:27:41.123+05:30')).toEqual(new Date('2026-11-25T14:57:41.123Z'));
  });
});
