/**
 * PostgreSQL goes away under load and comes back. The server runs as a role of its own, so the
 * outage is real for it (its connections are killed and new ones refused) while other tests on
 * the same PostgreSQL carry on: ALTER ROLE ... NOLOGIN + pg_terminate_backend, later LOGIN again.
 *
 * Shown: during the outage every request answers quickly (< 3 s) with a soap:Server fault and
 * none hangs; readiness (/health/ready, Store.ping) reports not ready; afterwards the service works again by itself; every
 * token a client received in a 200 response still validates.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createAdminService } from '../../src/domain/admin-service.js';
import { createArgon2Hasher } from '../../src/domain/password-hasher.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { parseResult, type Args } from '../support/asmx-client.js';
import { adminQuery, newSchemaName, PG_ADMIN_URL, postgresForTests, withAdminClient } from '../support/postgres.js';
import { isSoapServerFault, killAll, requireDist, soap, soapResult, startServer, type SoapAnswer } from '../support/server-process.js';

const pgAdmin = await postgresForTests();
const role = newSchemaName(); // schema and role share the name
afterEach(() => killAll());
afterAll(async () => {
  if (pgAdmin === null) return;
  await withAdminClient(async (c) => {
    await c.query(`ALTER ROLE "${role}" LOGIN`).catch(() => undefined);
    await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [role]);
    await c.query(`DROP SCHEMA IF EXISTS "${role}" CASCADE`);
    await c.query(`DROP ROLE IF EXISTS "${role}"`);
  });
});

interface Sample {
  readonly op: 'ValidateUser' | 'ValidateUserToken';
  readonly startedAt: number;
  readonly endedAt: number;
  readonly answer: SoapAnswer | null;
  readonly error: string | null;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(pgAdmin === null)('PostgreSQL outage under load', () => {
  it('fails fast during the outage, recovers by itself, and loses no issued token', async () => {
    requireDist();
    await adminQuery(`CREATE ROLE "${role}" LOGIN`);
    await adminQuery(`CREATE SCHEMA "${role}" AUTHORIZATION "${role}"`);
    const url = new URL(PG_ADMIN_URL);
    url.username = role;
    url.searchParams.set('schema', role);
    url.searchParams.set('application_name', role);
    const db = url.toString();

    // Seed, and keep a store of our own to watch readiness (ping) from outside the server.
    const probe: Store = await openStore(db);
    const admin = createAdminService({ store: probe, hasher: createArgon2Hasher() });
    expect((await admin.addUser({ login: 'alice', password: 'pw', appIds: [2] })).ok).toBe(true);
    const server = await startServer(['--db', db]);
    const management = /^Management: (http:\/\/\S+)/m.exec(server.output())?.[1];
    expect(management, server.output()).toBeDefined();
    const readiness = async (): Promise<number> => (await fetch(`${management}/health/ready`, { signal: AbortSignal.timeout(5000) })).status;
    expect(await readiness()).toBe(200);
    const known = String(await soapResult(server.origin, 'ValidateUser', { login: 'alice', password: 'pw', AppId: 2, IPAddress: '' }));

    const t0 = performance.now();
    const samples: Sample[] = [];
    const inFlight = new Set<Promise<void>>();
    // The phases below end on what the answers show (counted as they arrive), not after a time.
    const waiting = new Set<() => void>();
    const record = (sample: Sample): void => {
      samples.push(sample);
      for (const check of [...waiting]) check();
    };
    const until = (condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> => new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        waiting.delete(check);
        reject(new Error(`no ${what} within ${timeoutMs} ms`));
      }, timeoutMs);
      const check = (): void => {
        if (!condition()) return;
        clearTimeout(timer);
        waiting.delete(check);
        resolve();
      };
      waiting.add(check);
      check();
    });
    const fire = (op: Sample['op']): void => {
      const startedAt = performance.now() - t0;
      const args: Args = op === 'ValidateUser' ? { login: 'alice', password: 'pw', AppId: 2, IPAddress: '' } : { token: known };
      const p: Promise<void> = soap(server.origin, op, args, 15_000).then(
        (answer) => record({ op, startedAt, endedAt: performance.now() - t0, answer, error: null }),
        (error: unknown) => record({ op, startedAt, endedAt: performance.now() - t0, answer: null, error: String(error) }),
      ).finally(() => inFlight.delete(p));
      inFlight.add(p);
    };

    // ~50 ValidateUserToken and ~5 ValidateUser calls per second, whatever the answers take.
    let ticks = 0;
    let running = true;
    const load = (async () => {
      while (running) {
        fire(ticks % 10 === 0 ? 'ValidateUser' : 'ValidateUserToken');
        ticks++;
        await sleep(20);
      }
    })();

    await until(() => samples.filter((s) => s.answer?.status === 200).length > 30, 'thirty answers before the outage');
    // Requests that end before this moment saw a working database; the ones that start after the
    // termination below saw the outage. (Under load the termination itself takes a while.)
    const outageStarts = performance.now() - t0;
    await withAdminClient(async (c) => {
      await c.query(`ALTER ROLE "${role}" NOLOGIN`);
      await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [role]);
    });
    const outageFrom = performance.now() - t0;

    // The server has noticed once a request started after the termination gets a fault.
    await until(() => samples.some((s) => s.startedAt > outageFrom && s.answer !== null && isSoapServerFault(s.answer)), 'fault after the termination');
    await expect(probe.ping()).rejects.toThrow();
    expect(await readiness()).toBe(503);
    await until(() => samples.filter((s) => s.startedAt > outageFrom).length > 30, 'thirty answers during the outage');

    const outageUntil = performance.now() - t0;
    await adminQuery(`ALTER ROLE "${role}" LOGIN`);
    // Recovered by itself: thirty good answers to requests started a second after the login came back.
    // And more than ten logins answered in all (one call in ten is a login: the phases above,
    // which end on counts, may hold fewer).
    const loginsAnswered = (): number => samples.filter((s) => s.op === 'ValidateUser' && s.answer?.status === 200).length;
    await until(() => samples.filter((s) => s.startedAt > outageUntil + 1000 && s.answer?.status === 200).length > 30 && loginsAnswered() > 10, 'thirty answers and eleven logins after the outage');
    running = false;
    await load;
    await Promise.all([...inFlight]);
    await probe.ping(); // readiness is back without anyone doing anything
    expect(await readiness()).toBe(200);

    const describe = (s: Sample): string => `${s.op} at ${Math.round(s.startedAt)} ms: ${s.error ?? `${s.answer?.status} in ${Math.round(s.answer?.ms ?? 0)} ms`}`;
    // Nothing hung, nothing failed at the HTTP level, every answer came in under 3 s.
    expect(samples.filter((s) => s.error !== null || (s.answer?.ms ?? Infinity) >= 3000).map(describe)).toEqual([]);
    const before = samples.filter((s) => s.endedAt < outageStarts);
    const during = samples.filter((s) => s.startedAt > outageFrom && s.endedAt < outageUntil);
    const after = samples.filter((s) => s.startedAt > outageUntil + 1000);
    expect(before.length).toBeGreaterThan(20);
    expect(during.length).toBeGreaterThan(20);
    expect(after.length).toBeGreaterThan(20);
    expect(before.filter((s) => s.answer?.status !== 200).map(describe)).toEqual([]);
    expect(during.filter((s) => s.answer === null || !isSoapServerFault(s.answer)).map(describe)).toEqual([]);
    expect(after.filter((s) => s.answer?.status !== 200).map(describe)).toEqual([]);

    // Every token a client was given is still good.
    const issued = samples.flatMap((s) => (s.op === 'ValidateUser' && s.answer?.status === 200 ? [String(parseResult('soap11', 'ValidateUser', s.answer.body))] : []));
    expect(issued.length).toBeGreaterThan(10);
    for (const token of [known, ...issued]) {
      expect(await soapResult(server.origin, 'ValidateUserToken', { token }), token).toBe(true);
    }

    await probe.close();
    server.child.kill('SIGTERM');
    expect(await server.exited).toEqual({ code: 0, signal: null });
  });
});
