/**
 * The oracle of the robustness tests must not be vacuous: shape.ts has to reject the wrong
 * shapes it exists for, and accept the reference's own answers.
 */
import { describe, expect, it } from 'vitest';
import { readCapturedResponse } from '../support/captures.js';
import { SOAP11_CT, SOAP12_CT, shapeProblems, type ObservedResponse, type SentRequest } from './shape.js';

const soap11: SentRequest = { method: 'POST', url: '/Authentication.asmx', headers: { 'content-type': 'text/xml; charset=utf-8' } };
const soap12: SentRequest = { method: 'POST', url: '/Authentication.asmx', headers: { 'content-type': 'application/soap+xml; charset=utf-8' } };
const post: SentRequest = { method: 'POST', url: '/Authentication.asmx/ValidateUserToken', headers: { 'content-type': 'application/x-www-form-urlencoded' } };

function res(status: number, contentType: string | undefined, body: string, cacheControl = status === 200 ? 'private, max-age=0' : 'private'): ObservedResponse {
  return { status, headers: { ...(contentType ? { 'content-type': contentType } : {}), 'cache-control': cacheControl }, body: Buffer.from(body, 'utf8') };
}

function captured(name: string): ObservedResponse {
  const c = readCapturedResponse(name);
  return { status: c.status, headers: { 'content-type': c.headers['content-type'], 'cache-control': c.headers['cache-control'] }, body: c.body };
}

const DECL = '<?xml version="1.0" encoding="utf-8"?>';
const ENV11 = `${DECL}<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema">`;

describe('shape oracle', () => {
  it('accepts the reference captures of SOAP successes, faults, 400 and 415', () => {
    for (const [name, req] of [
      ['ok_soap11_ValidateUserToken', soap11],
      ['ok_soap12_WhatsNew', soap12],
      ['f_soap11_appid_abc', soap11],
      ['f_soap12_dtd_external_entity', soap12],
      ['f_soap12_mustunderstand_header', soap12],
      ['f_soap12_not_an_envelope', soap12],
      ['f_soap11_malformed_xml', soap11],
      ['f_soap12_malformed_xml', soap12],
      ['f_soap_ctype_text_plain', { ...soap11, headers: { 'content-type': 'text/plain' } }],
    ] as const) {
      expect([name, shapeProblems(req, captured(name))]).toEqual([name, []]);
    }
  });

  it('accepts HTTP GET/POST results and text/plain errors as .NET writes them (CRLF)', () => {
    expect(shapeProblems(post, res(200, 'text/xml; charset=utf-8', `${DECL}\r\n<boolean xmlns="SVCAPI">false</boolean>`))).toEqual([]);
    expect(shapeProblems(post, res(200, 'text/xml; charset=utf-8', `${DECL}\r\n<string xmlns="SVCAPI" />`))).toEqual([]);
    expect(shapeProblems(post, res(500, 'text/plain; charset=utf-8', 'Missing parameter: token.\r\n'))).toEqual([]);
  });

  it('accepts an IIS-style 400 page for a path that cannot be percent-decoded, never a JSON one', () => {
    const bad: SentRequest = { method: 'GET', url: '/Authentication.asmx/%zz', headers: {} };
    expect(shapeProblems(bad, res(400, 'text/html', '<html>Bad Request - Invalid URL</html>'))).toEqual([]);
    expect(shapeProblems(bad, res(400, 'application/json', '{"error":"Bad Request","code":"FST_ERR_BAD_URL","statusCode":400}'))).not.toEqual([]);
  });

  it('accepts no-store only on operations whose answers can carry a secret', () => {
    const login: SentRequest = { method: 'GET', url: '/Authentication.asmx/ValidateUser?login=a', headers: {} };
    expect(shapeProblems(login, res(200, 'text/xml; charset=utf-8', `${DECL}\r\n<string xmlns="SVCAPI" />`, 'no-store'))).toEqual([]);
    expect(shapeProblems(post, res(200, 'text/xml; charset=utf-8', `${DECL}\r\n<boolean xmlns="SVCAPI">false</boolean>`, 'no-store'))).not.toEqual([]);
  });

  it('rejects what is not ASMX', () => {
    const cases: [SentRequest, ObservedResponse][] = [
      [soap11, res(400, 'application/json', '{"error":"Bad Request","code":"FST_ERR_BAD_URL","statusCode":400}')],
      [soap11, res(400, SOAP11_CT, 'not empty')],
      [soap12, res(400, SOAP11_CT, '')],
      [soap11, res(415, SOAP12_CT, '')],
      [soap11, res(502, SOAP11_CT, '')],
      [soap11, res(500, SOAP11_CT, `${ENV11}<soap:Body><soap:Fault><faultcode>soap:Server</faultcode><faultstring>x</faultstring><detail /></soap:Fault></soap:Body></soap:Envelope>\n`)],
      [soap11, res(500, SOAP11_CT, `${ENV11}<soap:Body><soap:Fault><faultcode>soap:Server</faultcode><faultstring>Server was unable to process request. ---&gt; An internal error occurred.</faultstring><detail /></soap:Fault></soap:Body></soap:Envelope>`)],
      [soap11, res(500, SOAP11_CT, `${ENV11}<soap:Body><soap:Fault><faultcode>soap:Oops</faultcode><faultstring>x</faultstring><detail /></soap:Fault></soap:Body></soap:Envelope>`)],
      [soap11, res(500, SOAP11_CT, `${ENV11}<soap:Body><soap:Fault><faultcode>soap:Server</faultcode><faultstring>TypeError: x is undefined\n    at f (/work/main/src/x.ts:1:1)</faultstring><detail /></soap:Fault></soap:Body></soap:Envelope>`)],
      [soap11, res(200, SOAP11_CT, `${ENV11}<soap:Body><Other xmlns="SVCAPI"/></soap:Body></soap:Envelope>`)],
      [soap11, res(200, SOAP11_CT, `${ENV11}<soap:Body><ValidateUserTokenResponse xmlns="SVCAPI"><ValidateUserTokenResult>false</ValidateUserTokenResult></ValidateUserTokenResponse></soap:Body>`)],
      [soap12, res(200, SOAP11_CT, `${ENV11}<soap:Body><ValidateUserTokenResponse xmlns="SVCAPI"><ValidateUserTokenResult>false</ValidateUserTokenResult></ValidateUserTokenResponse></soap:Body></soap:Envelope>`)],
      [soap11, res(200, SOAP11_CT, `${ENV11}<soap:Body><ValidateUserTokenResponse xmlns="SVCAPI"><ValidateUserTokenResult>false</ValidateUserTokenResult></ValidateUserTokenResponse></soap:Body></soap:Envelope>`, 'private')],
      [post, res(500, 'text/html', '<!DOCTYPE html><html>Runtime Error</html>')],
      [post, res(500, 'text/plain; charset=utf-8', 'Missing parameter: token.\n')],
      [post, res(200, 'text/xml; charset=utf-8', `${DECL}\n<boolean xmlns="SVCAPI">false</boolean>`)],
      [post, res(200, 'text/xml; charset=utf-8', `${DECL}\r\n<boolean xmlns="SVCAPI">false</boolan>`)],
      [post, { status: 200, headers: { 'content-type': 'text/xml; charset=utf-8', 'cache-control': 'private, max-age=0' }, body: Buffer.from([0xff]) }],
    ];
    for (const [req, response] of cases) {
      expect(shapeProblems(req, response), response.body.toString('latin1').slice(0, 80)).not.toEqual([]);
    }
  });
});
