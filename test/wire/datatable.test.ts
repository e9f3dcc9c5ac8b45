import { describe, expect, it } from 'vitest';
import { NEWS_TABLE } from '../../src/contract/operations.js';
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
  const writer = compileDataTableWriter(NEWS_TABLE, 'UTC');
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
