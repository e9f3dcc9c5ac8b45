/** keysOnce (src/ops/metrics.ts): the request path's metric keys made once, and bounded. */
import { describe, expect, it } from 'vitest';
import { keysOnce } from '../../src/ops/metrics.js';

describe('keysOnce', () => {
  it('makes a kept value once per combination and hands the same one back', () => {
    let made = 0;
    const key = keysOnce((a, b, c) => {
      made++;
      return { value: { text: `${a}|${b}|${c}` }, keep: true };
    });
    const first = key('ValidateUserToken', 'soap11', 'ok');
    expect(first.text).toBe('ValidateUserToken|soap11|ok');
    expect(key('ValidateUserToken', 'soap11', 'ok')).toBe(first);
    expect(key('ValidateUserToken', 'soap11', 'fault').text).toBe('ValidateUserToken|soap11|fault');
    expect(key('ValidateUserToken', 'soap12', 'ok').text).toBe('ValidateUserToken|soap12|ok');
    expect(key('WhatsNew', 'soap11', 'ok').text).toBe('WhatsNew|soap11|ok');
    expect(made).toBe(4);
    for (let i = 0; i < 10; i++) key('WhatsNew', 'soap11', 'ok');
    expect(made).toBe(4);
  });

  it('keeps nothing make does not ask to keep: values outside the fixed sets cannot grow it', () => {
    let made = 0;
    const key = keysOnce((a, b, c) => {
      made++;
      return { value: `${a}|${b}|${c}`, keep: a === 'known' };
    });
    for (let i = 0; i < 100; i++) expect(key(`odd-${i}`, 'b', 'c')).toBe(`odd-${i}|b|c`);
    expect(key('odd-1', 'b', 'c')).toBe('odd-1|b|c');
    expect(made).toBe(101);
    key('known', 'b', 'c');
    key('known', 'b', 'c');
    expect(made).toBe(102);
  });
});
