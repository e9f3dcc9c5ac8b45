import { describe, expect, it } from 'vitest';
import { parseUrlEncoded, urlDecode } from '../../src/wire/http-form.js';

describe('HttpUtility.UrlDecode', () => {
  it.each([
    ['a+b', 'a b'],
    ['%41%42', 'AB'],
    ['w%C3%B6rd', 'wörd'],
    ['%u00e9t%u00E9', 'été'],
    ['100%', '100%'],
    ['%zz', '%zz'],
    ['%4', '%4'],
    ['%u12', '%u12'],
    ['%C3', '\uFFFD'],
    ['plain', 'plain'],
  ])('%j -> %j', (input, output) => {
    expect(urlDecode(input)).toBe(output);
  });
});

describe('NameValueCollection semantics', () => {
  it('matches names case-insensitively and joins duplicates with a comma', () => {
    const c = parseUrlEncoded('LOGIN=a&login=b&AppId=2&empty=&noequals&=orphan');
    expect(c.get('login')).toBe('a,b');
    expect(c.get('appid')).toBe('2');
    expect(c.get('empty')).toBe('');
    expect(c.get('noequals')).toBeUndefined();
    expect(c.get('')).toBe('orphan');
  });
});
