/**
 * Token passthrough end to end: the whole stack (SQLite store, HTTP app, every binding) with the
 * SOAP 1.1 client of src/legacy/soap-legacy-tokens.ts asking a stand-in old service that issues
 * upper-case GUIDs. Tokens it issued keep working on svcapi-auth until the end date; forged,
 * revoked and (after the end date) all its tokens do not; an old service that is down, hung or
 * hostile costs a bounded time, sockets and memory, and never touches our own tokens. Then the
 * same against a whole other legacy deployment (the compat tools' stand-in) with its own token
 * form and failure value, whose tokens its own ValidateUser issued.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLegacyTokenPassthrough, type LegacyTokenCheckResult, type LegacyTokenPassthroughOptions } from '../../src/domain/legacy-token-passthrough.js';
import { cryptoRandomSource } from '../../src/domain/random-source.js';
import { DEFAULT_LEGACY_TOKEN_FORM } from '../../src/domain/token-form.js';
import { createSoapLegacyTokenService, type SoapLegacyTokenService } from '../../src/legacy/soap-legacy-tokens.js';
import { BINDINGS, buildRequest, call, parseResult, type TableRows } from '../support/asmx-client.js';
import { fakeClock, SECOND, type FakeClock } from '../support/domain-fakes.js';
import { startLegacyStandin, STANDIN_PROFILE, STANDIN_USER, type LegacyStandin } from '../support/legacy-standin.js';
import { createTestStack, seedReference, type TestStack } from '../support/start-app.js';
import { hangup, refusedUrl, requestsArriving, startLegacyStandIn, type LegacyStandIn } from './legacy-stand-in.js';

let legacy: LegacyStandIn;
beforeAll(async () => {
  legacy = await startLegacyStandIn();
});
afterAll(async () => {
  await legacy.close();
});

interface Harness {
  stack: TestStack;
  clock: FakeClock;
  client: SoapLegacyTokenService;
  results: LegacyTokenCheckResult[];
  ourToken: string;
}
const open: Harness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) {
    h.client.close();
    await h.stack.close();
  }
  legacy.mode = 'normal';
});

async function harness(overrides: Partial<LegacyTokenPassthroughOptions> & { url?: string; timeoutMs?: number } = {}): Promise<Harness> {
  const clock = fakeClock('2027-01-10T12:00:00Z');
  const client = createSoapLegacyTokenService({ url: overrides.url ?? legacy.url, timeoutMs: overrides.timeoutMs ?? 1000, maxSockets: overrides.maxConcurrent ?? 16 });
  const results: LegacyTokenCheckResult[] = [];
  const passthrough = createLegacyTokenPassthrough({
    legacy: client, clock, random: cryptoRandomSource, tokenForm: DEFAULT_LEGACY_TOKEN_FORM, until: new Date('2027-02-01T00:00:00Z'),
    onCheck: (r) => results.push(r), ...overrides,
  });
  const stack = await createTestStack({ clock, legacyTokens: passthrough, throttle: false });
  await seedReference(stack.admin);
  const members = await stack.admin.addNews({ appId: 2, title: 'Members only', body: 'for members', language: 'en', url: 'http://gps.example/news/m', publishedAt: new Date('2020-01-09T10:30:00Z'), membersOnly: true });
  if (!members.ok) throw new Error(members.message);
  const ourToken = String(await call(stack.app, 'soap11', 'ValidateUser', { login: 'demo', password: 'demo-pass', AppId: 2, IPAddress: '' }));
  const h = { stack, clock, client, results, ourToken };
  open.push(h);
  return h;
}

const validate = async (h: Harness, token: string, binding: (typeof BINDINGS)[number] = 'soap11'): Promise<boolean> =>
  (await call(h.stack.app, binding, 'ValidateUserToken', { token })) as boolean;
const newsTitles = async (h: Harness, token: string): Promise<string[]> =>
  ((await call(h.stack.app, 'soap11', 'WhatsNew', { AppToken: token, AppID: 2, AppVersion: '', Language: 'en', qtyNews: 10 })) as TableRows).map((r) => r.Title ?? '');

describe('token passthrough against a stand-in old service', () => {
  it('a token the old service issued works on every operation; a forged one in the right form does not', async () => {
    const h = await harness();
    const token = legacy.issue();
    for (const binding of BINDINGS) expect(await validate(h, token, binding), binding).toBe(true);
    const json = JSON.parse(String(await call(h.stack.app, 'http-get', 'ValidateUserTokenJSON', {}, { query: `token=${token}` }))) as { valid: boolean; expires: string };
    expect(json.valid).toBe(true);
    expect(new Date(json.expires).getTime()).toBe(h.clock.now().getTime() + 60 * SECOND);
    expect(await newsTitles(h, token)).toContain('Members only');
    for (const binding of BINDINGS) {
      expect(await call(h.stack.app, binding, 'GetUserLoginURL', { token, AppID: 2 }), binding).toBe(`https://old.example/Login.aspx?app=2&ticket=T-${token.slice(0, 8)}`);
    }

    const forged = '0DDBA11C-0FFE-4EE1-8BAD-F00DDEADBEEF';
    for (const binding of BINDINGS) expect(await validate(h, forged, binding), binding).toBe(false);
    expect(JSON.parse(String(await call(h.stack.app, 'http-get', 'ValidateUserTokenJSON', {}, { query: `token=${forged}` })))).toEqual({ valid: false });
    expect(await newsTitles(h, forged)).not.toContain('Members only');
    expect(await call(h.stack.app, 'soap11', 'GetUserLoginURL', { token: forged, AppID: 2 })).toBe('');
    // The forged token was asked about once; every later check used the kept "no".
    expect(legacy.asked.filter((t) => t === forged)).toHaveLength(1);
  });

  it('our own tokens are never asked of the old service, and keep their own answers', async () => {
    const h = await harness();
    legacy.asked.length = 0;
    expect(await validate(h, h.ourToken)).toBe(true);
    expect(await newsTitles(h, h.ourToken)).toContain('Members only');
    expect(String(await call(h.stack.app, 'soap11', 'GetUserLoginURL', { token: h.ourToken, AppID: 2 }))).toMatch(/^http:\/\/gps\.example\/login\?ticket=/);
    // Revoked here: still not asked (the store knows it), and false.
    await h.stack.store.revokeTokens({ all: true }, h.clock.now());
    expect(await validate(h, h.ourToken)).toBe(false);
    expect(legacy.asked.filter((t) => t.toLowerCase() === h.ourToken)).toStrictEqual([]);
  });

  it('a token revoked on the old service stops working within the cache time', async () => {
    const h = await harness({ cacheSeconds: 60 });
    const token = legacy.issue();
    expect(await validate(h, token)).toBe(true);
    legacy.tokens.delete(token);
    h.clock.advance(59 * SECOND);
    expect(await validate(h, token)).toBe(true);
    h.clock.advance(2 * SECOND);
    expect(await validate(h, token)).toBe(false);
    expect(await newsTitles(h, token)).not.toContain('Members only');
  });

  it('after the end date nothing is asked and old tokens are not valid', async () => {
    const h = await harness({ until: new Date('2027-01-10T12:30:00Z') });
    const token = legacy.issue();
    expect(await validate(h, token)).toBe(true);
    h.clock.set('2027-01-10T12:30:00Z');
    const asked = legacy.asked.length;
    expect(await validate(h, token)).toBe(false);
    expect(await call(h.stack.app, 'soap11', 'GetUserLoginURL', { token, AppID: 2 })).toBe('');
    expect(legacy.asked).toHaveLength(asked);
    expect(await validate(h, h.ourToken)).toBe(true);
  });

  it('an old service that refuses connections: false, then false at once (circuit open)', async () => {
    const h = await harness({ url: await refusedUrl(), circuitFailures: 2 });
    const token = legacy.issue();
    expect(await validate(h, token)).toBe(false);
    expect(await validate(h, token)).toBe(false);
    expect(await validate(h, token)).toBe(false);
    expect(h.results).toStrictEqual(['error', 'error', 'circuit_open']);
    expect(await validate(h, h.ourToken)).toBe(true);
  });

  it('a hung old service: false within the timeout, then at once; our own tokens are not slowed meanwhile', async () => {
    const h = await harness({ timeoutMs: 1500, circuitFailures: 3 });
    const token = legacy.issue();
    await validate(h, '11111111-2222-4333-8444-555555555555'); // the random-token probe is done
    legacy.mode = 'hang';
    const asked = requestsArriving(legacy, 3);
    let settled = 0;
    const hung = [0, 1, 2].map(() => validate(h, legacy.issue()).finally(() => settled++));
    // While three calls hang on the old service, our own token answers.
    await asked;
    expect(await validate(h, h.ourToken)).toBe(true);
    expect(settled).toBe(0);
    // The three end as errors at the timeout; the next token is not asked at all (circuit open).
    expect(await Promise.all(hung)).toStrictEqual([false, false, false]);
    expect(await validate(h, token)).toBe(false);
    expect(h.results.slice(-4)).toStrictEqual(['error', 'error', 'error', 'circuit_open']);
  });

  it('at most maxConcurrent calls reach a hung old service; the rest are false at once', async () => {
    const h = await harness({ timeoutMs: 1000, maxConcurrent: 4, circuitFailures: 1000 });
    await validate(h, '11111111-2222-4333-8444-555555555555');
    legacy.mode = 'hang';
    legacy.maxInFlight = 0;
    const checks = Array.from({ length: 40 }, () => validate(h, legacy.issue()));
    expect((await Promise.all(checks)).every((v) => !v)).toBe(true);
    expect(legacy.maxInFlight).toBe(4);
    expect(h.results.filter((r) => r === 'overloaded')).toHaveLength(36);
  });

  it('a huge or slow-drip answer is cut off: no, and the old service stops being read', async () => {
    const h = await harness({ timeoutMs: 1000, circuitFailures: 1000 });
    await validate(h, '11111111-2222-4333-8444-555555555555');
    for (const mode of ['huge', 'drip'] as const) {
      legacy.mode = mode;
      legacy.bytesWritten = 0;
      const cut = hangup(legacy);
      expect(await validate(h, legacy.issue()), mode).toBe(false);
      // The connection is closed (which stops the old service's writing), not left to run.
      await cut;
      expect(legacy.bytesWritten, mode).toBeLessThan(8 * 1024 * 1024);
    }
  });

  it('garbage, a fault or a redirect is no; an old service that says true for everything is refused', async () => {
    const h = await harness({ circuitFailures: 1000 });
    await validate(h, '11111111-2222-4333-8444-555555555555');
    for (const mode of ['garbage', 'fault', 'redirect'] as const) {
      legacy.mode = mode;
      expect(await validate(h, legacy.issue()), mode).toBe(false);
    }
    expect(h.results.slice(-3)).toStrictEqual(['error', 'error', 'error']);

    const yes = await harness();
    legacy.mode = 'yes';
    expect(await validate(yes, '0DDBA11C-0FFE-4EE1-8BAD-F00DDEADBEEF')).toBe(false);
    legacy.mode = 'normal';
    expect(await validate(yes, legacy.issue())).toBe(false); // refused until restart
    expect(yes.results).toStrictEqual(['unsafe', 'unsafe']);
  });
});

describe('token passthrough against another legacy: its own token form and failure value', () => {
  // The compat tools' stand-in: a whole other ASMX deployment (test/support/legacy-standin.ts)
  // that writes its tokens as upper-case GUIDs without braces and answers a failed ValidateUser
  // with Guid.Empty. Its tokens are issued by its own ValidateUser, before the switch.
  let other: LegacyStandin;
  beforeAll(async () => {
    other = await startLegacyStandin({ tokenLifetimeMs: 3_600_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
    other.hostility.down = false;
  });
  afterAll(async () => {
    await other.close();
  });

  /** ValidateUser on the old service itself: its token, or its failure value. */
  async function oldLogin(password: string): Promise<string> {
    const req = buildRequest('soap11', 'ValidateUser', { login: STANDIN_USER.login, password, AppId: 2, IPAddress: '' });
    const res = await fetch(`${new URL(other.url).origin}${req.url}`, { method: req.method, headers: req.headers, body: req.payload ?? null });
    return String(parseResult('soap11', 'ValidateUser', await res.text()));
  }
  const askedAbout = (text: string): boolean => other.requests.some((r) => r.body.includes(text) || r.target.includes(text));

  it('its token validates on every operation; its failure value, a token in another form and a forged one are false, the first two never asked', async () => {
    const token = await oldLogin(STANDIN_USER.password);
    const failure = await oldLogin('wrong');
    expect(token).toMatch(/^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$/);
    expect(failure).toBe(STANDIN_PROFILE.validateUser.failureValue);
    const h = await harness({ url: other.url, tokenForm: STANDIN_PROFILE.tokens.form });

    for (const binding of BINDINGS) expect(await validate(h, token, binding), binding).toBe(true);
    expect(JSON.parse(String(await call(h.stack.app, 'http-get', 'ValidateUserTokenJSON', {}, { query: `token=${token}` })))).toMatchObject({ valid: true });
    expect(await newsTitles(h, token)).toContain('Members only');
    // GetUserLoginURL: the old service's own URL for its token (its profile's template), relayed as is.
    for (const binding of BINDINGS) {
      expect(await call(h.stack.app, binding, 'GetUserLoginURL', { token, AppID: 2 }), binding).toBe(`https://gps.example/AutoLogin.aspx?app=2&token=${token}`);
    }

    const before = other.requests.length;
    // Guid.Empty is in the GUID form but carries no randomness: never a token, never asked.
    expect(await validate(h, failure)).toBe(false);
    expect(await newsTitles(h, failure)).not.toContain('Members only');
    // The same bits in lower case are not the old service's form (it writes upper case only).
    expect(await validate(h, token.toLowerCase())).toBe(false);
    expect(other.requests.slice(before).some((r) => r.body.includes(failure) || r.body.includes(token.toLowerCase()))).toBe(false);
    const forged = '0DDBA11C-0FFE-4EE1-8BAD-F00DDEADBEEF';
    expect(await validate(h, forged)).toBe(false);
    expect(askedAbout(forged)).toBe(true);
    // Our own token is never asked of it.
    expect(await validate(h, h.ourToken)).toBe(true);
    expect(askedAbout(h.ourToken)).toBe(false);
  });

  it('a token that expires on the old service stops here within the cache time', async () => {
    vi.useFakeTimers({ toFake: ['Date'] }); // the old service's clock (Date.now); ours is the harness's
    const token = await oldLogin(STANDIN_USER.password);
    const h = await harness({ url: other.url, tokenForm: STANDIN_PROFILE.tokens.form, cacheSeconds: 60 });
    expect(await validate(h, token)).toBe(true);
    vi.setSystemTime(Date.now() + 3_600_000 + 1000); // its session ended there
    h.clock.advance(59 * SECOND);
    expect(await validate(h, token)).toBe(true); // the kept yes
    h.clock.advance(2 * SECOND);
    expect(await validate(h, token)).toBe(false);
    expect(await newsTitles(h, token)).not.toContain('Members only');
  });

  it('the old service down: false within the timeout, our own tokens unaffected', async () => {
    const token = await oldLogin(STANDIN_USER.password);
    const h = await harness({ url: other.url, tokenForm: STANDIN_PROFILE.tokens.form, timeoutMs: 1000, circuitFailures: 2 });
    other.hostility.down = true;
    expect(await validate(h, token)).toBe(false);
    expect(await validate(h, token)).toBe(false);
    expect(await validate(h, token)).toBe(false);
    expect(h.results).toStrictEqual(['error', 'error', 'circuit_open']);
    expect(await validate(h, h.ourToken)).toBe(true);
    expect(await newsTitles(h, h.ourToken)).toContain('Members only');
  });
});
