import { describe, expect, it } from 'vitest';
import { appendTicket, checkLoginUrl } from '../../src/domain/login-url.js';

const T = '00112233-4455-6677-8899-aabbccddeeff';

describe('appendTicket', () => {
  it('joins with ? or & as the URL needs', () => {
    expect(appendTicket('https://a.example/login', T)).toBe(`https://a.example/login?ticket=${T}`);
    expect(appendTicket('https://a.example/login?lang=pt', T)).toBe(`https://a.example/login?lang=pt&ticket=${T}`);
    expect(appendTicket('https://a.example/login?', T)).toBe(`https://a.example/login?ticket=${T}`);
    expect(appendTicket('https://a.example/login?a=1&', T)).toBe(`https://a.example/login?a=1&ticket=${T}`);
  });

  it('keeps the fragment after the ticket', () => {
    expect(appendTicket('https://a.example/app#/home', T)).toBe(`https://a.example/app?ticket=${T}#/home`);
    expect(appendTicket('https://a.example/app?x=1#/home?y=2', T)).toBe(`https://a.example/app?x=1&ticket=${T}#/home?y=2`);
  });

  it('URL-encodes the value', () => {
    expect(appendTicket('https://a.example/', 'a b&c=d')).toBe('https://a.example/?ticket=a%20b%26c%3Dd');
  });
});

describe('checkLoginUrl', () => {
  it('accepts absolute http(s) URLs only', () => {
    expect(checkLoginUrl('https://a.example/login?x=1#f')).toBeNull();
    expect(checkLoginUrl('http://10.0.0.1:8080/')).toBeNull();
    expect(checkLoginUrl('/relative')).toMatch(/absolute/);
    expect(checkLoginUrl('ftp://a.example/')).toMatch(/http/);
    expect(checkLoginUrl('javascript:alert(1)')).toMatch(/http/);
    expect(checkLoginUrl('https://a.example/?ticket=1')).toMatch(/ticket/);
  });
});
