/**
 * The HttpGet binding can be turned off (it puts passwords in URLs), wholly or per operation:
 * the WSDL and the help page stop offering it, and calls get ASMX's answer for a removed protocol.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStack, type TestStack } from '../support/start-app.js';

describe.each([
  { httpGet: false as const, offered: [] as string[] },
  { httpGet: ['ValidateUserToken', 'WhatsNew'], offered: ['ValidateUserToken', 'WhatsNew'] },
])('HttpGet set to $httpGet', ({ httpGet, offered }) => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({ httpGet });
  });
  afterAll(async () => stack.close());

  it('refuses GET calls of the operations it does not offer, keeps POST', async () => {
    const get = await stack.app.inject({ method: 'GET', url: '/Authentication.asmx/ValidateUser?login=a&password=b&AppId=2&IPAddress=' });
    expect(get.statusCode).toBe(500);
    expect(get.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(get.body).toBe("Request format is unrecognized for URL unexpectedly ending in &#39;/ValidateUser&#39;.\r\n");
    const post = await stack.app.inject({ method: 'POST', url: '/Authentication.asmx/ValidateUser', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'login=a&password=b&AppId=2&IPAddress=' });
    expect(post.statusCode).toBe(200);
    const token = await stack.app.inject({ method: 'GET', url: '/Authentication.asmx/ValidateUserToken?token=x' });
    expect(token.statusCode).toBe(offered.includes('ValidateUserToken') ? 200 : 500);
  });

  it('documents only what it offers, in the WSDL and on the help page', async () => {
    const wsdl = (await stack.app.inject({ method: 'GET', url: '/Authentication.asmx?WSDL' })).body;
    expect(wsdl.includes('<wsdl:port name="AuthenticationHttpGet"')).toBe(offered.length > 0);
    expect(wsdl).not.toContain('name="ValidateUserHttpGetIn"');
    for (const op of offered) expect(wsdl).toContain(`<wsdl:message name="${op}HttpGetIn">`);
    expect(wsdl).toContain('<wsdl:message name="ValidateUserHttpPostIn">');
    const help = (await stack.app.inject({ method: 'GET', url: '/Authentication.asmx?op=ValidateUser' })).body;
    expect(help).not.toContain('HTTP GET');
    expect(help).toContain('HTTP POST');
  });
});
