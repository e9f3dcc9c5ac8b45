/**
 * The management listener: /health/live, /health/ready (and what makes it 503), /metrics with
 * every metric family, driven by real requests on the public listener.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AsmxApp } from '../../src/http/app.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminService, type AdminService } from '../../src/domain/admin-service.js';
import { createArgon2Hasher, type PasswordHasher } from '../../src/domain/password-hasher.js';
import { createAuthService } from '../../src/domain/create-auth-service.js';
import { buildApp } from '../../src/http/app.js';
import { createMetrics, hashFormat, requestOutcome } from '../../src/ops/metrics.js';
import { createReadiness } from '../../src/ops/readiness.js';
import { createOpsRuntime, type OpsRuntime } from '../../src/ops/runtime.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-mgmt-'));
let store: Store;
let ops: OpsRuntime;
let app: AsmxApp;
let admin: AdminService;
let base: string;
let management: string;

beforeAll(async () => {
  store = await openStore(`sqlite:${join(dir, 'auth.db')}`);
  ops = await createOpsRuntime({
    config: {
      management: { host: '127.0.0.1', port: 0 },
      shutdown: { drainDelayMs: 0, timeoutMs: 5000 },
      housekeeping: { intervalMs: 3_600_000, batchSize: 100, batchBudgetMs: 0, tokenRetentionMs: 0 },
    },
    store,
  });
  const hasher = ops.hasher(createArgon2Hasher());
  admin = createAdminService({ store, hasher });
  const service = createAuthService({ store, hasher, events: ops.metrics.events });
  app = await buildApp({
    service, config: { http: { maxRequestBytes: 1 << 20, bodyTimeoutMs: 10_000 }, timeZone: 'UTC' }, logger: false,
    onRequestDone: ops.metrics.observeRequest, draining: ops.draining,
  });
  base = `${await app.listen({ host: '127.0.0.1', port: 0 })}/Authentication.asmx`;
  const started = await ops.start();
  management = started.managementUrl ?? '';
});

afterAll(async () => {
  await app.close();
  await ops.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const form = (fields: Record<string, string>): string => new URLSearchParams(fields).toString();
const post = (op: string, fields: Record<string, string>): Promise<Response> =>
  fetch(`${base}/${op}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form(fields) });
const text = async (res: Response | Promise<Response>): Promise<string> => (await res).text();
const tokenOf = (xml: string): string => /<string xmlns="SVCAPI">([^<]*)<\/string>/.exec(xml)?.[1] ?? '';

/** The value of one sample in a Prometheus text exposition, or undefined. */
function sample(metrics: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of metrics.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[3] ?? '').matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[4]);
  }
  return undefined;
}

describe('management listener', () => {
  it('is its own listener, on a different port from the service', () => {
    expect(management).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(new URL(management).port).not.toBe(new URL(base).port);
  });

  it('GET /health/live answers 200', async () => {
    const res = await fetch(`${management}/health/live`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await res.json()).toEqual({ status: 'live' });
  });

  it('GET /health/ready answers 200 with what it checked', async () => {
    const res = await fetch(`${management}/health/ready`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      ready: true, status: 'ready',
      checks: { serving: true, draining: false, store: 'ok', schema: { current: await store.schemaVersion(), expected: await store.schemaVersion(), ok: true }, write: 'ok' },
    });
  });

  it('answers HEAD without a body, refuses other methods and unknown paths', async () => {
    const head = await fetch(`${management}/health/ready`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    const postRes = await fetch(`${management}/metrics`, { method: 'POST' });
    expect(postRes.status).toBe(405);
    expect(postRes.headers.get('allow')).toBe('GET, HEAD');
    expect((await fetch(`${management}/`)).status).toBe(404);
    expect((await fetch(`${management}/Authentication.asmx`)).status).toBe(404);
    // ... and the public listener does not serve the management endpoints.
    for (const path of ['/metrics', '/health/live', '/health/ready']) expect((await fetch(`${new URL(base).origin}${path}`)).status).toBe(404);
  });

  it('GET /metrics counts requests, logins by reason, tokens, tickets, and reads the store', async () => {
    await admin.addApplication({ appId: 7, name: 'Portal', requireIp: true, loginUrl: 'https://portal.example/login' });
    await admin.addApplication({ appId: 8, name: 'Closed', requireIp: false, enabled: false });
    await admin.addUser({ login: 'alice', password: 'alice-pw', appIds: [2, 7, 8] });
    await admin.addUser({ login: 'bob', password: 'bob-pw', appIds: [2] });
    await admin.addUser({ login: 'carol', password: 'carol-pw', appIds: [2], enabled: false });

    const login = (login: string, password: string, appId: number, ip = '') => post('ValidateUser', { login, password, AppId: String(appId), IPAddress: ip });
    const t1 = tokenOf(await text(login('alice', 'alice-pw', 2)));
    const t2 = tokenOf(await text(login('alice', 'alice-pw', 7, '198.51.100.7')));
    expect(t1).toMatch(/^[0-9a-f-]{36}$/);
    expect(t2).toMatch(/^[0-9a-f-]{36}$/);
    await login('alice', 'wrong', 2);
    await login('nobody', 'x', 2);
    await login('alice', 'alice-pw', 99);
    await login('bob', 'bob-pw', 7, '198.51.100.7');
    await login('carol', 'carol-pw', 2);
    await login('alice', 'alice-pw', 8);
    await login('alice', 'alice-pw', 7, 'not-an-ip');

    // A ticket, used once, then refused; a validation of a session token and of garbage.
    const url = await text(fetch(`${base}/GetUserLoginURL?Token=${t2}&AppId=7`));
    const ticket = /ticket=([0-9a-f-]{36})/.exec(url)?.[1] ?? '';
    expect(ticket).not.toBe('');
    expect(await text(post('ValidateUserToken', { token: ticket }))).toContain('true');
    expect(await text(post('ValidateUserToken', { token: ticket }))).toContain('false');
    expect(await text(post('ValidateUserToken', { token: t1 }))).toContain('true');
    expect(await text(post('ValidateUserToken', { token: 'garbage' }))).toContain('false');

    // Documentation, a SOAP fault, an unknown HTTP operation, a page that does not exist.
    expect((await fetch(`${base}?WSDL`)).status).toBe(200);
    const fault = await fetch(base, { method: 'POST', headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"SVCAPI/ValidateUser"' }, body: '<not-xml' });
    expect(fault.status).toBe(400); // ASMX answers malformed XML with a 400 SOAP fault
    expect((await fetch(`${base}/NoSuchOperationXyz?a=1`)).status).toBe(500);
    expect((await fetch(`${new URL(base).origin}/elsewhere`)).status).toBe(404);

    const res = await fetch(`${management}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const metrics = await res.text();

    const requests = (labels: Record<string, string>) => sample(metrics, 'svcapi_auth_http_requests_total', labels);
    expect(requests({ operation: 'ValidateUser', binding: 'http-post', outcome: 'ok' })).toBe(9);
    expect(requests({ operation: 'ValidateUserToken', binding: 'http-post', outcome: 'ok' })).toBe(4);
    expect(requests({ operation: 'GetUserLoginURL', binding: 'http-get', outcome: 'ok' })).toBe(1);
    expect(requests({ operation: 'doc', binding: 'doc', outcome: 'ok' })).toBe(1);
    expect(requests({ operation: 'none', binding: 'soap11', outcome: 'fault' })).toBe(1);
    expect(requests({ operation: 'none', binding: 'http-get', outcome: 'server_error' })).toBe(1);
    expect(requests({ operation: 'none', binding: 'none', outcome: 'client_error' })).toBe(4); // /elsewhere + the three probes above
    expect(sample(metrics, 'svcapi_auth_http_request_duration_seconds_count', { operation: 'ValidateUser', binding: 'http-post' })).toBe(9);
    // User input never becomes a label value.
    expect(metrics).not.toContain('NoSuchOperationXyz');
    expect(metrics).not.toContain('elsewhere');

    const logins = (outcome: string) => sample(metrics, 'svcapi_auth_logins_total', { outcome });
    expect(logins('success')).toBe(2);
    expect(logins('bad-password')).toBe(1);
    expect(logins('unknown-user')).toBe(1);
    expect(logins('unknown-app')).toBe(1);
    expect(logins('not-granted')).toBe(1);
    expect(logins('user-disabled')).toBe(1);
    expect(logins('app-disabled')).toBe(1);
    expect(logins('bad-ip')).toBe(1);
    expect(logins('changed-meanwhile')).toBe(0);

    expect(sample(metrics, 'svcapi_auth_tokens_issued_total', { kind: 'session' })).toBe(2);
    expect(sample(metrics, 'svcapi_auth_tokens_issued_total', { kind: 'ticket' })).toBe(1);
    expect(sample(metrics, 'svcapi_auth_tickets_used_total')).toBe(1);
    expect(sample(metrics, 'svcapi_auth_token_validations_total', { result: 'valid', kind: 'ticket' })).toBe(1);
    expect(sample(metrics, 'svcapi_auth_token_validations_total', { result: 'invalid', kind: 'ticket' })).toBe(1);
    expect(sample(metrics, 'svcapi_auth_token_validations_total', { result: 'valid', kind: 'session' })).toBe(1);
    expect(sample(metrics, 'svcapi_auth_token_validations_total', { result: 'invalid', kind: 'unknown' })).toBe(1);
    // Brute-force protection: nothing here comes near a limit (test/security/brute-force.test.ts trips them).
    expect(logins('throttled')).toBe(0);
    for (const scope of ['pair', 'login', 'source']) expect(sample(metrics, 'svcapi_auth_throttle_trips_total', { scope })).toBe(0);
    expect(metrics).toMatch(/# HELP svcapi_auth_throttle_trips_total ValidateUser calls refused by brute-force protection/);

    expect(sample(metrics, 'svcapi_auth_active_tokens')).toBe(2);
    expect(sample(metrics, 'svcapi_auth_password_hashes', { format: 'argon2id' })).toBe(3);
    expect(sample(metrics, 'svcapi_auth_password_hashes', { format: 'other' })).toBe(0);
    expect(sample(metrics, 'svcapi_auth_password_hash_queue_depth')).toBe(0);
    expect(sample(metrics, 'svcapi_auth_housekeeping_runs_total', { task: 'tokens', result: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(sample(metrics, 'svcapi_auth_ready')).toBe(1);
    // Lines to a capture stream are written as they come: nothing waits (access-log.test.ts measures a buffered file).
    expect(sample(metrics, 'svcapi_auth_log_backlog_bytes')).toBe(0);
    expect(sample(metrics, 'svcapi_auth_log_dropped_lines_total')).toBe(0);
    expect(sample(metrics, 'svcapi_auth_build_info', { node: process.version })).toBe(1);

    // Process metrics, event-loop lag among them.
    expect(sample(metrics, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(sample(metrics, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sample(metrics, 'process_resident_memory_bytes')).toBeGreaterThan(0);
  });
});

describe('readiness', () => {
  it('is 503 before serving, while draining, when the schema is behind, and when the store is unreachable', async () => {
    const own = await openStore('sqlite::memory:');
    const version = await own.schemaVersion();
    const readiness = createReadiness({ store: own, expectedSchemaVersion: version });
    expect((await readiness.check()).ready).toBe(false); // not serving yet
    readiness.setServing(true);
    expect((await readiness.check()).ready).toBe(true);
    readiness.startDraining();
    expect(await readiness.check()).toMatchObject({ ready: false, status: 'not ready', checks: { draining: true, store: 'ok' } });

    const newer = createReadiness({ store: own, expectedSchemaVersion: version + 1 });
    newer.setServing(true);
    expect(await newer.check()).toMatchObject({ ready: false, checks: { schema: { current: version, expected: version + 1, ok: false } } });

    const fresh = createReadiness({ store: own, expectedSchemaVersion: version });
    fresh.setServing(true);
    await own.close();
    const report = await fresh.check();
    expect(report).toMatchObject({ ready: false, checks: { schema: { current: null, ok: false } } });
    expect(report.checks.store).not.toBe('ok');
  });

  it('counts a store that does not answer in time as unreachable', async () => {
    const own = await openStore('sqlite::memory:');
    const hanging = new Proxy(own, { get: (target, prop) => (prop === 'ping' ? () => new Promise(() => undefined) : Reflect.get(target, prop)) });
    const readiness = createReadiness({ store: hanging, expectedSchemaVersion: 1, timeoutMs: 50 });
    readiness.setServing(true);
    expect(await readiness.check()).toMatchObject({ ready: false, checks: { store: 'no answer within 50 ms' } });
    await own.close();
  });

  it('/health/ready turns 503 when shutdown begins', async () => {
    const own = await openStore('sqlite::memory:');
    const runtime = await createOpsRuntime({
      config: { management: { host: '127.0.0.1', port: 0 }, shutdown: { drainDelayMs: 0, timeoutMs: 1000 }, housekeeping: { intervalMs: 3_600_000, batchSize: 10, batchBudgetMs: 0, tokenRetentionMs: 0 } },
      store: own,
    });
    const { managementUrl } = await runtime.start();
    expect((await fetch(`${managementUrl}/health/ready`)).status).toBe(200);
    runtime.readiness.startDraining();
    const res = await fetch(`${managementUrl}/health/ready`);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ status: 'not ready', checks: { draining: true } });
    expect((await fetch(`${managementUrl}/health/live`)).status).toBe(200);
    await runtime.close();
    await own.close();
  });
});

describe('metric helpers', () => {
  it('classifies outcomes and hash formats from fixed sets', () => {
    expect(requestOutcome('soap11', 200)).toBe('ok');
    expect(requestOutcome('soap12', 500)).toBe('fault');
    expect(requestOutcome('http-get', 500)).toBe('server_error');
    expect(requestOutcome('none', 404)).toBe('client_error');
    expect(requestOutcome('doc', 405)).toBe('client_error');
    expect(['argon2id', 'argon2i', '2b', '2a', '2y', '', 'pbkdf2-sha256', 'pbkdf2', 'scrypt', 'aspnet-membership', 'aspnet-identity-v3', 'needs-reset', 'x$y', 'other', 'md5'].map(hashFormat))
      .toEqual(['argon2id', 'argon2i', 'bcrypt', 'bcrypt', 'bcrypt', 'other', 'pbkdf2', 'pbkdf2', 'scrypt', 'aspnet-membership', 'aspnet-identity-v3', 'needs-reset', 'other', 'other', 'other']);
  });

  it('counts hash operations in flight as the queue depth', async () => {
    const own = await openStore('sqlite::memory:');
    const metrics = createMetrics({ store: own, processMetrics: false });
    const releases: (() => void)[] = [];
    const slow: PasswordHasher = {
      hash: async () => 'h',
      verify: () => new Promise<boolean>((resolve) => releases.push(() => resolve(true))),
      needsRehash: () => false,
    };
    const hasher = metrics.instrumentHasher(slow);
    const depth = async () => sample(await metrics.registry.metrics(), 'svcapi_auth_password_hash_queue_depth');
    const pending = [hasher.verify('h', 'a'), hasher.verify('h', 'b'), hasher.verify('h', 'c')];
    expect(await depth()).toBe(3);
    releases.shift()?.();
    await pending[0];
    expect(await depth()).toBe(2);
    for (const release of releases) release();
    await Promise.all(pending);
    expect(await depth()).toBe(0);
    await own.close();
  });
});
