/**
 * The canary ("no secret ever leaves"): the built server (`node dist/cli/main.js serve`,
 * log level trace, stdout and stderr captured) is driven through every binding and the error
 * paths with a unique password, and with the tokens and tickets it hands out. Then the log
 * output, every fault and error answer, the metrics scraped from the management listener, the
 * audit trail (read with `svcapi-auth audit`) and the SQLite database files (main file, -wal,
 * -shm, read as bytes while serving and after shutdown) are searched for each secret, in every
 * spelling it could take: as is, upper case, URL-encoded, form-encoded, JSON-escaped, Base64 (of
 * `login:password` as in a Basic header, and alone), UTF-16, and for tokens without dashes and as
 * their 16 raw bytes.
 *
 * Responses that legitimately carry a token or ticket (the successful ValidateUser*, and
 * GetUserLoginURL) are the only places one may appear; they never carry the password.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildRequest, type Args, type BindingName } from '../support/asmx-client.js';
import { BIN, ROOT, requireDist, runCliProcess } from '../support/server-process.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-canary-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const GUID = /[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/;
const isGuid = (text: string): boolean => new RegExp(`^${GUID.source}$`).test(text);

interface Server {
  readonly origin: string;
  readonly management: string;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
  readonly child: ChildProcess;
}

function startServer(db: string): Promise<Server> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--db', db, '--log-level', 'trace'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SVCAPI_MANAGEMENT_PORT: '0', SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0', SVCAPI_TICKET_TTL_SECONDS: '600' },
  });
  children.push(child);
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      out += chunk.toString('utf8');
      const service = /^Service: (http:\/\/\S+)$/m.exec(out)?.[1];
      const management = /^Management: (http:\/\/\S+)/m.exec(out)?.[1];
      if (service !== undefined && management !== undefined) resolve({ origin: new URL(service).origin, management, output: () => out, exited, child });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then((code) => reject(new Error(`server exited (${code}) before listening:\n${out}`)));
  });
}

interface Answer {
  readonly label: string;
  readonly status: number;
  readonly headers: string;
  readonly body: string;
  /** A successful call whose result is a token or a ticket by design. */
  readonly issues: boolean;
}

describe('no secret ever leaves (canary)', () => {
  it('finds the password, tokens and tickets in no log line, fault, metric, audit row or database file', async () => {
    requireDist();
    const db = join(dir, 'auth.db');
    const dbUrl = `sqlite:${db}`;
    // Unique, and with characters every encoding writes differently.
    const password = `Canary pw+/é@${randomUUID()}`;
    const wrongPassword = `Wrong pw+/ü@${randomUUID()}`;
    const login = 'alice';

    expect((await runCliProcess(['migrate', '--db', dbUrl])).status).toBe(0);
    expect((await runCliProcess(['app', 'set', '2', '--login-url', 'https://gps.example/login?x=1', '--db', dbUrl])).status).toBe(0);
    const added = await runCliProcess(['user', 'add', login, '--app', '2', '--password-stdin', '--db', dbUrl], `${password}\n`);
    expect(added.status, added.output).toBe(0);
    expect((await runCliProcess(['news', 'add', '--app', '2', '--title', 'Hello', '--body', 'World', '--members-only', '--db', dbUrl])).status).toBe(0);

    const server = await startServer(dbUrl);
    const answers: Answer[] = [];
    const send = async (label: string, path: string, init: RequestInit = {}, issues = false): Promise<Answer> => {
      let answer: Answer;
      try {
        const res = await fetch(`${server.origin}${path}`, { ...init, signal: AbortSignal.timeout(10_000) });
        const headers = [...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n');
        answer = { label, status: res.status, headers, body: await res.text(), issues: issues && res.status === 200 };
      } catch (error) {
        answer = { label, status: 0, headers: '', body: String(error), issues: false };
      }
      answers.push(answer);
      return answer;
    };
    const call = (binding: BindingName, op: string, args: Args, options: { query?: string; headers?: Record<string, string>; issues?: boolean } = {}): Promise<Answer> => {
      const req = buildRequest(binding, op, args, options.query);
      return send(`${binding} ${op}`, req.url, { method: req.method, headers: { ...req.headers, ...options.headers }, ...(req.payload !== undefined && { body: req.payload }) }, options.issues);
    };
    const tokens: string[] = [];
    const tickets: string[] = [];
    const take = (answer: Answer, into: string[]): string => {
      const value = GUID.exec(answer.body)?.[0];
      expect(value, `${answer.label}: ${answer.status} ${answer.body}`).toBeDefined();
      into.push(value ?? '');
      return value ?? '';
    };
    const credentials = { login, password, AppId: 2, IPAddress: '198.51.100.23' };
    const basic = `Basic ${Buffer.from(`${login}:${password}`).toString('base64')}`;
    const q = (fields: Record<string, string>): string => new URLSearchParams(fields).toString();

    // --- successes on every binding ---
    for (const binding of ['http-get', 'http-post', 'soap11', 'soap12'] as const) {
      take(await call(binding, 'ValidateUser', credentials, { issues: true }), tokens);
    }
    take(await send('json query', `/Authentication.asmx/ValidateUserJSON?${q({ login, password, AppId: '2', IPAddress: '' })}`, {}, true), tokens);
    take(await send('json basic', '/Authentication.asmx/ValidateUserJSON?AppId=2', { headers: { authorization: basic } }, true), tokens);
    take(await send('json form', '/Authentication.asmx/ValidateUserJSON', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: q({ login, password, AppId: '2' }) }, true), tokens);
    const token = tokens[0] ?? '';
    for (const binding of ['http-get', 'http-post', 'soap11', 'soap12'] as const) {
      expect((await call(binding, 'ValidateUserToken', { token })).body).toContain('true');
      expect((await call(binding, 'WhatsNew', { AppToken: token, AppID: 2, AppVersion: '1.0', Language: 'en', qtyNews: 5 })).body).toContain('Hello');
    }
    expect((await send('token json query', `/Authentication.asmx/ValidateUserTokenJSON?${q({ token: token.toUpperCase() })}`)).body).toContain('true');
    expect((await send('token json bearer', '/Authentication.asmx/ValidateUserTokenJSON', { headers: { authorization: `Bearer ${token}` } })).body).toContain('true');
    for (const binding of ['http-get', 'soap11', 'soap12', 'http-post'] as const) {
      const url = await call(binding, 'GetUserLoginURL', { token, AppID: 2 }, { issues: true });
      const ticket = take(url, tickets);
      expect(url.body).toContain('https://gps.example/login?x=1&amp;ticket=');
      expect((await call(binding === 'http-post' ? 'soap12' : 'http-post', 'ValidateUserToken', { token: ticket })).body).toContain('true');
      expect((await call('http-get', 'ValidateUserToken', { token: ticket })).body).toContain('false'); // single use
    }

    // --- failures and error paths, the secrets in them ---
    await call('http-get', 'ValidateUser', { ...credentials, password: wrongPassword });
    await call('soap11', 'ValidateUser', { ...credentials, password: wrongPassword });
    await call('soap12', 'ValidateUser', { ...credentials, login: 'nobody', password });
    await call('soap11', 'ValidateUser', { ...credentials, AppId: 'abc' });
    await call('http-get', 'ValidateUser', { ...credentials, AppId: '99999999999' });
    await send('missing AppId', `/Authentication.asmx/ValidateUser?${q({ login, password, IPAddress: '' })}`);
    await send('duplicate password', `/Authentication.asmx/ValidateUser?${q({ ...credentials, AppId: '2' } as unknown as Record<string, string>)}&password=${encodeURIComponent(wrongPassword)}`);
    await send('malformed envelope', '/Authentication.asmx', { method: 'POST', headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"SVCAPI/ValidateUser"' }, body: `<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><ValidateUser xmlns="SVCAPI"><login>${login}</login><password>${password}</password>` });
    await send('dtd envelope', '/Authentication.asmx', { method: 'POST', headers: { 'content-type': 'application/soap+xml; charset=utf-8' }, body: `<!DOCTYPE x [<!ENTITY p "${password}">]><x>&p;</x>` });
    await send('wrong action', '/Authentication.asmx', { method: 'POST', headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"SVCAPI/Nope"` }, body: `<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><Nope xmlns="SVCAPI"><password>${password}</password><token>${token}</token></Nope></soap:Body></soap:Envelope>` });
    await send('unknown operation', `/Authentication.asmx/NoSuchOp?${q({ password, token })}`);
    await send('text/plain post', '/Authentication.asmx/ValidateUser', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: `login=${login}&password=${password}` });
    await send('bad escape', `/Authentication.asmx/ValidateUser?login=${login}&password=${encodeURIComponent(password)}%zz&AppId=2&IPAddress=`);
    await send('bad escape in path', `/Authentication.asmx/%zz?password=${encodeURIComponent(password)}`);
    await send('too large', '/Authentication.asmx/ValidateUser', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `${q({ login, password, AppId: '2', IPAddress: '' })}&pad=${'x'.repeat(2 * 1024 * 1024)}` });
    await send('put', `/Authentication.asmx/ValidateUser?${q({ password })}`, { method: 'PUT', headers: { authorization: basic } });
    await send('elsewhere', `/elsewhere?${q({ password, ticket: tickets[0] ?? '', token })}`, { headers: { authorization: `Bearer ${token}`, cookie: `s=${token}` } });
    await send('help page', `/Authentication.asmx?op=ValidateUser&${q({ password, token })}`);
    await send('wsdl', `/Authentication.asmx?WSDL&${q({ password })}`);
    await send('token json bad', `/Authentication.asmx/ValidateUserTokenJSON?${q({ token: `${token}x` })}`);
    await send('revoked-looking ticket', `/Authentication.asmx/ValidateUserToken?${q({ token: tickets[0] ?? '' })}`);

    const metrics = await (await fetch(`${server.management}/metrics`)).text();
    expect(metrics).toMatch(/^svcapi_auth_logins_total\{outcome="success"\} 7$/m);
    expect(metrics).toMatch(/^svcapi_auth_audit_events_total\{type="ticket.used"\} 4$/m);
    // The -wal file beside the database, as the operator's disk sees it (it only grows while serving here).
    const walBytes = Number(/^svcapi_auth_sqlite_wal_bytes (\d+)$/m.exec(metrics)?.[1]);
    expect(walBytes).toBeGreaterThan(0);
    expect(walBytes).toBeLessThanOrEqual(statSync(`${db}-wal`).size);
    expect(metrics).toMatch(/^svcapi_auth_sqlite_wal_runaway 0$/m);

    // Database files while serving (WAL and all), then after a clean shutdown, which also writes
    // out what the audit trail still holds (it writes in batches): the audit is read after it.
    const dbFiles = (): Buffer[] => [db, `${db}-wal`, `${db}-shm`, `${db}-journal`].filter((f) => existsSync(f)).map((f) => readFileSync(f));
    const whileServing = dbFiles();
    expect(whileServing.length).toBeGreaterThanOrEqual(2);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    const afterShutdown = dbFiles();

    const auditJson = await runCliProcess(['audit', '--json', '--limit', '1000', '--db', dbUrl]);
    expect(auditJson.status, auditJson.output).toBe(0);
    const auditTable = await runCliProcess(['audit', '--limit', '1000', '--db', dbUrl]);
    const rows = auditJson.output.trim().split('\n').map((l) => JSON.parse(l) as { type: string; reason: string | null; login: string | null; tokenFp: string | null; claimedIp: string | null; sourceIp: string | null; requestId: string | null });
    const fp = (t: string): string => createHash('sha256').update(t).digest('hex').slice(0, 12);
    const count = (type: string, reason?: string): number => rows.filter((r) => r.type === type && (reason === undefined || r.reason === reason)).length;
    expect(count('login.success')).toBe(7);
    expect(count('token.issued')).toBe(7);
    expect(count('login.failure', 'bad-password')).toBeGreaterThanOrEqual(2);
    expect(count('login.failure', 'unknown-user')).toBe(1);
    expect(count('ticket.issued')).toBe(4);
    expect(count('ticket.used')).toBe(4);
    expect(count('admin.user.add')).toBe(1);
    expect(rows.filter((r) => r.type === 'token.issued').map((r) => r.tokenFp).sort()).toEqual(tokens.map(fp).sort());
    expect(rows.filter((r) => r.type === 'ticket.used').map((r) => r.tokenFp).sort()).toEqual(tickets.map(fp).sort());
    expect(rows.find((r) => r.type === 'login.success' && r.claimedIp === '198.51.100.23')).toMatchObject({ login, sourceIp: '127.0.0.1', requestId: expect.stringMatching(/^[0-9a-f-]{36}$/) });

    const logged = server.output();
    const logLines = logged.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg?: string; audit?: { type: string } });
    // One access line per request (a request refused before routing, like an undecodable path, may have none).
    expect(logLines.filter((l) => l.msg === 'request').length).toBeGreaterThanOrEqual(answers.length - 2);
    expect(logLines.filter((l) => l.msg === 'audit').map((l) => l.audit?.type)).toEqual(expect.arrayContaining(['login.success', 'login.failure', 'token.issued', 'ticket.issued', 'ticket.used']));

    // --- every spelling of every secret, everywhere ---
    const spellings = (secret: string): string[] => {
      const forms = new Set([
        secret, secret.toUpperCase(), secret.toLowerCase(), encodeURIComponent(secret), new URLSearchParams({ x: secret }).toString().slice(2),
        JSON.stringify(secret).slice(1, -1), Buffer.from(secret).toString('base64'), Buffer.from(`${login}:${secret}`).toString('base64'),
        secret.replace(/&/g, '&amp;').replace(/</g, '&lt;'),
      ]);
      if (isGuid(secret)) forms.add(secret.replace(/-/g, ''));
      return [...forms];
    };
    const secrets: [string, string][] = [
      ['password', password], ['wrong password', wrongPassword],
      ...tokens.map((t, i): [string, string] => [`token ${i}`, t]), ...tickets.map((t, i): [string, string] => [`ticket ${i}`, t]),
    ];
    const places: [string, string | Buffer][] = [
      ['log output (stdout + stderr)', logged],
      ['metrics', metrics],
      ['audit --json', auditJson.output],
      ['audit table', auditTable.output],
      ...answers.filter((a) => !a.issues).map((a): [string, string] => [`answer to ${a.label} (${a.status})`, `${a.headers}\n${a.body}`]),
      ...answers.filter((a) => a.issues).map((a): [string, string] => [`headers of ${a.label}`, a.headers]),
      ...whileServing.map((b, i): [string, Buffer] => [`database file ${i} while serving`, b]),
      ...afterShutdown.map((b, i): [string, Buffer] => [`database file ${i} after shutdown`, b]),
    ];
    const leaks: string[] = [];
    for (const [name, secret] of secrets) {
      const needles = spellings(secret).map((s) => Buffer.from(s, 'utf8'));
      needles.push(Buffer.from(secret, 'utf16le'));
      if (isGuid(secret)) needles.push(Buffer.from(secret.replace(/-/g, ''), 'hex'));
      for (const [place, haystack] of places) {
        const bytes = typeof haystack === 'string' ? Buffer.from(haystack, 'utf8') : haystack;
        for (const needle of needles) if (bytes.includes(needle)) leaks.push(`${name} (${needle.toString('utf8')}) in ${place}`);
      }
    }
    // Issued values carry a token or ticket, never the password.
    for (const a of answers.filter((x) => x.issues)) {
      for (const form of spellings(password)) if (a.body.includes(form)) leaks.push(`password in the answer to ${a.label}`);
    }
    expect(leaks).toEqual([]);
  });
});
