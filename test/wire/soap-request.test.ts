import { describe, expect, it } from 'vitest';
import { compileContract } from '../../src/wire/compiled-contract.js';
import { decodeSoapRequest } from '../../src/wire/soap-request.js';

const contract = compileContract({ timeZone: 'UTC' });
const S11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const S12 = 'http://www.w3.org/2003/05/soap-envelope';

function envelope(ns: string, body: string, header = ''): string {
  return `<?xml version="1.0"?><e:Envelope xmlns:e="${ns}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">${header}<e:Body>${body}</e:Body></e:Envelope>`;
}

function decode(body: string | Buffer, contentType = 'text/xml; charset=utf-8', soapAction?: string) {
  return decodeSoapRequest(contract, { body: typeof body === 'string' ? Buffer.from(body) : body, contentType, soapAction });
}

describe('SOAP parameter binding', () => {
  it('takes the first of duplicated parameters and ignores unknown ones', () => {
    const r = decode(envelope(S11, '<ValidateUser xmlns="SVCAPI"><AppId>3</AppId><AppId>4</AppId><Other>x</Other><login>a</login></ValidateUser>'));
    expect(r).toMatchObject({ ok: true, version: '1.1', args: ['a', null, 3, null] });
  });

  it('binds parameters in any order, and nil strings as null', () => {
    const r = decode(envelope(S11, '<ValidateUser xmlns="SVCAPI"><IPAddress>1.2.3.4</IPAddress><login xsi:nil="true"/><password></password></ValidateUser>'));
    expect(r).toMatchObject({ ok: true, args: [null, '', 0, '1.2.3.4'] });
  });

  it('faults on a nil int and on markup inside a parameter, quoting where the element ended', () => {
    expect(decode(envelope(S11, '<ValidateUser xmlns="SVCAPI"><AppId xsi:nil="true" /></ValidateUser>'))).toMatchObject({
      ok: false,
      error: { code: 'SOAP_BAD_PARAMETER', line: 1, detail: 'Input string was not in a correct format.' },
    });
    expect(decode(envelope(S11, '<ValidateUser xmlns="SVCAPI"><login><b/></login></ValidateUser>'))).toMatchObject({ ok: false, error: { code: 'SOAP_BAD_PARAMETER' } });
  });

  it('reads CDATA and entity references as text', () => {
    const r = decode(envelope(S11, '<ValidateUserToken xmlns="SVCAPI"><token><![CDATA[a<b]]>&amp;&#x41;</token></ValidateUserToken>'));
    expect(r).toMatchObject({ ok: true, args: ['a<b&A'] });
  });
});

describe('SOAP routing', () => {
  it('routes SOAP 1.2 on a known action parameter, else on the body element', () => {
    const body = envelope(S12, '<ValidateUserToken xmlns="SVCAPI"><token>t</token></ValidateUserToken>');
    expect(decode(body, 'application/soap+xml; action="SVCAPI/WhatsNew"')).toMatchObject({ ok: true, operation: { name: 'WhatsNew' } });
    expect(decode(body, 'application/soap+xml; action="SVCAPI/Nope"')).toMatchObject({ ok: true, operation: { name: 'ValidateUserToken' } });
  });

  it('an empty Body runs the action with default values; without an action it is a fault', () => {
    expect(decode(envelope(S11, ''), 'text/xml', '"SVCAPI/ValidateUserToken"')).toMatchObject({ ok: true, args: [null] });
    expect(decode(envelope(S11, ''), 'text/xml')).toMatchObject({ ok: false, error: { code: 'SOAP_UNKNOWN_ACTION', action: '' } });
    expect(decode(envelope(S12, ''), 'application/soap+xml')).toMatchObject({ ok: false, error: { code: 'SOAP12_NO_VALID_ACTION' } });
  });

  it('mustUnderstand is honoured for "1" and "true" only, and only after parameters bind', () => {
    const header = (v: string) => `<e:Header><h:Trace xmlns:h="urn:t" e:mustUnderstand="${v}">x</h:Trace></e:Header>`;
    const op = '<ValidateUserToken xmlns="SVCAPI"><token>t</token></ValidateUserToken>';
    expect(decode(envelope(S12, op, header('true')), 'application/soap+xml')).toMatchObject({ ok: false, error: { code: 'SOAP_MUST_UNDERSTAND', header: 'Trace' } });
    expect(decode(envelope(S11, op, header('0')))).toMatchObject({ ok: true });
    const badInt = '<WhatsNew xmlns="SVCAPI"><AppID>x</AppID></WhatsNew>';
    expect(decode(envelope(S11, badInt, header('1')))).toMatchObject({ ok: false, error: { code: 'SOAP_BAD_PARAMETER' } });
  });
});

describe('request text decoding', () => {
  it('honours the charset parameter, the BOM and the XML declaration', () => {
    const xml = envelope(S11, '<ValidateUser xmlns="SVCAPI"><login>José</login></ValidateUser>');
    expect(decode(Buffer.from(xml, 'latin1'), 'text/xml; charset=iso-8859-1')).toMatchObject({ ok: true, args: ['José', null, 0, null] });
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(xml.replace('<?xml version="1.0"?>', ''), 'utf16le')]);
    expect(decode(utf16, 'text/xml')).toMatchObject({ ok: true, args: ['José', null, 0, null] });
    const declared = xml.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="ISO-8859-1"?>');
    expect(decode(Buffer.from(declared, 'latin1'), 'text/xml')).toMatchObject({ ok: true, args: ['José', null, 0, null] });
  });

  it('rejects deep nesting without building the tree', () => {
    const deep = '<a>'.repeat(10_000) + '</a>'.repeat(10_000);
    expect(decode(envelope(S11, deep))).toMatchObject({ ok: false, error: { code: 'SOAP_UNREADABLE' } });
  });
});
