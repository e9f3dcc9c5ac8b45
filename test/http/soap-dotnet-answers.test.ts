/**
 * SOAP requests the reference captures do not cover, through the whole app (inject, no socket),
 * answered byte for byte as .NET Framework's ASMX answers them: a SOAP 1.2 action naming no
 * operation (Soap12ServerProtocolHelper.RouteRequest), and the (line, position) XmlSerializer
 * quotes for a bad parameter in a compact one-line request (XmlReader.LinePosition of the node
 * after the parameter: an element or end tag at its name).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStack, type TestStack } from '../support/start-app.js';

const DECL = '<?xml version="1.0" encoding="utf-8"?>';
const S11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const S12 = 'http://www.w3.org/2003/05/soap-envelope';
const XSI = 'http://www.w3.org/2001/XMLSchema-instance';
const XSD = 'http://www.w3.org/2001/XMLSchema';

/** A request as .NET's own proxies write it: declaration and envelope on one line. */
function request(ns: string, prefix: string, body: string): string {
  return `${DECL}<${prefix}:Envelope xmlns:xsi="${XSI}" xmlns:xsd="${XSD}" xmlns:${prefix}="${ns}"><${prefix}:Body>${body}</${prefix}:Body></${prefix}:Envelope>`;
}

function fault12(text: string): string {
  return `${DECL}<soap:Envelope xmlns:soap="${S12}" xmlns:xsi="${XSI}" xmlns:xsd="${XSD}"><soap:Body><soap:Fault><soap:Code><soap:Value>soap:Sender</soap:Value></soap:Code><soap:Reason><soap:Text xml:lang="en">${text}</soap:Text></soap:Reason><soap:Detail /></soap:Fault></soap:Body></soap:Envelope>`;
}

function fault11(text: string): string {
  return `${DECL}<soap:Envelope xmlns:soap="${S11}" xmlns:xsi="${XSI}" xmlns:xsd="${XSD}"><soap:Body><soap:Fault><faultcode>soap:Client</faultcode><faultstring>${text}</faultstring><detail /></soap:Fault></soap:Body></soap:Envelope>`;
}

describe('SOAP answers of .NET that the captures do not show', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack();
  });
  afterAll(async () => stack.close());

  const post = (payload: string, headers: Record<string, string>) => stack.app.inject({ method: 'POST', url: '/Authentication.asmx', headers, payload });

  it('SOAP 1.2, an action parameter and a body element that both name no operation: 500, "The action ... was not recognized."', async () => {
    const res = await post(request(S12, 'soap12', '<NoSuchOp xmlns="SVCAPI"><login>demo</login></NoSuchOp>'), {
      'content-type': 'application/soap+xml; charset=utf-8; action="SVCAPI/NoSuchOp&1"',
    });
    expect(res.statusCode).toBe(500);
    expect(res.headers['content-type']).toBe('application/soap+xml; charset=utf-8');
    expect(res.headers['cache-control']).toBe('private');
    expect(res.body).toBe(fault12("Unable to handle request. The action 'SVCAPI/NoSuchOp&amp;1' was not recognized."));
  });

  it('SOAP 1.2 without an action parameter keeps asking for one', async () => {
    const res = await post(request(S12, 'soap12', '<NoSuchOp xmlns="SVCAPI"/>'), { 'content-type': 'application/soap+xml; charset=utf-8' });
    expect(res.statusCode).toBe(500);
    expect(res.body).toBe(fault12('Unable to handle request without a valid action parameter. Please supply a valid soap action.'));
  });

  it('a bad int in a compact request: the position of the next element\'s name, or of the end tag\'s', async () => {
    const params = '<login>demo</login><password>demo-pass</password><AppId>abc</AppId>';
    const withNext = request(S11, 'soap', `<ValidateUser xmlns="SVCAPI">${params}<IPAddress></IPAddress></ValidateUser>`);
    const last = request(S11, 'soap', `<ValidateUser xmlns="SVCAPI">${params}</ValidateUser>`);
    // 1-based column of the name: one past the '<' of <IPAddress>, two past that of </ValidateUser>.
    const next = withNext.indexOf('<IPAddress>') + 1 + 1;
    const end = last.indexOf('</ValidateUser>') + 1 + 2;
    const headers = { 'content-type': 'text/xml; charset=utf-8', soapaction: '"SVCAPI/ValidateUser"' };
    const message = (column: number) =>
      `Server was unable to read request. ---&gt; There is an error in XML document (1, ${column}). ---&gt; Input string was not in a correct format.`;
    const a = await post(withNext, headers);
    expect(a.statusCode).toBe(500);
    expect(a.body).toBe(fault11(message(next)));
    const b = await post(last, headers);
    expect(b.statusCode).toBe(500);
    expect(b.body).toBe(fault11(message(end)));
  });
});
