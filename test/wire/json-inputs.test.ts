/** Where the JSON operations read their inputs: the profile's sources, in its order. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_COMPAT_PROFILE } from '../../src/contract/compat-profile.js';
import { basicCredentials, bearerToken, compileInputReader, type RequestInputs } from '../../src/wire/json-inputs.js';
import { FormCollection, parseUrlEncoded } from '../../src/wire/http-form.js';

function request(parts: { query?: string; form?: string; headers?: Record<string, string | string[]> }): RequestInputs {
  return {
    query: parts.query === undefined ? FormCollection.EMPTY : parseUrlEncoded(parts.query),
    form: parts.form === undefined ? FormCollection.EMPTY : parseUrlEncoded(parts.form),
    headers: parts.headers ?? {},
  };
}

const basic = (login: string, password: string): string => `Basic ${Buffer.from(`${login}:${password}`).toString('base64')}`;

describe('the default profile (svcapi-auth\'s own inputs)', () => {
  const user = compileInputReader(DEFAULT_COMPAT_PROFILE.json.validateUser.inputs, ['login', 'password', 'appId', 'ipAddress']);
  const token = compileInputReader(DEFAULT_COMPAT_PROFILE.json.validateUserToken.inputs, ['token']);

  it('query string, then form, then Authorization: Basic, each input on its own; names without regard to case', () => {
    expect(user(request({ query: 'LOGIN=q&appid=2', form: 'login=f&password=fp', headers: { authorization: basic('b', 'b:p') } }))).toEqual({ login: 'q', password: 'fp', appId: '2', ipAddress: null });
    expect(user(request({ headers: { authorization: basic('b', 'b:p') } }))).toEqual({ login: 'b', password: 'b:p', appId: null, ipAddress: null });
    // An empty value is a value, as Request[name] has it.
    expect(user(request({ query: 'login=', headers: { authorization: basic('b', 'p') } })).login).toBe('');
    // Headers and cookies are not its sources.
    expect(user(request({ headers: { login: 'h', cookie: 'login=c' } })).login).toBeNull();
  });

  it('the token from the query string, the form, then Authorization: Bearer', () => {
    expect(token(request({ query: 'token=q', form: 'token=f', headers: { authorization: 'Bearer b' } })).token).toBe('q');
    expect(token(request({ form: 'token=f', headers: { authorization: 'Bearer b' } })).token).toBe('f');
    expect(token(request({ headers: { authorization: 'bearer  b ' } })).token).toBe('b');
    expect(token(request({ headers: { authorization: basic('a', 'b') } })).token).toBeNull();
  });
});

describe('a profile\'s sources and names', () => {
  it('headers by name (any case), cookies as sent (not URL-decoded, the first of a repeated name)', () => {
    const read = compileInputReader({ sources: ['cookie', 'header', 'query'], names: { login: 'X-User', password: 'Pwd', appId: 'App', ipAddress: 'ip' } }, ['login', 'password', 'appId', 'ipAddress']);
    expect(read(request({ query: 'X-User=q&Pwd=qp&App=1&ip=1.2.3.4', headers: { 'x-user': 'h', cookie: 'Pwd=a%20b; Pwd=second; other=1' } }))).toEqual({ login: 'h', password: 'a%20b', appId: '1', ipAddress: '1.2.3.4' });
    expect(read(request({ headers: { cookie: 'X-User=c', 'x-user': 'h' } })).login).toBe('c');
    expect(read(request({ headers: { cookie: 'garbage;;; =;x' } })).login).toBeNull();
  });

  it('Basic gives only the login and password, Bearer only the token', () => {
    const user = compileInputReader({ sources: ['basic', 'query'], names: { login: 'login', password: 'password', appId: 'AppId', ipAddress: 'IPAddress' } }, ['login', 'password', 'appId']);
    expect(user(request({ query: 'login=q&AppId=2', headers: { authorization: basic('b', 'p') } }))).toEqual({ login: 'b', password: 'p', appId: '2' });
    const token = compileInputReader({ sources: ['bearer', 'header'], names: { token: 'Authorization' } }, ['token']);
    expect(token(request({ headers: { authorization: 'Bearer abc' } })).token).toBe('abc');
    // A header of the same name is a source of its own, tried in its turn.
    expect(token(request({ headers: { authorization: 'Token abc' } })).token).toBe('Token abc');
  });

  it('reads malformed credentials as absent, never as an error', () => {
    expect(basicCredentials('Basic !!!')).toBeNull();
    expect(basicCredentials(`Basic ${Buffer.from('no-colon').toString('base64')}`)).toBeNull();
    expect(basicCredentials(undefined)).toBeNull();
    expect(bearerToken('Bearer')).toBeNull();
    expect(bearerToken('Bearer a b')).toBeNull();
  });
});
