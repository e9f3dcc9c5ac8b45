/**
 * Brute-force protection (docs/security.md#brute-force-protection), in one process: the domain's
 * use of the store's counters (fast fake hasher, fake clock), and the HTTP app with the real
 * argon2id hasher, counting the verifications that really run. The two-instance test on
 * PostgreSQL is test/multi-instance/brute-force.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { AuthEvents, LoginOutcomeEvent } from '../../src/domain/auth-events.js';
import type { CallerContext } from '../../src/domain/auth-service.js';
import { createAdminService } from '../../src/domain/admin-service.js';
import { createPasswordHasher } from '../../src/domain/composite-password-hasher.js';
import { DEFAULT_THROTTLE_POLICY, loginThrottleKey, type ThrottlePolicy } from '../../src/domain/login-throttle.js';
import type { PasswordHasher } from '../../src/domain/password-hasher.js';
import { createAuthService } from '../../src/domain/create-auth-service.js';
import { exportData, importData } from '../../src/domain/data-transfer.js';
import { createFailurePadding } from '../../src/domain/failure-padding.js';
import { ServerBusyError } from '../../src/domain/server-busy-error.js';
import { createMetrics } from '../../src/ops/metrics.js';
import { startHousekeeping, throttlePurgeTask } from '../../src/ops/housekeeping.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { buildRequest, parseResult } from '../support/asmx-client.js';
import { fakeClock, fakeHasher, MINUTE, SECOND, type FakeClock, type FakeHasher } from '../support/domain-fakes.js';
import { createTestStack, type TestStack } from '../support/start-app.js';

const from = (sourceIp: string): CallerContext => ({ sourceIp, requestId: 'test' });

interface World {
  readonly store: Store;
  readonly clock: FakeClock;
  readonly hasher: FakeHasher;
  readonly outcomes: LoginOutcomeEvent[];
  login(login: string, password: string, ctx: CallerContext, options?: { appId?: number; ipAddress?: string | null }): Promise<boolean>;
}

const stores: Store[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

async function world(policy: ThrottlePolicy = DEFAULT_THROTTLE_POLICY): Promise<World> {
  const store = await openStore('sqlite::memory:');
  stores.push(store);
  const clock = fakeClock();
  const hasher = fakeHasher();
  const outcomes: LoginOutcomeEvent[] = [];
  const events: AuthEvents = { loginOutcome: (e) => outcomes.push(e) };
  const admin = createAdminService({ store, hasher, clock });
  const added = await admin.addUser({ login: 'alice', password: 'alice-pw', appIds: [2] });
  if (!added.ok) throw new Error(added.message);
  // No padding: these tests look at counts, not at timing.
  const padding = createFailurePadding({ sleep: async () => undefined });
  // The service calibrates its padding with one verification at start: let it run first.
  const calibrated = new Promise<void>((resolve) => {
    hasher.duringVerify = async () => resolve();
  });
  const service = createAuthService({ store, hasher, clock, events, throttle: policy, padding });
  await calibrated;
  delete hasher.duringVerify;
  hasher.verifyCalls = 0;
  return {
    store, clock, hasher, outcomes,
    async login(login, password, ctx, options = {}) {
      const r = await service.validateUser({ login, password, appId: options.appId ?? 2, ipAddress: options.ipAddress ?? '' }, ctx);
      return r.ok;
    },
  };
}

describe('brute-force protection in the domain', () => {
  it('refuses a throttled attempt with the ordinary failure, without verifying, and says why only to observers', async () => {
    const w = await world();
    for (let i = 0; i < 5; i++) expect(await w.login('alice', 'wrong', from('203.0.113.5'))).toBe(false);
    expect(w.hasher.verifyCalls).toBe(5);
    // The right password now: refused, unverified.
    expect(await w.login('alice', 'alice-pw', from('203.0.113.5'))).toBe(false);
    expect(w.hasher.verifyCalls).toBe(5);
    expect(w.outcomes.map((o) => o.outcome)).toEqual([...Array(5).fill('bad-password'), 'throttled']);
    expect(w.outcomes.at(-1)).toMatchObject({ outcome: 'throttled', throttledBy: 'pair', userId: expect.any(Number) });
    // The same login from elsewhere is not slowed at all.
    expect(await w.login('alice', 'alice-pw', from('198.51.100.1'))).toBe(true);
    // After the delay the pair may try again (30 s, then 60 s...): never a permanent lock.
    w.clock.advance(30 * SECOND);
    expect(await w.login('alice', 'alice-pw', from('203.0.113.5'))).toBe(true);
  });

  it('doubles the delay of a pair that keeps failing, up to the maximum, and a success resets it', async () => {
    const w = await world();
    for (let i = 0; i < 5; i++) await w.login('alice', 'wrong', from('203.0.113.5'));
    const waits: number[] = [];
    for (let round = 0; round < 7; round++) {
      // Find how long the pair has to wait, in 10 s steps, without hashing anything meanwhile.
      let waited = 0;
      const before = w.hasher.verifyCalls;
      while (!(await w.login('alice', 'wrong', from('203.0.113.5')))) {
        if (w.hasher.verifyCalls > before) break; // this attempt was verified (and failed)
        w.clock.advance(10 * SECOND);
        waited += 10 * SECOND;
      }
      waits.push(waited);
    }
    expect(waits).toEqual([30, 60, 120, 240, 480, 900, 900].map((s) => s * SECOND));
    w.clock.advance(15 * MINUTE);
    expect(await w.login('alice', 'alice-pw', from('203.0.113.5'))).toBe(true);
    for (let i = 0; i < 4; i++) await w.login('alice', 'wrong', from('203.0.113.5'));
    expect(await w.login('alice', 'alice-pw', from('203.0.113.5'))).toBe(true);
    expect(w.outcomes.filter((o) => o.outcome === 'throttled').length).toBeGreaterThan(0);
  });

  it('delays, not refuses, parallel logins of a legitimate client beyond N; parallel guesses still get N verifications', async () => {
    const w = await world();
    w.hasher.duringVerify = () => new Promise((resolve) => setTimeout(resolve, 20));
    const ok = await Promise.all(Array.from({ length: 12 }, () => w.login('alice', 'alice-pw', from('203.0.113.5'))));
    expect(ok).toEqual(Array(12).fill(true));
    expect(w.hasher.verifyCalls).toBe(12);
    w.hasher.verifyCalls = 0;
    const bad = await Promise.all(Array.from({ length: 50 }, () => w.login('alice', 'wrong', from('198.51.100.5'))));
    expect(bad.every((r) => !r)).toBe(true);
    expect(w.hasher.verifyCalls).toBe(5);
    expect(w.outcomes.filter((o) => o.outcome === 'throttled')).toHaveLength(45);
  });

  it('gives the slot back when the verification cannot run (server too busy), counting nothing', async () => {
    const w = await world();
    const verify = w.hasher.verify.bind(w.hasher);
    w.hasher.verify = async () => {
      throw new ServerBusyError();
    };
    for (let i = 0; i < 10; i++) await expect(w.login('alice', 'alice-pw', from('203.0.113.5'))).rejects.toBeInstanceOf(ServerBusyError);
    w.hasher.verify = verify;
    expect(await w.login('alice', 'alice-pw', from('203.0.113.5'))).toBe(true);
  });

  it('counts unknown logins like known ones, so throttling tells nothing about who exists', async () => {
    const w = await world();
    for (let i = 0; i < 7; i++) await w.login('nobody', 'x', from('203.0.113.5'));
    for (let i = 0; i < 7; i++) await w.login('alice', 'x', from('203.0.113.6'));
    expect(w.outcomes.filter((o) => o.outcome === 'throttled').map((o) => o.throttledBy)).toEqual(['pair', 'pair', 'pair', 'pair']);
    expect(w.hasher.verifyCalls).toBe(10);
    // Case does not make another login.
    expect(await w.login('ALICE', 'alice-pw', from('203.0.113.6'))).toBe(false);
  });

  it('holds a login to its ceiling across sources, except from places it logged in from before', async () => {
    const w = await world({ ...DEFAULT_THROTTLE_POLICY, login: { maxAttempts: 20 } });
    expect(await w.login('alice', 'alice-pw', from('192.0.2.44'))).toBe(true); // her usual place
    for (let i = 0; i < 40; i++) await w.login('alice', `guess-${i}`, from(`198.51.100.${i}`));
    expect(w.hasher.verifyCalls).toBe(21); // 1 success + 20 guesses: only failures count
    expect(w.outcomes.filter((o) => o.throttledBy === 'login')).toHaveLength(20);
    expect(await w.login('alice', 'alice-pw', from('192.0.2.44'))).toBe(true);
    expect(await w.login('alice', 'alice-pw', from('203.0.113.99'))).toBe(false); // a new place waits for the window
    w.clock.advance(15 * MINUTE);
    expect(await w.login('alice', 'alice-pw', from('203.0.113.99'))).toBe(true);
  });

  it('keeps a login from its known source while 150 wrong passwords from 150 sources hold its ceiling; a new source waits', async () => {
    const w = await world();
    expect(await w.login('alice', 'alice-pw', from('192.0.2.44'))).toBe(true); // her usual place
    for (let i = 0; i < 150; i++) expect(await w.login('alice', `guess-${i}`, from(`10.0.${i}.1`))).toBe(false);
    expect(w.outcomes.filter((o) => o.outcome === 'bad-password')).toHaveLength(DEFAULT_THROTTLE_POLICY.login.maxAttempts);
    expect(w.outcomes.filter((o) => o.throttledBy === 'login')).toHaveLength(150 - DEFAULT_THROTTLE_POLICY.login.maxAttempts);
    // From her usual place, every login is verified (and succeeds), as often as she likes.
    for (let i = 0; i < 5; i++) expect(await w.login('alice', 'alice-pw', from('192.0.2.44'))).toBe(true);
    // A place never seen is refused until the window ends, like the guessers.
    expect(await w.login('alice', 'alice-pw', from('203.0.113.99'))).toBe(false);
    w.clock.advance(15 * MINUTE);
    expect(await w.login('alice', 'alice-pw', from('203.0.113.99'))).toBe(true);
  });

  it('lets 150 new sources all log one shared account in: successes do not count toward the login ceiling', async () => {
    const w = await world();
    const ok: boolean[] = [];
    for (let i = 0; i < 150; i++) ok.push(await w.login('alice', 'alice-pw', from(`10.1.${i}.1`)));
    expect(ok).toEqual(Array(150).fill(true));
    // Twice more from each of them, and from 150 more new places: still nothing counted.
    for (let i = 0; i < 150; i++) expect(await w.login('alice', 'alice-pw', from(`10.1.${i}.1`))).toBe(true);
    for (let i = 0; i < 150; i++) expect(await w.login('alice', 'alice-pw', from(`10.2.${i}.1`))).toBe(true);
    expect(w.outcomes.filter((o) => o.outcome === 'throttled')).toHaveLength(0);
    // Failures still count: the ceiling trips after login.maxAttempts of them, successes in between or not.
    for (let i = 0; i < 120; i++) {
      await w.login('alice', `guess-${i}`, from(`198.51.100.${i}`));
      if (i % 10 === 0) expect(await w.login('alice', 'alice-pw', from(`10.3.${i}.1`))).toBe(i < DEFAULT_THROTTLE_POLICY.login.maxAttempts);
    }
    expect(w.outcomes.filter((o) => o.outcome === 'bad-password')).toHaveLength(DEFAULT_THROTTLE_POLICY.login.maxAttempts);
  });

  it('delays, not refuses, parallel logins from new sources beyond the ceiling while they are only under way', async () => {
    const w = await world({ ...DEFAULT_THROTTLE_POLICY, login: { maxAttempts: 5 } });
    w.hasher.duringVerify = () => new Promise((resolve) => setTimeout(resolve, 20));
    const ok = await Promise.all(Array.from({ length: 15 }, (_, i) => w.login('alice', 'alice-pw', from(`10.4.${i}.1`))));
    expect(ok).toEqual(Array(15).fill(true));
    // Parallel guesses are held to the ceiling: only 5 are verified, however many there are.
    w.hasher.verifyCalls = 0;
    const bad = await Promise.all(Array.from({ length: 30 }, (_, i) => w.login('alice', `guess-${i}`, from(`10.5.${i}.1`))));
    expect(bad.every((r) => !r)).toBe(true);
    expect(w.hasher.verifyCalls).toBe(5);
  });

  it('stops a source that tries many logins (credential stuffing), until the window ends', async () => {
    const w = await world({ ...DEFAULT_THROTTLE_POLICY, source: { maxFailures: 10 } });
    for (let i = 0; i < 15; i++) await w.login(`user${i}`, 'password1', from('2001:db8:1:2::17'));
    expect(w.hasher.verifyCalls).toBe(10);
    // Another address of the same /64 is the same source; another /64 is not.
    expect(await w.login('alice', 'alice-pw', from('2001:db8:1:2:ffff::1'))).toBe(false);
    expect(await w.login('alice', 'alice-pw', from('2001:db8:1:3::1'))).toBe(true);
    expect(w.outcomes.filter((o) => o.throttledBy === 'source')).toHaveLength(6);
    w.clock.advance(15 * MINUTE);
    expect(await w.login('alice', 'alice-pw', from('2001:db8:1:2::17'))).toBe(true);
  });

  it('counts the end user behind a trusted caller of the application, and only there', async () => {
    const w = await world();
    const admin = createAdminService({ store: w.store, hasher: w.hasher, clock: w.clock });
    expect((await admin.updateApplication(2, { trustedCallers: ['10.0.0.5', '10.1.0.0/16'] })).ok).toBe(true);
    // A portal at 10.0.0.5 logs in many users; one of them (203.0.113.7) guesses.
    for (let i = 0; i < 5; i++) await w.login('alice', 'wrong', from('10.0.0.5'), { ipAddress: '203.0.113.7' });
    expect(await w.login('alice', 'alice-pw', from('10.0.0.5'), { ipAddress: '203.0.113.7' })).toBe(false);
    // Other users of the same portal are not affected, nor the portal itself.
    expect(await w.login('alice', 'alice-pw', from('10.0.0.5'), { ipAddress: '203.0.113.8' })).toBe(true);
    expect(await w.login('alice', 'alice-pw', from('::ffff:10.1.2.3'), { ipAddress: '198.51.100.9' })).toBe(true);
    // From a caller that is not trusted, IPAddress is only recorded: the socket's address counts.
    for (let i = 0; i < 5; i++) await w.login('alice', 'wrong', from('192.0.2.99'), { ipAddress: `203.0.113.${100 + i}` });
    expect(await w.login('alice', 'alice-pw', from('192.0.2.99'), { ipAddress: '203.0.113.200' })).toBe(false);
    // A trusted caller without a valid IPAddress is counted under its own address.
    for (let i = 0; i < 5; i++) await w.login('alice', 'wrong', from('10.1.0.1'), { ipAddress: 'n/a' });
    expect(await w.login('alice', 'alice-pw', from('10.1.0.1'), { ipAddress: '' })).toBe(false);
    expect(await w.login('alice', 'alice-pw', from('10.1.0.2'), { ipAddress: '' })).toBe(true);
  });

  it('counts throttle trips by counter in the metrics', async () => {
    const store = await openStore('sqlite::memory:');
    stores.push(store);
    const metrics = createMetrics({ store, processMetrics: false });
    const hasher = fakeHasher();
    const service = createAuthService({ store, hasher, events: metrics.events, throttle: { ...DEFAULT_THROTTLE_POLICY, source: { maxFailures: 5 } } });
    for (let i = 0; i < 7; i++) await service.validateUser({ login: 'x', password: 'y', appId: 2, ipAddress: null }, from('192.0.2.1'));
    await service.validateUser({ login: 'z', password: 'y', appId: 2, ipAddress: null }, from('192.0.2.1'));
    const text = await metrics.registry.metrics();
    expect(text).toContain('svcapi_auth_throttle_trips_total{scope="pair"} 2');
    expect(text).toContain('svcapi_auth_throttle_trips_total{scope="source"} 1');
    expect(text).toContain('svcapi_auth_throttle_trips_total{scope="login"} 0');
    expect(text).toContain('svcapi_auth_logins_total{outcome="throttled"} 3');
  });

  it('knows logins by the SHA-256 of their key; housekeeping purges what no longer counts', async () => {
    const w = await world();
    for (let i = 0; i < 3; i++) await w.login('Secret Typed As Login', 'x', from('192.0.2.1'));
    await w.login('alice', 'alice-pw', from('192.0.2.2'));
    const keyOf = loginThrottleKey('secret typed as login');
    expect(keyOf).toBe(loginThrottleKey('SECRET TYPED AS LOGIN'));
    expect(keyOf).toMatch(/^[0-9a-f]{64}$/);
    // Nothing expires before the window ends (purging at "now" deletes nothing)...
    const now = () => w.clock.now();
    const task = throttlePurgeTask(w.store, 30, now);
    expect(await task.purgeBatch(100)).toBe(0);
    // ... 15 min later the counters go (3 + 3 rows), the known source stays for 30 days.
    w.clock.advance(15 * MINUTE);
    const housekeeping = startHousekeeping({ tasks: [task], intervalMs: 3_600_000, batchSize: 2, pauseMs: 1 });
    const reports = await housekeeping.runOnce();
    await housekeeping.stop();
    const deleted = reports.reduce((n, r) => n + r.deleted, 0) + (await task.purgeBatch(100));
    expect(deleted).toBe(5); // pair, login and source of the typed secret; login and source of alice (her pair was reset)
    w.clock.advance(30 * 24 * 60 * MINUTE);
    expect(await task.purgeBatch(100)).toBe(1);
  });
});

describe('trusted callers in export / import', () => {
  it('travel with their application; an export without them (older) means none', async () => {
    const source = await openStore('sqlite::memory:');
    const target = await openStore('sqlite::memory:');
    stores.push(source, target);
    const admin = createAdminService({ store: source, hasher: fakeHasher() });
    expect((await admin.addApplication({ appId: 5, name: 'Portal', trustedCallers: ['10.0.0.5', '10.1.0.0/16'] })).ok).toBe(true);
    const lines: string[] = [];
    await exportData(source, async (line) => {
      lines.push(line);
    }, new Date());
    expect(lines.find((l) => l.includes('"appId":5'))).toContain('"trustedCallers":["10.0.0.5","10.1.0.0/16"]');
    await importData(target, lines, {}, new Date());
    expect((await target.getApplication(5))?.trustedCallers).toEqual(['10.0.0.5', '10.1.0.0/16']);
    const older = lines.map((l) => l.replace(/,"trustedCallers":\[[^\]]*\]/, '').replace('"appId":5', '"appId":6'));
    await importData(target, older, {}, new Date());
    expect((await target.getApplication(6))?.trustedCallers).toEqual([]);
    const bad = lines.map((l) => l.replace('"10.0.0.5"', '"not-an-address"').replace('"appId":5', '"appId":8'));
    await expect(importData(target, bad, {}, new Date())).rejects.toThrow(/trustedCallers/);
  });
});

describe('brute-force protection through the HTTP app (real argon2id)', () => {
  let stack: TestStack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it('50 parallel wrong passwords from one source run at most 5 verifications; the victim then logs in at once from elsewhere', async () => {
    const real = createPasswordHasher();
    let verifications = 0;
    let calibrated: () => void = () => undefined;
    const calibration = new Promise<void>((resolve) => {
      calibrated = resolve;
    });
    const counting: PasswordHasher = {
      hash: (password) => real.hash(password),
      async verify(hash, password) {
        verifications += 1;
        try {
          return await real.verify(hash, password);
        } finally {
          calibrated();
        }
      },
      needsRehash: (hash) => real.needsRehash(hash),
    };
    stack = await createTestStack({ hasher: counting });
    const app = stack.app;
    const admin = createAdminService({ store: stack.store, hasher: real });
    expect((await admin.addUser({ login: 'victim', password: 'correct horse battery', appIds: [2] })).ok).toBe(true);
    // The service calibrates its failure padding with one verification at start: let it finish first.
    await calibration;

    const send = async (password: string, remoteAddress: string) => {
      const req = buildRequest('soap11', 'ValidateUser', { login: 'victim', password, AppId: 2, IPAddress: '' });
      const res = await app.inject({ method: req.method, url: req.url, headers: req.headers, payload: req.payload ?? '', remoteAddress });
      return { status: res.statusCode, body: res.body, result: parseResult('soap11', 'ValidateUser', res.body) };
    };
    // What one login costs here, unattacked: the yardstick for "at once" below.
    const tPlain = performance.now();
    expect((await send('correct horse battery', '198.51.100.21')).result).toMatch(/^[0-9a-f-]{36}$/);
    const plainMs = performance.now() - tPlain;
    verifications = 0;
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => send(`guess-${i}`, '203.0.113.50')));
    const attackMs = performance.now() - started;
    expect(verifications).toBeLessThanOrEqual(DEFAULT_THROTTLE_POLICY.pair.maxAttempts);
    expect(verifications).toBe(5);
    // Every answer is the ordinary failure, byte for byte the same.
    expect(new Set(answers.map((a) => `${a.status} ${a.body}`)).size).toBe(1);
    expect(answers[0]).toMatchObject({ status: 200, result: '' });

    const t0 = performance.now();
    const own = await send('correct horse battery', '198.51.100.20');
    const ms = performance.now() - t0;
    expect(own.result).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(verifications).toBe(6);
    // "At once": about one plain login's time, no waiting for a block (the pair's first delay is
    // 30 s). A ratio, with room for a busy machine.
    expect(ms / plainMs).toBeLessThan(10);
    // The attacker's pair is still blocked, even with the right password.
    expect((await send('correct horse battery', '203.0.113.50')).result).toBe('');
    expect(verifications).toBe(6);
    console.log(`50 parallel guesses: ${verifications - 1} verifications, ${attackMs.toFixed(0)} ms; victim from elsewhere: ${ms.toFixed(0)} ms (a plain login ${plainMs.toFixed(0)} ms)`);
  });
});
