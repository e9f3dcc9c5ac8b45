import { describe, expect, it } from 'vitest';
import { appendTicket, checkLoginUrl, compileLoginUrls, compileLoginUrlTemplate, type LoginUrlFacts } from '../../src/domain/login-url.js';

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

describe('login URL templates of the compatibility profile', () => {
  const facts: LoginUrlFacts = { ticket: 'T1', token: '{AB-CD}', appId: 2, login: 'o\'brien & co/x', loginUrl: 'https://app.example/in?x=1&y=2' };

  it('fills each placeholder, URL-encoded, and {loginUrl} as configured', () => {
    const url = compileLoginUrlTemplate('https://gps.example/AutoLogin.aspx?app={appId}&token={token}&u={login}&t={ticket}');
    expect(url.fill(facts)).toBe("https://gps.example/AutoLogin.aspx?app=2&token=%7BAB-CD%7D&u=o'brien%20%26%20co%2Fx&t=T1");
    expect(url).toMatchObject({ needsTicket: true, needsAppUrl: false });
    const wrapped = compileLoginUrlTemplate('{loginUrl}&sso={token}');
    expect(wrapped.fill(facts)).toBe('https://app.example/in?x=1&y=2&sso=%7BAB-CD%7D');
    expect(wrapped).toMatchObject({ needsTicket: false, needsAppUrl: true });
  });

  it('null is svcapi-auth\'s own form: the ticket appended to the configured URL', () => {
    const own = compileLoginUrlTemplate(null);
    expect(own).toMatchObject({ needsTicket: true, needsAppUrl: true });
    expect(own.fill(facts)).toBe(appendTicket('https://app.example/in?x=1&y=2', 'T1'));
  });

  it('per application by AppID, else the default; `none` as given', () => {
    const urls = compileLoginUrls({ default: 'https://d.example/?t={ticket}', apps: { 2: 'https://gps.example/?a={appId}', 5: null }, none: 'about:blank' });
    expect(urls.forApp(2).fill(facts)).toBe('https://gps.example/?a=2');
    expect(urls.forApp(5).fill(facts)).toBe('https://app.example/in?x=1&y=2&ticket=T1');
    expect(urls.forApp(3).fill(facts)).toBe('https://d.example/?t=T1');
    expect(urls.none).toBe('about:blank');
  });
});
