/**
 * Token adoption's rules: the strict reading of the old ValidateUserTokenJSON's answer against
 * the profile's success layout (domain/legacy-token-adoption.ts), and when token passthrough
 * asks for it (domain/legacy-token-passthrough.ts): after a fresh yes only, once per token at a
 * time, within half the call budget, and without the client's answer waiting or the circuit
 * moving on its failures; and what the adopter tells its observers (the audit trail's source).
 */
import { describe, expect, it } from 'vitest';
import type { JsonOperationProfile } from '../../src/contract/compat-profile.js';
import type { CallerContext } from '../../src/domain/auth-service.js';
import { createAdminService } from '../../src/domain/admin-service.js';
import { combineAuthEvents, type TokenAdoptionEvent } from '../../src/domain/auth-events.js';
import { createTokenAdopter, parseLegacyJsonDate, readLegacyTokenJson, type TokenAdopter, type TokenAdoptionResult } from '../../src/domain/legacy-token-adoption.js';
import { createLegacyTokenPassthrough, type LegacyTokenReply, type LegacyTokenService } from '../../src/domain/legacy-token-passthrough.js';
import { cryptoRandomSource } from '../../src/domain/random-source.js';
import { DEFAULT_LEGACY_TOKEN_FORM } from '../../src/domain/token-form.js';
import { canonicalToken, hashToken } from '../../src/domain/tokens.js';
import { openStore } from '../../src/store/open-store.js';
import { fakeClock, fakeHasher } from '../support/domain-fakes.js';

const LAYOUT: JsonOperationProfile = {
  inputs: { sources: ['header'], names: { token: 'AuthToken' } },
  success: [
    { key: 'IsValid', value: { field: 'valid' } },
    { key: 'Kind', value: { const: 'session' } },
    { key: 'Login', value: { field: 'login' } },
    { key: 'AppID', value: { field: 'appId' } },
    { key: 'ValidUntil', value: { field: 'expiresAt' } },
  ],
  failure: [{ key: 'IsValid', value: { const: false } }],
  dates: 'ms-ajax',
  escaping: 'javascript-serializer',
};
const UNTIL = Date.parse('2027-01-11T12:00:00Z');
const good = (over: Record<string, unknown> = {}): string => JSON.stringify({ IsValid: true, Kind: 'session', Login: 'maria', AppID: 2, ValidUntil: `/Date(${UNTIL})/`, ...over });

describe('reading the old ValidateUserTokenJSON answer', () => {
  it('believes exactly the layout: keys in order, constants, true, a login, an Int32 AppID, a date in the profile\'s form', () => {
    expect(readLegacyTokenJson(good(), LAYOUT)).toStrictEqual({ login: 'maria', appId: 2, expiresAt: new Date(UNTIL) });
    // As JavaScriptSerializer writes it: "\/Date(...)\/" and white space between members.
    expect(readLegacyTokenJson(`{ "IsValid" : true, "Kind":"session","Login":"maria","AppID":2,\n"ValidUntil":"\\/Date(${UNTIL})\\/"}`, LAYOUT)?.expiresAt).toStrictEqual(new Date(UNTIL));
    const refused: Array<[string, string]> = [
      ['valid false', good({ IsValid: false })],
      ['valid "true"', good({ IsValid: 'true' })],
      ['another constant', good({ Kind: 'ticket' })],
      ['a login that is empty', good({ Login: '' })],
      ['a login of spaces', good({ Login: '  ' })],
      ['a login that is no string', good({ Login: 7 })],
      ['a login too long', good({ Login: 'x'.repeat(257) })],
      ['an AppID as text', good({ AppID: '2' })],
      ['an AppID not whole', good({ AppID: 2.5 })],
      ['an AppID beyond Int32', good({ AppID: 2 ** 31 })],
      ['an ISO date where ms-ajax is expected', good({ ValidUntil: new Date(UNTIL).toISOString() })],
      ['a wcf date where ms-ajax is expected', good({ ValidUntil: `/Date(${UNTIL}+0000)/` })],
      ['a date member of null', good({ ValidUntil: null })],
      ['the failure layout', '{"IsValid":false}'],
      ['keys in another order', JSON.stringify({ Kind: 'session', IsValid: true, Login: 'maria', AppID: 2, ValidUntil: `/Date(${UNTIL})/` })],
      ['a key more', good({ Extra: 1 })],
      ['a key missing', JSON.stringify({ IsValid: true, Kind: 'session', Login: 'maria', ValidUntil: `/Date(${UNTIL})/` })],
      ['a key twice (JSON.parse would keep the last)', `{"IsValid":true,"Kind":"session","Login":"maria","Login":"admin","AppID":2,"ValidUntil":"\\/Date(${UNTIL})\\/"}`],
      ['keys in another case', good().replace('"Login"', '"login"')],
      ['a nested value', good({ Login: { name: 'maria' } })],
      ['an array', `[${good()}]`],
      ['not JSON', `${good()},`],
      ['XML', '<valid>true</valid>'],
      ['empty', ''],
      ['huge', good({ Login: 'maria' }).replace('"maria"', `"maria${' '.repeat(5000)}"`)],
    ];
    for (const [name, text] of refused) expect(readLegacyTokenJson(text, LAYOUT), name).toBeNull();
  });

  it('reads a key and a value that hold quotes, colons and escapes without confusing them', () => {
    const layout: JsonOperationProfile = { ...LAYOUT, success: [{ key: 'a":b', value: { const: 'x","Login":"y' } }, { key: 'Login', value: { field: 'login' } }, { key: 'Until', value: { field: 'expiresAt' } }] };
    const text = JSON.stringify({ 'a":b': 'x","Login":"y', Login: 'o"brien', Until: `/Date(${UNTIL})/` });
    expect(readLegacyTokenJson(text, layout)).toStrictEqual({ login: 'o"brien', appId: null, expiresAt: new Date(UNTIL) });
  });

  it('reads dates in the three forms, and refuses what would be a guess', () => {
    expect(parseLegacyJsonDate('2027-01-11T12:00:00Z', 'iso')).toStrictEqual(new Date(UNTIL));
    expect(parseLegacyJsonDate('2027-01-11T09:00:00.0000000-03:00', 'iso')).toStrictEqual(new Date(UNTIL));
    expect(parseLegacyJsonDate('2027-01-11T12:00:00.1234567Z', 'iso')).toStrictEqual(new Date(UNTIL + 123));
    expect(parseLegacyJsonDate(`/Date(${UNTIL})/`, 'ms-ajax')).toStrictEqual(new Date(UNTIL));
    expect(parseLegacyJsonDate(`/Date(${UNTIL}+0000)/`, 'wcf')).toStrictEqual(new Date(UNTIL));
    expect(parseLegacyJsonDate(`/Date(${UNTIL}-0300)/`, 'wcf')).toStrictEqual(new Date(UNTIL));
    for (const [text, dates] of [
      ['2027-01-11T12:00:00', 'iso'], // no offset: whose local time?
      ['2027-02-30T12:00:00Z', 'iso'],
      ['2027-01-11', 'iso'],
      ['tomorrow', 'iso'],
      [`/Date(${UNTIL})/`, 'wcf'],
      ['/Date(99999999999999999)/', 'ms-ajax'],
      ['/Date(1.5)/', 'ms-ajax'],
    ] as const) expect(parseLegacyJsonDate(text, dates), text).toBeNull();
  });
});

const TOKEN = 'C0FFEE00-1234-4ABC-9DEF-0123456789AB';
const OTHER = 'BADC0DE0-1234-4ABC-9DEF-0123456789AB';

interface Gate<T> { promise: Promise<T>; resolve: (value: T) => void }
function gate<T>(): Gate<T> {
  let resolve: (value: T) => void = () => undefined;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** An old service that vouches for TOKEN and OTHER; its JSON answers wait for the test. */
function scripted(): LegacyTokenService & { jsonAsked: string[]; json: Map<string, Gate<LegacyTokenReply>> } {
  const legacy = {
    jsonAsked: [] as string[],
    json: new Map<string, Gate<LegacyTokenReply>>(),
    validateUserToken(token: string): Promise<LegacyTokenReply> {
      return Promise.resolve({ kind: 'answer', result: token === TOKEN || token === OTHER ? 'true' : 'false' });
    },
    getUserLoginUrl(): Promise<LegacyTokenReply> {
      return Promise.resolve({ kind: 'answer', result: '' });
    },
    validateUserTokenJson(token: string): Promise<LegacyTokenReply> {
      legacy.jsonAsked.push(token);
      const g = gate<LegacyTokenReply>();
      legacy.json.set(token, g);
      return g.promise;
    },
  };
  return legacy;
}

function adoption(options: { maxConcurrent?: number; circuitFailures?: number } = {}): {
  legacy: ReturnType<typeof scripted>; passthrough: ReturnType<typeof createLegacyTokenPassthrough>;
  adopted: Array<[string, string]>; contexts: Array<CallerContext | undefined>; ended: TokenAdoptionResult[]; next: () => Promise<TokenAdoptionResult>;
} {
  const legacy = scripted();
  const adopted: Array<[string, string]> = [];
  const contexts: Array<CallerContext | undefined> = [];
  const ended: TokenAdoptionResult[] = [];
  const waiting: Array<(r: TokenAdoptionResult) => void> = [];
  const adopter: TokenAdopter = {
    adopt(token, answer, ctx) {
      adopted.push([token, answer]);
      contexts.push(ctx);
      return Promise.resolve('adopted');
    },
  };
  const passthrough = createLegacyTokenPassthrough({
    legacy, adopter, clock: fakeClock('2027-01-10T12:00:00Z'), random: cryptoRandomSource, tokenForm: DEFAULT_LEGACY_TOKEN_FORM,
    until: new Date('2027-02-01T00:00:00Z'), cacheSeconds: 0, ...options,
    onAdoption: (r) => {
      ended.push(r);
      waiting.shift()?.(r);
    },
  });
  // The next adoption to end (an event, not a sleep).
  const next = (): Promise<TokenAdoptionResult> => new Promise((resolve) => waiting.push(resolve));
  return { legacy, passthrough, adopted, contexts, ended, next };
}

describe('when passthrough adopts', () => {
  it('after a fresh yes, without the client waiting; the JSON answer goes to the adopter', async () => {
    const { legacy, passthrough, adopted, next } = adoption();
    // The JSON call is still open (nobody resolved it) and the check has answered already.
    expect((await passthrough.check(TOKEN)).valid).toBe(true);
    expect(legacy.jsonAsked).toStrictEqual([TOKEN]);
    expect(passthrough.status().inFlight).toBe(1);
    const done = next();
    legacy.json.get(TOKEN)?.resolve({ kind: 'answer', result: '{"x":1}' });
    expect(await done).toBe('adopted');
    expect(adopted).toStrictEqual([[TOKEN, '{"x":1}']]);
    expect(passthrough.status()).toMatchObject({ inFlight: 0, adoptions: { adopted: 1 } });
  });

  it('hands the adopter the request whose check got the yes (its id and address go to the audit trail)', async () => {
    const { legacy, passthrough, contexts, next } = adoption();
    const asking = { sourceIp: '203.0.113.7', requestId: 'req-check' };
    expect((await passthrough.check(TOKEN, asking)).valid).toBe(true);
    let done = next();
    legacy.json.get(TOKEN)?.resolve({ kind: 'answer', result: '{}' });
    await done;
    // GetUserLoginURL's relay checks the token first: its request goes with that adoption.
    const relaying = { sourceIp: '198.51.100.4', requestId: 'req-url' };
    expect(await passthrough.loginUrl(OTHER, 2, relaying)).toBeNull();
    done = next();
    legacy.json.get(OTHER)?.resolve({ kind: 'answer', result: '{}' });
    await done;
    expect(contexts).toStrictEqual([asking, relaying]);
  });

  it('never for a no, and once per token while an adoption of it is under way', async () => {
    const { legacy, passthrough, next } = adoption();
    expect((await passthrough.check('0DDBA11C-0FFE-4EE1-8BAD-F00DDEADBEEF')).valid).toBe(false);
    expect(legacy.jsonAsked).toStrictEqual([]);
    // cacheSeconds 0: every check is a fresh yes; the adoption of the first is still open.
    for (let i = 0; i < 5; i++) expect((await passthrough.check(TOKEN)).valid).toBe(true);
    expect(legacy.jsonAsked).toStrictEqual([TOKEN]);
    const done = next();
    legacy.json.get(TOKEN)?.resolve({ kind: 'answer', result: '{}' });
    await done;
    // Not stored (say): the next fresh yes tries again.
    expect((await passthrough.check(TOKEN)).valid).toBe(true);
    expect(legacy.jsonAsked).toStrictEqual([TOKEN, TOKEN]);
  });

  it('takes at most half the calls in flight; beyond that, and on failures, `error` without moving the circuit', async () => {
    const { legacy, passthrough, ended, next } = adoption({ maxConcurrent: 2, circuitFailures: 1 });
    expect((await passthrough.check(TOKEN)).valid).toBe(true);
    const refused = next();
    expect((await passthrough.check(OTHER)).valid).toBe(true);
    expect(await refused).toBe('error'); // one adoption at a time with maxConcurrent 2
    expect(legacy.jsonAsked).toStrictEqual([TOKEN]);
    const failed = next();
    legacy.json.get(TOKEN)?.resolve({ kind: 'unavailable', reason: 'HTTP 500' });
    expect(await failed).toBe('error');
    // One failure would open this circuit (circuitFailures 1), had the JSON call counted.
    expect(passthrough.status().circuit).toBe('closed');
    expect(ended).toStrictEqual(['error', 'error']);
  });
});

describe('what the adopter tells its observers', () => {
  it('every answer judged, with the token\'s fingerprint and what the answer said; an observer that throws changes no result', async () => {
    const store = await openStore('sqlite::memory:');
    try {
      const clock = fakeClock('2027-01-10T12:00:00Z');
      const admin = createAdminService({ store, hasher: fakeHasher(), clock });
      const must = <T>(r: { ok: true; value: T } | { ok: false; message: string }): T => {
        if (!r.ok) throw new Error(r.message);
        return r.value;
      };
      must(await admin.addApplication({ appId: 7, name: 'Portal', loginUrl: 'https://portal.example/login', tokenLifetimeSeconds: 3600 }));
      must(await admin.addApplication({ appId: 8, name: 'Closed', loginUrl: 'https://closed.example/login' }));
      const maria = must(await admin.addUser({ login: 'Maria', password: 'pw', appIds: [2, 7, 8] }));
      const off = must(await admin.addUser({ login: 'off', password: 'pw', appIds: [2] }));
      must(await admin.setUserEnabled('off', false));
      must(await admin.updateApplication(8, { enabled: false }));
      const seen: TokenAdoptionEvent[] = [];
      const events = combineAuthEvents({ tokenAdoption: (e) => seen.push(e) }, { tokenAdoption: () => { throw new Error('observer broken'); } });
      const adopter = createTokenAdopter({ store, clock, layout: LAYOUT, events });
      const asking = { sourceIp: '203.0.113.7', requestId: 'req-1' };
      const tokens = Array.from({ length: 9 }, (_, i) => `C0FFEE0${i}-1234-4ABC-9DEF-0123456789AB`);
      const fp = (token: string): string => hashToken(canonicalToken(token) ?? '').slice(0, 12);
      const answers: Array<[string, TokenAdoptionResult]> = [
        [good({ Login: 'maria', AppID: 7 }), 'adopted'],
        ['<html/>', 'unrecognised'],
        [good({ Login: 'nobody' }), 'unknown_user'],
        [good({ Login: 'off' }), 'unknown_user'],
        [good({ Login: 'maria', AppID: 5 }), 'unknown_app'],
        [good({ Login: 'maria', AppID: 8 }), 'unknown_app'],
        [good({ Login: 'maria', ValidUntil: '/Date(0)/' }), 'expired'],
      ];
      for (const [i, [answer, result]] of answers.entries()) expect(await adopter.adopt(tokens[i] ?? '', answer, asking), result).toBe(result);
      expect(await adopter.adopt(tokens[0] ?? '', good({ Login: 'maria', AppID: 7 }))).toBe('already_stored');
      const told = { legacyExpiresAt: new Date(UNTIL) };
      expect(seen).toStrictEqual([
        // The stored expiry: the old one capped at the application's token lifetime (an hour).
        { result: 'adopted', tokenFp: fp(tokens[0] ?? ''), ctx: asking, userId: maria.userId, login: 'Maria', appId: 7, ...told, expiresAt: new Date(Date.parse('2027-01-10T13:00:00Z')) },
        { result: 'unrecognised', tokenFp: fp(tokens[1] ?? ''), ctx: asking, userId: null, appId: null, legacyExpiresAt: null },
        { result: 'unknown_user', tokenFp: fp(tokens[2] ?? ''), ctx: asking, userId: null, unknownLogin: 'nobody', appId: 2, ...told },
        { result: 'unknown_user', tokenFp: fp(tokens[3] ?? ''), ctx: asking, userId: off.userId, login: 'off', userDisabled: true, appId: 2, ...told },
        { result: 'unknown_app', tokenFp: fp(tokens[4] ?? ''), ctx: asking, userId: maria.userId, login: 'Maria', appId: 5, ...told, appProblem: 'not-granted' },
        { result: 'unknown_app', tokenFp: fp(tokens[5] ?? ''), ctx: asking, userId: maria.userId, login: 'Maria', appId: 8, ...told, appProblem: 'app-disabled' },
        { result: 'expired', tokenFp: fp(tokens[6] ?? ''), ctx: asking, userId: null, appId: 2, legacyExpiresAt: new Date(0) },
        { result: 'already_stored', tokenFp: fp(tokens[0] ?? ''), userId: maria.userId, login: 'Maria', appId: 7, ...told },
      ]);
      // Without an AppID member: several grants leave the application unknown.
      const noApp: JsonOperationProfile = { ...LAYOUT, success: LAYOUT.success.filter((m) => m.key !== 'AppID') };
      const several = JSON.stringify({ IsValid: true, Kind: 'session', Login: 'maria', ValidUntil: `/Date(${UNTIL})/` });
      expect(await createTokenAdopter({ store, clock, layout: noApp, events }).adopt(tokens[7] ?? '', several)).toBe('unknown_app');
      expect(seen.at(-1)).toMatchObject({ result: 'unknown_app', appId: null, appProblem: 'ambiguous' });
      // The store failing is an error, told to nobody (the metrics count it).
      const failing = createTokenAdopter({ store: { ...store, importToken: () => Promise.reject(new Error('down')) }, clock, layout: LAYOUT, events });
      const before = seen.length;
      expect(await failing.adopt(tokens[8] ?? '', good({ Login: 'maria', AppID: 7 }))).toBe('error');
      expect(seen).toHaveLength(before);
    } finally {
      await store.close();
    }
  });
});
