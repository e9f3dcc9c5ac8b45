/**
 * Shadow and front modes end to end, against the legacy stand-in (test/support/legacy-standin.ts):
 * svcapi-auth (in process) with a mirror toward the stand-in; requests on every binding; the
 * outcomes counted, the differences kept in the store and read back by `compat shadow-report`.
 *
 * WhatsNew is left out of the "no difference with the right profile" checks: the stand-in's
 * table (Noticias, Portuguese columns, a Destaque attribute) is written by svcapi-auth only once
 * the news-table profile work is on main.
 */
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import { createMetrics } from '../../src/ops/metrics.js';
import { createLegacyMirror, type LegacyMirror, type MirrorSettings, type ShadowOutcome } from '../../src/compat/shadow.js';
import { createShadowBudget, type ShadowBudget } from '../../src/compat/shadow-budget.js';
import type { CompatProfile } from '../../src/contract/compat-profile.js';
import { DEFAULT_COMPAT_PROFILE } from '../../src/contract/compat-profile.js';
import type { Store } from '../../src/store/store.js';
import { buildRequest, type Args, type BindingName, BINDINGS } from '../support/asmx-client.js';
import { startLegacyStandin, STANDIN_PROFILE, STANDIN_USER, type LegacyStandin } from '../support/legacy-standin.js';
import { runCliCaptured } from '../support/run-cli.js';
import { createTestStack, type TestStack } from '../support/start-app.js';

const { login, password } = STANDIN_USER;
const UNKNOWN_TOKEN = '6F1C2A9E-3B4D-4E5F-8A7B-9C0D1E2F3A4B';

interface Counted {
  readonly outcome: ShadowOutcome;
  readonly operation: string | null;
  readonly binding: string;
}

interface Harness {
  readonly stack: TestStack;
  readonly mirror: LegacyMirror;
  readonly counted: Counted[];
  readonly front: string[];
  send(binding: BindingName, op: string, args: Args, extra?: { query?: string; headers?: Record<string, string> }): Promise<{ status: number; headers: Record<string, unknown>; body: string }>;
  close(): Promise<void>;
}

type Overrides = Partial<Omit<MirrorSettings, 'shadow'>> & { shadow?: Partial<MirrorSettings['shadow']> };

function settings(url: string, overrides: Overrides = {}): MirrorSettings {
  return {
    url, timeoutMs: 2000, mode: 'serve', frontOperations: [], ...overrides,
    shadow: { rate: 1, queue: 256, concurrency: 4, keep: 100, stateful: false, maxResponseBytes: 1024 * 1024, cpuShare: 1, ...overrides.shadow },
  };
}

interface Observers {
  /**
   * Default: the real one with `legacy.shadow.cpuShare` 1, no limit: it measures the event
   * loop's time, which a busy machine stretches, so a lower share would drop some of a test's
   * comparisons (test/compat/shadow-budget.test.ts is where the budget is tested).
   */
  readonly budget?: ShadowBudget;
  readonly logger?: Logger;
  readonly onResult?: (outcome: ShadowOutcome, operation: string | null, binding: string) => void;
  readonly onFront?: (outcome: 'forwarded' | 'unavailable', operation: string | null, binding: string) => void;
  /** The fast paths' off switches (performance.shadowPipelining, performance.shadowByteCompare). */
  readonly pipelining?: boolean;
  readonly byteCompare?: boolean;
}

async function harness(legacyUrl: string, profile: CompatProfile | undefined, overrides: Overrides = {}, observe?: Observers): Promise<Harness> {
  const counted: Counted[] = [];
  const front: string[] = [];
  let mirror: LegacyMirror | undefined;
  const stack = await createTestStack({
    timeZone: 'America/Sao_Paulo',
    throttle: false,
    ...(profile !== undefined && { profile }),
    ...(observe?.logger !== undefined && { logger: observe.logger }),
    mirror: (store: Store) => {
      mirror = createLegacyMirror({
        settings: settings(legacyUrl, overrides), profile: profile ?? DEFAULT_COMPAT_PROFILE, store, fingerprintKey: 'test-key',
        ...(observe?.budget !== undefined && { budget: observe.budget }),
        ...(observe?.logger !== undefined && { logger: observe.logger }),
        ...(observe?.pipelining !== undefined && { pipelining: observe.pipelining }),
        ...(observe?.byteCompare !== undefined && { byteCompare: observe.byteCompare }),
        onResult: (outcome, operation, binding) => {
          counted.push({ outcome, operation, binding });
          observe?.onResult?.(outcome, operation, binding);
        },
        onFront: (outcome, operation, binding) => {
          front.push(outcome);
          observe?.onFront?.(outcome, operation, binding);
        },
      });
      return mirror;
    },
  });
  await stack.admin.updateApplication(2, { loginUrl: 'https://gps.example/login' });
  await stack.admin.addUser({ login, password, appIds: [2] });
  if (mirror === undefined) throw new Error('no mirror');
  const m = mirror;
  return {
    stack, mirror: m, counted, front,
    async send(binding, op, args, extra = {}) {
      const req = buildRequest(binding, op, args, extra.query ?? '');
      const res = await stack.app.inject({ method: req.method, url: req.url, headers: { ...req.headers, ...extra.headers }, ...(req.payload !== undefined && { payload: req.payload }) });
      return { status: res.statusCode, headers: res.headers, body: res.body };
    },
    close: () => stack.close(),
  };
}

const outcomes = (h: Harness): string[] => h.counted.map((c) => `${c.operation ?? 'none'} ${c.binding} ${c.outcome}`);

describe('shadow mode (svcapi-auth answers, the old service is asked too)', () => {
  let standin: LegacyStandin;
  let h: Harness | undefined;
  beforeAll(async () => {
    standin = await startLegacyStandin();
  });
  afterEach(async () => {
    await h?.close();
    h = undefined;
    standin.requests.length = 0;
    Object.assign(standin.hostility, { delayMs: 0, hugeBytes: 0, down: false });
  });
  afterAll(() => standin.close());

  for (const fast of [true, false]) it(`with the right profile: read-only requests on every binding are the same; stateful ones are not sent${fast ? '' : ' (node:http, full comparisons)'}`, async () => {
    h = await harness(standin.url, STANDIN_PROFILE, {}, { pipelining: fast, byteCompare: fast });
    for (const b of BINDINGS) {
      await h.send(b, 'ValidateUserToken', { token: UNKNOWN_TOKEN });
      await h.send(b, 'ValidateUser', { login, password, AppId: 2, IPAddress: '' });
      await h.send(b, 'GetUserLoginURL', { token: UNKNOWN_TOKEN, AppID: 2 });
    }
    await h.send('http-post', 'ValidateUserTokenJSON', { token: UNKNOWN_TOKEN });
    await h.stack.app.inject({ method: 'GET', url: '/Authentication.asmx?WSDL' });
    await h.mirror.idle();
    expect(outcomes(h).sort()).toEqual([
      ...BINDINGS.map((b) => `ValidateUserToken ${b} same`),
      'ValidateUserTokenJSON http-post same',
      'none doc same',
    ].sort());
    // ValidateUser and GetUserLoginURL change state in the old service: not sent without legacy.shadow.stateful.
    expect(standin.requests.map((r) => r.target + r.body).join('\n')).not.toMatch(/ValidateUser[^T]|GetUserLoginURL/);
    expect(await h.stack.store.listShadowDifferences(10)).toEqual([]);
  });

  it('with legacy.shadow.stateful, logins are compared too: the same with the right profile', async () => {
    h = await harness(standin.url, STANDIN_PROFILE, { shadow: { stateful: true } });
    for (const b of BINDINGS) {
      await h.send(b, 'ValidateUser', { login, password, AppId: 2, IPAddress: '' });
      await h.send(b, 'ValidateUser', { login, password: 'wrong', AppId: 2, IPAddress: '' });
    }
    await h.send('http-post', 'ValidateUserJSON', { login, password, AppId: 2, IPAddress: '' }, { query: `login=${login}&password=${encodeURIComponent(password)}&AppId=2` });
    await h.mirror.idle();
    expect(h.counted.filter((c) => c.outcome !== 'same')).toEqual([]);
    expect(h.counted).toHaveLength(9);
  });

  it('with the wrong profile (svcapi-auth\'s own): the differences are counted and kept, with a diff', async () => {
    h = await harness(standin.url, undefined, { shadow: { stateful: true } });
    const answer = await h.send('soap11', 'ValidateUser', { login, password: 'wrong', AppId: 2, IPAddress: '' });
    // The client got our answer, not the old service's.
    expect(answer.body).toContain('<ValidateUserResult />');
    await h.send('http-get', 'ValidateUserToken', { token: UNKNOWN_TOKEN });
    await h.mirror.idle();
    expect(outcomes(h)).toEqual(['ValidateUser soap11 different', 'ValidateUserToken http-get same']);
    const kept = await h.stack.store.listShadowDifferences(10);
    expect(kept).toHaveLength(1);
    expect(kept[0]).toMatchObject({ mode: 'shadow', operation: 'ValidateUser', binding: 'soap11' });
    expect(kept[0]?.diff).toContain('-<ValidateUserResult>00000000-0000-0000-0000-000000000000</ValidateUserResult>');
    expect(kept[0]?.diff).toContain('+<ValidateUserResult />');
  });

  it('the sampled share only (legacy.shadow.rate)', async () => {
    let draw = 0;
    const draws = [0.05, 0.5, 0.09, 0.95];
    h = await harness(standin.url, STANDIN_PROFILE, { shadow: { rate: 0.1 } });
    // The harness's mirror draws Math.random; a second mirror with a scripted draw shows the rule.
    const scripted = createLegacyMirror({ settings: settings(standin.url, { shadow: { rate: 0.1 } }), profile: STANDIN_PROFILE, store: h.stack.store, fingerprintKey: 'k', random: () => draws[draw++ % draws.length] ?? 1 });
    expect([1, 2, 3, 4].map(() => scripted.sample('ValidateUserToken', 'soap11', true))).toEqual([true, false, true, false]);
    expect(scripted.sample('ValidateUser', 'soap11', true)).toBe(false);
    expect(scripted.sample(null, 'none', true)).toBe(false);
    await scripted.close();
  });

  it('comparisons keep to their CPU share: past it they are dropped (and counted), then resume as the window moves on', async () => {
    let now = 0;
    const budget = createShadowBudget({ share: 0.08, now: () => now });
    h = await harness(standin.url, STANDIN_PROFILE, {}, { budget });
    // As if shadow work had just taken 100 ms of the last second.
    budget.charge(100);
    await h.send('soap11', 'ValidateUserToken', { token: UNKNOWN_TOKEN });
    now += 1000;
    await h.send('soap12', 'ValidateUserToken', { token: UNKNOWN_TOKEN });
    await h.mirror.idle();
    expect(outcomes(h)).toEqual(['ValidateUserToken soap11 dropped', 'ValidateUserToken soap12 same']);
    expect(standin.requests).toHaveLength(1);
    // The comparison's own work was measured and charged.
    expect(budget.spent()).toBeGreaterThan(100);
  });

  // The budget meters the event loop's busy time, which counts a wait for a core as busy: on a
  // machine loaded by other work this process is not at light load, and the budget rightly drops
  // (shadow-budget.ts). Retried so that a passing burst of someone else's load does not fail it.
  it('at light load every sampled request is compared with the default share: none dropped, the work measured', { retry: 2 }, async () => {
    // legacy.shadow.cpuShare's default, on the process's CPU clock.
    const real = createShadowBudget({ share: loadConfig({ env: {} }).legacy.shadow.cpuShare });
    const charges: number[] = [];
    const budget: ShadowBudget = { admit: () => real.admit(), served: () => real.served(), spent: () => real.spent(), charge: (ms) => (charges.push(ms), real.charge(ms)) };
    h = await harness(standin.url, STANDIN_PROFILE, {}, { budget });
    // Light load: the client, the stand-in and the test share this process's event loop with us,
    // so back to back they would keep it busy. Each request and its comparison, then an idle
    // spell eight times as long as they took (at least 20 ms). The budget charges a request's
    // whole slice of busy time to shadow work until it has seen slices without any (never, here)
    // and refills at what an idle loop leaves (about half of the time); on a machine busy with
    // other work (a whole test suite on 2 cores) a slice takes longer in wall time, and a fixed
    // pause of 20 ms no longer paid it back (CI, 2026-11-28: 'dropped' in all three attempts;
    // with two busy processes beside it, 0 of 8 runs passed, and 5 of 8 paced this way).
    const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
    // The first exchanges of a process cost tens of milliseconds each (code compiled on first
    // use), the bucket's whole second of share: one first, then time to pay it back.
    await h.send('soap11', 'ValidateUserToken', { token: UNKNOWN_TOKEN });
    await h.mirror.idle();
    await pause(1000);
    h.counted.length = 0;
    charges.length = 0;
    for (let round = 0; round < 3; round++) {
      for (const b of BINDINGS) {
        const started = performance.now();
        await h.send(b, 'ValidateUserToken', { token: UNKNOWN_TOKEN });
        await h.mirror.idle();
        await pause(Math.max(20, 8 * (performance.now() - started)));
      }
    }
    expect(h.counted.map((c) => c.outcome)).toEqual(Array.from({ length: 3 * BINDINGS.length }, () => 'same'));
    // Sending and reading (the client), comparing (here): more than one charge per exchange.
    expect(charges.length).toBeGreaterThan(3 * BINDINGS.length);
    expect(real.spent()).toBeGreaterThan(0);
  });

  it('a slow old service never delays the client; past legacy.timeoutMs the comparison is an error', async () => {
    h = await harness(standin.url, STANDIN_PROFILE, { timeoutMs: 300 });
    standin.hostility.delayMs = 5000;
    for (const b of BINDINGS) expect((await h.send(b, 'ValidateUserToken', { token: UNKNOWN_TOKEN })).status).toBe(200);
    // Every client had its answer before any comparison ended (each waits for the timeout).
    expect(h.counted).toEqual([]);
    await h.mirror.idle();
    expect(h.counted.map((c) => c.outcome)).toEqual(['error', 'error', 'error', 'error']);
  });

  it('a huge answer is cut off at legacy.shadow.maxResponseBytes: an error, nothing kept', async () => {
    h = await harness(standin.url, STANDIN_PROFILE, { shadow: { maxResponseBytes: 64 * 1024 } });
    standin.hostility.hugeBytes = 64 * 1024 * 1024;
    await h.send('soap11', 'ValidateUserToken', { token: UNKNOWN_TOKEN });
    await h.mirror.idle();
    expect(outcomes(h)).toEqual(['ValidateUserToken soap11 error']);
    expect(await h.stack.store.listShadowDifferences(10)).toEqual([]);
  });

  it('an old service that never answers holds at most legacy.shadow.concurrency sockets; a full queue drops and counts', async () => {
    const sockets = new Set<Socket>();
    // At each connection accepted, the comparisons ended by then (errors: each a deadline passed).
    const endedAtAccept: number[] = [];
    let twoOpen: () => void = () => undefined;
    const opened = new Promise<void>((resolve) => {
      twoOpen = resolve;
    });
    const silent = createServer((socket) => {
      sockets.add(socket);
      endedAtAccept.push(h?.counted.filter((c) => c.outcome === 'error').length ?? 0);
      if (sockets.size === 2) twoOpen();
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    try {
      h = await harness(`http://127.0.0.1:${port}/Authentication.asmx`, STANDIN_PROFILE, { timeoutMs: 400, shadow: { concurrency: 2, queue: 3 } });
      for (let i = 0; i < 10; i++) await h.send('http-get', 'ValidateUserToken', { token: UNKNOWN_TOKEN });
      // Two exchanges in flight, one per connection (pipelined-forwarder.ts: a share of
      // ceil(concurrency / SHADOW_CONNECTIONS) = 1 each).
      await opened;
      await h.mirror.idle();
      const by = (o: string): number => h?.counted.filter((c) => c.outcome === o).length ?? 0;
      expect(by('dropped')).toBeGreaterThanOrEqual(5);
      expect(by('error')).toBe(10 - by('dropped'));
      // Never more than the concurrency open: a connection beyond the first two only once as many
      // exchanges had ended at their deadline (each closes its connection: the old service never
      // answers). The closes themselves are not watched here: the old one's FIN and the new one's
      // SYN may reach this side in either order.
      expect(endedAtAccept.slice(0, 2)).toEqual([0, 0]);
      endedAtAccept.forEach((ended, i) => expect(i + 1).toBeLessThanOrEqual(2 + ended));
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe('front mode (the old service answers, svcapi-auth compares itself)', () => {
  let standin: LegacyStandin;
  let h: Harness | undefined;
  beforeAll(async () => {
    standin = await startLegacyStandin();
  });
  afterEach(async () => {
    await h?.close();
    h = undefined;
    Object.assign(standin.hostility, { delayMs: 0, down: false });
  });
  afterAll(() => standin.close());

  /** The same request straight to the stand-in. */
  async function direct(binding: BindingName, op: string, args: Args): Promise<{ status: number; headers: Headers; body: string }> {
    const req = buildRequest(binding, op, args);
    const res = await fetch(`${new URL(standin.url).origin}${req.url}`, { method: req.method, headers: req.headers, ...(req.payload !== undefined && { body: req.payload }) });
    return { status: res.status, headers: res.headers, body: await res.text() };
  }

  it('the client receives the old service\'s answers byte for byte, and the tokens it issued work there', async () => {
    h = await harness(standin.url, undefined, { mode: 'front' });
    for (const b of BINDINGS) {
      for (const [op, args] of [
        ['ValidateUser', { login, password: 'wrong', AppId: 2, IPAddress: '' }],
        ['ValidateUserToken', { token: UNKNOWN_TOKEN }],
        ['WhatsNew', { AppToken: '', AppID: 2, AppVersion: '', Language: '', qtyNews: 3 }],
        ['ValidateUser', { login, password, AppId: 'abc', IPAddress: '' }],
      ] as const) {
        const ours = await h.send(b, op, args);
        const theirs = await direct(b, op, args);
        expect(ours.status, `${op} ${b}`).toBe(theirs.status);
        expect(ours.body, `${op} ${b}`).toBe(theirs.body);
        expect(ours.headers['content-type']).toBe(theirs.headers.get('content-type'));
        expect(ours.headers['cache-control']).toBe(theirs.headers.get('cache-control'));
        expect(ours.headers.server).toBeUndefined();
      }
    }
    const login1 = await h.send('soap11', 'ValidateUser', { login, password, AppId: 2, IPAddress: '' });
    const token = /<ValidateUserResult>([0-9A-F-]{36})</.exec(login1.body)?.[1];
    expect(token, login1.body).toBeDefined();
    expect((await h.send('http-get', 'ValidateUserToken', { token: token ?? '' })).body).toContain('>true<');
    // Our own handling kept nothing: no token of ours was issued for that login.
    expect(await h.stack.store.countActiveTokens(new Date())).toBe(0);
    await h.mirror.idle();
    expect(h.front.every((f) => f === 'forwarded')).toBe(true);
  });

  it('with the wrong profile, the differences are counted and kept (mode front)', async () => {
    h = await harness(standin.url, undefined, { mode: 'front' });
    await h.send('soap12', 'ValidateUser', { login, password: 'wrong', AppId: 2, IPAddress: '' });
    await h.send('http-post', 'ValidateUserJSON', { login, password: 'wrong', AppId: 2, IPAddress: '' });
    await h.mirror.idle();
    // Compared concurrently: in either order.
    expect(outcomes(h).sort()).toEqual(['ValidateUser soap12 different', 'ValidateUserJSON http-post different']);
    const kept = await h.stack.store.listShadowDifferences(10);
    expect(kept.map((k) => `${k.mode} ${k.operation ?? ''}`).sort()).toEqual(['front ValidateUser', 'front ValidateUserJSON']);
  });

  it('with the right profile, none (every operation but WhatsNew, on every binding)', async () => {
    h = await harness(standin.url, STANDIN_PROFILE, { mode: 'front' });
    for (const b of BINDINGS) {
      await h.send(b, 'ValidateUser', { login, password, AppId: 2, IPAddress: '' });
      await h.send(b, 'ValidateUser', { login, password: 'wrong', AppId: 2, IPAddress: '' });
      await h.send(b, 'ValidateUserToken', { token: UNKNOWN_TOKEN });
      await h.send(b, 'GetUserLoginURL', { token: UNKNOWN_TOKEN, AppID: 2 });
      await h.send(b, 'ValidateUserJSON', {}, { query: `login=${login}&password=${encodeURIComponent(password)}&AppId=2` });
      await h.send(b, 'ValidateUserTokenJSON', {}, { query: `token=${UNKNOWN_TOKEN}` });
    }
    await h.stack.app.inject({ method: 'GET', url: '/Authentication.asmx?WSDL' });
    await h.mirror.idle();
    expect(h.counted.filter((c) => c.outcome !== 'same')).toEqual([]);
    expect(h.counted).toHaveLength(25);
  });

  it('per operation: only legacy.frontOperations are passed on; the others are ours', async () => {
    h = await harness(standin.url, undefined, { mode: 'front', frontOperations: ['ValidateUser'] });
    expect((await h.send('soap11', 'ValidateUser', { login, password: 'wrong', AppId: 2, IPAddress: '' })).body).toContain('00000000-0000-0000-0000-000000000000');
    // ValidateUserToken is ours: our (empty-profile) answer, shadowed like serve mode.
    const ours = await h.send('soap11', 'ValidateUserToken', { token: UNKNOWN_TOKEN });
    expect(ours.headers['x-content-type-options']).toBe('nosniff');
    await h.mirror.idle();
    expect(h.front).toEqual(['forwarded']);
  });

  it('the old service down: 503 (http.sys\'s page), counted unavailable and error, and our own answer is never sent', async () => {
    h = await harness(standin.url, STANDIN_PROFILE, { mode: 'front' });
    standin.hostility.down = true;
    const answer = await h.send('soap11', 'ValidateUser', { login, password, AppId: 2, IPAddress: '' });
    expect(answer.status).toBe(503);
    expect(answer.body).toContain('HTTP Error 503. The service is unavailable.');
    expect(answer.body).not.toMatch(/[0-9A-F]{8}-/);
    await h.mirror.idle();
    expect(h.front).toEqual(['unavailable']);
    expect(outcomes(h)).toEqual(['ValidateUser soap11 error']);
  });

  it('an old service that never answers: 503 after legacy.timeoutMs', async () => {
    h = await harness(standin.url, STANDIN_PROFILE, { mode: 'front', timeoutMs: 300 });
    standin.hostility.delayMs = 10_000;
    // A 503, not the old service's answer (which comes after 10 s): the timeout ended the wait.
    expect((await h.send('http-get', 'ValidateUserToken', { token: UNKNOWN_TOKEN })).status).toBe(503);
  });
});

describe('compat shadow-report', () => {
  let standin: LegacyStandin;
  beforeAll(async () => {
    standin = await startLegacyStandin();
  });
  afterAll(() => standin.close());

  it('shows the kept differences from another process (newest first, --limit, --json)', async () => {
    const h = await harness(standin.url, undefined, { shadow: { stateful: true } });
    try {
      await h.send('soap11', 'ValidateUser', { login, password: 'wrong', AppId: 2, IPAddress: '' });
      await h.send('http-post', 'ValidateUser', { login, password: 'wrong', AppId: 2, IPAddress: '' });
      await h.mirror.idle();
      const db = ['--db', `sqlite:${h.stack.dbPath}`];
      const text = await runCliCaptured(['compat', 'shadow-report', ...db]);
      expect(text.code, text.err).toBe(0);
      expect(text.out).toMatch(/^#2 .* shadow {2}ValidateUser {2}http-post$/m);
      expect(text.out).toContain('  -<string xmlns="SVCAPI">00000000-0000-0000-0000-000000000000</string>\n  +<string xmlns="SVCAPI" />');
      expect(text.out.indexOf('#2 ')).toBeLessThan(text.out.indexOf('#1 '));
      const json = await runCliCaptured(['compat', 'shadow-report', '--json', '--limit', '1', ...db]);
      const lines = json.out.trim().split('\n').map((l) => JSON.parse(l) as { id: number; legacy: { status: number; body: string }; ours: { body: string } });
      expect(lines).toHaveLength(1);
      expect(lines[0]?.id).toBe(2);
      expect(lines[0]?.legacy.body).toContain('00000000-0000-0000-0000-000000000000');
    } finally {
      await h.close();
    }
  });
});

describe('no secret in the kept differences, the metrics or the logs', () => {
  it('a request with unique secret strings on every binding: none of them anywhere', async () => {
    // A user of both sides whose login and password are unique strings; tokens are both sides' own.
    const secretLogin = 'login-Q7xK2pZ9';
    const secretPassword = 'pw-Vb81*Lm3&Nq5';
    const cookieSecret = 'cookie-Rt6Yh2Uz';
    const basicSecret = 'YmFzaWMtU2VjcmV0LTk5';
    const standin = await startLegacyStandin({ users: [{ login: secretLogin, password: secretPassword, appIds: [2] }] });
    let logText = '';
    const logger = pino({ level: 'trace' }, new Writable({
      write(chunk: Buffer, _encoding, callback) {
        logText += chunk.toString();
        callback();
      },
    }));
    const metricsStore = await createTestStack();
    const metrics = createMetrics({ store: metricsStore.store, processMetrics: false });
    // The wrong (default) profile: every answer differs, so every request is kept.
    const h = await harness(standin.url, undefined, { shadow: { stateful: true } }, { logger, onResult: metrics.shadowResult, onFront: metrics.frontResult });
    try {
      await h.stack.admin.addUser({ login: secretLogin, password: secretPassword, appIds: [2] });
      const extra = { headers: { authorization: `Basic ${basicSecret}`, cookie: `ASP.NET_SessionId=${cookieSecret}; login=${secretLogin}` } };
      const tokens: string[] = [];
      for (const b of BINDINGS) {
        const answer = await h.send(b, 'ValidateUser', { login: secretLogin, password: secretPassword, AppId: 2, IPAddress: '' }, extra);
        const token = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/.exec(answer.body)?.[0];
        expect(token, answer.body).toBeDefined();
        tokens.push(token ?? '');
        await h.send(b, 'ValidateUserToken', { token: token ?? '' }, extra);
        await h.send(b, 'GetUserLoginURL', { token: token ?? '', AppID: 2 }, extra);
        await h.send(b, 'WhatsNew', { AppToken: token ?? '', AppID: 2, AppVersion: '', Language: '', qtyNews: 1 }, extra);
        await h.send(b, 'ValidateUserJSON', { login: secretLogin, password: secretPassword, AppId: 2, IPAddress: '' }, extra);
        await h.send(b, 'ValidateUserTokenJSON', { token: token ?? '' }, extra);
      }
      // The JSON operations' other sources: the query string and headers.
      await h.send('http-post', 'ValidateUserJSON', {}, { query: `login=${secretLogin}&password=${encodeURIComponent(secretPassword)}&AppId=2`, headers: { login: secretLogin, password: secretPassword } });
      await h.mirror.idle();
      const kept = await h.stack.store.listShadowDifferences(1000);
      expect(kept.length).toBeGreaterThan(20);
      const report = await runCliCaptured(['compat', 'shadow-report', '--json', '--limit', '1000', '--db', `sqlite:${h.stack.dbPath}`]);
      const text = await runCliCaptured(['compat', 'shadow-report', '--limit', '1000', '--db', `sqlite:${h.stack.dbPath}`]);
      const metricsText = await metrics.registry.metrics();
      expect(metricsText).toContain('svcapi_auth_shadow_total{result="different",operation="ValidateUser",binding="soap11"}');
      const everything = [report.out, report.err, text.out, metricsText, logText].join('\n');
      const secrets = [secretLogin, secretPassword, encodeURIComponent(secretPassword), 'Vb81', cookieSecret, basicSecret, ...tokens];
      for (const secret of secrets) expect(everything, secret).not.toContain(secret);
      // No token-like value in the report but Guid.Empty (the old service's "no"): the legacy's
      // tokens and tickets, and ours, are forms or fingerprints.
      const guids = report.out.match(/[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/g) ?? [];
      expect(guids.filter((g) => !/^[0-]+$/.test(g))).toEqual([]);
      expect(report.out).toMatch(/\{fp:[0-9a-f]{10}\}/);
    } finally {
      await h.close();
      await metricsStore.close();
      await standin.close();
    }
  });
});
