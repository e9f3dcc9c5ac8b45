/**
 * Graceful shutdown of the real binary under load: SIGTERM in the middle of a bounded concurrent
 * load (keep-alive connections, real argon2 logins). Every request sent before the signal gets
 * its complete, correct response; readiness is 503 during the drain; the process exits 0.
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { createAdminService } from '../../src/domain/admin-service.js';
import { createArgon2Hasher } from '../../src/domain/password-hasher.js';
import { openStore } from '../../src/store/open-store.js';
import type { Sink } from '../support/run-cli.js';
import { run, sink, spawnServer } from './support.js';

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

interface Outcome {
  /** The request was completely written to the socket before SIGTERM was sent. */
  readonly sentBeforeSignal: boolean;
  readonly startedAfterSignal: boolean;
  readonly finishedAfterSignal: boolean;
  readonly status?: number;
  readonly body?: string;
  readonly connection?: string;
  readonly error?: string;
}

const WORKERS = 8;
const MAX_REQUESTS = 600;
const GUID = /<string xmlns="SVCAPI">[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}<\/string>/;

describe('graceful shutdown', () => {
  it('SIGTERM during load: readiness 503 first, no request sent before the signal is dropped, exit 0', async () => {
    const build = inject('distBuild');
    if (!build.ok) throw new Error(`building dist/ failed, cannot start a server:\n${build.output}`);

    const dir = mkdtempSync(join(tmpdir(), 'svcapi-shutdown-'));
    try {
      const db = `sqlite:${join(dir, 'auth.db')}`;
      const setup = await openStore(db);
      await createAdminService({ store: setup, hasher: createArgon2Hasher() }).addUser({ login: 'alice', password: 'pw', appIds: [2] });
      await setup.close();

      // Brute-force protection off: it would rightly refuse some of these many concurrent logins
      // of one user from one address once they queue for hashing on a busy machine.
      const server = await spawnServer(['--db', db, '--log-level', 'info'], { SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '400', SVCAPI_SHUTDOWN_TIMEOUT_MS: '10000', SVCAPI_BRUTE_FORCE_ENABLED: 'false' }, children);
      const target = new URL(server.url);
      const agent = new http.Agent({ keepAlive: true, maxSockets: WORKERS });

      let signalSent = false;
      let issued = 0;
      const outcomes: Outcome[] = [];
      let loadUnderWay: () => void = () => undefined;
      const fortyAnswered = new Promise<void>((resolve) => {
        loadUnderWay = resolve;
      });
      let token = '';

      function request(method: 'GET' | 'POST', path: string, body?: string): Promise<Outcome> {
        const startedAfterSignal = signalSent;
        return new Promise((resolve) => {
          let written = false;
          const req = http.request({
            host: target.hostname, port: target.port, path, method, agent,
            headers: body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) },
          }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => {
              text += chunk;
            });
            res.on('end', () => resolve({ sentBeforeSignal: written && !startedAfterSignal, startedAfterSignal, finishedAfterSignal: signalSent, status: res.statusCode ?? 0, body: text, connection: res.headers.connection ?? '' }));
            res.on('error', (error) => resolve({ sentBeforeSignal: written && !startedAfterSignal, startedAfterSignal, finishedAfterSignal: signalSent, error: `response: ${error.message}` }));
          });
          // 'finish': every byte of the request has been handed to the operating system.
          req.on('finish', () => {
            written = !signalSent;
          });
          req.on('error', (error: NodeJS.ErrnoException) => resolve({ sentBeforeSignal: written && !startedAfterSignal, startedAfterSignal, finishedAfterSignal: signalSent, error: error.code ?? error.message }));
          req.end(body);
        });
      }

      async function worker(n: number): Promise<void> {
        while (issued < MAX_REQUESTS) {
          issued += 1;
          const login = (issued + n) % 2 === 0 || token === '';
          const outcome = login
            ? await request('POST', `${target.pathname}/ValidateUser`, 'login=alice&password=pw&AppId=2&IPAddress=')
            : await request('GET', `${target.pathname}/ValidateUserToken?token=${token}`);
          outcomes.push(outcome);
          if (outcomes.length === 40) loadUnderWay();
          if (login && outcome.body !== undefined && GUID.test(outcome.body)) token = /[0-9a-f-]{36}/.exec(outcome.body)?.[0] ?? token;
          // Once the server is gone (refused / reset), this worker stops.
          if (outcome.error !== undefined) return;
        }
      }

      const load = Promise.all(Array.from({ length: WORKERS }, (_, n) => worker(n)));
      // Let the load run, then signal in the middle of it.
      await fortyAnswered;
      signalSent = true;
      server.child.kill('SIGTERM');

      // Readiness turns 503 as the signal is handled, while the public listener still serves
      // during the drain delay.
      await server.waitForOutput(/"msg":"shutdown: readiness is now 503; draining"/);
      const ready = await fetch(`${server.management}/health/ready`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ status: 'not ready', checks: { draining: true } });

      await load;
      agent.destroy();
      expect(await server.exited).toEqual({ code: 0, signal: null });

      const before = outcomes.filter((o) => o.sentBeforeSignal);
      const after = outcomes.filter((o) => o.startedAfterSignal);
      const summary = JSON.stringify({ total: outcomes.length, before: before.length, after: after.length, afterOutcomes: after.map((o) => o.status ?? o.error) });
      // Not one request sent before the signal was dropped: each got its full, correct answer.
      for (const o of before) {
        expect(o.error, summary).toBeUndefined();
        expect(o.status, summary).toBe(200);
        expect(o.body, summary).toMatch(/<string xmlns="SVCAPI">[0-9a-f-]{36}<\/string>|<boolean xmlns="SVCAPI">true<\/boolean>/);
      }
      // Some of them were in flight when the signal came, and finished afterwards.
      expect(before.filter((o) => o.finishedAfterSignal).length, summary).toBeGreaterThan(0);
      // During the drain delay requests were still served, each telling the client to reconnect;
      // afterwards new connections were refused, and a request on a kept-alive one was still answered.
      // (A request sent just after kill() may still be answered before the server has handled the
      // signal, with keep-alive; once it has, every response says close.)
      const servedAfter = after.filter((o) => o.status === 200);
      expect(servedAfter.filter((o) => o.connection === 'close').length, summary).toBeGreaterThan(0);
      const firstClose = outcomes.findIndex((o) => o.startedAfterSignal && o.connection === 'close');
      for (const [i, o] of outcomes.entries()) if (i > firstClose && o.status === 200 && o.startedAfterSignal) expect(o.connection, summary).toBe('close');
      for (const o of after) {
        if (o.status !== undefined) expect(o.status, summary).toBe(200);
        else expect(o.error, summary).toMatch(/ECONNREFUSED|ECONNRESET|socket hang up/);
      }
      expect(server.output()).toContain('"msg":"shutdown: all requests finished"');
      expect(server.output()).not.toContain('cutting the connections');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('drains on SIGTERM (also when told so through the abort signal, as cluster workers are), not on a plain stop', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-shutdown-'));
    try {
      const db = `sqlite:${join(dir, 'auth.db')}`;
      // A long drain delay: the request below is served within it, whatever the machine's speed.
      const env = { SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '60000' };
      const start = async (): Promise<{ base: string; management: string; controller: AbortController; out: Sink; done: Promise<{ code: number }> }> => {
        const out = sink();
        const controller = new AbortController();
        const done = run(['serve', '--port', '0', '--db', db, '--log-level', 'info'], { env, stdout: out.stream, signal: controller.signal });
        const base = (await out.waitFor(/^Service: (\S+)$/m))[1] ?? '';
        const management = (await out.waitFor(/^Management: (\S+)/m))[1] ?? '';
        return { base, management, controller, out, done };
      };
      const drainLine = /"drainDelayMs":(\d+),.*"msg":"shutdown: readiness is now 503; draining"/;

      const draining = await start();
      draining.controller.abort('SIGTERM');
      expect((await draining.out.waitFor(drainLine))[1]).toBe('60000');
      expect((await fetch(`${draining.management}/health/ready`)).status).toBe(503);
      const during = await fetch(`${draining.base}?WSDL`);
      expect(during.status).toBe(200); // still serving during the drain delay...
      expect(during.headers.get('connection')).toBe('close'); // ...telling clients to reconnect elsewhere
      await during.text();
      process.emit('SIGTERM'); // a second signal ends the drain delay, as it does for an operator
      expect((await draining.done).code).toBe(0);
      expect(draining.out.text()).toContain('shutdown: second signal, not waiting any longer');

      const plain = await start();
      plain.controller.abort();
      expect((await plain.done).code).toBe(0);
      expect((drainLine.exec(plain.out.text()) ?? [])[1]).toBe('0'); // no drain delay without SIGTERM
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('requests still running at the shutdown timeout are cut, and the process still exits 0', async () => {
    const build = inject('distBuild');
    if (!build.ok) throw new Error(`building dist/ failed:\n${build.output}`);
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-shutdown-'));
    try {
      const server = await spawnServer(['--db', `sqlite:${join(dir, 'auth.db')}`, '--log-level', 'info'], { SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0', SVCAPI_SHUTDOWN_TIMEOUT_MS: '300' }, children);
      const target = new URL(server.url);
      // A request whose body never finishes arriving keeps a connection busy.
      const stalled = http.request({ host: target.hostname, port: target.port, path: `${target.pathname}/ValidateUser`, method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': '1000', expect: '100-continue' } });
      stalled.flushHeaders();
      const stalledOutcome = new Promise<string>((resolve) => {
        stalled.on('response', (res) => resolve(`status ${res.statusCode}`));
        stalled.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
      });
      // Expect: 100-continue: the server's 100 says it has the request and is reading its body.
      const reading = new Promise<void>((resolve) => stalled.once('continue', () => resolve()));
      await reading;
      stalled.write('login=alice');
      server.child.kill('SIGTERM');
      expect(await server.exited).toEqual({ code: 0, signal: null });
      expect(await stalledOutcome).toMatch(/ECONNRESET|socket hang up/);
      expect(server.output()).toContain('cutting the connections still open');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
