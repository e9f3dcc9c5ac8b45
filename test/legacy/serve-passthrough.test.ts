/**
 * `svcapi-auth serve` with token passthrough against an https old service whose certificate is
 * self-signed (made here with openssl) and trusted through legacy.caFile: serve's wiring, the
 * CA on every kind of call, the metrics and the log line an operator watches.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { createSoapLegacyAuthenticator } from '../../src/legacy/soap-legacy-authenticator.js';
import { createSoapLegacyTokenService } from '../../src/legacy/soap-legacy-tokens.js';
import { buildRequest, parseResult } from '../support/asmx-client.js';
import { runCliCaptured, sink } from '../support/run-cli.js';
import { startLegacyStandIn, type LegacyStandIn } from './legacy-stand-in.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-passthrough-tls-'));
const certFile = join(dir, 'cert.pem');
const keyFile = join(dir, 'key.pem');
let legacy: LegacyStandIn;

beforeAll(async () => {
  const openssl = spawnSync('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-days', '1',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', keyFile, '-out', certFile,
  ], { encoding: 'utf8' });
  if (openssl.status !== 0) throw new Error(`openssl failed: ${openssl.stderr}`);
  legacy = await startLegacyStandIn({ tls: { cert: readFileSync(certFile), key: readFileSync(keyFile) } });
});
afterAll(async () => {
  await legacy.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('an https old service with its own CA', () => {
  it('is refused without the CA and reached with it, for every operation', async () => {
    const token = legacy.issue();
    const untrusted = createSoapLegacyTokenService({ url: legacy.url });
    const trusted = createSoapLegacyTokenService({ url: legacy.url, ca: readFileSync(certFile) });
    try {
      expect(await untrusted.validateUserToken(token)).toStrictEqual({ kind: 'unavailable', reason: 'TLS failed (DEPTH_ZERO_SELF_SIGNED_CERT)' });
      expect(await trusted.validateUserToken(token)).toStrictEqual({ kind: 'answer', result: 'true' });
      expect(await trusted.getUserLoginUrl(token, 2)).toStrictEqual({ kind: 'answer', result: `https://old.example/Login.aspx?app=2&ticket=T-${token.slice(0, 8)}` });
      // ValidateUser (lazy migration) goes through the same kind of connection: the stand-in
      // has no ValidateUser, so reaching it is "not a ValidateUser response", not a TLS failure.
      expect(await createSoapLegacyAuthenticator({ url: legacy.url }).validateUser('a', 'b', 2, null)).toMatchObject({ reason: 'TLS failed (DEPTH_ZERO_SELF_SIGNED_CERT)' });
      expect(await createSoapLegacyAuthenticator({ url: legacy.url, ca: readFileSync(certFile) }).validateUser('a', 'b', 2, null)).toMatchObject({ reason: 'not a ValidateUser response' });
    } finally {
      untrusted.close();
      trusted.close();
    }
  });

  it('serve: a token of the old service validates until the end date; metrics and log show it', async () => {
    const out = sink();
    const controller = new AbortController();
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const env = {
      SVCAPI_LEGACY_URL: legacy.url, SVCAPI_LEGACY_CA_FILE: certFile, SVCAPI_LEGACY_TOKEN_PASSTHROUGH: until,
      SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0',
    };
    const done = runCli(['serve', '--port', '0', '--db', 'sqlite::memory:'], { stdin: Readable.from([]), stdout: out.stream, stderr: out.stream, env, signal: controller.signal });
    try {
      const service = (await out.waitFor(/^Service: (\S+)$/m))[1] ?? '';
      const management = (await out.waitFor(/^Management: (http:\/\/\S+) /m))[1] ?? '';
      const validate = async (token: string): Promise<unknown> => {
        const req = buildRequest('soap11', 'ValidateUserToken', { token });
        const res = await fetch(service, { method: 'POST', headers: req.headers, body: req.payload ?? null });
        return parseResult('soap11', 'ValidateUserToken', await res.text());
      };
      const token = legacy.issue();
      expect(await validate(token)).toBe(true);
      expect(await validate(token)).toBe(true);
      expect(await validate('0DDBA11C-0FFE-4EE1-8BAD-F00DDEADBEEF')).toBe(false);
      const metrics = await (await fetch(`${management}/metrics`)).text();
      expect(metrics).toContain('svcapi_auth_legacy_token_checks_total{result="valid"} 1');
      expect(metrics).toContain('svcapi_auth_legacy_token_checks_total{result="cached_valid"} 1');
      expect(metrics).toContain('svcapi_auth_legacy_token_checks_total{result="invalid"} 1');
      expect(metrics).toContain('svcapi_auth_legacy_token_circuit_state 0');
      expect(metrics).toContain('svcapi_auth_legacy_token_passthrough_active 1');
      expect(metrics).toContain('svcapi_auth_token_validations_total{result="valid",kind="legacy"} 2');
      expect(out.text()).toContain('token passthrough on');
      expect(out.text()).toContain(until);
      expect(out.text()).not.toContain(token);
    } finally {
      controller.abort();
      expect(await done).toBe(0);
    }
  });

  it('serve refuses a CA file it cannot read or that holds no certificate, naming the setting', async () => {
    const env = { SVCAPI_LEGACY_URL: legacy.url, SVCAPI_MANAGEMENT_PORT: 'off', SVCAPI_LOG_LEVEL: 'silent' };
    const missing = await runCliCaptured(['serve', '--port', '0', '--db', 'sqlite::memory:'], { env: { ...env, SVCAPI_LEGACY_CA_FILE: join(dir, 'missing.pem') } });
    expect(missing.code).not.toBe(0);
    expect(missing.err).toMatch(/cannot read legacy\.caFile .*missing\.pem: ENOENT/);
    const notPem = join(dir, 'not.pem');
    writeFileSync(notPem, 'hello');
    const garbage = await runCliCaptured(['serve', '--port', '0', '--db', 'sqlite::memory:'], { env: { ...env, SVCAPI_LEGACY_CA_FILE: notPem } });
    expect(garbage.code).not.toBe(0);
    expect(garbage.err).toMatch(/legacy\.caFile .*not\.pem holds no/);
  });
});
