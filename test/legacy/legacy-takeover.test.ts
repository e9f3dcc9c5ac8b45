/**
 * Lazy migration must never let a password take over a login the old service did not vouch for.
 * An adversarial review found that any printable answer of 8+ characters counted as "the old
 * service issued a token", so a legacy answering its failures with Guid.Empty handed every
 * unknown login (and every user awaiting a reset) to whoever guessed first. The old service is
 * played here by small hostile or broken stand-ins; every binding and both "needs reset" paths
 * are tried.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLegacyGuard, DEFAULT_LEGACY_ANSWER_RULES, isLegacyToken, legacyAnswerRules, type LegacyAuthenticator, type LegacyReply } from '../../src/domain/legacy-guard.js';
import { needsResetHash } from '../../src/domain/legacy-hashes/stored-hash.js';
import { loginKey } from '../../src/domain/logins.js';
import { cryptoRandomSource } from '../../src/domain/random-source.js';
import { systemClock } from '../../src/domain/clock.js';
import { formatToken, isTokenInForm, tokenFormPattern, type TokenForm } from '../../src/domain/token-form.js';
import { createSoapLegacyAuthenticator } from '../../src/legacy/soap-legacy-authenticator.js';
import { createReadiness } from '../../src/ops/readiness.js';
import { runCli } from '../../src/cli/main.js';
import { compatProfileFromJson } from '../../src/compat-profile-file.js';
import { openStore } from '../../src/store/open-store.js';
import { BINDINGS, buildRequest, parseResult, type BindingName } from '../support/asmx-client.js';
import { ctx } from '../support/domain-fakes.js';
import { sink } from '../support/run-cli.js';
import { createTestStack, type TestStack } from '../support/start-app.js';
import { fastHasher } from './support.js';

/** The usual "no" values of .NET services, each of which the old check took for a token. */
const FAILURE_VALUES = [
  '00000000-0000-0000-0000-000000000000',
  '{00000000-0000-0000-0000-000000000000}',
  '00000000000000000000000000000000',
  'LOGIN_FAILED',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF',
  '',
  '0',
  'ERROR',
  'false',
  'Invalid user or password',
];

function freshGuid(): string {
  return formatToken(cryptoRandomSource.bytes(16), { kind: 'guid', case: 'lower', dashes: true, braces: false });
}

/** A stand-in for the old service: answers ValidateUser over SOAP 1.1 with `answer(login, password)`. */
async function standIn(answer: (login: string, password: string) => string): Promise<{ url: string; calls: () => number; close(): Promise<void> }> {
  let calls = 0;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      calls += 1;
      const login = /<login>([^<]*)<\/login>/.exec(body)?.[1] ?? '';
      const password = /<password>([^<]*)<\/password>/.exec(body)?.[1] ?? '';
      const result = answer(login, password).replace(/&/g, '&amp;').replace(/</g, '&lt;');
      res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' });
      res.end(`<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><ValidateUserResponse xmlns="SVCAPI"><ValidateUserResult>${result}</ValidateUserResult></ValidateUserResponse></soap:Body></soap:Envelope>`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/Authentication.asmx`,
    calls: () => calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** ValidateUser (or ValidateUserJSON) through the app on a binding: did it hand out a token? */
async function loginGetsToken(stack: TestStack, binding: BindingName | 'json', login: string, password: string): Promise<boolean> {
  if (binding === 'json') {
    const query = new URLSearchParams({ login, password, AppId: '2', IPAddress: '' }).toString();
    const req = buildRequest('http-get', 'ValidateUserJSON', {}, query);
    const res = await stack.app.inject({ method: req.method, url: req.url, headers: req.headers });
    expect(res.statusCode).toBe(200);
    return (JSON.parse(String(parseResult('http-get', 'ValidateUserJSON', res.body))) as { success: boolean }).success;
  }
  const req = buildRequest(binding, 'ValidateUser', { login, password, AppId: 2, IPAddress: '' });
  const res = await stack.app.inject({ method: req.method, url: req.url, headers: req.headers, ...(req.payload !== undefined && { payload: req.payload }) });
  expect(res.statusCode).toBe(200);
  return parseResult(binding, 'ValidateUser', res.body) !== '';
}

describe('what counts as a token of the old service', () => {
  it('never a failure value: Guid.Empty in any form, all-F, words, numbers, the empty string', () => {
    for (const value of FAILURE_VALUES) expect(isLegacyToken(value, DEFAULT_LEGACY_ANSWER_RULES), JSON.stringify(value)).toBe(false);
  });

  it('a GUID in D form, either case, braces optional, by default; nothing around it', () => {
    const guid = freshGuid();
    for (const value of [guid, guid.toUpperCase(), `{${guid}}`]) expect(isLegacyToken(value, DEFAULT_LEGACY_ANSWER_RULES), value).toBe(true);
    for (const value of [` ${guid}`, `${guid}\n`, guid.replace(/-/g, ''), `(${guid})`, `${guid}x`, guid.slice(1)]) {
      expect(isLegacyToken(value, DEFAULT_LEGACY_ANSWER_RULES), JSON.stringify(value)).toBe(false);
    }
  });

  it('the configured failure value is a no even in token form', () => {
    const guid = freshGuid();
    expect(isLegacyToken(guid, { ...DEFAULT_LEGACY_ANSWER_RULES, failureValue: guid })).toBe(false);
  });

  it('an exact form recognises only itself, and writes what it recognises', () => {
    const forms: TokenForm[] = [
      { kind: 'guid', case: 'upper', dashes: false, braces: true },
      { kind: 'guid', case: 'lower', dashes: true, braces: false },
      { kind: 'hex', length: 40, case: 'upper' },
    ];
    for (const form of forms) {
      const token = formatToken(cryptoRandomSource.bytes(form.kind === 'guid' ? 16 : 20), form);
      expect(tokenFormPattern(form).test(token), token).toBe(true);
      expect(isTokenInForm(token, form)).toBe(true);
      for (const other of forms.filter((f) => f !== form)) expect(isTokenInForm(token, other), `${token} as ${JSON.stringify(other)}`).toBe(false);
    }
    expect(isTokenInForm('0'.repeat(40), { kind: 'hex', length: 40, case: 'any' })).toBe(false);
  });
});

describe('a legacy service that answers failures with something long and printable', () => {
  for (const failure of FAILURE_VALUES.filter((v) => v.length >= 8)) {
    describe(`failure value ${JSON.stringify(failure)}`, () => {
      let legacy: Awaited<ReturnType<typeof standIn>>;
      let stack: TestStack;
      const realPassword = 'the-real-password';

      beforeAll(async () => {
        // Says yes (a fresh GUID) only to the real users' real passwords.
        legacy = await standIn((login, password) => (password === realPassword && ['victim', 'waiting'].includes(login) ? freshGuid() : failure));
        stack = await createTestStack({ legacy: createSoapLegacyAuthenticator({ url: legacy.url, timeoutMs: 2000 }), throttle: false });
        const r = await stack.store.insertUser({ login: 'waiting', loginKey: loginKey('waiting'), passwordHash: needsResetHash('aspnet-membership-encrypted'), enabled: true, appIds: [2], createdAt: new Date() });
        expect(r.ok).toBe(true);
      });

      afterAll(async () => {
        await stack.close();
        await legacy.close();
      });

      it('an unknown login with any password gets no token on any binding, and no user is created', async () => {
        for (const binding of [...BINDINGS, 'json'] as const) {
          expect(await loginGetsToken(stack, binding, 'victim', `attacker-${binding}`), binding).toBe(false);
          expect(await stack.store.findUserByLoginKey('victim'), binding).toBeNull();
        }
        expect(legacy.calls()).toBeGreaterThan(5); // the old service was asked, and its "no" held
      });

      it('a user awaiting a reset keeps waiting: no attacker password is stored for it', async () => {
        for (const binding of [...BINDINGS, 'json'] as const) {
          expect(await loginGetsToken(stack, binding, 'waiting', `attacker-${binding}`), binding).toBe(false);
          expect((await stack.store.findUserByLoginKey('waiting'))?.passwordHash, binding).toBe(needsResetHash('aspnet-membership-encrypted'));
        }
      });

      it('the real users still migrate with their real passwords', async () => {
        expect(await loginGetsToken(stack, 'soap11', 'victim', realPassword)).toBe(true);
        expect(await loginGetsToken(stack, 'soap12', 'waiting', realPassword)).toBe(true);
        expect(await loginGetsToken(stack, 'http-get', 'waiting', 'attacker-after')).toBe(false);
      });
    });
  }
});

describe('a legacy service that says yes to anyone', () => {
  it('the same GUID for every login: refused by the probe before any migration, and reported', async () => {
    const same = freshGuid();
    const legacy = await standIn(() => same);
    const changes: string[] = [];
    const guard = createLegacyGuard({ authenticator: createSoapLegacyAuthenticator({ url: legacy.url, timeoutMs: 2000 }), clock: systemClock, random: cryptoRandomSource, onChange: (s) => changes.push(s.state) });
    const stack = await createTestStack({ legacy: guard, throttle: false });
    try {
      for (const binding of [...BINDINGS, 'json'] as const) {
        expect(await loginGetsToken(stack, binding, `someone-${binding}`, 'anything'), binding).toBe(false);
      }
      expect(await stack.store.findUserByLoginKey('someone-soap11')).toBeNull();
      expect(guard.status()).toMatchObject({ state: 'unsafe', failureValueConfirmed: false });
      expect(changes).toEqual(['unsafe']);
      expect(legacy.calls()).toBe(1); // only the probe: nothing else is ever asked
      // Shown in /health/ready's details, without the answer itself.
      const readiness = createReadiness({ store: stack.store, expectedSchemaVersion: 0 });
      readiness.setServing(true);
      readiness.reportLegacy(() => guard.status());
      const report = await readiness.check();
      expect(report.checks.legacy).toMatchObject({ state: 'unsafe' });
      expect(JSON.stringify(report)).not.toContain(same);
    } finally {
      await stack.close();
      await legacy.close();
    }
  });

  it('a fresh GUID for every login, the probe included: refused', async () => {
    const legacy = await standIn(() => freshGuid());
    const stack = await createTestStack({ legacy: createSoapLegacyAuthenticator({ url: legacy.url, timeoutMs: 2000 }), throttle: false });
    try {
      expect(await loginGetsToken(stack, 'soap11', 'victim', 'anything')).toBe(false);
      expect(await loginGetsToken(stack, 'http-post', 'other', 'anything')).toBe(false);
      expect(await stack.store.findUserByLoginKey('victim')).toBeNull();
      expect(legacy.calls()).toBe(1);
    } finally {
      await stack.close();
      await legacy.close();
    }
  });

  it('one GUID for every login but the probe (a service that tells probes apart): the second login gives it away', async () => {
    const same = freshGuid();
    const guard = createLegacyGuard({
      // Answers the probe's random 48-hex-digit password correctly, everything else with one token.
      authenticator: { validateUser: async (_l, password): Promise<LegacyReply> => ({ kind: 'answer', result: /^[0-9a-f]{48}$/.test(password) ? '' : same }) },
      clock: systemClock,
      random: cryptoRandomSource,
    });
    const stack = await createTestStack({ legacy: guard, throttle: false });
    try {
      // The first one cannot be told from a real migration; the same token for a second login can.
      await stack.service.validateUser({ login: 'first', password: 'x', appId: 2, ipAddress: '' }, ctx);
      expect((await stack.service.validateUser({ login: 'second', password: 'y', appId: 2, ipAddress: '' }, ctx)).ok).toBe(false);
      expect(await stack.store.findUserByLoginKey('second')).toBeNull();
      expect(guard.status().state).toBe('unsafe');
      expect((await stack.service.validateUser({ login: 'third', password: 'z', appId: 2, ipAddress: '' }, ctx)).ok).toBe(false);
      expect(await stack.store.findUserByLoginKey('third')).toBeNull();
    } finally {
      await stack.close();
    }
  });
});

describe('the probe', () => {
  function scripted(answers: LegacyReply[]): LegacyAuthenticator & { seen: string[] } {
    const seen: string[] = [];
    return {
      seen,
      validateUser: async (login): Promise<LegacyReply> => {
        seen.push(login);
        return answers.shift() ?? { kind: 'unavailable', reason: 'script ended' };
      },
    };
  }

  it('runs before the first migration; while the old service is down nothing is migrated, and it is asked again later', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const token = freshGuid();
    const legacy = scripted([
      { kind: 'unavailable', reason: 'connection failed' }, // probe: down
      { kind: 'answer', result: '' }, // probe again, after the retry delay: a proper no
      { kind: 'answer', result: token }, // the login itself
    ]);
    const guard = createLegacyGuard({ authenticator: legacy, clock: { now: () => new Date(now) }, random: cryptoRandomSource, retryAfterMs: 5000 });
    expect(await guard.vouch('alice', 'pw', 2, null)).toEqual({ vouched: false, asked: false });
    expect(guard.status()).toMatchObject({ state: 'unconfirmed' });
    expect(await guard.vouch('alice', 'pw', 2, null)).toEqual({ vouched: false, asked: false }); // within the retry delay: not even asked
    expect(legacy.seen).toHaveLength(1);
    now += 5000;
    expect(await guard.vouch('alice', 'pw', 2, null)).toEqual({ vouched: true, asked: true });
    expect(guard.status()).toMatchObject({ state: 'confirmed', failureValueConfirmed: true });
    expect(legacy.seen[1]).not.toBe('alice'); // a random login
    expect(legacy.seen[1]).not.toBe(legacy.seen[0]);
    expect(legacy.seen[2]).toBe('alice');
  });

  it('a "no" that is not the profile\'s failure value is reported, and a later probe that says yes makes it unsafe', async () => {
    let now = 0;
    const legacy = scripted([
      { kind: 'answer', result: 'LOGIN_FAILED' },
      { kind: 'answer', result: freshGuid() },
    ]);
    const guard = createLegacyGuard({ authenticator: legacy, clock: { now: () => new Date(now) }, random: cryptoRandomSource, probeIntervalMs: 60_000 });
    expect(await guard.confirm(2)).toMatchObject({ state: 'confirmed', failureValueConfirmed: false });
    expect(await guard.confirm(2)).toMatchObject({ state: 'confirmed' });
    expect(legacy.seen).toHaveLength(1); // fresh: not asked again
    now += 60_000;
    expect(await guard.confirm(2)).toMatchObject({ state: 'unsafe' });
    expect(await guard.vouch('bob', 'pw', 2, null)).toEqual({ vouched: false, asked: false });
    expect(legacy.seen).toHaveLength(2);
  });
});

describe('a compatibility profile describes the old service', () => {
  const GUID_EMPTY = '00000000-0000-0000-0000-000000000000';
  const upperGuid = (): string => formatToken(cryptoRandomSource.bytes(16), { kind: 'guid', case: 'upper', dashes: true, braces: false });
  const hex40 = (): string => formatToken(cryptoRandomSource.bytes(20), { kind: 'hex', length: 40, case: 'upper' });

  it('a profile file\'s token form and failure value are the rules, exactly; without one the loose defaults stay', () => {
    expect(legacyAnswerRules(null)).toBe(DEFAULT_LEGACY_ANSWER_RULES);
    const rules = legacyAnswerRules(compatProfileFromJson({ validateUser: { failureValue: GUID_EMPTY }, tokens: { form: 'GUID' } }));
    expect(rules).toEqual({ tokenForm: { kind: 'guid', case: 'upper', dashes: true, braces: false }, failureValue: GUID_EMPTY });
    expect(isLegacyToken(upperGuid(), rules)).toBe(true);
    expect(isLegacyToken(upperGuid().toLowerCase(), rules)).toBe(false); // not this service's form
    expect(isLegacyToken(GUID_EMPTY, rules)).toBe(false);
    expect(isLegacyToken(hex40(), legacyAnswerRules(compatProfileFromJson({ tokens: { form: 'HEX40' } })))).toBe(true);
    expect(isLegacyToken(hex40(), DEFAULT_LEGACY_ANSWER_RULES)).toBe(false);
  });

  it('a legacy answering Guid.Empty for a wrong password never creates a user, under a profile whose failure value is Guid.Empty', async () => {
    const legacy = await standIn((login, password) => (login === 'victim' && password === 'real' ? upperGuid() : GUID_EMPTY));
    const profile = compatProfileFromJson({ validateUser: { failureValue: GUID_EMPTY }, tokens: { form: 'GUID' } });
    const stack = await createTestStack({ legacy: createSoapLegacyAuthenticator({ url: legacy.url, timeoutMs: 2000 }), profile, throttle: false });
    try {
      for (const binding of BINDINGS) {
        const req = buildRequest(binding, 'ValidateUser', { login: 'victim', password: `attacker-${binding}`, AppId: 2, IPAddress: '' });
        const res = await stack.app.inject({ method: req.method, url: req.url, headers: req.headers, ...(req.payload !== undefined && { payload: req.payload }) });
        expect(parseResult(binding, 'ValidateUser', res.body), binding).toBe(GUID_EMPTY); // our "no" is the profile's too
        expect(await stack.store.findUserByLoginKey('victim'), binding).toBeNull();
      }
      const req = buildRequest('soap11', 'ValidateUser', { login: 'victim', password: 'real', AppId: 2, IPAddress: '' });
      const res = await stack.app.inject({ method: req.method, url: req.url, headers: req.headers, payload: req.payload ?? '' });
      expect(String(parseResult('soap11', 'ValidateUser', res.body))).toMatch(/^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$/);
      expect(await stack.store.findUserByLoginKey('victim')).not.toBeNull();
    } finally {
      await stack.close();
      await legacy.close();
    }
  });

  it('serve --compat: the guard takes the profile\'s token form (HEX40 tokens migrate, which the loose default would refuse) and its failure value', async () => {
    const legacy = await standIn((login, password) => (login === 'victim' && password === 'real' ? hex40() : GUID_EMPTY));
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-compat-legacy-'));
    const profileFile = join(dir, 'legacy.json');
    writeFileSync(profileFile, JSON.stringify({ validateUser: { failureValue: GUID_EMPTY }, tokens: { form: 'HEX40' } }));
    const db = `sqlite:${join(dir, 'auth.db')}`;
    const out = sink();
    const controller = new AbortController();
    const env = { SVCAPI_LEGACY_URL: legacy.url, SVCAPI_LEGACY_TIMEOUT_MS: '2000', SVCAPI_COMPAT: profileFile, SVCAPI_BRUTE_FORCE_ENABLED: 'false' };
    const done = runCli(['serve', '--port', '0', '--log-level', 'silent', '--db', db], { stdin: Readable.from([]), stdout: out.stream, stderr: out.stream, env, signal: controller.signal });
    try {
      const service = (await out.waitFor(/^Service: (http:\/\/127\.0\.0\.1:\d+\/Authentication\.asmx)$/m))[1] ?? '';
      const login = async (password: string): Promise<string> => {
        const req = buildRequest('soap11', 'ValidateUser', { login: 'victim', password, AppId: 2, IPAddress: '' });
        const res = await fetch(service, { method: 'POST', headers: req.headers, body: req.payload ?? null });
        return String(parseResult('soap11', 'ValidateUser', await res.text()));
      };
      expect(await login('attacker')).toBe(GUID_EMPTY);
      expect(await login('real')).toMatch(/^[0-9A-F]{40}$/);
    } finally {
      controller.abort();
      expect(await done).toBe(0);
      await legacy.close();
    }
    const store = await openStore(db);
    try {
      expect(await store.findUserByLoginKey('victim')).not.toBeNull();
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('equal timing with an old service', () => {
  it('a known login with a wrong password waits as long as a login that asked the old service', async () => {
    // The old service takes 150 ms to say no; a verification here takes a few milliseconds.
    const slow: LegacyAuthenticator = { validateUser: async () => { await new Promise((r) => setTimeout(r, 150)); return { kind: 'answer', result: '' }; } };
    const stack = await createTestStack({ legacy: slow, throttle: false, hasher: fastHasher() });
    try {
      await stack.admin.addUser({ login: 'known', password: 'right', appIds: [2] });
      const time = async (login: string): Promise<number> => {
        const t = performance.now();
        expect((await stack.service.validateUser({ login, password: 'wrong', appId: 2, ipAddress: '' }, ctx)).ok).toBe(false);
        return performance.now() - t;
      };
      for (let i = 0; i < 3; i++) await time(`unknown-${i}`);
      const unknown = await time('unknown-x');
      const known = await time('known');
      // Without the legacy median a known login's failure took a verification (a few ms).
      expect(unknown).toBeGreaterThanOrEqual(150);
      expect(known / unknown).toBeGreaterThan(0.8);
    } finally {
      await stack.close();
    }
  });
});
