/**
 * HTTP framing on a real socket, as IIS frames ASMX answers (README "HTTP framing"): HTTP/1.1,
 * connections kept alive without a Keep-Alive header, no server or version banners.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type StartedApp } from '../support/start-app.js';
import { exchange, portOf, requestHead } from '../robustness/raw-http.js';

function rawGet(url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ statusLine: string; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ statusLine: `HTTP/${res.httpVersion} ${res.statusCode}`, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('HTTP framing', () => {
  let app: StartedApp;
  beforeAll(async () => {
    app = await startApp();
  });
  afterAll(async () => app.close());

  it('answers HTTP/1.1, keeps the connection without a Keep-Alive header, names no server', async () => {
    const res = await rawGet(`${app.url}/Authentication.asmx/ValidateUserToken?token=x`);
    expect(res.statusLine).toBe('HTTP/1.1 200');
    expect(res.headers['keep-alive']).toBeUndefined();
    expect(res.headers.connection).toBe('keep-alive');
    expect(res.headers.server).toBeUndefined();
    expect(res.headers['x-powered-by']).toBeUndefined();
    expect(res.headers['x-aspnet-version']).toBeUndefined();
  });

  it('answers HEAD like GET without a body', async () => {
    const res = await rawGet(`${app.url}/Authentication.asmx?WSDL`, {}, 'HEAD');
    expect(res.statusLine).toBe('HTTP/1.1 200');
    expect(res.headers['content-type']).toBe('text/xml; charset=utf-8');
    expect(res.body).toBe('');
  });

  it('matches the service path case-insensitively, the operation name case-sensitively', async () => {
    expect((await rawGet(`${app.url}/AUTHENTICATION.ASMX/ValidateUserToken?token=x`)).body).toContain('<boolean xmlns="SVCAPI">false</boolean>');
    const wrongCase = await rawGet(`${app.url}/authentication.asmx/validateusertoken?token=x`);
    expect(wrongCase.statusLine).toBe('HTTP/1.1 500');
    expect(wrongCase.body).toContain('method names are case sensitive');
  });

  it('answers a verb ASMX never sees with the 404 page, and keeps serving', async () => {
    const res = await rawGet(`${app.url}/Authentication.asmx`, {}, 'PROPFIND');
    expect(res.statusLine).toBe('HTTP/1.1 404');
    expect(res.headers['content-type']).toBe('text/html');
    expect((await rawGet(`${app.url}/Authentication.asmx/ValidateUserToken?token=x`)).statusLine).toBe('HTTP/1.1 200');
  });

  it('closes the connection after answering a request whose body it did not read', async () => {
    // A GET with a body: answered, and the unread body is not left to frame the next request.
    const head = requestHead('GET', '/Authentication.asmx/ValidateUserToken?token=x', { 'Content-Length': 5 });
    const { response, closedAfterMs } = await exchange(portOf(app.url), [head, 'token'], { waitMs: 5000 });
    expect(response?.status).toBe(200);
    expect(response?.body.toString()).toContain('<boolean xmlns="SVCAPI">false</boolean>');
    expect(closedAfterMs).not.toBeNull();
  });

  it('writes the WSDL address from the request\'s Host, escaped', async () => {
    const res = await rawGet(`${app.url}/authentication.asmx?wsdl`, { host: 'svc.example:8443' });
    expect(res.body).toContain('<soap:address location="http://svc.example:8443/authentication.asmx" />');
  });
});

describe('security headers', () => {
  let app: StartedApp;
  beforeAll(async () => {
    app = await startApp();
    await app.seedUser('carol', 'carol-pass', 2);
  });
  afterAll(async () => app.close());

  it('never lets a cache keep a token or ticket, success or failure alike', async () => {
    const ok = await rawGet(`${app.url}/Authentication.asmx/ValidateUser?login=carol&password=carol-pass&AppId=2&IPAddress=`);
    const bad = await rawGet(`${app.url}/Authentication.asmx/ValidateUser?login=carol&password=wrong&AppId=2&IPAddress=`);
    expect(ok.body).toMatch(/[0-9a-f-]{36}/);
    expect(ok.headers['cache-control']).toBe('no-store');
    expect(bad.headers['cache-control']).toBe('no-store');
    const json = await rawGet(`${app.url}/Authentication.asmx/ValidateUserJSON?login=carol&password=carol-pass&AppId=2`);
    expect(json.headers['cache-control']).toBe('no-store');
    // Operations that return no secret keep ASMX's header.
    const check = await rawGet(`${app.url}/Authentication.asmx/ValidateUserToken?token=x`);
    expect(check.headers['cache-control']).toBe('private, max-age=0');
  });

  it('sends nosniff on every response, errors included', async () => {
    for (const path of ['/Authentication.asmx/Nope', '/nowhere', '/Authentication.asmx?WSDL']) {
      expect((await rawGet(`${app.url}${path}`)).headers['x-content-type-options']).toBe('nosniff');
    }
  });
});
