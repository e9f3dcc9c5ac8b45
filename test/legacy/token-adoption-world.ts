/**
 * The world of the token adoption tests, shared by the SQLite file (token-adoption.test.ts) and
 * the PostgreSQL one (postgres-token-adoption.test.ts): stand-in old services whose
 * ValidateUserTokenJSON names owner and expiry in the operator's profile layout, and a harness
 * per test (the whole stack on a fresh database, token passthrough with adoption, an audit trail
 * on the same store), and the scenarios that must hold on either database: adopt, then ours with
 * the old service gone (revoked and expired here); the expiry cap and one row per token;
 * concurrent checks making one adoption; hostile answers adopting nothing; the audit events.
 * Adoptions end in an event the tests wait for, never a sleep.
 */
import { existsSync, readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { expect } from 'vitest';
import { compatProfileFromJson } from '../../src/compat-profile-file.js';
import type { CompatProfile, JsonOperationProfile } from '../../src/contract/compat-profile.js';
import { loginFingerprint } from '../../src/domain/audit.js';
import { createTokenAdopter, type TokenAdoptionResult } from '../../src/domain/legacy-token-adoption.js';
import { createLegacyTokenPassthrough, type LegacyTokenCheckResult } from '../../src/domain/legacy-token-passthrough.js';
import { cryptoRandomSource } from '../../src/domain/random-source.js';
import { DEFAULT_LEGACY_TOKEN_FORM } from '../../src/domain/token-form.js';
import { canonicalToken, hashToken } from '../../src/domain/tokens.js';
import { createSoapLegacyTokenService, type SoapLegacyTokenService } from '../../src/legacy/soap-legacy-tokens.js';
import { createAuditTrail, type AuditTrail } from '../../src/ops/audit-trail.js';
import { createLogger } from '../../src/ops/logger.js';
import type { AuditRecord } from '../../src/store/store.js';
import { BINDINGS, call, type TableRows } from '../support/asmx-client.js';
import { fakeClock, HOUR, SECOND, type FakeClock } from '../support/domain-fakes.js';
import { adminQuery } from '../support/postgres.js';
import { sink, type Sink } from '../support/run-cli.js';
import { createTestStack, seedReference, type TestStack } from '../support/start-app.js';
import { startLegacyStandIn, type LegacyStandIn, type StandInOwner } from './legacy-stand-in.js';

export const NOW = '2027-01-10T12:00:00Z';
/** The old service's ValidateUserTokenJSON, as the operator's profile file describes it. */
export const PROFILE_FILE = {
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
export const PROFILE: CompatProfile = compatProfileFromJson(PROFILE_FILE);
export const LAYOUT = PROFILE.json.validateUserToken;
/** The same without an AppID member: the application must follow from the user's grants. */
export const NO_APP_LAYOUT: JsonOperationProfile = { ...LAYOUT, success: LAYOUT.success.filter((m) => m.key !== 'AppID') };
/** The audit trail's login fingerprint key in these tests. */
export const FINGERPRINT_KEY = 'k'.repeat(64);

export interface Harness {
  stack: TestStack;
  clock: FakeClock;
  client: SoapLegacyTokenService;
  checks: LegacyTokenCheckResult[];
  adoptions: TokenAdoptionResult[];
  /** The audit trail the adopter reports to, on the stack's store; its log lines in `auditLog`. */
  audit: AuditTrail;
  auditLog: Sink;
  /** The next adoption to end. */
  nextAdoption: () => Promise<TokenAdoptionResult>;
  /** The audit events written so far (the trail flushed first), oldest first. */
  auditRows: () => Promise<AuditRecord[]>;
  /** Every row of a table as the database holds it, read beside the store. */
  rawRows: (table: string) => Promise<Array<Record<string, unknown>>>;
  /** Everything the database holds, as text: SQLite's file and WAL as bytes, PostgreSQL's every row. */
  databaseText: () => Promise<string>;
}

export interface HarnessOptions {
  adopt?: boolean;
  standIn?: LegacyStandIn;
  layout?: JsonOperationProfile;
  timeoutMs?: number;
  cacheSeconds?: number;
}

export interface AdoptionWorld {
  readonly legacy: LegacyStandIn;
  readonly noAppLegacy: LegacyStandIn;
  /** A fresh stack on a fresh database (see startAdoptionWorld), closed by `reset`. */
  harness(options?: HarnessOptions): Promise<Harness>;
  /** After each test: closes its harnesses, the stand-ins back to normal. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

/** The `schema` parameter of a PostgreSQL test URL (test/support/postgres.ts schemaUrl). */
function schemaOf(url: string): string {
  const schema = new URL(url).searchParams.get('schema');
  if (schema === null || !/^[a-z0-9_]+$/.test(schema)) throw new Error(`no test schema in ${url}`);
  return schema;
}

/**
 * `database()` gives each harness its database: undefined for a fresh SQLite file, or a
 * PostgreSQL URL on a fresh schema (the caller drops it).
 */
export async function startAdoptionWorld(database: () => string | undefined): Promise<AdoptionWorld> {
  const legacy = await startLegacyStandIn({ json: LAYOUT });
  const noAppLegacy = await startLegacyStandIn({ json: NO_APP_LAYOUT });
  const open: Harness[] = [];

  async function harness(options: HarnessOptions = {}): Promise<Harness> {
    const clock = fakeClock(NOW);
    const standIn = options.standIn ?? legacy;
    const layout = options.layout ?? LAYOUT;
    const adopt = options.adopt ?? true;
    const url = database();
    const client = createSoapLegacyTokenService({ url: standIn.url, timeoutMs: options.timeoutMs ?? 1000, ...(adopt && { jsonInputs: layout.inputs }) });
    const checks: LegacyTokenCheckResult[] = [];
    const adoptions: TokenAdoptionResult[] = [];
    const waiting: Array<(r: TokenAdoptionResult) => void> = [];
    const auditLog = sink();
    const made: { audit?: AuditTrail } = {};
    const stack = await createTestStack({
      clock, throttle: false, profile: PROFILE, ...(url !== undefined && { databaseUrl: url }),
      legacyTokens: (store) => {
        // As serve wires it: the adopter reports to the audit trail, which writes to the same database.
        const audit = createAuditTrail({ store, loginFingerprintKey: FINGERPRINT_KEY, logger: createLogger({ level: 'info', stream: auditLog.stream }) });
        made.audit = audit;
        return createLegacyTokenPassthrough({
          legacy: client, clock, random: cryptoRandomSource, tokenForm: DEFAULT_LEGACY_TOKEN_FORM, until: new Date('2027-02-01T00:00:00Z'),
          cacheSeconds: options.cacheSeconds ?? 60,
          ...(adopt && { adopter: createTokenAdopter({ store, clock, layout, events: audit.events }) }),
          onCheck: (r) => checks.push(r),
          onAdoption: (r) => {
            adoptions.push(r);
            waiting.shift()?.(r);
          },
        });
      },
    });
    const audit = made.audit;
    if (audit === undefined) throw new Error('the stack made no token passthrough');
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

    const rawRows = async (table: string): Promise<Array<Record<string, unknown>>> => {
      if (!/^[a-z_]+$/.test(table)) throw new Error(`not a table name: ${table}`);
      if (url !== undefined) return adminQuery(`SELECT * FROM "${schemaOf(url)}".${table}`);
      const db = new Database(stack.dbPath, { readonly: true, fileMustExist: true });
      try {
        return db.prepare(`SELECT * FROM ${table}`).all() as Array<Record<string, unknown>>;
      } finally {
        db.close();
      }
    };
    const databaseText = async (): Promise<string> => {
      if (url === undefined) {
        return [stack.dbPath, `${stack.dbPath}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f).toString('latin1')).join('');
      }
      const schema = schemaOf(url);
      const tables = await adminQuery<{ table_name: string }>("SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'", [schema]);
      expect(tables.map((t) => t.table_name)).toEqual(expect.arrayContaining(['tokens', 'audit_events']));
      const texts = await Promise.all(tables.map(async ({ table_name: name }) => (await adminQuery<{ row: string }>(`SELECT t::text AS row FROM "${schema}"."${name}" t`)).map((r) => r.row).join('\n')));
      return texts.join('\n');
    };
    const h: Harness = {
      stack, clock, client, checks, adoptions, audit, auditLog,
      nextAdoption: () => new Promise((resolve) => waiting.push(resolve)),
      auditRows: async () => {
        await audit.flush();
        return [...await stack.store.queryAudit({ limit: 1000 })].reverse();
      },
      rawRows,
      databaseText,
    };
    open.push(h);
    return h;
  }

  return {
    legacy,
    noAppLegacy,
    harness,
    async reset() {
      for (const h of open.splice(0)) {
        h.client.close();
        await h.audit.close();
        await h.stack.close();
      }
      for (const s of [legacy, noAppLegacy]) {
        s.mode = 'normal';
        s.jsonAnswer = null;
      }
    },
    async close() {
      await legacy.close();
      await noAppLegacy.close();
    },
  };
}

export const owner = (h: Harness, over: Partial<StandInOwner> = {}): StandInOwner => ({ login: 'demo', appId: 2, expiresAt: new Date(h.clock.now().getTime() + 2 * HOUR), ...over });
export const validate = async (h: Harness, token: string, binding: (typeof BINDINGS)[number] = 'soap11'): Promise<boolean> =>
  (await call(h.stack.app, binding, 'ValidateUserToken', { token })) as boolean;
export const tokenHash = (token: string): string => hashToken(canonicalToken(token) ?? '');
export const stored = (h: Harness, token: string): ReturnType<TestStack['store']['findToken']> => h.stack.store.findToken(tokenHash(token));
export const memberNews = async (h: Harness, token: string): Promise<boolean> =>
  ((await call(h.stack.app, 'soap11', 'WhatsNew', { AppToken: token, AppID: 2, AppVersion: '', Language: 'en', qtyNews: 10 })) as TableRows).some((r) => r.Title === 'Members only');
/** A token as clients may spell it: as issued, lower case, without dashes. */
export const spellings = (token: string): string[] => [token, token.toLowerCase(), token.replace(/-/g, ''), token.replace(/-/g, '').toLowerCase()];

/** Validates a token the old service vouches for and waits for its adoption to end. */
export async function validateAndAdopt(h: Harness, token: string): Promise<TokenAdoptionResult> {
  const ended = h.nextAdoption();
  expect(await validate(h, token)).toBe(true);
  return ended;
}

/**
 * A vouched token is stored hashed (only its SHA-256 in the row), with its owner and the legacy
 * expiry; then it is ours: valid on every operation with the old service gone, revocable here,
 * expiring at the legacy expiry, never asked of the old service again.
 */
export async function adoptedTokenIsOurs(world: AdoptionWorld): Promise<void> {
  const standIn = await startLegacyStandIn({ json: LAYOUT });
  const h = await world.harness({ standIn });
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

  // The rows hold the SHA-256 of the canonical token and nothing else of it; the database holds
  // the token's text nowhere, in any spelling.
  const rows = await h.rawRows('tokens');
  expect(rows.map((r) => r.token_hash).sort()).toStrictEqual([tokenHash(token), tokenHash(revoked)].sort());
  for (const row of rows) expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/);
  const text = await h.databaseText();
  for (const t of [token, revoked]) {
    for (const spelling of spellings(t)) expect(text.includes(spelling), spelling).toBe(false);
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
}

/** The expiry is capped at the application's token lifetime; a second adoption stores nothing more. */
export async function expiryCappedStoredOnce(world: AdoptionWorld): Promise<void> {
  const h = await world.harness();
  const token = world.legacy.issue(owner(h, { login: 'maria', appId: 7, expiresAt: new Date(h.clock.now().getTime() + 90 * 24 * HOUR) }));
  expect(await validateAndAdopt(h, token)).toBe('adopted');
  expect((await stored(h, token))?.expiresAt).toStrictEqual(new Date(h.clock.now().getTime() + 8 * HOUR));
  // A second instance on the same database adopting it too stores nothing more.
  const usual = `{"IsValid":true,"User":"maria","AppID":7,"ValidUntil":"\\/Date(${h.clock.now().getTime() + HOUR}+0000)\\/"}`;
  expect(await createTokenAdopter({ store: h.stack.store, clock: h.clock, layout: LAYOUT }).adopt(token, usual)).toBe('already_stored');
  expect((await stored(h, token))?.expiresAt).toStrictEqual(new Date(h.clock.now().getTime() + 8 * HOUR));
  expect(await h.rawRows('tokens')).toHaveLength(1);
}

/** Many concurrent checks of one token make one ValidateUserTokenJSON call and one adoption. */
export async function concurrentChecksAdoptOnce(world: AdoptionWorld): Promise<void> {
  const h = await world.harness();
  const token = world.legacy.issue(owner(h));
  world.legacy.jsonAsked.length = 0;
  const ended = h.nextAdoption();
  const answers = await Promise.all(Array.from({ length: 12 }, () => validate(h, token)));
  expect(answers.every((a) => a)).toBe(true);
  expect(await ended).toBe('adopted');
  expect(world.legacy.jsonAsked.filter((a) => a.token === token)).toHaveLength(1);
  expect(h.adoptions).toStrictEqual(['adopted']);
  expect(await h.rawRows('tokens')).toHaveLength(1);
}

/**
 * Wrong keys, valid false, an unknown or disabled login, an application not granted, an expiry
 * past, garbage, a huge answer: nothing stored, and the token stays what passthrough makes it.
 */
export async function hostileAnswersAdoptNothing(world: AdoptionWorld): Promise<void> {
  const { legacy } = world;
  const h = await world.harness({ cacheSeconds: 60 });
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
  expect(await h.rawRows('tokens')).toStrictEqual([]);
}

/**
 * Every adoption is a `token.adopted` audit event (login, application, the old and the stored
 * expiry, the token's fingerprint, the request that brought it); the refusals that matter for
 * security are `token.adoption-refused` with the result as reason; an expiry past and a second
 * adoption are not audited. No token, nor its full hash, in the audit table or its log lines.
 */
export async function adoptionsAudited(world: AdoptionWorld): Promise<void> {
  const { legacy } = world;
  const h = await world.harness();
  const at = h.clock.now().getTime();
  const iso = (ms: number): string => new Date(ms).toISOString();
  const fp = (token: string): string => tokenHash(token).slice(0, 12);

  const adopted = legacy.issue(owner(h));
  const capped = legacy.issue(owner(h, { login: 'maria', appId: 7, expiresAt: new Date(at + 90 * 24 * HOUR) }));
  const garbage = legacy.issue(owner(h));
  const nobody = legacy.issue(owner(h, { login: 'nobody' }));
  const disabled = legacy.issue(owner(h, { login: 'off' }));
  const notGranted = legacy.issue(owner(h, { appId: 7 }));
  const noSuchApp = legacy.issue(owner(h, { appId: 404 }));
  const expired = legacy.issue(owner(h, { expiresAt: new Date(at - SECOND) }));
  // A hostile answer naming the token itself as its owner: kept only as a login fingerprint.
  const selfNamed = legacy.issue(owner(h));
  legacy.jsonAnswer = (token, usual) => (token === garbage ? '<html>yes</html>' : token === selfNamed ? usual.replace('"User":"demo"', `"User":"${token}"`) : usual);
  const tokens = [adopted, capped, garbage, nobody, disabled, notGranted, noSuchApp, expired, selfNamed];
  for (const token of tokens) await validateAndAdopt(h, token);
  expect(h.adoptions).toStrictEqual(['adopted', 'adopted', 'unrecognised', 'unknown_user', 'unknown_user', 'unknown_app', 'unknown_app', 'expired', 'unknown_user']);
  // Adopted twice (another instance): stored once, audited once.
  const usual = `{"IsValid":true,"User":"demo","AppID":2,"ValidUntil":"\\/Date(${at + HOUR}+0000)\\/"}`;
  expect(await createTokenAdopter({ store: h.stack.store, clock: h.clock, layout: LAYOUT, events: h.audit.events }).adopt(adopted, usual)).toBe('already_stored');

  const rows = await h.auditRows();
  expect(rows.map((r) => [r.type, r.reason, r.tokenFp])).toStrictEqual([
    ['token.adopted', null, fp(adopted)],
    ['token.adopted', null, fp(capped)],
    ['token.adoption-refused', 'unrecognised', fp(garbage)],
    ['token.adoption-refused', 'unknown_user', fp(nobody)],
    ['token.adoption-refused', 'unknown_user', fp(disabled)],
    ['token.adoption-refused', 'unknown_app', fp(notGranted)],
    ['token.adoption-refused', 'unknown_app', fp(noSuchApp)],
    ['token.adoption-refused', 'unknown_user', fp(selfNamed)],
  ]);
  const [first, second, unrecognised, unknown, off, granted, missing, self] = rows;
  const userId = (login: string): number => {
    const found = rows.find((r) => r.login === login)?.detail?.userId;
    if (typeof found !== 'number') throw new Error(`no user id for ${login}`);
    return found;
  };
  // The request whose check brought the token: its id and address, as on its access line.
  for (const row of rows) expect(row).toMatchObject({ requestId: expect.stringMatching(/./), sourceIp: expect.stringMatching(/./) });
  expect(first).toMatchObject({ appId: 2, login: 'demo', detail: { userId: userId('demo'), legacyExpiresAt: iso(at + 2 * HOUR), expiresAt: iso(at + 2 * HOUR) } });
  // The old expiry as the old service said it, the stored one capped at the application's lifetime.
  expect(second).toMatchObject({ appId: 7, login: 'maria', detail: { legacyExpiresAt: iso(at + 90 * 24 * HOUR), expiresAt: iso(at + 8 * HOUR) } });
  expect(unrecognised).toMatchObject({ appId: null, login: null, detail: { userId: null, legacyExpiresAt: null } });
  // A login naming nobody here only as its keyed fingerprint, as ValidateUser records one.
  expect(unknown).toMatchObject({ appId: 2, login: loginFingerprint(FINGERPRINT_KEY, 'nobody'), detail: { userId: null, legacyExpiresAt: iso(at + 2 * HOUR) } });
  expect(off).toMatchObject({ appId: 2, login: 'off', detail: { userId: expect.any(Number), userDisabled: true } });
  expect(granted).toMatchObject({ appId: 7, login: 'demo', detail: { appProblem: 'not-granted' } });
  expect(missing).toMatchObject({ appId: 404, login: 'demo', detail: { appProblem: 'not-granted' } });
  expect(self).toMatchObject({ login: loginFingerprint(FINGERPRINT_KEY, selfNamed) });
  for (const row of rows) expect(row.tokenFp).toMatch(/^[0-9a-f]{12}$/);

  // The audit table, as the database holds it, and the trail's log lines: no token in any
  // spelling, nor a token's full SHA-256 (which would find its row), nor a login naming nobody.
  const raw = await h.rawRows('audit_events');
  expect(raw).toHaveLength(rows.length);
  const everything = `${JSON.stringify(raw)}\n${JSON.stringify(rows)}\n${h.auditLog.text()}`;
  expect(h.auditLog.text()).toContain('"type":"token.adopted"');
  for (const token of tokens) {
    for (const spelling of spellings(token)) expect(everything.includes(spelling), spelling).toBe(false);
    expect(everything.includes(tokenHash(token)), 'full hash').toBe(false);
  }
  expect(everything).not.toContain('nobody');
}
