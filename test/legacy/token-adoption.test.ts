/**
 * Token adoption end to end: the whole stack (SQLite store, HTTP app) with token passthrough
 * asking a stand-in old service whose ValidateUserTokenJSON names the owner and expiry in the
 * operator's profile layout (src/legacy/soap-legacy-tokens.ts, domain/legacy-token-adoption.ts).
 * A token it vouches for is stored here, hashed, and from then on is ours: valid with the old
 * service down, revocable here, expiring at the legacy expiry. With adoption off nothing is
 * stored; a hostile old service adopts nothing and its tokens keep following passthrough's rules.
 * Adoptions and refusals that matter are audit events. The scenarios of token-adoption-world.ts
 * run on PostgreSQL too (postgres-token-adoption.test.ts).
 * Adoptions end in an event the tests wait for, never a sleep.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { createAdminAccounts } from '../../src/domain/admin-accounts.js';
import { createAdminService } from '../../src/domain/admin-service.js';
import { openStore } from '../../src/store/open-store.js';
import type { JsonOperationProfile } from '../../src/contract/compat-profile.js';
import { canonicalToken, hashToken } from '../../src/domain/tokens.js';
import { createSoapLegacyTokenService } from '../../src/legacy/soap-legacy-tokens.js';
import { buildRequest, parseResult } from '../support/asmx-client.js';
import { HOUR, SECOND } from '../support/domain-fakes.js';
import { sink } from '../support/run-cli.js';
import { ConsoleClient } from '../console/support.js';
import { startLegacyStandIn } from './legacy-stand-in.js';
import { fastHasher, run } from './support.js';
import {
  adoptedTokenIsOurs, adoptionsAudited, concurrentChecksAdoptOnce, expiryCappedStoredOnce, hostileAnswersAdoptNothing, LAYOUT, NO_APP_LAYOUT, NOW, owner,
  PROFILE_FILE, startAdoptionWorld, stored, validate, validateAndAdopt, type AdoptionWorld,
} from './token-adoption-world.js';

const CONSOLE_PW = 'console password 4711';

let world: AdoptionWorld;
beforeAll(async () => {
  world = await startAdoptionWorld(() => undefined);
});
afterEach(async () => {
  await world.reset();
});
afterAll(async () => {
  await world.close();
});

describe('token adoption on', () => {
  it('stores a vouched token hashed, with its owner and legacy expiry; then it is ours: valid with the old service down, revocable, expiring', async () => {
    await adoptedTokenIsOurs(world);
  });

  it('caps the expiry at the application\'s token lifetime, and the same token is stored once', async () => {
    await expiryCappedStoredOnce(world);
  });

  it('many concurrent checks of one token make one ValidateUserTokenJSON call and one adoption', async () => {
    await concurrentChecksAdoptOnce(world);
  });

  it('records each adoption, and the refusals that matter for security, in the audit trail: fields, never the token', async () => {
    await adoptionsAudited(world);
  });

  it('without an AppID in the answer: the user\'s only granted application, else nothing', async () => {
    const h = await world.harness({ standIn: world.noAppLegacy, layout: NO_APP_LAYOUT });
    const one = world.noAppLegacy.issue(owner(h, { login: 'demo' }));
    expect(await validateAndAdopt(h, one)).toBe('adopted');
    expect((await stored(h, one))?.appId).toBe(2);
    const several = world.noAppLegacy.issue(owner(h, { login: 'maria' }));
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
    const h = await world.harness({ adopt: false });
    world.legacy.jsonAsked.length = 0;
    const token = world.legacy.issue(owner(h));
    expect(await validate(h, token)).toBe(true);
    expect(await validate(h, token)).toBe(true);
    expect(h.checks).toStrictEqual(['valid', 'cached_valid']);
    expect(world.legacy.jsonAsked).toStrictEqual([]);
    expect(await stored(h, token)).toBeNull();
    expect(h.adoptions).toStrictEqual([]);
  });
});

describe('a hostile old service adopts nothing', () => {
  it('wrong keys, valid false, an unknown or disabled login, an application not granted, an expiry past, garbage, a huge answer: nothing stored, passthrough as before', async () => {
    await hostileAnswersAdoptNothing(world);
  });

  it('a slow ValidateUserTokenJSON: the client is answered first, the adoption ends as an error, the token stays passthrough\'s', async () => {
    const h = await world.harness({ timeoutMs: 300 });
    world.legacy.jsonAnswer = () => 'hang';
    const token = world.legacy.issue(owner(h));
    const ended = h.nextAdoption();
    expect(await validate(h, token)).toBe(true);
    expect(h.adoptions).toStrictEqual([]); // answered while the JSON call is still open
    expect(await ended).toBe('error');
    expect(await stored(h, token)).toBeNull();
    // Passthrough's rules: once its kept yes runs out and the old service says no, it is no.
    world.legacy.tokens.delete(token);
    h.clock.advance(61 * SECOND);
    expect(await validate(h, token)).toBe(false);
  });

  it('an old service that says yes to anything is refused before anything is adopted', async () => {
    const h = await world.harness();
    world.legacy.mode = 'yes';
    world.legacy.jsonAsked.length = 0;
    expect(await validate(h, '0DDBA11C-0FFE-4EE1-8BAD-F00DDEADBEEF')).toBe(false);
    expect(h.checks).toStrictEqual(['unsafe']);
    expect(world.legacy.jsonAsked).toStrictEqual([]);
  });
});

describe('serve with legacy.adoptTokens', () => {
  it('adopts through its own wiring: the metrics and the console\'s Move page (checks, adoptions, failures, live legacy sessions), the debug line, the audit trail, token list and the migration report show it; the token never appears', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-adopt-serve-'));
    const db = `sqlite:${join(dir, 'serve.db')}`;
    const profileFile = join(dir, 'legacy-profile.json');
    writeFileSync(profileFile, JSON.stringify(PROFILE_FILE));
    const store = await openStore(db);
    expect((await createAdminService({ store, hasher: fastHasher() }).addUser({ login: 'demo', password: 'demo-pass', appIds: [2] })).ok).toBe(true);
    expect((await createAdminAccounts({ store, hasher: fastHasher() }).add('ann', CONSOLE_PW, 'admin')).ok).toBe(true);
    await store.close();

    const out = sink();
    const adoptedLine = out.waitFor(/token adoption: adopted/);
    adoptedLine.catch(() => undefined); // awaited below; a failure before that is reported there
    const controller = new AbortController();
    const env = {
      SVCAPI_LEGACY_URL: world.legacy.url, SVCAPI_LEGACY_TOKEN_PASSTHROUGH: new Date(Date.now() + HOUR).toISOString(), SVCAPI_LEGACY_ADOPT_TOKENS: 'true',
      SVCAPI_COMPAT: profileFile, SVCAPI_LOG_LEVEL: 'debug', SVCAPI_LOG_FLUSH_MS: '0', SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0',
    };
    const done = runCli(['serve', '--port', '0', '--db', db], { stdin: Readable.from([]), stdout: out.stream, stderr: out.stream, env, signal: controller.signal });
    const token = world.legacy.issue({ login: 'demo', appId: 2, expiresAt: new Date(Date.now() + HOUR) });
    // A token of a login unknown here (adoption refused), and one checked while the old service fails.
    const stranger = world.legacy.issue({ login: 'nobody', appId: 2, expiresAt: new Date(Date.now() + HOUR) });
    const unlucky = world.legacy.issue({ login: 'demo', appId: 2, expiresAt: new Date(Date.now() + HOUR) });
    try {
      const service = (await out.waitFor(/^Service: (\S+)$/m))[1] ?? '';
      const management = (await out.waitFor(/^Management: (http:\/\/\S+) /m))[1] ?? '';
      const validate = async (t: string): Promise<unknown> => {
        const req = buildRequest('soap11', 'ValidateUserToken', { token: t });
        const res = await fetch(service, { method: 'POST', headers: req.headers, body: req.payload ?? null });
        return parseResult('soap11', 'ValidateUserToken', await res.text());
      };
      expect(await validate(token)).toBe(true);
      await adoptedLine;
      const refusedLine = out.waitFor(/token adoption: unknown_user/);
      expect(await validate(stranger)).toBe(true);
      await refusedLine;
      world.legacy.mode = 'fault';
      expect(await validate(unlucky)).toBe(false);
      const metrics = await (await fetch(`${management}/metrics`)).text();
      // Checks, adoptions and failures, each by result.
      expect(metrics).toContain('svcapi_auth_legacy_token_checks_total{result="valid"} 2');
      expect(metrics).toContain('svcapi_auth_legacy_token_checks_total{result="error"} 1');
      expect(metrics).toContain('svcapi_auth_legacy_token_adoptions_total{result="adopted"} 1');
      expect(metrics).toContain('svcapi_auth_legacy_token_adoptions_total{result="unknown_user"} 1');
      expect(metrics).toContain('svcapi_auth_legacy_token_adoptions_total{result="unrecognised"} 0');
      expect(metrics).toContain('svcapi_auth_audit_events_total{type="token.adopted"} 1');
      expect(metrics).toContain('svcapi_auth_audit_events_total{type="token.adoption-refused"} 1');
      // The console's Move page: the migration report's figures beside the same counters.
      const admin = new ConsoleClient(management);
      expect((await admin.login('ann', CONSOLE_PW)).status).toBe(303);
      const move = await admin.text('/admin/move');
      const counter = (name: string, labels: string): string | undefined =>
        new RegExp(`<td class="mono">${name}</td><td class="mono">${labels}</td><td class="num">(\\d+)</td>`).exec(move)?.[1];
      expect(counter('svcapi_auth_legacy_token_checks_total', 'result=valid')).toBe('2');
      expect(counter('svcapi_auth_legacy_token_checks_total', 'result=error')).toBe('1');
      expect(counter('svcapi_auth_legacy_token_adoptions_total', 'result=adopted')).toBe('1');
      expect(counter('svcapi_auth_legacy_token_adoptions_total', 'result=unknown_user')).toBe('1');
      expect(move).toContain('Live sessions the legacy service issued (import tokens, token adoption): <strong>1</strong>');
      for (const t of [token, stranger, unlucky]) expect(move.toLowerCase()).not.toContain(t.toLowerCase());
      expect(out.text()).toContain('those it vouches for are adopted');
    } finally {
      controller.abort();
      expect(await done).toBe(0);
    }
    try {
      for (const t of [token, stranger, unlucky]) expect(out.text().toLowerCase()).not.toContain(t.toLowerCase());
      const listed = await run(['token', 'list', '--user', 'demo', '--db', db]);
      expect(listed.out).toMatch(/^\S+ +2 .* legacy$/m);
      expect((await run(['users', 'migration-report', '--db', db])).out).toContain('Live sessions issued by the legacy service (import tokens, token adoption): 1\n');
      // serve's audit trail has the adoption and the refusal (flushed at shutdown), by fingerprint; and their log lines.
      const audit = await run(['audit', '--type', 'token.adopt*', '--json', '--db', db]);
      const events = audit.out.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
      const fp = (t: string): string => hashToken(canonicalToken(t) ?? '').slice(0, 12);
      // Newest first.
      expect(events).toMatchObject([
        { type: 'token.adoption-refused', reason: 'unknown_user', login: expect.stringMatching(/^unknown:[0-9a-f]{16}$/), appId: 2, tokenFp: fp(stranger) },
        { type: 'token.adopted', login: 'demo', appId: 2, tokenFp: fp(token), detail: { legacyExpiresAt: expect.any(String), expiresAt: expect.any(String) } },
      ]);
      expect(out.text()).toContain('"type":"token.adopted"');
      expect(out.text()).toContain('"type":"token.adoption-refused"');
      const table = await run(['audit', '--db', db]);
      for (const text of [audit.out, table.out]) {
        for (const t of [token, stranger, unlucky]) expect(text.toLowerCase()).not.toContain(t.toLowerCase());
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
