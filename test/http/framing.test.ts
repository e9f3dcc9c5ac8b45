/**
 * HTTP framing on a real socket, as IIS frames ASMX answers (README "HTTP framing"): HTTP/1.1,
 * connections kept alive without a Keep-Alive header, no server or version banners.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type StartedApp } from '../support/start-app.js';

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

  it('writes the WSDL address from the request\'s Host, escaped', async () => {
    const res = await rawGet(`${app.url}/authentication.asmx?wsdl`, { host: 'svc.example:8443' });
    expect(res.body).toContain('<soap:address location="http://svc.example:8443/authentication.asmx" />');
  });
});
