/**
 * When password hashing is at capacity the domain throws ServerBusyError; each binding answers
 * in its own shape with "Server too busy" and nothing else leaks.
 */
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { injectable } from '../support/inject.js';
import type { AuthService } from '../../src/domain/auth-service.js';
import { ServerBusyError } from '../../src/domain/server-busy-error.js';
import { buildRequest } from '../support/asmx-client.js';

const busy: AuthService = {
  validateUser: async () => Promise.reject(new ServerBusyError()),
  validateUserToken: async () => ({ valid: false }),
  whatsNew: async () => [],
  getUserLoginUrl: async () => '',
};

describe('server too busy', () => {
  it('is a soap:Server / soap:Receiver fault, or text/plain on GET and POST', async () => {
    const app = injectable(await buildApp({ service: busy, config: { http: { maxRequestBytes: 65536, bodyTimeoutMs: 1000 }, timeZone: 'UTC' }, logger: false }));
    const args = { login: 'a', password: 'b', AppId: 2, IPAddress: '' };
    const inject = (binding: 'soap11' | 'soap12' | 'http-get' | 'http-post') => {
      const r = buildRequest(binding, 'ValidateUser', args);
      return app.inject({ method: r.method, url: r.url, headers: r.headers, ...(r.payload !== undefined ? { payload: r.payload } : {}) });
    };
    const soap11 = await inject('soap11');
    expect(soap11.statusCode).toBe(500);
    expect(soap11.body).toContain('<faultcode>soap:Server</faultcode><faultstring>Server too busy</faultstring>');
    const soap12 = await inject('soap12');
    expect(soap12.body).toContain('<soap:Value>soap:Receiver</soap:Value></soap:Code><soap:Reason><soap:Text xml:lang="en">Server too busy</soap:Text>');
    for (const binding of ['http-get', 'http-post'] as const) {
      const res = await inject(binding);
      expect(res.statusCode).toBe(500);
      expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(res.body).toBe('Server too busy\r\n');
    }
    // Token validation does not hash and is unaffected.
    const check = buildRequest('http-get', 'ValidateUserToken', { token: 'x' });
    expect((await app.inject({ method: 'GET', url: check.url })).statusCode).toBe(200);
    await app.close();
  });
});
