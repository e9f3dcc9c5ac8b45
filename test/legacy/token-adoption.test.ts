/**
 * Token adoption end to end: the whole stack (SQLite store, HTTP app) with token passthrough
 * asking a stand-in old service whose ValidateUserTokenJSON names the owner and expiry in the
 * operator's profile layout (src/legacy/soap-legacy-tokens.ts, domain/legacy-token-adoption.ts).
 * A token it vouches for is stored here, hashed, and from then on is ours: valid with the old
 * service down, revocable here, expiring at the legacy expiry. With adoption off nothing is
 * stored; a hostile old service adopts nothing and its tokens keep following passthrough's rules.
 * Adoptions end in an event the tests wait for, never a sleep.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { compatProfileFromJson } from '../../src/compat-profile-file.js';
import { createAdminService } from '../../src/domain/admin-service.js';
import { openStore } from '../../src/store/open-store.js';
import type { CompatProfile, JsonOperationProfile } from '../../src/contract/compat-profile.js';
import { createTokenAdopter, type TokenAdoptionResult } from '../../src/domain/legacy-token-adoption.js';
import { createLegacyTokenPassthrough, type LegacyTokenCheckResult } from '../../src/domain/legacy-token-passthrough.js';
import { cryptoRandomSource } from '../../src/domain/random-source.js';
import { DEFAULT_LEGACY_TOKEN_FORM } from '../../src/domain/token-form.js';
import { canonicalToken, hashToken } from '../../src/domain/tokens.js';
import { createSoapLegacyTokenService, type SoapLegacyTokenService } from '../../src/legacy/soap-legacy-tokens.js';
import { BINDINGS, buildRequest, call, parseResult, type TableRows } from '../support/asmx-client.js';
import { fakeClock, HOUR, SECOND, type FakeClock } from '../support/domain-fakes.js';
import { sink } from '../support/run-cli.js';
import { createTestStack, seedReference, type TestStack } from '../support/start-app.js';
import { startLegacyStandIn, type LegacyStandIn, type StandInOwner } from './legacy-stand-in.js';
import { fastHasher, run } from './support.js';

const NOW = '2027-01-10T12:00:00Z';
/** The old service's ValidateUserTokenJSON, as the operator's profile file describes it. */
const PROFILE_FILE = {
  tokens: { form: 'GUID' },
  json: {
    validateUserToken: {
      inputs: { sources: ['header', 'query'], names: { token: 'AuthToken' } },
      success: [
        { key: 'IsValid', value: { field: 'valid' } },
        { key: 'User', value: { field: 'login' } },
        { key: 'AppID', value: { field: 'appId' } },
        { key: 'ValidUntil', value: { field: 'expiresAt' } },
      ],
      failure: [{ key: 'IsValid', value: { const: false } }, { key: 'User', value: { const: null } }],
      dates: 'wcf',
      escaping: 'data-contract',
    },
  },
};
const PROFILE: CompatProfile = compatProfileFromJson(PROFILE_FILE);
const LAYOUT = PROFILE.json.validateUserToken;
/** The same without an AppID member: the application must follow from the user's grants. */
const NO_APP_LAYOUT: JsonOperationProfile = { ...LAYOUT, success: LAYOUT.success.filter((m) => m.key !== 'AppID') };

let legacy: LegacyStandIn;
let noAppLegacy: LegacyStandIn;
beforeAll(async () => {
  legacy = await startLegacyStandIn({ json: LAYOUT });
  noAppLegacy = await startLegacyStandIn({ json: NO_APP_LAYOUT });
});
afterAll(async () => {
  await legacy.close();
  await noAppLegacy.close();
});

interface Harness {
  stack: TestStack;
  clock: FakeClock;
  client: SoapLegacyTokenService;
  checks: LegacyTokenCheckResult[];
  adoptions: TokenAdoptionResult[];
  /** The next adoption to end. */
  nextAdoption: () => Promise<TokenAdoptionResult>;
}
const open: Harness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) {
    h.client.close();
    await h.stack.close();
  }
  for (const s of [legacy, noAppLegacy]) {
    s.mode = 'normal';
    s.jsonAnswer = null;
  }
});

async function harness(options: { adopt?: boolean; standIn?: LegacyStandIn; layout?: JsonOperationProfile; timeoutMs?: number; cacheSeconds?: number } = {}): Promise<Harness> {
  const clock = fakeClock(NOW);
  const standIn = options.standIn ?? legacy;
  const layout = options.layout ?? LAYOUT;
  const adopt = options.adopt ?? true;
  const client = createSoapLegacyTokenService({ url: standIn.url, timeoutMs: options.timeoutMs ?? 1000, ...(adopt && { jsonInputs: layout.inputs }) });
  const checks: LegacyTokenCheckResult[] = [];
  const adoptions: TokenAdoptionResult[] = [];
  const waiting: Array<(r: TokenAdoptionResult) => void> = [];
  const stack = await createTestStack({
    clock, throttle: false, profile: PROFILE,
    legacyTokens: (store) => createLegacyTokenPassthrough({
      legacy: client, clock, random: cryptoRandomSource, tokenForm: DEFAULT_LEGACY_TOKEN_FORM, until: new Date('2027-02-01T00:00:00Z'),
      cacheSeconds: options.cacheSeconds ?? 60,
      ...(adopt && { adopter: createTokenAdopter({ store, clock, layout }) }),
      onCheck: (r) => checks.push(r),
      onAdoption: (r) => {
        adoptions.push(r);
        waiting.shift()?.(r);
      },
    }),
  });
  await seedReference(stack.admin);
  const must = <T>(r: { ok: true; value: T } | { ok: false; message: string }): T => {
    if (!r.ok) throw new Error(r.message);
    return r.value;
  };
  must(await stack.admin.addApplication({ appId: 7, name: 'Portal', loginUrl: 'https://portal.example/login', tokenLifetimeSeconds: 8 * 3600 }));
  must(await stack.admin.addUser({ login: 'maria', password: 'maria-pass', appIds: [2, 7] }));
  must(await stack.admin.addUser({ login: 'off', password: 'off-pass', appIds: [2] }));
  must(await stack.admin.setUserEnabled('off', false));
  must(await stack.admin.addNews({ appId: 2, title: 'Members only', body: 'm', language: 'en', publishedAt: new Date('2020-01-09T10:30:00Z'), membersOnly: true }));
  const h: Harness = { stack, clock, client, checks, adoptions, nextAdoption: () => new Promise((resolve) => waiting.push(resolve)) };
  open.push(h);
  return h;
}

const owner = (h: Harness, over: Partial<StandInOwner> = {}): StandInOwner => ({ login: 'demo', appId: 2, expiresAt: new Date(h.clock.now().getTime() + 2 * HOUR), ...over });
const validate = async (h: Harness, token: string, binding: (typeof BINDINGS)[number] = 'soap11'): Promise<boolean> =>
  (await call(h.stack.app, binding, 'ValidateUserToken', { token })) as boolean;
const stored = (h: Harness, token: string): ReturnType<TestStack['store']['findToken']> => h.stack.store.findToken(hashToken(canonicalToken(token) ?? ''));
const memberNews = async (h: Harness, token: string): Promise<boolean> =>
  ((await call(h.stack.app, 'soap11', 'WhatsNew', { AppToken: token, AppID: 2, AppVersion: '', Language: 'en', qtyNews: 10 })) as TableRows).some((r) => r.Title === 'Members only');

/** Validates a token the old service vouches for and waits for its adoption to end. */
async function validateAndAdopt(h: Harness, token: string): Promise<TokenAdoptionResult> {
  const ended = h.nextAdoption();
  expect(await validate(h, token)).toBe(true);
  return ended;
}

describe('token adoption on', () => {
  it('stores a vouched token hashed, with its owner and legacy expiry; then it is ours: valid with the old service down, revocable, expiring', async () => {
    const standIn = await startLegacyStandIn({ json: LAYOUT });
    const h = await harness({ standIn });
    const token = standIn.issue(owner(h));
    const revoked = standIn.issue(owner(h, { login: 'maria', appId: 7 }));

    expect(await validateAndAdopt(h, token)).toBe('adopted');
    // The old service was asked where the profile says it reads the token: a header, over SOAP 1.1.
    expect(standIn.jsonAsked).toStrictEqual([{ token, binding: 'soap11' }]);
    expect(await stored(h, token)).toMatchObject({ kind: 'session', appId: 2, expiresAt: new Date(h.clock.now().getTime() + 2 * HOUR), revokedAt: null });
    const sessions = await h.stack.admin.listSessions('demo');
    expect(sessions.ok && sessions.value.map((s) => s.origin)).toStrictEqual(['legacy']);
    expect(await validateAndAdopt(h, revoked)).toBe('adopted');
    expect(await stored(h, revoked)).toMatchObject({ appId: 7 });
    expect(h.adoptions).toStrictEqual(['adopted', 'adopted']);

    // Never the token's text in the database, in any spelling.
    const bytes = [h.stack.dbPath, `${h.stack.dbPath}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f).toString('latin1')).join('');
    for (const t of [token, revoked]) {
      for (const spelling of [t, t.toLowerCase(), t.replace(/-/g, ''), t.replace(/-/g, '').toLowerCase()]) expect(bytes.includes(spelling), spelling).toBe(false);
    }

    // The old service goes away: the adopted token keeps working, on every operation, and our
    // ValidateUserTokenJSON tells its owner.
    await standIn.close();
    const checksBefore = h.checks.length;
    for (const binding of BINDINGS) expect(await validate(h, token, binding), binding).toBe(true);
    expect(await memberNews(h, token)).toBe(true);
    expect(String(await call(h.stack.app, 'soap11', 'GetUserLoginURL', { token, AppID: 2 }))).toMatch(/^http:\/\/gps\.example\/login\?ticket=/);
    const json = String(await call(h.stack.app, 'http-get', 'ValidateUserTokenJSON', {}, { query: `AuthToken=${token}` }));
    expect(json).toBe(`{"IsValid":true,"User":"demo","AppID":2,"ValidUntil":"\\/Date(${h.clock.now().getTime() + 2 * HOUR}+0000)\\/"}`);
    expect(h.checks).toHaveLength(checksBefore); // passthrough never asked again

    // Revoked here: false at once, and the old service is not asked (it would not know).
    const maria = await h.stack.admin.listSessions('maria');
    if (!maria.ok || maria.value[0] === undefined) throw new Error('no session');
    expect((await h.stack.admin.revokeSession(maria.value[0].id, 'maria')).ok).toBe(true);
    expect(await validate(h, revoked)).toBe(false);

    // It expires at the old service's expiry.
    h.clock.advance(2 * HOUR - SECOND);
    expect(await validate(h, token)).toBe(true);
    h.clock.advance(2 * SECOND);
    expect(await validate(h, token)).toBe(false);
    expect(h.checks).toHaveLength(checksBefore);
  });

  it('caps the expiry at the application\'s token lifetime, and the same token is stored once', async () => {
    const h = await harness();
    const token = legacy.issue(owner(h, { login: 'maria', appId: 7, expiresAt: new Date(h.clock.now().getTime() + 90 * 24 * HOUR) }));
    expect(await validateAndAdopt(h, token)).toBe('adopted');
    expect((await stored(h, token))?.expiresAt).toStrictEqual(new Date(h.clock.now().getTime() + 8 * HOUR));
    // A second instance on the same database adopting it too stores nothing more.
    const usual = `{"IsValid":true,"User":"maria","AppID":7,"ValidUntil":"\\/Date(${h.clock.now().getTime() + HOUR}+0000)\\/"}`;
    expect(await createTokenAdopter({ store: h.stack.store, clock: h.clock, layout: LAYOUT }).adopt(token, usual)).toBe('already_stored');
    expect((await stored(h, token))?.expiresAt).toStrictEqual(new Date(h.clock.now().getTime() + 8 * HOUR));
  });

  it('many concurrent checks of one token make one ValidateUserTokenJSON call and one adoption', async () => {
    const h = await harness();
    const token = legacy.issue(owner(h));
    legacy.jsonAsked.length = 0;
    const ended = h.nextAdoption();
    const answers = await Promise.all(Array.from({ length: 12 }, () => validate(h, token)));
    expect(answers.every((a) => a)).toBe(true);
    expect(await ended).toBe('adopted');
    expect(legacy.jsonAsked.filter((a) => a.token === token)).toHaveLength(1);
    expect(h.adoptions).toStrictEqual(['adopted']);
  });

  it('without an AppID in the answer: the user\'s only granted application, else nothing', async () => {
    const h = await harness({ standIn: noAppLegacy, layout: NO_APP_LAYOUT });
    const one = noAppLegacy.issue(owner(h, { login: 'demo' }));
    expect(await validateAndAdopt(h, one)).toBe('adopted');
    expect((await stored(h, one))?.appId).toBe(2);
    const several = noAppLegacy.issue(owner(h, { login: 'maria' }));
    expect(await validateAndAdopt(h, several)).toBe('unknown_app');
    expect(await stored(h, several)).toBeNull();
    expect(await validate(h, several)).toBe(true); // still passthrough's
  });

  it('reaches the old ValidateUserTokenJSON wherever the profile says it reads the token', async () => {
    const cases: Array<[JsonOperationProfile['inputs'], 'soap11' | 'http-post']> = [
      [{ sources: ['query'], names: { token: 'tk' } }, 'soap11'],
      [{ sources: ['form'], names: { token: 'tk' } }, 'http-post'],
      [{ sources: ['cookie'], names: { token: 'tk' } }, 'soap11'],
      [{ sources: ['bearer'], names: { token: 'token' } }, 'soap11'],
      [{ sources: ['query', 'form', 'header'], names: { token: 'X-Auth' } }, 'soap11'],
    ];
    for (const [inputs, binding] of cases) {
      const layout = { ...LAYOUT, inputs };
      const standIn = await startLegacyStandIn({ json: layout });
      const client = createSoapLegacyTokenService({ url: standIn.url, jsonInputs: inputs });
      try {
        const token = standIn.issue({ login: 'demo', appId: 2, expiresAt: new Date(Date.parse(NOW) + HOUR) });
        const reply = await client.validateUserTokenJson?.(token);
        expect(reply, JSON.stringify(inputs)).toStrictEqual({ kind: 'answer', result: `{"IsValid":true,"User":"demo","AppID":2,"ValidUntil":"\\/Date(${Date.parse(NOW) + HOUR}+0000)\\/"}` });
        expect(standIn.jsonAsked, JSON.stringify(inputs)).toStrictEqual([{ token, binding }]);
      } finally {
        client.close();
        await standIn.close();
      }
    }
  });
});

describe('token adoption off', () => {
  it('stores nothing and never asks ValidateUserTokenJSON', async () => {
    const h = await harness({ adopt: false });
    legacy.jsonAsked.length = 0;
    const token = legacy.issue(owner(h));
    expect(await validate(h, token)).toBe(true);
    expect(await validate(h, token)).toBe(true);
    expect(h.checks).toStrictEqual(['valid', 'cached_valid']);
    expect(legacy.jsonAsked).toStrictEqual([]);
    expect(await stored(h, token)).toBeNull();
    expect(h.adoptions).toStrictEqual([]);
  });
});

describe('a hostile old service adopts nothing', () => {
  it('wrong keys, valid false, an unknown or disabled login, an application not granted, an expiry past, garbage, a huge answer: nothing stored, passthrough as before', async () => {
    const h = await harness({ cacheSeconds: 60 });
    const cases: Array<[string, Partial<StandInOwner>, ((t: string, usual: string) => string) | null, TokenAdoptionResult]> = [
      ['wrong keys', {}, (_t, usual) => usual.replace('"User"', '"Login"'), 'unrecognised'],
      ['keys reordered', {}, (_t, usual) => usual.replace(/^\{"IsValid":true,("User":"[^"]*"),/, '{$1,"IsValid":true,'), 'unrecognised'],
      ['valid false', {}, (_t, usual) => usual.replace('"IsValid":true', '"IsValid":false'), 'unrecognised'],
      ['the failure answer', {}, () => '{"IsValid":false,"User":null}', 'unrecognised'],
      ['the login twice', {}, (_t, usual) => usual.replace('"User":"demo"', '"User":"nobody","User":"demo"'), 'unrecognised'],
      ['an ISO date in a wcf profile', {}, (_t, usual) => usual.replace(/\\\/Date\((\d+)\+0000\)\\\//, (_m, ms: string) => new Date(Number(ms)).toISOString()), 'unrecognised'],
      ['garbage', {}, () => '<html>yes</html>', 'unrecognised'],
      ['a large answer (within the transport, over the reader\'s cap)', {}, (_t, usual) => usual.replace('"demo"', `"demo${' '.repeat(6000)}"`), 'unrecognised'],
      ['a huge answer (over the transport\'s cap)', {}, (_t, usual) => `${usual}${' '.repeat(64 * 1024)}`, 'error'],
      ['an unknown login', { login: 'nobody' }, null, 'unknown_user'],
      ['a disabled user', { login: 'off' }, null, 'unknown_user'],
      ['an application not granted', { appId: 7 }, null, 'unknown_app'],
      ['an application that does not exist', { appId: 404 }, null, 'unknown_app'],
      ['an expiry past', { expiresAt: new Date(Date.parse(NOW) - SECOND) }, null, 'expired'],
    ];
    for (const [name, who, answer, result] of cases) {
      legacy.jsonAnswer = answer;
      const token = legacy.issue(owner(h, who));
      expect(await validateAndAdopt(h, token), name).toBe(result);
      expect(await stored(h, token), name).toBeNull();
      // Still what passthrough makes it: valid from the kept yes, members' news.
      expect(await validate(h, token), name).toBe(true);
      expect(await memberNews(h, token), name).toBe(true);
    }
    expect(h.adoptions).toStrictEqual(cases.map(([, , , r]) => r));
    expect(await h.stack.store.countActiveTokens(h.clock.now())).toBe(0);
  });

  it('a slow ValidateUserTokenJSON: the client is answered first, the adoption ends as an error, the token stays passthrough\'s', async () => {
    const h = await harness({ timeoutMs: 300 });
    legacy.jsonAnswer = () => 'hang';
    const token = legacy.issue(owner(h));
    const ended = h.nextAdoption();
    expect(await validate(h, token)).toBe(true);
    expect(h.adoptions).toStrictEqual([]); // answered while the JSON call is still open
    expect(await ended).toBe('error');
    expect(await stored(h, token)).toBeNull();
    // Passthrough's rules: once its kept yes runs out and the old service says no, it is no.
    legacy.tokens.delete(token);
    h.clock.advance(61 * SECOND);
    expect(await validate(h, token)).toBe(false);
  });

  it('an old service that says yes to anything is refused before anything is adopted', async () => {
    const h = await harness();
    legacy.mode = 'yes';
    legacy.jsonAsked.length = 0;
    expect(await validate(h, '0DDBA11C-0FFE-4EE1-8BAD-F00DDEADBEEF')).toBe(false);
    expect(h.checks).toStrictEqual(['unsafe']);
    expect(legacy.jsonAsked).toStrictEqual([]);
  });
});

describe('serve with legacy.adoptTokens', () => {
  it('adopts through its own wiring: the metric, the debug line, token list and the migration report show it; the token never appears', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-adopt-serve-'));
    const db = `sqlite:${join(dir, 'serve.db')}`;
    const profileFile = join(dir, 'legacy-profile.json');
    writeFileSync(profileFile, JSON.stringify(PROFILE_FILE));
    const store = await openStore(db);
    expect((await createAdminService({ store, hasher: fastHasher() }).addUser({ login: 'demo', password: 'demo-pass', appIds: [2] })).ok).toBe(true);
    await store.close();

    const out = sink();
    const adoptedLine = out.waitFor(/token adoption: adopted/);
    adoptedLine.catch(() => undefined); // awaited below; a failure before that is reported there
    const controller = new AbortController();
    const env = {
      SVCAPI_LEGACY_URL: legacy.url, SVCAPI_LEGACY_TOKEN_PASSTHROUGH: new Date(Date.now() + HOUR).toISOString(), SVCAPI_LEGACY_ADOPT_TOKENS: 'true',
      SVCAPI_COMPAT: profileFile, SVCAPI_LOG_LEVEL: 'debug', SVCAPI_LOG_FLUSH_MS: '0', SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0',
    };
    const done = runCli(['serve', '--port', '0', '--db', db], { stdin: Readable.from([]), stdout: out.stream, stderr: out.stream, env, signal: controller.signal });
    const token = legacy.issue({ login: 'demo', appId: 2, expiresAt: new Date(Date.now() + HOUR) });
    try {
      const service = (await out.waitFor(/^Service: (\S+)$/m))[1] ?? '';
      const management = (await out.waitFor(/^Management: (http:\/\/\S+) /m))[1] ?? '';
      const req = buildRequest('soap11', 'ValidateUserToken', { token });
      const res = await fetch(service, { method: 'POST', headers: req.headers, body: req.payload ?? null });
      expect(parseResult('soap11', 'ValidateUserToken', await res.text())).toBe(true);
      await adoptedLine;
      const metrics = await (await fetch(`${management}/metrics`)).text();
      expect(metrics).toContain('svcapi_auth_legacy_token_adoptions_total{result="adopted"} 1');
      expect(metrics).toContain('svcapi_auth_legacy_token_adoptions_total{result="unrecognised"} 0');
      expect(out.text()).toContain('those it vouches for are adopted');
    } finally {
      controller.abort();
      expect(await done).toBe(0);
    }
    try {
      expect(out.text()).not.toContain(token);
      expect(out.text().toLowerCase()).not.toContain(token.toLowerCase());
      const listed = await run(['token', 'list', '--user', 'demo', '--db', db]);
      expect(listed.out).toMatch(/^\S+ +2 .* legacy$/m);
      expect((await run(['users', 'migration-report', '--db', db])).out).toContain('Live sessions issued by the legacy service (import tokens, token adoption): 1\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
