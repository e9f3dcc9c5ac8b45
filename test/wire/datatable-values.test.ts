/** Cell text as a .NET DataSet writes each column type (src/wire/datatable-values.ts), and the profile-driven table. */
import { describe, expect, it } from 'vitest';
import type { NewsTableProfile } from '../../src/contract/compat-profile.js';
import { compileDataTableWriter } from '../../src/wire/datatable.js';
import {
  compileCellWriters, compileDateTimeFormatter, compileDateTimeParser, formatXmlDouble, normalizeDecimal, parseXmlDouble,
} from '../../src/wire/datatable-values.js';

describe('XmlConvert.ToString(double), .NET Framework "R"', () => {
  it('writes the 15-digit form in G layout, INF, -INF, NaN and -0', () => {
    const cases: [number, string][] = [
      [1.5, '1.5'], [0.1, '0.1'], [1e21, '1E+21'], [1e15, '1E+15'], [1e14, '100000000000000'], [123456789012345, '123456789012345'],
      [0.0001, '0.0001'], [0.00001, '1E-05'], [1.5e-7, '1.5E-07'], [-2.25, '-2.25'], [100, '100'], [1e308, '1E+308'], [5e-324, '4.94065645841247E-324'],
      [Infinity, 'INF'], [-Infinity, '-INF'], [NaN, 'NaN'], [-0, '-0'], [0, '0'], [1234.5678, '1234.5678'],
    ];
    for (const [value, text] of cases) expect(formatXmlDouble(value), String(value)).toBe(text);
  });

  it('falls back to 17 digits when 15 do not read back as the same double', () => {
    expect(formatXmlDouble(0.1 + 0.2)).toBe('0.30000000000000004');
    expect(formatXmlDouble(0.3 * 3)).toBe('0.89999999999999991'); // .NET Core would write 0.8999999999999999
    expect(formatXmlDouble(2 ** 53 + 2)).toBe('9007199254740994');
    expect(formatXmlDouble(1 / 3)).toBe('0.33333333333333331');
    expect(formatXmlDouble(123456789012345680)).toBe('1.2345678901234568E+17');
  });

  it('reads what XmlConvert.ToDouble reads', () => {
    expect(parseXmlDouble(' 1E+21 ')).toBe(1e21);
    expect(parseXmlDouble('INF')).toBe(Infinity);
    expect(parseXmlDouble('-INF')).toBe(-Infinity);
    expect(parseXmlDouble('NaN')).toBeNaN();
    expect(parseXmlDouble('.5')).toBe(0.5);
    for (const bad of ['', 'abc', '1,5', 'Infinity', '1e400', '0x10']) expect(parseXmlDouble(bad), bad).toBeNull();
  });
});

describe('decimal text', () => {
  it('keeps the scale, drops + and leading zeros, refuses what decimal cannot hold', () => {
    expect(normalizeDecimal('1.50')).toBe('1.50');
    expect(normalizeDecimal('+007.5')).toBe('7.5');
    expect(normalizeDecimal('.5')).toBe('0.5');
    expect(normalizeDecimal('5.')).toBe('5');
    expect(normalizeDecimal('-0.00')).toBe('0.00');
    expect(normalizeDecimal('79228162514264337593543950335')).toBe('79228162514264337593543950335');
    for (const bad of ['', '.', '1e5', '1,5', 'abc', '1'.repeat(30), `0.${'1'.repeat(29)}`]) expect(normalizeDecimal(bad), bad).toBeNull();
  });
});

describe('DateTime forms', () => {
  it('writes zone, unspecified and utc forms', () => {
    const at = new Date('2020-01-01T10:30:00.250Z');
    expect(compileDateTimeFormatter('America/Sao_Paulo', 'zone')(at)).toBe('2020-01-01T07:30:00.25-03:00');
    expect(compileDateTimeFormatter('America/Sao_Paulo', 'unspecified')(at)).toBe('2020-01-01T07:30:00.25');
    expect(compileDateTimeFormatter('America/Sao_Paulo', 'utc')(at)).toBe('2020-01-01T10:30:00.25Z');
  });

  it('reads back with an offset, with Z, or as wall-clock time of the zone; standard time when ambiguous', () => {
    const parse = compileDateTimeParser('America/Sao_Paulo');
    expect(parse('2020-01-01T07:30:00.25')?.toISOString()).toBe('2020-01-01T10:30:00.250Z');
    expect(parse('2020-01-01T07:30:00-03:00')?.toISOString()).toBe('2020-01-01T10:30:00.000Z');
    expect(parse('2020-01-01T10:30:00Z')?.toISOString()).toBe('2020-01-01T10:30:00.000Z');
    expect(parse('2020-01-01 07:30:00.1234567')?.toISOString()).toBe('2020-01-01T10:30:00.123Z');
    expect(parse('2020-01-01')?.toISOString()).toBe('2020-01-01T03:00:00.000Z');
    // São Paulo in daylight saving time (-02:00) in January 2018.
    expect(parse('2018-01-10T08:30:00')?.toISOString()).toBe('2018-01-10T10:30:00.000Z');
    const berlin = compileDateTimeParser('Europe/Berlin');
    expect(berlin('2024-10-27T02:30:00')?.toISOString()).toBe('2024-10-27T01:30:00.000Z'); // the repeated hour: CET
    expect(berlin('2024-07-01T02:00:00')?.toISOString()).toBe('2024-07-01T00:00:00.000Z');
    for (const bad of ['', 'yesterday', '2021-02-30T00:00:00', '2020-13-01', '2020-01-01T25:00:00', '0000-01-01']) expect(parse(bad), bad).toBeNull();
  });
});

describe('cells per column type', () => {
  const [int, long, bool, dec, dbl, date, text] = compileCellWriters(['int', 'long', 'boolean', 'decimal', 'double', 'dateTime', 'string'], 'UTC', 'zone');
  const w = (f: typeof int, v: Parameters<NonNullable<typeof int>>[0]): string | null => (f === undefined ? 'missing' : f(v));

  it('writes what the type can hold, and nothing (no element) for what it cannot', () => {
    expect([w(int, 42), w(int, '42'), w(int, ' -7 '), w(int, 2 ** 31), w(int, 'abc'), w(int, 1.5), w(int, true), w(int, null)])
      .toEqual(['42', '42', '-7', null, null, null, null, null]);
    expect([w(long, '9223372036854775807'), w(long, '9223372036854775808'), w(long, 2 ** 31)]).toEqual(['9223372036854775807', null, '2147483648']);
    expect([w(bool, true), w(bool, false), w(bool, 'true'), w(bool, '1'), w(bool, ' 0 '), w(bool, 'True'), w(bool, 'yes'), w(bool, 2)])
      .toEqual(['true', 'false', 'true', 'true', 'false', null, null, null]);
    expect([w(dec, 1.5), w(dec, '2.50'), w(dec, 1e21), w(dec, 'x')]).toEqual(['1.5', '2.50', '1000000000000000000000', null]);
    expect([w(dbl, 1.5), w(dbl, '1e21'), w(dbl, 'INF'), w(dbl, 'x')]).toEqual(['1.5', '1E+21', 'INF', null]);
    expect([w(date, new Date('2020-01-01T10:30:00Z')), w(date, '2020-01-01T10:30:00'), w(date, 'soon'), w(date, 5)])
      .toEqual(['2020-01-01T10:30:00+00:00', '2020-01-01T10:30:00+00:00', null, null]);
    expect([w(text, 'x'), w(text, ''), w(text, 42), w(text, true), w(text, 0.5), w(text, null)]).toEqual(['x', '', '42', 'True', '0.5', null]);
  });
});

describe('a DataTable from a non-default profile', () => {
  const profile: NewsTableProfile = {
    dataSetName: 'Dados',
    tableName: 'Noticias',
    columns: [
      { name: 'IdNoticia', type: 'int', from: { field: 'newsId' } },
      { name: 'Titulo', type: 'string', from: { field: 'title' } },
      { name: 'DataPublicacao', type: 'dateTime', from: { field: 'publishedAt' } },
      { name: 'Destaque', type: 'boolean', from: { attribute: 'Destaque' } },
      { name: 'Peso', type: 'double', from: { attribute: 'Peso' } },
      { name: 'Preco', type: 'decimal', from: { const: 1.5 } },
      { name: 'Grande', type: 'long', from: { const: 1 } },
    ],
    dateTimes: 'unspecified',
    maxRows: null,
  };
  const writer = compileDataTableWriter(profile, 'America/Sao_Paulo');

  it('names the data set, the table and each column with its XSD type', () => {
    const xml = writer.compact([]);
    expect(xml).toContain('<xs:schema id="Dados" ');
    expect(xml).toContain('<xs:element name="Dados" msdata:IsDataSet="true" msdata:MainDataTable="Noticias" msdata:UseCurrentLocale="true">');
    expect(xml).toContain('<xs:element name="Noticias"><xs:complexType><xs:sequence>'
      + '<xs:element name="IdNoticia" type="xs:int" minOccurs="0" /><xs:element name="Titulo" type="xs:string" minOccurs="0" />'
      + '<xs:element name="DataPublicacao" type="xs:dateTime" minOccurs="0" /><xs:element name="Destaque" type="xs:boolean" minOccurs="0" />'
      + '<xs:element name="Peso" type="xs:double" minOccurs="0" /><xs:element name="Preco" type="xs:decimal" minOccurs="0" />'
      + '<xs:element name="Grande" type="xs:long" minOccurs="0" /></xs:sequence>');
  });

  it('writes each row in the types\' forms, leaving out cells with no value', () => {
    const xml = writer.compact([
      [7, 'Olá & <bem-vindo>', new Date('2020-01-01T10:30:00Z'), 'true', '1e21', 1.5, 1],
      [8, 'Sem destaque', new Date('2020-01-02T10:30:00Z'), null, null, 1.5, 1],
    ]);
    expect(xml).toContain('<Noticias diffgr:id="Noticias1" msdata:rowOrder="0"><IdNoticia>7</IdNoticia><Titulo>Olá &amp; &lt;bem-vindo&gt;</Titulo>'
      + '<DataPublicacao>2020-01-01T07:30:00</DataPublicacao><Destaque>true</Destaque><Peso>1E+21</Peso><Preco>1.5</Preco><Grande>1</Grande></Noticias>');
    expect(xml).toContain('<Noticias diffgr:id="Noticias2" msdata:rowOrder="1"><IdNoticia>8</IdNoticia><Titulo>Sem destaque</Titulo>'
      + '<DataPublicacao>2020-01-02T07:30:00</DataPublicacao><Preco>1.5</Preco><Grande>1</Grande></Noticias>');
  });
});
