import { describe, expect, it } from 'vitest';
import { DEFAULT_COMPAT_PROFILE } from '../../src/contract/compat-profile.js';
import { compileDataTableWriter, compileDateTimeFormatter } from '../../src/wire/datatable.js';

describe('DataSet DateTime text', () => {
  it('writes the zone offset of that date, never Z, and trims fractional zeros', () => {
    const utc = compileDateTimeFormatter('UTC');
    expect(utc(new Date('2020-01-01T10:30:00Z'))).toBe('2020-01-01T10:30:00+00:00');
    expect(utc(new Date('2020-01-01T10:30:00.120Z'))).toBe('2020-01-01T10:30:00.12+00:00');
    const saoPaulo = compileDateTimeFormatter('America/Sao_Paulo');
    expect(saoPaulo(new Date('2020-01-01T10:30:00Z'))).toBe('2020-01-01T07:30:00-03:00');
    // São Paulo still had daylight saving time in January 2018.
    expect(saoPaulo(new Date('2018-01-10T10:30:00Z'))).toBe('2018-01-10T08:30:00-02:00');
    const kolkata = compileDateTimeFormatter('Asia/Kolkata');
    expect(kolkata(new Date('2020-01-01T23:45:00Z'))).toBe('2020-01-02T05:15:00+05:30');
    const berlin = compileDateTimeFormatter('Europe/Berlin');
    expect(berlin(new Date('2024-07-01T00:00:00Z'))).toBe('2024-07-01T02:00:00+02:00');
  });
});

describe('DataTable diffgram', () => {
  const writer = compileDataTableWriter(DEFAULT_COMPAT_PROFILE.whatsNew, 'UTC');
  const row = [1, 2, 'T <1>', 'B & b', 'en', '', new Date('2020-01-01T10:30:00Z')] as const;

  it('numbers rows from News1 / rowOrder 0, escapes text, self-closes empty strings, omits nulls', () => {
    const xml = writer.compact([row, [2, 2, 'x', 'y', 'en', null, new Date('2020-01-02T10:30:00Z')]]);
    expect(xml).toContain('<News diffgr:id="News1" msdata:rowOrder="0"><NewsID>1</NewsID><AppID>2</AppID><Title>T &lt;1&gt;</Title><Body>B &amp; b</Body><Language>en</Language><Url /><PublishedAt>2020-01-01T10:30:00+00:00</PublishedAt></News>');
    expect(xml).toContain('<News diffgr:id="News2" msdata:rowOrder="1"><NewsID>2</NewsID><AppID>2</AppID><Title>x</Title><Body>y</Body><Language>en</Language><PublishedAt>');
    expect(xml).not.toMatch(/\n/);
  });

  it('drops characters XML cannot carry instead of writing a broken document', () => {
    const xml = writer.compact([[1, 2, 'bell\u0007', 'nul\u0000', 'en', 'x', new Date(0)]]);
    expect(xml).toContain('<Title>bell</Title><Body>nul</Body>');
  });

  it('self-closes the diffgram when there are no rows, in both layouts', () => {
    expect(writer.compact([])).toMatch(/<diffgr:diffgram [^>]*\/>$/);
    expect(writer.indented([], '  ')).toMatch(/\r\n {2}<diffgr:diffgram [^>]*\/>$/);
  });
});

describe('DateTime offsets around transitions', () => {
  it('agrees with Intl every 7 minutes across a DST change, and at both transitions', () => {
    const format = compileDateTimeFormatter('Europe/Berlin');
    const intl = new Intl.DateTimeFormat('en-US', { timeZone: 'Europe/Berlin', timeZoneName: 'longOffset' });
    for (let t = Date.UTC(2024, 2, 31, 0, 0, 0); t < Date.UTC(2024, 2, 31, 3, 0, 0); t += 7 * 60_000) {
      const name = intl.formatToParts(new Date(t)).find((p) => p.type === 'timeZoneName')?.value ?? '';
      expect(format(new Date(t)).endsWith(name.replace('GMT', ''))).toBe(true);
    }
    // 01:00 UTC on 2024-03-31 is 03:00 CEST (just after the change); 00:59 UTC is 01:59 CET.
    expect(format(new Date(Date.UTC(2024, 2, 31, 0, 59)))).toBe('2024-03-31T01:59:00+01:00');
    expect(format(new Date(Date.UTC(2024, 2, 31, 1, 0)))).toBe('2024-03-31T03:00:00+02:00');
    expect(format(new Date(Date.UTC(2024, 9, 27, 0, 59, 59, 500)))).toBe('2024-10-27T02:59:59.5+02:00');
    expect(format(new Date(Date.UTC(2024, 9, 27, 1, 0)))).toBe('2024-10-27T02:00:00+01:00');
    expect(compileDateTimeFormatter('UTC')(new Date('0001-01-01T00:00:00Z'))).toBe('0001-01-01T00:00:00+00:00');
  });
});
