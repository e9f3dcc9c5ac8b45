import { describe, expect, it } from 'vitest';
import { parseClrInt32, parseXmlInt32 } from '../../src/wire/dotnet-int.js';

describe('XmlConvert.ToInt32 (SOAP parameters)', () => {
  it.each([
    ['2', 2], [' 2 ', 2], ['\t\r\n7\n', 7], ['+5', 5], ['-5', -5], ['007', 7], ['-0', 0],
    ['2147483647', 2147483647], ['-2147483648', -2147483648], ['0000000000002147483647', 2147483647],
  ])('accepts %j as %d', (text, value) => {
    expect(parseXmlInt32(text)).toEqual({ ok: true, value });
  });

  it.each(['', ' ', 'abc', '2,3', '1.0', '0x10', '+-1', '- 1', '1 2', '\u00a02', '２', '\v2'])('rejects %j as a format error', (text) => {
    expect(parseXmlInt32(text)).toEqual({ ok: false, reason: 'format' });
  });

  it.each(['2147483648', '-2147483649', '99999999999', '1'.repeat(400)])('rejects %j as an overflow', (text) => {
    expect(parseXmlInt32(text)).toEqual({ ok: false, reason: 'overflow' });
  });
});

describe('Convert.ChangeType (HTTP GET/POST parameters)', () => {
  it('allows the wider NumberStyles white space (VT, FF)', () => {
    expect(parseClrInt32('\v\f2\v')).toEqual({ ok: true, value: 2 });
    expect(parseXmlInt32('\v2')).toEqual({ ok: false, reason: 'format' });
  });
  it('treats a joined duplicate as a format error', () => {
    expect(parseClrInt32('2,3')).toEqual({ ok: false, reason: 'format' });
  });
});
