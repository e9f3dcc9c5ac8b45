/**
 * `svcapi-auth serve` with SVCAPI_LEGACY_URL: the configured service asks the old one
 * (here another svcapi-auth instance) about a login it does not know, and upgrades imported
 * legacy hashes on login: the wiring of serve.ts, not only the domain.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { inspectPasswordHash } from '../../src/domain/legacy-hashes/stored-hash.js';
import { openStore } from '../../src/store/open-store.js';
import { buildRequest, parseResult } from '../support/asmx-client.js';
import { sink } from '../support/run-cli.js';
import { startApp, type StartedApp } from '../support/start-app.js';
import { vector, VECTORS } from './support.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-legacy-serve-'));
let legacy: StartedApp;

beforeAll(async () => {
  legacy = await startApp();
  await legacy.seedUser('from-legacy', 'legacy-pw', 2);
});

afterAll(async () => {
  await legacy.close();
  rmSync(dir, { recursive: true, force: true });
});

it('serve asks the legacy service about unknown logins and upgrades legacy hashes', async () => {
  const db = `sqlite:${join(dir, 'auth.db')}`;
  const identity = vector(VECTORS.identity, (v) => v.version === 3 && v.case.endsWith('/ascii'));
  const seed = await openStore(db);
  await seed.insertUser({ login: 'imported', loginKey: 'imported', passwordHash: `$aspnet-identity-v3$${identity.passwordHash}`, enabled: true, appIds: [2], createdAt: new Date() });
  await seed.close();

  const out = sink();
  const controller = new AbortController();
  const env = { SVCAPI_LEGACY_URL: `${legacy.url}/Authentication.asmx`, SVCAPI_LEGACY_TIMEOUT_MS: '2000' };
  const done = runCli(['serve', '--port', '0', '--log-level', 'silent', '--db', db], { stdin: Readable.from([]), stdout: out.stream, stderr: out.stream, env, signal: controller.signal });
  const service = (await out.waitFor(/^Service: (http:\/\/127\.0\.0\.1:\d+\/Authentication\.asmx)$/m))[1] ?? '';
  const login = async (user: string, password: string): Promise<string> => {
    const req = buildRequest('soap11', 'ValidateUser', { login: user, password, AppId: 2, IPAddress: '' });
    const res = await fetch(service, { method: 'POST', headers: req.headers, body: req.payload ?? null });
    return String(parseResult('soap11', 'ValidateUser', await res.text()));
  };
  try {
    expect(await login('from-legacy', 'wrong')).toBe('');
    expect(await login('from-legacy', 'legacy-pw')).not.toBe('');
    expect(await login('imported', identity.password)).not.toBe('');
  } finally {
    controller.abort();
    expect(await done).toBe(0);
  }
  const store = await openStore(db);
  try {
    expect(inspectPasswordHash((await store.findUserByLoginKey('from-legacy'))?.passwordHash ?? '').format).toBe('argon2id');
    expect(inspectPasswordHash((await store.findUserByLoginKey('imported'))?.passwordHash ?? '').format).toBe('argon2id');
  } finally {
    await store.close();
  }
});

it('serve probes the legacy service at start: one that says yes to a random login is refused loudly, in the log and /health/ready', async () => {
  const same = '6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b';
  const { createServer } = await import('node:http');
  let asked = 0;
  const hostile = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      asked += 1;
      res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' });
      res.end(`<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><ValidateUserResponse xmlns="SVCAPI"><ValidateUserResult>${same}</ValidateUserResult></ValidateUserResponse></soap:Body></soap:Envelope>`);
    });
  });
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
  const db = `sqlite:${join(dir, 'hostile.db')}`;
  const out = sink();
  const text = out.text;
  const controller = new AbortController();
  const env = { SVCAPI_LEGACY_URL: `http://127.0.0.1:${(hostile.address() as { port: number }).port}/Authentication.asmx` };
  const done = runCli(['serve', '--port', '0', '--db', db], { stdin: Readable.from([]), stdout: out.stream, stderr: out.stream, env, signal: controller.signal });
  try {
    const management = (await out.waitFor(/^Management: (http:\/\/\S+) /m))[1] ?? '';
    await out.waitFor(/lazy migration refused/);
    const service = /^Service: (\S+)$/m.exec(text())?.[1] ?? '';
    const ready = await fetch(`${management}/health/ready`);
    expect(ready.status).toBe(200); // it still serves the users it has
    const report = await ready.json() as { checks: { legacy?: { state: string; reason: string } } };
    expect(report.checks.legacy).toMatchObject({ state: 'unsafe' });
    expect(text()).toMatch(/"level":50.*lazy migration refused/);
    expect(text()).toContain('legacy.url is plain http');
    // A login unknown here is not even asked about.
    const req = buildRequest('soap11', 'ValidateUser', { login: 'victim', password: 'attacker', AppId: 2, IPAddress: '' });
    const res = await fetch(service, { method: 'POST', headers: req.headers, body: req.payload ?? null });
    expect(parseResult('soap11', 'ValidateUser', await res.text())).toBe('');
    expect(asked).toBe(1);
    expect(text()).not.toContain(same);
  } finally {
    controller.abort();
    expect(await done).toBe(0);
    await new Promise<void>((resolve) => hostile.close(() => resolve()));
  }
});
