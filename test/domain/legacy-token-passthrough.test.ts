/**
 * Token passthrough's rules (domain/legacy-token-passthrough.ts) against a scripted old service:
 * what is asked, what counts as yes, how long answers are kept, shared and bounded calls, the
 * circuit breaker, the random-token probe, the end date, and the GetUserLoginURL relay.
 */
import { describe, expect, it } from 'vitest';
import {
  createLegacyTokenPassthrough, usableLoginUrl,
  type LegacyTokenCheckResult, type LegacyTokenPassthroughOptions, type LegacyTokenReply, type LegacyTokenService, type PassthroughChange,
} from '../../src/domain/legacy-token-passthrough.js';
import { cryptoRandomSource } from '../../src/domain/random-source.js';
import { DEFAULT_LEGACY_TOKEN_FORM } from '../../src/domain/token-form.js';
import { fakeClock, HOUR, SECOND, type FakeClock } from '../support/domain-fakes.js';

const TOKEN = 'C0FFEE00-1234-4ABC-9DEF-0123456789AB';
const OTHER = 'BADC0DE0-1234-4ABC-9DEF-0123456789AB';

/** An old service that knows some tokens; asks are recorded, and can be held back or failed. */
interface ScriptedLegacy extends LegacyTokenService {
  readonly asked: string[];
  readonly valid: Set<string>;
  /** What every ValidateUserToken answers instead of the set's verdict, when set. */
  reply?: (token: string) => LegacyTokenReply | Promise<LegacyTokenReply>;
  loginUrlAnswer: LegacyTokenReply;
  inFlight: number;
  maxInFlight: number;
}

function scriptedLegacy(valid: string[] = [TOKEN]): ScriptedLegacy {
  const legacy: ScriptedLegacy = {
    asked: [],
    valid: new Set(valid),
    loginUrlAnswer: { kind: 'answer', result: 'https://old.example/login.aspx?t=abc' },
    inFlight: 0,
    maxInFlight: 0,
    async validateUserToken(token) {
      legacy.asked.push(token);
      legacy.inFlight += 1;
      legacy.maxInFlight = Math.max(legacy.maxInFlight, legacy.inFlight);
      try {
        if (legacy.reply !== undefined) return await legacy.reply(token);
        return { kind: 'answer', result: legacy.valid.has(token) ? 'true' : 'false' };
      } finally {
        legacy.inFlight -= 1;
      }
    },
    async getUserLoginUrl(token) {
      legacy.asked.push(`url:${token}`);
      return legacy.loginUrlAnswer;
    },
  };
  return legacy;
}

function setup(overrides: Partial<LegacyTokenPassthroughOptions> = {}, legacy = scriptedLegacy()): {
  legacy: ScriptedLegacy; clock: FakeClock; results: LegacyTokenCheckResult[]; changes: PassthroughChange[]; passthrough: ReturnType<typeof createLegacyTokenPassthrough>;
  /** Asks made about real tokens (the random-token probes left out). */
  realAsks: () => string[];
} {
  const clock = fakeClock('2027-01-10T12:00:00Z');
  const results: LegacyTokenCheckResult[] = [];
  const changes: PassthroughChange[] = [];
  const passthrough = createLegacyTokenPassthrough({
    legacy, clock, random: cryptoRandomSource, tokenForm: DEFAULT_LEGACY_TOKEN_FORM, until: new Date('2027-02-01T00:00:00Z'),
    onCheck: (r) => results.push(r), onChange: (c) => changes.push(c), ...overrides,
  });
  // The random-token probes are lower-case GUIDs (the form's first spelling); the tests' tokens are upper-case.
  return { legacy, clock, results, changes, passthrough, realAsks: () => legacy.asked.filter((t) => t !== t.toLowerCase()) };
}

function deferred(): { promise: Promise<LegacyTokenReply>; resolve: (r: LegacyTokenReply) => void } {
  let resolve: (r: LegacyTokenReply) => void = () => undefined;
  const promise = new Promise<LegacyTokenReply>((r) => (resolve = r));
  return { promise, resolve };
}

describe('token passthrough', () => {
  it('asks only about texts in the old service\'s token form, and honours exactly `true`', async () => {
    const { passthrough, legacy, clock } = setup();
    for (const text of ['', 'nope', `${TOKEN} `, `{${TOKEN}`, '00000000-0000-0000-0000-000000000000', 'c0ffee001234']) {
      expect(await passthrough.check(text), text).toStrictEqual({ valid: false });
    }
    expect(legacy.asked).toStrictEqual([]);
    const check = await passthrough.check(TOKEN);
    expect(check).toStrictEqual({ valid: true, expiresAt: new Date(clock.now().getTime() + 60 * SECOND) });
    for (const answer of ['True', 'TRUE', ' true', 'true ', '1', 'yes', 'false', '', '<b>true</b>']) {
      const token = `A${String(legacy.asked.length).padStart(7, '0')}-1234-4ABC-9DEF-0123456789AB`;
      legacy.reply = (t) => ({ kind: 'answer', result: t === token ? answer : 'false' });
      expect(await passthrough.check(token), JSON.stringify(answer)).toStrictEqual({ valid: false });
    }
  });

  it('asks first about a random token: an old service that says yes to it is refused until restart', async () => {
    const legacy = scriptedLegacy();
    legacy.reply = () => ({ kind: 'answer', result: 'true' });
    const { passthrough, changes, results } = setup({}, legacy);
    expect(await passthrough.check(TOKEN)).toStrictEqual({ valid: false });
    expect(await passthrough.check(OTHER)).toStrictEqual({ valid: false });
    expect(legacy.asked).toHaveLength(1); // the probe only: nothing real is asked after
    expect(legacy.asked[0]).not.toBe(TOKEN);
    expect(changes.map((c) => c.event)).toStrictEqual(['unsafe']);
    expect(results).toStrictEqual(['unsafe', 'unsafe']);
    expect(passthrough.status()).toMatchObject({ unsafe: true });
  });

  it('repeats the random-token probe, and forgets what a liar said', async () => {
    const { passthrough, legacy, clock } = setup({ probeIntervalMs: 10 * SECOND, cacheSeconds: 600 });
    expect((await passthrough.check(TOKEN)).valid).toBe(true);
    legacy.reply = () => ({ kind: 'answer', result: 'true' }); // it turns into a yes-to-anything
    clock.advance(11 * SECOND);
    expect((await passthrough.check(OTHER)).valid).toBe(false);
    expect((await passthrough.check(TOKEN)).valid).toBe(false); // was kept as valid for 600 s
  });

  it('keeps a yes for cacheSeconds and a no for negativeCacheSeconds: a revoked token stops within them', async () => {
    const { passthrough, legacy, clock, results, realAsks } = setup({ cacheSeconds: 60, negativeCacheSeconds: 5 });
    expect((await passthrough.check(TOKEN)).valid).toBe(true);
    legacy.valid.delete(TOKEN); // revoked on the old service
    clock.advance(59 * SECOND);
    expect((await passthrough.check(TOKEN)).valid).toBe(true);
    clock.advance(2 * SECOND);
    expect((await passthrough.check(TOKEN)).valid).toBe(false);
    expect(realAsks()).toStrictEqual([TOKEN, TOKEN]);
    legacy.valid.add(TOKEN);
    clock.advance(4 * SECOND);
    expect((await passthrough.check(TOKEN)).valid).toBe(false); // the no is kept
    clock.advance(2 * SECOND);
    expect((await passthrough.check(TOKEN)).valid).toBe(true);
    expect(results).toStrictEqual(['valid', 'cached_valid', 'invalid', 'cached_invalid', 'valid']);
  });

  it('never keeps a yes past the end date, and reports that as its expiry', async () => {
    const { passthrough, clock } = setup({ until: new Date('2027-01-10T12:00:30Z') });
    expect(await passthrough.check(TOKEN)).toStrictEqual({ valid: true, expiresAt: new Date('2027-01-10T12:00:30Z') });
    clock.advance(29 * SECOND);
    expect((await passthrough.check(TOKEN)).valid).toBe(true);
  });

  it('is off from the end date on, by the clock, per request', async () => {
    const { passthrough, legacy, clock, changes } = setup({ until: new Date('2027-01-10T13:00:00Z') });
    expect((await passthrough.check(TOKEN)).valid).toBe(true);
    clock.set('2027-01-10T13:00:00Z');
    const before = legacy.asked.length;
    expect(await passthrough.check(TOKEN)).toStrictEqual({ valid: false });
    expect(await passthrough.check(OTHER)).toStrictEqual({ valid: false });
    expect(await passthrough.loginUrl(TOKEN, 2)).toBeNull();
    expect(legacy.asked).toHaveLength(before);
    expect(changes.map((c) => c.event)).toStrictEqual(['ended']);
    expect(passthrough.status()).toMatchObject({ active: false });
  });

  it('asks once for concurrent checks of one token', async () => {
    const legacy = scriptedLegacy();
    const gate = deferred();
    const { passthrough, realAsks, results } = setup({}, legacy);
    await passthrough.check(OTHER); // the random-token probe is done
    legacy.reply = (t) => (t === TOKEN ? gate.promise : { kind: 'answer', result: 'false' });
    const checks = Array.from({ length: 20 }, () => passthrough.check(TOKEN));
    await new Promise((resolve) => setImmediate(resolve));
    gate.resolve({ kind: 'answer', result: 'true' });
    expect((await Promise.all(checks)).every((c) => c.valid)).toBe(true);
    expect(realAsks().filter((t) => t === TOKEN)).toHaveLength(1);
    expect(results.filter((r) => r === 'valid')).toHaveLength(1);
    expect(results.filter((r) => r === 'cached_valid')).toHaveLength(19);
  });

  it('has at most maxConcurrent calls in flight; beyond, no at once (overloaded)', async () => {
    const legacy = scriptedLegacy();
    const { passthrough, results } = setup({ maxConcurrent: 3 }, legacy);
    await passthrough.check(OTHER);
    const gates: Array<ReturnType<typeof deferred>> = [];
    legacy.reply = () => {
      const gate = deferred();
      gates.push(gate);
      return gate.promise;
    };
    const tokens = Array.from({ length: 10 }, (_, i) => `D${String(i).padStart(7, '0')}-1234-4ABC-9DEF-0123456789AB`);
    const checks = tokens.map((t) => passthrough.check(t));
    await new Promise((resolve) => setImmediate(resolve));
    expect(legacy.inFlight).toBe(3);
    expect(passthrough.status().inFlight).toBe(3);
    expect(results.filter((r) => r === 'overloaded')).toHaveLength(7);
    for (const gate of gates) gate.resolve({ kind: 'answer', result: 'true' });
    expect((await Promise.all(checks)).filter((c) => c.valid)).toHaveLength(3);
    expect(legacy.maxInFlight).toBe(3);
    expect(passthrough.status().inFlight).toBe(0);
  });

  it('opens the circuit after consecutive failures, answers no at once, and probes once after the cool-down', async () => {
    const legacy = scriptedLegacy();
    const { passthrough, clock, changes, results } = setup({ circuitFailures: 3, circuitCooldownMs: 30 * SECOND }, legacy);
    await passthrough.check(OTHER); // probe confirmed
    legacy.reply = () => ({ kind: 'unavailable', reason: 'no answer within 1000 ms' });
    for (let i = 0; i < 3; i++) expect((await passthrough.check(TOKEN)).valid).toBe(false);
    expect(changes.at(-1)).toMatchObject({ event: 'circuit_open' });
    expect(changes.at(-1)?.reason).toContain('no answer within 1000 ms');
    const asked = legacy.asked.length;
    for (let i = 0; i < 5; i++) expect((await passthrough.check(TOKEN)).valid).toBe(false);
    expect(legacy.asked).toHaveLength(asked); // not asked while open
    expect(results.slice(-5)).toStrictEqual(Array(5).fill('circuit_open'));
    expect(passthrough.status().circuit).toBe('open');

    // After the cool-down one call goes; while it is out, the others are refused at once.
    clock.advance(30 * SECOND);
    const gate = deferred();
    legacy.reply = () => gate.promise;
    const probe = passthrough.check(TOKEN);
    await new Promise((resolve) => setImmediate(resolve));
    expect(passthrough.status().circuit).toBe('half_open');
    expect((await passthrough.check(OTHER)).valid).toBe(false);
    expect(results.at(-1)).toBe('circuit_open');
    gate.resolve({ kind: 'unavailable', reason: 'connection failed' });
    expect((await probe).valid).toBe(false);
    expect(passthrough.status().circuit).toBe('open'); // the probe failed: open again

    clock.advance(30 * SECOND);
    legacy.reply = undefined; // back
    expect((await passthrough.check(TOKEN)).valid).toBe(true);
    expect(passthrough.status().circuit).toBe('closed');
    expect(changes.map((c) => c.event)).toStrictEqual(['circuit_open', 'circuit_half_open', 'circuit_open', 'circuit_half_open', 'circuit_closed']);
  });

  it('a half-open call that never reports does not keep the circuit half-open for good', async () => {
    const legacy = scriptedLegacy();
    const { passthrough, clock, results } = setup({ circuitFailures: 1, circuitCooldownMs: 10 * SECOND }, legacy);
    await passthrough.check(OTHER);
    legacy.reply = () => ({ kind: 'unavailable', reason: 'HTTP 503' });
    await passthrough.check(TOKEN);
    clock.advance(10 * SECOND);
    legacy.reply = () => new Promise<LegacyTokenReply>(() => undefined); // the half-open call hangs
    void passthrough.check(TOKEN);
    await new Promise((resolve) => setImmediate(resolve));
    expect((await passthrough.check(OTHER)).valid).toBe(false);
    expect(results.at(-1)).toBe('circuit_open');
    clock.advance(10 * SECOND);
    legacy.reply = undefined;
    const third = 'C0FFEE00-0000-4ABC-9DEF-0123456789AB';
    legacy.valid.add(third);
    expect((await passthrough.check(third)).valid).toBe(true);
    expect(passthrough.status().circuit).toBe('closed');
  });

  it('counts a no as an answer: forged tokens never open the circuit', async () => {
    const { passthrough, changes } = setup({ circuitFailures: 2 });
    for (let i = 0; i < 10; i++) await passthrough.check(`E${String(i).padStart(7, '0')}-1234-4ABC-9DEF-0123456789AB`);
    expect(changes).toStrictEqual([]);
  });

  it('a client that throws is a failure, not a crash', async () => {
    const legacy = scriptedLegacy();
    legacy.reply = () => {
      throw new Error('bug');
    };
    const { passthrough, results } = setup({}, legacy);
    expect(await passthrough.check(TOKEN)).toStrictEqual({ valid: false });
    expect(results).toStrictEqual(['error']);
  });

  it('keeps a bounded number of answers, least recently used forgotten first', async () => {
    const { passthrough, realAsks } = setup({ maxEntries: 2 });
    const [a, b, c] = ['A', 'B', 'C'].map((l) => `${l}0000000-1234-4ABC-9DEF-0123456789AB`) as [string, string, string];
    for (const t of [a, b, c]) await passthrough.check(t);
    await passthrough.check(c); // kept
    await passthrough.check(a); // forgotten: asked again
    expect(realAsks()).toStrictEqual([a, b, c, a]);
    expect(passthrough.status().counts).toMatchObject({ invalid: 4, cached_invalid: 1 });
  });

  it('keeps yes and no apart: a flood of forged tokens does not push out a real one', async () => {
    const { passthrough, realAsks } = setup({ maxEntries: 2 });
    await passthrough.check(TOKEN);
    for (let i = 0; i < 10; i++) await passthrough.check(`F${String(i).padStart(7, '0')}-1234-4ABC-9DEF-0123456789AB`);
    expect((await passthrough.check(TOKEN)).valid).toBe(true);
    expect(realAsks().filter((t) => t === TOKEN)).toHaveLength(1);
  });

  it('relays GetUserLoginURL only for a token the old service vouches for, and only a URL', async () => {
    const { passthrough, legacy } = setup();
    expect(await passthrough.loginUrl(TOKEN, 2)).toBe('https://old.example/login.aspx?t=abc');
    expect(legacy.asked.filter((t) => t.startsWith('url:'))).toStrictEqual([`url:${TOKEN}`]);
    expect(await passthrough.loginUrl(OTHER, 2)).toBeNull(); // the old service says OTHER is not valid
    expect(legacy.asked.filter((t) => t.startsWith('url:'))).toHaveLength(1);
    for (const result of ['', 'javascript:alert(1)', '/relative/login', 'https://old.example/a b', `https://old.example/${'x'.repeat(3000)}`, 'https://old.example/\r\nSet-Cookie: x']) {
      legacy.loginUrlAnswer = { kind: 'answer', result };
      expect(await passthrough.loginUrl(TOKEN, 2), JSON.stringify(result.slice(0, 40))).toBeNull();
    }
    legacy.loginUrlAnswer = { kind: 'unavailable', reason: 'HTTP 500' };
    expect(await passthrough.loginUrl(TOKEN, 2)).toBeNull();
  });

  it('judges login URLs: absolute http(s), bounded, no whitespace', () => {
    expect(usableLoginUrl('http://old.example/login?ticket=1', 2048)).toBe(true);
    expect(usableLoginUrl('https://old.example:8443/x#y', 2048)).toBe(true);
    for (const text of ['', 'ftp://old.example/', 'data:text/html,x', 'https://', 'old.example/login', 'https://old.example/\u0000', 'https://old.example/\t']) {
      expect(usableLoginUrl(text, 2048), JSON.stringify(text)).toBe(false);
    }
    expect(usableLoginUrl(`https://old.example/${'x'.repeat(100)}`, 50)).toBe(false);
  });

  it('never puts a token in what it tells the operator', async () => {
    const legacy = scriptedLegacy();
    const { passthrough, changes, clock } = setup({ circuitFailures: 1, until: new Date('2027-01-10T12:10:00Z') }, legacy);
    await passthrough.check(TOKEN);
    legacy.reply = () => ({ kind: 'unavailable', reason: 'HTTP 500' });
    await passthrough.check(OTHER);
    clock.advance(HOUR);
    await passthrough.check(TOKEN);
    const told = JSON.stringify([changes, passthrough.status()]);
    expect(changes.length).toBeGreaterThan(1);
    expect(told).not.toContain(TOKEN);
    expect(told).not.toContain(OTHER);
  });
});
