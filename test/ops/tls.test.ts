/**
 * HTTPS without a proxy: `serve --tls-cert --tls-key` serves the public listener over
 * TLS 1.2 or newer with the given PEM files; the printed URLs and the WSDL's address are https.
 * Runs the built server with a self-signed certificate made by openssl.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT, requireDist, runCliProcess } from '../support/server-process.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-tls-'));
const cert = join(dir, 'cert.pem');
const key = join(dir, 'key.pem');
const children: ChildProcess[] = [];
let ca: Buffer;

beforeAll(() => {
  const openssl = spawnSync('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-days', '1',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', key, '-out', cert,
  ], { encoding: 'utf8' });
  if (openssl.status !== 0) throw new Error(`openssl failed: ${openssl.stderr}`);
  ca = readFileSync(cert);
});
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

function serve(args: string[], env: Record<string, string> = {}): { child: ChildProcess; output: () => string; listening: Promise<string>; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SVCAPI_MANAGEMENT_PORT: 'off', SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0', SVCAPI_LOG_LEVEL: 'warn', ...env },
  });
  children.push(child);
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const listening = new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      out += chunk.toString();
      const m = /^Service: (\S+)$/m.exec(out);
      if (m?.[1]) resolve(m[1]);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then((code) => reject(new Error(`server exited (${code}):\n${out}`)));
  });
  return { child, output: () => out, listening, exited };
}

function httpsCall(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; body: string; protocol: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method ?? 'GET', headers: init.headers, ca }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      const protocol = (res.socket as TLSSocket).getProtocol() ?? '';
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, protocol }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

function tlsHandshake(port: number, options: { minVersion: 'TLSv1' | 'TLSv1.2'; maxVersion: 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3' }): Promise<{ ok: true; protocol: string | null } | { ok: false; code: string }> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, servername: 'localhost', ca, ...options, ciphers: 'DEFAULT@SECLEVEL=0' });
    socket.once('secureConnect', () => {
      resolve({ ok: true, protocol: socket.getProtocol() });
      socket.destroy();
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve({ ok: false, code: error.code ?? error.message }));
  });
}

describe('serve --tls-cert --tls-key', () => {
  it('serves HTTPS with TLS 1.2+ only: calls work, the WSDL says https, a TLS 1.1 client is refused', async () => {
    requireDist();
    const db = `sqlite:${join(dir, 'auth.db')}`;
    expect((await runCliProcess(['migrate', '--db', db])).status).toBe(0);
    expect((await runCliProcess(['user', 'add', 'alice', '--app', '2', '--password-stdin', '--db', db], 'tls-secret\n')).status).toBe(0);
    const server = serve(['--db', db, '--tls-cert', cert, '--tls-key', key]);
    const url = await server.listening;
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/Authentication\.asmx$/);
    expect(server.output()).toContain(`WSDL: ${url}?WSDL`);
    const port = Number(new URL(url).port);

    const login = await httpsCall(`${url}/ValidateUser`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'login=alice&password=tls-secret&AppId=2&IPAddress=',
    });
    expect(login).toMatchObject({ status: 200, protocol: 'TLSv1.3' });
    const token = /[0-9a-f]{8}-[0-9a-f-]{27}/.exec(login.body)?.[0] ?? '';
    expect(token).not.toBe('');
    expect((await httpsCall(`${url}/ValidateUserToken?token=${token}`)).body).toContain('>true<');
    const wsdl = await httpsCall(`${url}?WSDL`);
    expect(wsdl.body).toContain(`<soap:address location="https://127.0.0.1:${port}/Authentication.asmx" />`);
    expect(wsdl.body).not.toContain('location="http://');

    const old = await tlsHandshake(port, { minVersion: 'TLSv1', maxVersion: 'TLSv1.1' });
    // The client offers TLS 1.0-1.1 (its security level lowered so it can); the server answers with a protocol_version alert.
    expect(old).toEqual({ ok: false, code: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION' });
    expect(await tlsHandshake(port, { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2' })).toEqual({ ok: true, protocol: 'TLSv1.2' });
    expect(await tlsHandshake(port, { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3' })).toEqual({ ok: true, protocol: 'TLSv1.3' });
    // Plain HTTP to the TLS port gets no service.
    await expect(fetch(`http://127.0.0.1:${port}/Authentication.asmx?WSDL`, { signal: AbortSignal.timeout(5000) }).then((r) => r.text())).rejects.toThrow();

    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });

  it('refuses to start without both files, or with files it cannot use', async () => {
    requireDist();
    const db = `sqlite:${join(dir, 'other.db')}`;
    const onlyCert = serve(['--db', db, '--tls-cert', cert]);
    await expect(onlyCert.listening).rejects.toThrow(/--tls-cert: HTTPS needs both a certificate and a key/);
    expect(await onlyCert.exited).toBe(2);

    const missing = serve(['--db', db], { SVCAPI_TLS_CERT: join(dir, 'nope.pem'), SVCAPI_TLS_KEY: key });
    await expect(missing.listening).rejects.toThrow(/cannot read the TLS certificate .*nope\.pem: ENOENT/);
    expect(await missing.exited).toBe(1);

    const garbage = join(dir, 'garbage.pem');
    writeFileSync(garbage, 'not a key');
    const wrong = serve(['--db', db, '--tls-cert', cert, '--tls-key', garbage]);
    await expect(wrong.listening).rejects.toThrow(/cannot use the TLS certificate .* with the key .*garbage\.pem/);
    expect(await wrong.exited).toBe(1);
  });
});
