/**
 * The documented reverse-proxy example (deploy/nginx/svcapi-auth.conf) with a real nginx (Debian's
 * package): TLS terminated by nginx in front of two svcapi-auth instances on one SQLite file,
 * X-Forwarded-For / -Proto forwarded, trustedProxies honoured.
 *
 * Addresses: everything is on the loopback range. nginx and the instances use 127.0.0.1; the
 * client connects from 127.0.0.3, so the address nginx sees (and appends to X-Forwarded-For) is
 * distinguishable from the proxy's own address, which is the only one the instances trust.
 *
 * nginx missing: under CI (CI=true) the test fails, as .ci/run installs Debian's nginx-light with
 * every other package before the tests start (a test installs nothing itself); on a developer
 * machine it is skipped with a message saying how to install it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAdminService } from '../../src/domain/admin-service.js';
import { createArgon2Hasher } from '../../src/domain/password-hasher.js';
import { canonicalToken, hashToken } from '../../src/domain/tokens.js';
import { openStore } from '../../src/store/open-store.js';
import { waitForChildren } from '../support/server-process.js';
import { root, spawnServer, type ServerProcess } from './support.js';

const NGINX = '/usr/sbin/nginx';
const CLIENT_ADDRESS = '127.0.0.3';
const SPOOFED = '203.0.113.66';

function ensureNginx(): string | null {
  if (existsSync(NGINX)) return null;
  if (process.env.CI === 'true') throw new Error(`CI: ${NGINX} not found; .ci/run installs it (apt-get install nginx-light)`);
  return `${NGINX} not found; install it with: apt-get install nginx-light (the test runs in CI)`;
}
const missing = ensureNginx();
if (missing !== null) console.warn(`skipping the nginx test: ${missing}`);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** The example with this test's ports and paths: each replaced text must be there exactly once. */
function exampleConfig(substitutions: readonly [string, string][]): string {
  let text = readFileSync(join(root, 'deploy', 'nginx', 'svcapi-auth.conf'), 'utf8');
  for (const [from, to] of substitutions) {
    const count = text.split(from).length - 1;
    if (count !== 1) throw new Error(`deploy/nginx/svcapi-auth.conf: expected "${from}" once, found it ${count} times`);
    text = text.replace(from, to);
  }
  return text;
}

interface Reply {
  readonly status: number;
  readonly body: string;
}

function httpsRequest(port: number, path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: '127.0.0.1', port, path, method: options.method ?? 'GET', localAddress: CLIENT_ADDRESS, rejectUnauthorized: false, agent: false,
      headers: { ...options.headers, ...(options.body !== undefined ? { 'content-length': String(Buffer.byteLength(options.body)) } : {}) },
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Access lines an instance wrote (JSON log lines with msg "request"). */
function accessLines(server: ServerProcess): Record<string, unknown>[] {
  return server.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'request');
}

describe.skipIf(missing !== null)('behind nginx (deploy/nginx/svcapi-auth.conf)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcapi-nginx-'));
  const children: ChildProcess[] = [];
  let nginx: ChildProcess | undefined;
  let nginxExited: Promise<number | null> | undefined;
  let nginxLog = '';
  let instances: ServerProcess[] = [];
  let port = 0;
  let dbUrl = '';

  beforeAll(async () => {
    const build = inject('distBuild');
    if (!build.ok) throw new Error(`building dist/ failed:\n${build.output}`);
    // nginx's workers may run as another user: let them reach the temporary directory.
    chmodSync(dir, 0o755);
    dbUrl = `sqlite:${join(dir, 'auth.db')}`;
    const setup = await openStore(dbUrl);
    await createAdminService({ store: setup, hasher: createArgon2Hasher() }).addUser({ login: 'alice', password: 'pw', appIds: [2] });
    await setup.close();

    const env = { SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0' };
    instances = await Promise.all([1, 2].map(() => spawnServer(['--db', dbUrl, '--log-level', 'info', '--trusted-proxies', '127.0.0.1'], env, children)));

    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    const openssl = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-days', '1', '-keyout', key, '-out', cert], { encoding: 'utf8' });
    if (openssl.status !== 0) throw new Error(`openssl failed: ${openssl.stderr}`);

    port = await freePort();
    const [one, two] = instances.map((i) => new URL(i.url).port);
    writeFileSync(join(dir, 'svcapi-auth.conf'), exampleConfig([
      ['server 127.0.0.1:8081 ', `server 127.0.0.1:${one} `],
      ['server 127.0.0.1:8082 ', `server 127.0.0.1:${two} `],
      ['listen 443 ssl;', `listen 127.0.0.1:${port} ssl;`],
      ['/etc/ssl/certs/auth.example.com.pem', cert],
      ['/etc/ssl/private/auth.example.com.key', key],
    ]));
    for (const sub of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, sub));
    writeFileSync(join(dir, 'nginx.conf'), `worker_processes 1;
error_log ${dir}/error.log info;
events { worker_connections 64; }
http {
  access_log ${dir}/access.log;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  include ${dir}/svcapi-auth.conf;
}
`);
    const test = spawnSync(NGINX, ['-t', '-p', `${dir}/`, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log'), '-g', `pid ${dir}/nginx.pid;`], { encoding: 'utf8' });
    if (test.status !== 0) throw new Error(`nginx -t failed:\n${test.stderr}`);
    nginx = spawn(NGINX, ['-p', `${dir}/`, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log'), '-g', `daemon off; pid ${dir}/nginx.pid;`], { stdio: ['ignore', 'pipe', 'pipe'] });
    nginx.stderr?.on('data', (chunk: Buffer) => {
      nginxLog += chunk.toString();
    });
    const started = nginx;
    nginxExited = new Promise((resolve) => started.once('exit', (code) => resolve(code)));

    // Up when it completes a TLS handshake.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const ok = await new Promise<boolean>((resolve) => {
        const socket = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
          socket.end();
          resolve(true);
        });
        socket.on('error', () => resolve(false));
      });
      if (ok) break;
      if (Date.now() > deadline || nginx.exitCode !== null) throw new Error(`nginx did not start:\n${nginxLog}\n${existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : ''}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }, 300_000);

  afterAll(async () => {
    if (nginx !== undefined && nginx.exitCode === null) {
      nginx.kill('SIGQUIT');
      await Promise.race([nginxExited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      if (nginx.exitCode === null) nginx.kill('SIGKILL');
    }
    for (const instance of instances) instance.child.kill('SIGTERM');
    const exits = await Promise.all(instances.map((i) => i.exited));
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    expect(exits).toEqual([{ code: 0, signal: null }, { code: 0, signal: null }]);
  });

  it('the WSDL served through nginx names the https address the client used', async () => {
    const wsdl = await httpsRequest(port, '/Authentication.asmx?WSDL');
    expect(wsdl.status).toBe(200);
    const addresses = [...wsdl.body.matchAll(/<(?:soap|soap12|http):address location="([^"]+)"/g)].map((m) => m[1]);
    expect(addresses.length).toBeGreaterThanOrEqual(2);
    for (const address of addresses) expect(address).toBe(`https://127.0.0.1:${port}/Authentication.asmx`);
  });

  it('spreads requests over both instances, which log the client address nginx saw, never a client-supplied one', async () => {
    const login = await httpsRequest(port, '/Authentication.asmx/ValidateUser', {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': SPOOFED }, body: 'login=alice&password=pw&AppId=2&IPAddress=',
    });
    const token = /<string xmlns="SVCAPI">([0-9a-f-]{36})<\/string>/.exec(login.body)?.[1] ?? '';
    expect(token, login.body).not.toBe('');
    for (let i = 0; i < 5; i++) {
      const check = await httpsRequest(port, `/Authentication.asmx/ValidateUserToken?token=${token}`, { headers: { 'x-forwarded-for': `${SPOOFED}, 198.51.100.${i}` } });
      expect(check.body).toContain('<boolean xmlns="SVCAPI">true</boolean>');
    }
    // (Only this test calls these operations; the lines of other tests' requests are left aside.)
    const ours = (): Array<Array<Record<string, unknown>>> => instances.map((instance) => accessLines(instance).filter((l) => l.operation === 'ValidateUser' || l.operation === 'ValidateUserToken'));
    // The log is written out every logFlushMs (250 ms by default): wait for the six lines.
    await waitForChildren(instances.map((i) => i.child), () => ours().flat().length >= 6, 'six access lines');
    const proxied = ours();
    // Round robin: both instances served some of the six.
    expect(proxied.map((lines) => lines.length).reduce((a, b) => a + b, 0)).toBe(6);
    for (const lines of proxied) expect(lines.length).toBeGreaterThanOrEqual(2);
    // The source each instance logs is the client's address as nginx saw it.
    for (const line of proxied.flat()) expect(line.source).toBe(CLIENT_ADDRESS);
    const everything = instances.map((i) => i.output()).join('\n');
    expect(everything).not.toContain(SPOOFED);

    // ... and it is what the domain recorded with the token.
    const store = await openStore(dbUrl);
    try {
      expect((await store.findToken(hashToken(canonicalToken(token) ?? '')))?.sourceIp).toBe(CLIENT_ADDRESS);
    } finally {
      await store.close();
    }
  });

  it('believes forwarded headers only from the trusted proxy address', async () => {
    const [first] = instances;
    if (first === undefined) throw new Error('no instance');
    const direct = new URL(first.url);
    // Straight to the instance (plain HTTP), from a chosen loopback address.
    const send = (localAddress: string, headers: Record<string, string>) => new Promise<string>((resolve, reject) => {
      http.request({ host: '127.0.0.1', port: direct.port, path: `${direct.pathname}?WSDL`, localAddress, headers, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve(body));
      }).on('error', reject).end();
    });
    // From an untrusted address, X-Forwarded-For and -Proto are ignored.
    const untrusted = await send(CLIENT_ADDRESS, { 'x-forwarded-for': SPOOFED, 'x-forwarded-proto': 'https' });
    expect(untrusted).toContain(`location="http://127.0.0.1:${direct.port}/Authentication.asmx"`);
    // From the trusted address (as nginx connects), they are believed.
    const trusted = await send('127.0.0.1', { 'x-forwarded-for': '198.51.100.9', 'x-forwarded-proto': 'https' });
    expect(trusted).toContain(`location="https://127.0.0.1:${direct.port}/Authentication.asmx"`);
    // The log is written out every logFlushMs (250 ms by default): wait for both lines.
    const sources = (): unknown[] => accessLines(first).filter((l) => l.binding === 'doc').map((l) => l.source);
    await waitForChildren([first.child], () => sources().includes('198.51.100.9'), 'the access line of the trusted request');
    const wsdlSources = sources();
    expect(wsdlSources).toContain(CLIENT_ADDRESS);
    expect(wsdlSources).toContain('198.51.100.9');
    expect(wsdlSources).not.toContain(SPOOFED);
  });

  it('does not expose the management endpoints through the proxy', async () => {
    for (const path of ['/metrics', '/health/ready', '/health/live']) expect((await httpsRequest(port, path)).status).toBe(404);
    // They are on each instance's own management listener.
    for (const instance of instances) expect((await fetch(`${instance.management}/health/ready`)).status).toBe(200);
  });
});
