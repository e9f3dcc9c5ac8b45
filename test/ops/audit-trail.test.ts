/**
 * The audit trail: the domain's outcomes and the operator's changes become audit
 * events, written to the log at once and to the database in batches, never holding up a
 * request, bounded when the database is down, flushed on close, purged after the retention.
 */
import { createHash } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createAdminService } from '../../src/domain/admin-service.js';
import { authAuditEvents, escapeAuditText, loginFingerprint, toAuditEvent, tokenFingerprint, type AuditInput } from '../../src/domain/audit.js';
import { combineAuthEvents } from '../../src/domain/auth-events.js';
import { createAuthService } from '../../src/domain/create-auth-service.js';
import { createAuditTrail, loadLoginFingerprintKey, type AuditTrail } from '../../src/ops/audit-trail.js';
import { auditPurgeTask } from '../../src/ops/housekeeping.js';
import { createLogger } from '../../src/ops/logger.js';
import { openStore } from '../../src/store/open-store.js';
import type { NewAuditEvent, Store } from '../../src/store/store.js';
import { counterRandom, ctx, fakeHasher } from '../support/domain-fakes.js';
import { sink } from './support.js';

const fp = (token: string): string => createHash('sha256').update(token.toLowerCase()).digest('hex').slice(0, 12);

const stores: Store[] = [];
const trails: AuditTrail[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const t of trails.splice(0)) await t.close();
  for (const s of stores.splice(0)) await s.close();
});

async function memoryStore(): Promise<Store> {
  const store = await openStore('sqlite::memory:');
  stores.push(store);
  return store;
}

function trail(options: Parameters<typeof createAuditTrail>[0]): AuditTrail {
  const t = createAuditTrail(options);
  trails.push(t);
  return t;
}

/** A store whose appendAudit can be made to fail or stall, recording every batch. */
function fakeAuditStore(): { store: Pick<Store, 'appendAudit' | 'getUser'>; batches: NewAuditEvent[][]; down: boolean; stall: Promise<void> | null } {
  const fake = {
    batches: [] as NewAuditEvent[][],
    down: false,
    stall: null as Promise<void> | null,
    store: {
      appendAudit: async (events: readonly NewAuditEvent[]): Promise<void> => {
        if (fake.stall !== null) await fake.stall;
        if (fake.down) throw new Error('database unreachable');
        fake.batches.push([...events]);
      },
      getUser: async () => null,
    },
  };
  return fake;
}

const input = (n: number): AuditInput => ({ type: 'login.failure', reason: 'bad-password', login: `user${n}`, requestId: `r${n}` });

describe('audit text', () => {
  it('escapes control and invisible characters and the backslash, and caps the length visibly', () => {
    expect(escapeAuditText('alice', 10)).toBe('alice');
    expect(escapeAuditText('a\nb\r\tc\u0000', 20)).toBe('a\\u000ab\\u000d\\u0009c\\u0000');
    expect(escapeAuditText('evil\u202Eexe.txt\u200B', 30)).toBe('evil\\u202eexe.txt\\u200b');
    expect(escapeAuditText('back\\slash', 20)).toBe('back\\\\slash');
    expect(escapeAuditText('x\u001b[31mred', 20)).toBe('x\\u001b[31mred');
    expect(escapeAuditText('ação 😀 中文', 20)).toBe('ação 😀 中文');
    expect(escapeAuditText('lone \uD800 surrogate', 30)).toBe('lone \\ud800 surrogate');
    expect(escapeAuditText('abcdefghij', 4)).toBe('abcd…(+6)');
    expect(escapeAuditText('😀😀😀', 2)).toBe('😀😀…(+1)');
  });

  it('treats every ASCII character by the rule, alone and at the length cap (the plain-ASCII shortcut)', () => {
    for (let code = 0; code < 128; code++) {
      const ch = String.fromCharCode(code);
      const escaped = ch === '\\' ? '\\\\' : code < 0x20 || code === 0x7f ? `\\u${code.toString(16).padStart(4, '0')}` : ch;
      expect(escapeAuditText(`a${ch}b`, 3), `code ${code}`).toBe(`a${escaped}b`);
      expect(escapeAuditText(`a${ch}b`, 2), `code ${code}`).toBe(`a${escaped}…(+1)`);
    }
    expect(escapeAuditText('203.0.113.7', 11)).toBe('203.0.113.7');
    expect(escapeAuditText('203.0.113.7', 10)).toBe('203.0.113.…(+1)');
    expect(escapeAuditText('', 0)).toBe('');
  });

  it('fills an event: nulls for what is missing, request text escaped and capped, no empty source', () => {
    const e = toAuditEvent({ type: 'login.failure', login: `x\n${'y'.repeat(300)}`, claimedIp: '1.2.3.4\u0007', sourceIp: '', appId: Number.NaN }, () => new Date(5));
    expect(e).toMatchObject({ at: new Date(5), type: 'login.failure', reason: null, requestId: null, appId: null, sourceIp: null, claimedIp: '1.2.3.4\\u0007', tokenFp: null, detail: null });
    expect(e.login).toMatch(/^x\\u000ay{254}…\(\+46\)$/);
  });

  it('fingerprints a token by the first 12 hex digits of its SHA-256', () => {
    expect(tokenFingerprint('0123456789abcdef'.repeat(4))).toBe('0123456789ab');
  });
});

describe('the domain\'s outcomes as audit events', () => {
  it('records logins with their reason, the user\'s login (an unknown one by fingerprint) and claimed IP as received, tokens and tickets by fingerprint only', async () => {
    const store = await memoryStore();
    const hasher = fakeHasher();
    const admin = createAdminService({ store, hasher });
    await admin.updateApplication(2, { loginUrl: 'https://gps.example/login' });
    await admin.addUser({ login: 'Alice', password: 'pw-canary', appIds: [2] });
    const log = sink();
    const audit = trail({ store, loginFingerprintKey: 'k'.repeat(64), logger: createLogger({ level: 'info', stream: log.stream }) });
    const service = createAuthService({ store, hasher, random: counterRandom(), events: audit.events });
    const ctxA = { sourceIp: '203.0.113.9', requestId: 'req-a' };

    const ok = await service.validateUser({ login: 'alice', password: 'pw-canary', appId: 2, ipAddress: '10.1.2.3' }, ctxA);
    if (!ok.ok) throw new Error('login failed');
    await service.validateUser({ login: 'alice', password: 'wrong', appId: 2, ipAddress: null }, ctx);
    await service.validateUser({ login: 'nobody\n<script>', password: 'x', appId: 2, ipAddress: 'not-an-ip\u0000' }, ctx);
    await service.validateUser({ login: 'alice', password: 'pw-canary', appId: 99, ipAddress: '' }, ctx);
    // Successful session checks are not audited (they are every client call).
    expect((await service.validateUserToken(ok.token, ctx)).valid).toBe(true);
    await service.whatsNew({ appToken: ok.token, appId: 2, appVersion: null, language: 'en', qtyNews: 5 }, ctx);
    const url = await service.getUserLoginUrl(ok.token, 2, { sourceIp: '203.0.113.9', requestId: 'req-b' });
    const ticket = /ticket=([0-9a-f-]{36})/.exec(url)?.[1] ?? '';
    expect((await service.validateUserToken(ticket, { sourceIp: '198.51.100.1', requestId: 'req-c' })).valid).toBe(true);
    await log.waitFor(/"type":"ticket\.used"/); // the ticket.used event looks its login up first
    await audit.flush();

    const rows = [...await store.queryAudit({ limit: 100 })].reverse();
    expect(rows.map((r) => [r.type, r.reason])).toEqual([
      ['login.success', 'success'],
      ['token.issued', null],
      ['login.failure', 'bad-password'],
      ['login.failure', 'unknown-user'],
      ['login.failure', 'unknown-app'],
      ['ticket.issued', null],
      ['ticket.used', null],
    ]);
    const [success, issued, bad, unknown, , ticketIssued, ticketUsed] = rows;
    // A known user's login as stored (whatever case it was typed in); an unknown one only as its fingerprint.
    expect(success).toMatchObject({ requestId: 'req-a', appId: 2, login: 'Alice', sourceIp: '203.0.113.9', claimedIp: '10.1.2.3', tokenFp: fp(ok.token) });
    expect(issued).toMatchObject({ requestId: 'req-a', login: 'Alice', tokenFp: fp(ok.token), detail: { userId: expect.any(Number) } });
    expect(bad).toMatchObject({ login: 'Alice', claimedIp: null, tokenFp: null, sourceIp: '192.0.2.10' });
    expect(unknown).toMatchObject({ login: loginFingerprint('k'.repeat(64), 'nobody\n<script>'), claimedIp: 'not-an-ip\\u0000', detail: null });
    expect(unknown?.login).toMatch(/^unknown:[0-9a-f]{16}$/);
    expect(ticketIssued).toMatchObject({ requestId: 'req-b', login: 'Alice', tokenFp: fp(ticket) });
    expect(ticketUsed).toMatchObject({ requestId: 'req-c', login: 'Alice', sourceIp: '198.51.100.1', tokenFp: fp(ticket) });
    const everything = JSON.stringify(rows);
    for (const secret of [ok.token, ticket, 'pw-canary', 'wrong', 'nobody']) expect(everything).not.toContain(secret);
  });

  it('never keeps nor logs the text of an unknown login (it may be a password); keeps a stable keyed fingerprint of it', async () => {
    const store = await memoryStore();
    const hasher = fakeHasher();
    await createAdminService({ store, hasher }).addUser({ login: 'Carol', password: 'pw', appIds: [2] });
    const logged = sink();
    const key = await loadLoginFingerprintKey(store);
    expect(await loadLoginFingerprintKey(store)).toBe(key); // one key per installation
    const audit = trail({ store, logger: createLogger({ level: 'info', stream: logged.stream }), loginFingerprintKey: key });
    const service = createAuthService({ store, hasher, random: counterRandom(), events: audit.events });
    const typo = 'Tr0ub4dor&3-password-in-login-field';
    for (const login of [typo, typo.toUpperCase(), 'carol']) await service.validateUser({ login, password: 'x', appId: 2, ipAddress: null }, ctx);
    await audit.flush();

    const rows = [...await store.queryAudit({ limit: 10 })].reverse();
    const everything = JSON.stringify(rows) + logged.text();
    expect(everything).not.toContain('Tr0ub4dor');
    expect(everything.toLowerCase()).not.toContain('tr0ub4dor');
    const expected = loginFingerprint(key, typo);
    expect(rows.map((r) => [r.reason, r.login])).toEqual([['unknown-user', expected], ['unknown-user', expected], ['bad-password', 'Carol']]);
    expect(logged.text()).toContain(expected);
    // Without the key the fingerprint is not the plain hash a reader of the log could compute.
    expect(expected).not.toContain(createHash('sha256').update(typo.toLowerCase()).digest('hex').slice(0, 16));
  });

  it('maps a throttled outcome (added by login throttling) to its own type', () => {
    const recorded: AuditInput[] = [];
    const events = authAuditEvents((e) => {
      recorded.push(e);
    });
    events.loginOutcome?.({ outcome: 'throttled' as never, appId: 2, userId: 4, ctx, login: 'alice', claimedIp: null });
    expect(recorded[0]).toMatchObject({ type: 'login.throttled', reason: 'throttled', login: 'alice' });
  });

  it('maps token adoptions: `token.adopted` with both expiries, the refusals that matter as `token.adoption-refused`, the others not at all', () => {
    const recorded: AuditInput[] = [];
    const events = authAuditEvents((e) => {
      recorded.push(e);
    }, { loginFingerprintKey: 'k'.repeat(64) });
    const base = { tokenFp: '0123456789ab', ctx: { sourceIp: '203.0.113.7', requestId: 'req-1' }, legacyExpiresAt: new Date('2027-03-01T00:00:00Z') };
    events.tokenAdoption?.({ ...base, result: 'adopted', userId: 4, login: 'Maria', appId: 7, expiresAt: new Date('2027-01-10T20:00:00Z') });
    events.tokenAdoption?.({ ...base, result: 'unrecognised', userId: null, appId: null, legacyExpiresAt: null });
    events.tokenAdoption?.({ ...base, result: 'unknown_user', userId: null, unknownLogin: 'Nobody', appId: 2 });
    events.tokenAdoption?.({ ...base, result: 'unknown_user', userId: 5, login: 'off', userDisabled: true, appId: 2 });
    events.tokenAdoption?.({ ...base, result: 'unknown_app', userId: 4, login: 'Maria', appId: null, appProblem: 'ambiguous' });
    // A token ending as it is checked, and two instances adopting at once: ordinary, only counted.
    events.tokenAdoption?.({ ...base, result: 'expired', userId: null, appId: 2 });
    events.tokenAdoption?.({ ...base, result: 'already_stored', userId: 4, login: 'Maria', appId: 7 });
    expect(recorded).toStrictEqual([
      { type: 'token.adopted', reason: null, requestId: 'req-1', appId: 7, login: 'Maria', sourceIp: '203.0.113.7', tokenFp: '0123456789ab', detail: { userId: 4, legacyExpiresAt: '2027-03-01T00:00:00.000Z', expiresAt: '2027-01-10T20:00:00.000Z' } },
      { type: 'token.adoption-refused', reason: 'unrecognised', requestId: 'req-1', appId: null, login: null, sourceIp: '203.0.113.7', tokenFp: '0123456789ab', detail: { userId: null, legacyExpiresAt: null } },
      // The old service's login of nobody here: only its keyed fingerprint, as a typed one.
      { type: 'token.adoption-refused', reason: 'unknown_user', requestId: 'req-1', appId: 2, login: loginFingerprint('k'.repeat(64), 'nobody'), sourceIp: '203.0.113.7', tokenFp: '0123456789ab', detail: { userId: null, legacyExpiresAt: '2027-03-01T00:00:00.000Z' } },
      { type: 'token.adoption-refused', reason: 'unknown_user', requestId: 'req-1', appId: 2, login: 'off', sourceIp: '203.0.113.7', tokenFp: '0123456789ab', detail: { userId: 5, legacyExpiresAt: '2027-03-01T00:00:00.000Z', userDisabled: true } },
      { type: 'token.adoption-refused', reason: 'unknown_app', requestId: 'req-1', appId: null, login: 'Maria', sourceIp: '203.0.113.7', tokenFp: '0123456789ab', detail: { userId: 4, legacyExpiresAt: '2027-03-01T00:00:00.000Z', appProblem: 'ambiguous' } },
    ]);
    // Without the request (an adoption started elsewhere): no request id or address.
    events.tokenAdoption?.({ result: 'adopted', tokenFp: 'ba9876543210', userId: 4, login: 'Maria', appId: 7, legacyExpiresAt: base.legacyExpiresAt, expiresAt: base.legacyExpiresAt });
    expect(recorded.at(-1)).toMatchObject({ requestId: null, sourceIp: null });
  });

  it('an observer that throws changes no answer', async () => {
    const store = await memoryStore();
    const hasher = fakeHasher();
    await createAdminService({ store, hasher }).addUser({ login: 'alice', password: 'pw', appIds: [2] });
    const broken = authAuditEvents(() => {
      throw new Error('audit broken');
    });
    const service = createAuthService({ store, hasher, events: combineAuthEvents(broken) });
    expect((await service.validateUser({ login: 'alice', password: 'pw', appId: 2, ipAddress: null }, ctx)).ok).toBe(true);
  });
});

describe('the audit line', () => {
  it('from the template carries exactly what logger.info writes, in pino\'s layout, for every kind of field', async () => {
    const inputs: AuditInput[] = [
      { type: 'ticket.issued', requestId: 'b7c1f1a0-0000-4000-8000-000000000001', appId: 2, login: 'Alice', sourceIp: '203.0.113.9', tokenFp: 'abcdef012345', detail: { userId: 7 } },
      { type: 'login.failure', reason: 'bad-password', appId: 99, login: 'nobody\n"<script>"\\\u2028é', sourceIp: '::ffff:10.0.0.1', claimedIp: 'not-an-ip\u0000', detail: null },
      { type: 'admin.user.grant', at: new Date('2026-11-25T10:00:00.123Z'), detail: { actor: 'cli:root', appIds: [2, 5], nested: { a: 'x"y' } } },
      { type: 'console.logout' },
    ];
    const lines = async (fastLine: boolean): Promise<Record<string, unknown>[]> => {
      const log = sink();
      const t = trail({ store: fakeAuditStore().store, logger: createLogger({ level: 'info', stream: log.stream }), fastLine, now: () => new Date('2026-11-25T11:00:00.000Z') });
      for (const input of inputs) t.record(input);
      await t.close();
      return log.text().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['msg'] === 'audit');
    };
    const [fast, slow] = [await lines(true), await lines(false)];
    expect(fast).toHaveLength(inputs.length);
    for (let i = 0; i < fast.length; i++) {
      const { time: t1, ...a } = fast[i] ?? {};
      const { time: t2, ...b } = slow[i] ?? {};
      expect(a).toStrictEqual(b);
      expect(Math.abs(Number(t1) - Number(t2))).toBeLessThan(5000);
      expect(Object.keys(fast[i] ?? {})).toEqual(Object.keys(slow[i] ?? {}));
      expect(Object.keys((fast[i]?.['audit'] ?? {}) as object)).toEqual(Object.keys((slow[i]?.['audit'] ?? {}) as object));
    }
  });

  it('is not written below level info', async () => {
    const log = sink();
    const t = trail({ store: fakeAuditStore().store, logger: createLogger({ level: 'warn', stream: log.stream }) });
    t.record({ type: 'console.logout' });
    await t.close();
    expect(log.text()).not.toMatch(/"msg":"audit"/);
  });
});

describe('admin changes as audit events', () => {
  it('records every change that succeeded with the operator, never the password, and nothing for a refusal', async () => {
    const store = await memoryStore();
    const recorded: AuditInput[] = [];
    const admin = createAdminService({ store, hasher: fakeHasher(), audit: (e) => void recorded.push(e), actor: 'cli:ops' });
    await admin.addApplication({ appId: 7, name: 'Portal', loginUrl: 'https://portal.example/login' });
    await admin.updateApplication(7, { enabled: false });
    await admin.addUser({ login: 'bob', password: 'bob-secret-pw', appIds: [2] });
    await admin.addUser({ login: 'BOB', password: 'again', appIds: [2] }); // refused: exists
    await admin.changePassword('bob', 'new-secret-pw');
    await admin.setUserEnabled('bob', false);
    await admin.setUserEnabled('bob', true);
    await admin.updateApplication(7, { enabled: true });
    await admin.grantApplication('bob', 7);
    await admin.revokeApplication('bob', 7);
    const news = await admin.addNews({ appId: 2, title: 'Hello', body: 'World' });
    if (news.ok) await admin.removeNews(news.value.newsId);
    await admin.revokeTokens({ login: 'bob' });
    await admin.revokeTokens({ all: true });
    expect(recorded.map((e) => e.type)).toEqual([
      'admin.app.add', 'admin.app.update', 'admin.user.add', 'admin.user.passwd', 'admin.user.disable', 'admin.user.enable', 'admin.app.update',
      'admin.user.grant', 'admin.user.revoke-app', 'admin.news.add', 'admin.news.remove', 'admin.token.revoke', 'admin.token.revoke',
    ]);
    expect(recorded.every((e) => e.detail?.actor === 'cli:ops')).toBe(true);
    expect(recorded[0]).toMatchObject({ appId: 7, detail: { settings: { name: 'Portal', loginUrl: 'https://portal.example/login', enabled: true } } });
    expect(recorded[1]).toMatchObject({ appId: 7, detail: { changes: { enabled: false } } });
    expect(recorded[4]).toMatchObject({ login: 'bob' });
    expect(recorded[8]).toMatchObject({ login: 'bob', appId: 7 });
    expect(recorded.at(-1)).toMatchObject({ login: null, detail: { scope: 'all', revoked: 0 } });
    expect(JSON.stringify(recorded)).not.toMatch(/secret-pw|again/);
  });

  it('a failing recorder does not fail the change', async () => {
    const store = await memoryStore();
    const admin = createAdminService({ store, hasher: fakeHasher(), audit: () => Promise.reject(new Error('down')) });
    expect((await admin.addUser({ login: 'carol', password: 'pw', appIds: [2] })).ok).toBe(true);
  });
});

describe('the buffered writer', () => {
  it('writes each event to the log at once, under an audit key, and to the store within ~100 ms', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const fake = fakeAuditStore();
    const out = sink();
    const audit = trail({ store: fake.store, logger: createLogger({ level: 'info', stream: out.stream }) });
    audit.record({ ...input(1), tokenFp: 'abcdefabcdef', claimedIp: '10.0.0.1', sourceIp: '192.0.2.1', appId: 2 });
    const line = JSON.parse(out.text().trim()) as { msg: string; audit: Record<string, unknown> };
    expect(line.msg).toBe('audit');
    expect(line.audit).toMatchObject({ type: 'login.failure', reason: 'bad-password', login: 'user1', requestId: 'r1', tokenFp: 'abcdefabcdef', claimedIp: '10.0.0.1', sourceIp: '192.0.2.1', appId: 2 });
    expect(line.audit.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(fake.batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(99);
    expect(fake.batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(fake.batches.map((b) => b.length)).toEqual([1]);
  });

  it('flushes as soon as 100 events wait, in one batch', async () => {
    const fake = fakeAuditStore();
    const audit = trail({ store: fake.store, flushIntervalMs: 60_000 });
    for (let i = 0; i < 100; i++) audit.record(input(i));
    await nextTurn(); // the write started by the 100th event, an in-memory store, is done
    expect(fake.batches.map((b) => b.length)).toEqual([100]);
    expect(audit.stats()).toMatchObject({ buffered: 0, written: 100, dropped: 0 });
  });

  it('never waits for a slow store: recording stays synchronous while a write is stalled', async () => {
    const fake = fakeAuditStore();
    let release = (): void => undefined;
    fake.stall = new Promise((resolve) => (release = resolve));
    const audit = trail({ store: fake.store, flushIntervalMs: 5 });
    for (let i = 0; i < 1000; i++) audit.record(input(i));
    // Every event was taken while the first write (started by the 100th) is still stalled.
    expect(audit.stats()).toMatchObject({ buffered: 1000, written: 0, dropped: 0 });
    expect(fake.batches).toEqual([]);
    fake.stall = null;
    release();
    await audit.flush();
    await audit.flush();
    expect(fake.batches.flat().map((e) => e.requestId)).toEqual(Array.from({ length: 1000 }, (_, i) => `r${i}`));
  });

  it('keeps events while the store is down, bounded, dropping and counting the excess, and writes the rest once it is back', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const fake = fakeAuditStore();
    fake.down = true;
    const registry = new Registry();
    const out = sink();
    const audit = trail({ store: fake.store, registry, maxBuffered: 150, flushIntervalMs: 5, retryDelayMs: 20, logger: createLogger({ level: 'info', stream: out.stream }) });
    for (let i = 0; i < 200; i++) audit.record(input(i));
    await vi.advanceTimersByTimeAsync(50); // a failed write, then retries every 20 ms
    expect(audit.stats()).toMatchObject({ buffered: 150, dropped: 50, written: 0 });
    expect(audit.stats().writeErrors).toBeGreaterThan(0);
    const metrics = await registry.metrics();
    expect(metrics).toMatch(/^svcapi_auth_audit_dropped_total 50$/m);
    expect(metrics).toMatch(/^svcapi_auth_audit_buffered 150$/m);
    expect(metrics).toMatch(/^svcapi_auth_audit_write_errors_total [1-9]/m);
    expect(metrics).toMatch(/^svcapi_auth_audit_events_total\{type="login.failure"\} 200$/m);
    // Warned once, not once per retry; every event was still logged.
    expect(out.text().match(/cannot write to the database/g)).toHaveLength(1);
    expect(out.text().match(/"msg":"audit"/g)).toHaveLength(200);
    fake.down = false;
    await vi.advanceTimersByTimeAsync(20); // the next retry
    expect(audit.stats()).toMatchObject({ buffered: 0, written: 150, dropped: 50 });
    expect(fake.batches.flat().map((e) => e.requestId)).toEqual(Array.from({ length: 150 }, (_, i) => `r${i}`));
  });

  it('flushes what is buffered on close; counts what could not be written', async () => {
    const fake = fakeAuditStore();
    const audit = createAuditTrail({ store: fake.store, flushIntervalMs: 60_000 });
    for (let i = 0; i < 10; i++) audit.record(input(i));
    await audit.close();
    expect(fake.batches.flat()).toHaveLength(10);
    audit.record(input(11)); // after close: logged only
    expect(audit.stats()).toMatchObject({ written: 10, dropped: 1 });

    const down = fakeAuditStore();
    down.down = true;
    const lost = createAuditTrail({ store: down.store, flushIntervalMs: 60_000 });
    lost.record(input(1));
    await lost.close();
    expect(lost.stats()).toMatchObject({ buffered: 0, dropped: 1, written: 0 });
  });
});

describe('retention', () => {
  it('the housekeeping task purges events older than the retention, in batches', async () => {
    const store = await memoryStore();
    const now = new Date('2025-06-01T00:00:00Z');
    const day = 86_400_000;
    await store.appendAudit([100, 91, 90.5, 89, 1].map((d, i) => toAuditEvent({ ...input(i), at: new Date(now.getTime() - d * day) })));
    const task = auditPurgeTask(store, 90, () => now);
    expect(task.name).toBe('audit');
    expect(await task.purgeBatch(2)).toBe(2);
    expect(await task.purgeBatch(2)).toBe(1);
    expect(await task.purgeBatch(2)).toBe(0);
    expect((await store.queryAudit({ limit: 10 })).map((r) => r.requestId)).toEqual(['r4', 'r3']);
  });
});
