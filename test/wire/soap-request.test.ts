import { describe, expect, it } from 'vitest';
import { compileContract } from '../../src/wire/compiled-contract.js';
import { decodeSoapRequest } from '../../src/wire/soap-request.js';
import { soapErrorResponse } from '../../src/wire/wire-response.js';

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
    // Without SOAPAction, text/xml goes to the SOAP 1.2 router (SoapServerProtocol.GuessVersion).
    expect(decode(envelope(S11, ''), 'text/xml')).toMatchObject({ ok: false, version: '1.1', error: { code: 'SOAP12_NO_VALID_ACTION' } });
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

describe('SOAP 1.2 routing failures, worded as Soap12ServerProtocolHelper.RouteRequest words them', () => {
  const unknownOp = envelope(S12, '<NoSuchOp xmlns="SVCAPI"><login>demo</login></NoSuchOp>');
  const fault = (contentType: string, body = unknownOp) => {
    const r = decode(body, contentType);
    if (r.ok) throw new Error('expected a fault');
    return soapErrorResponse(r.version, r.error);
  };
  const reason = (text: string) =>
    `<soap:Fault><soap:Code><soap:Value>soap:Sender</soap:Value></soap:Code><soap:Reason><soap:Text xml:lang="en">${text}</soap:Text></soap:Reason><soap:Detail /></soap:Fault>`;

  it('an action that names nothing, with a body element that names nothing: "not recognized", quoting the action', () => {
    const r = fault('application/soap+xml; charset=utf-8; action="SVCAPI/NoSuchOp"');
    expect(r.status).toBe(500);
    expect(r.contentType).toBe('application/soap+xml; charset=utf-8');
    expect(r.cacheControl).toBe('private');
    expect(r.body).toContain(reason("Unable to handle request. The action 'SVCAPI/NoSuchOp' was not recognized."));
  });

  it('a missing or empty action keeps asking for one', () => {
    for (const ct of ['application/soap+xml; charset=utf-8', 'application/soap+xml; action=""', 'application/soap+xml; action=', "application/soap+xml; action=' '"]) {
      expect(fault(ct).body, ct).toContain(reason('Unable to handle request without a valid action parameter. Please supply a valid soap action.'));
    }
  });

  it('the action is URL-decoded (HttpUtility.UrlDecode) before it is looked up and when it is quoted', () => {
    expect(decode(unknownOp, 'application/soap+xml; action="SVCAPI%2FWhatsNew"')).toMatchObject({ ok: true, operation: { name: 'WhatsNew' } });
    expect(fault('application/soap+xml; action="SVCAPI/No+Such%20Op%u00e9"').body).toContain("The action 'SVCAPI/No Such Opé' was not recognized.");
  });

  it('markup characters of the action are escaped in the fault text as XmlTextWriter escapes text', () => {
    expect(fault(`application/soap+xml; action="SVCAPI/<a>&'b"`).body).toContain("The action 'SVCAPI/&lt;a&gt;&amp;'b' was not recognized.");
  });

  it('reads the parameter as ContentType.GetParameter does: any quotes trimmed, split at every ";", name matched as a prefix', () => {
    for (const ct of [
      "application/soap+xml; action='SVCAPI/WhatsNew'",
      'application/soap+xml; action="SVCAPI/WhatsNew;x"',
      'application/soap+xml;ACTION = "SVCAPI/WhatsNew"',
      'application/soap+xml; actionX=SVCAPI/WhatsNew; action=SVCAPI/Nope',
      'application/soap+xml; action; action=SVCAPI/WhatsNew',
      'application/soap+xml; action="SVCAPI/WhatsNew"; action=SVCAPI/Nope',
    ]) {
      expect(decode(unknownOp, ct), ct).toMatchObject({ ok: true, operation: { name: 'WhatsNew' } });
    }
    // No unescaping of a backslash: the quote it "escapes" stays in the action.
    expect(fault('application/soap+xml; action="SVCAPI/a\\"b"').body).toContain("The action 'SVCAPI/a\\\"b' was not recognized.");
  });

  it('an unknown action falls back to a known body element, and a known action ignores an unknown body element', () => {
    const known = envelope(S12, '<ValidateUserToken xmlns="SVCAPI"><token>t</token></ValidateUserToken>');
    expect(decode(known, 'application/soap+xml; action="SVCAPI/NoSuchOp"')).toMatchObject({ ok: true, operation: { name: 'ValidateUserToken' }, args: ['t'] });
    expect(decode(unknownOp, 'application/soap+xml; action="SVCAPI/ValidateUserToken"')).toMatchObject({ ok: true, operation: { name: 'ValidateUserToken' }, args: [null] });
  });

  it('SOAP 1.1 URL-decodes the SOAPAction too (Soap11ServerProtocolHelper), before routing and in its fault', () => {
    const body = envelope(S11, '<NoSuchOp xmlns="SVCAPI"/>');
    expect(decode(body, 'text/xml', '"SVCAPI%2FWhatsNew"')).toMatchObject({ ok: true, operation: { name: 'WhatsNew' } });
    expect(decode(body, 'text/xml', 'SVCAPI/No+Such%3COp%3E')).toMatchObject({ ok: false, error: { code: 'SOAP_UNKNOWN_ACTION', action: 'SVCAPI/No Such<Op>' } });
  });

  it('text/xml without SOAPAction is routed by the SOAP 1.2 router: action parameter, body element, its faults in SOAP 1.1', () => {
    const unknown11 = envelope(S11, '<NoSuchOp xmlns="SVCAPI"/>');
    expect(decode(unknown11, 'text/xml; action="SVCAPI/WhatsNew"')).toMatchObject({ ok: true, version: '1.1', operation: { name: 'WhatsNew' } });
    // With a SOAPAction header the SOAP 1.1 router alone decides.
    expect(decode(unknown11, 'text/xml; action="SVCAPI/WhatsNew"', '"SVCAPI/ValidateUserToken"')).toMatchObject({ ok: true, operation: { name: 'ValidateUserToken' } });
    const faultOf = (contentType: string) => {
      const r = decode(unknown11, contentType);
      if (r.ok) throw new Error('expected a fault');
      return soapErrorResponse(r.version, r.error);
    };
    const asked = faultOf('text/xml; charset=utf-8');
    expect(asked.status).toBe(500);
    expect(asked.contentType).toBe('text/xml; charset=utf-8');
    expect(asked.body).toContain(
      '<faultcode>soap:Client</faultcode><faultstring>Unable to handle request without a valid action parameter. Please supply a valid soap action.</faultstring><detail />',
    );
    expect(faultOf('text/xml; action=SVCAPI/Nope').body).toContain("<faultcode>soap:Client</faultcode><faultstring>Unable to handle request. The action 'SVCAPI/Nope' was not recognized.</faultstring>");
  });

  it('the SOAP 1.1 SOAPAction fault keeps its own wording', () => {
    const r = decode(envelope(S11, '<NoSuchOp xmlns="SVCAPI"/>'), 'text/xml; charset=utf-8', '"SVCAPI/NoSuchOp"');
    if (r.ok) throw new Error('expected a fault');
    expect(soapErrorResponse(r.version, r.error).body).toContain(
      '<faultcode>soap:Client</faultcode><faultstring>Server did not recognize the value of HTTP Header SOAPAction: SVCAPI/NoSuchOp.</faultstring>',
    );
  });
});

describe('"There is an error in XML document (line, position)" on compact XML', () => {
  const S11_ENV = `<e:Envelope xmlns:e="${S11}"><e:Body><ValidateUser xmlns="SVCAPI">`;
  const S11_END = '</ValidateUser></e:Body></e:Envelope>';
  const position = (params: string, ns = S11) => {
    const xml = (ns === S11 ? S11_ENV : S11_ENV.replace(S11, S12)) + params + S11_END;
    const r = decode(xml, ns === S11 ? 'text/xml' : 'application/soap+xml');
    if (r.ok || r.error.code !== 'SOAP_BAD_PARAMETER') throw new Error(`expected a bad parameter, got ${JSON.stringify(r)}`);
    return [r.error.line, r.error.column];
  };
  /** The column just after `<AppId>abc</AppId>` in these requests (counted below). */
  const AFTER = 120;
  /** 1-based column where `needle` starts in the request `position` builds (all on line 1). */
  const columnOf = (params: string, needle: string) => {
    const xml = S11_ENV + params + S11_END;
    const at = xml.indexOf(needle, S11_ENV.length + params.indexOf('</AppId>'));
    return at + 1;
  };

  it('an element after the failing one: the column of its name, after "<"', () => {
    // XmlSerializer converts AppId after ReadElementString moved the reader past </AppId>, onto
    // <IPAddress>, whose LinePosition is that of its name. Counting the columns of line 1:
    //   <e:Envelope xmlns:e="                          21 characters  -> 21
    //   http://schemas.xmlsoap.org/soap/envelope/      41             -> 62
    //   ">                                              2             -> 64
    //   <e:Body>                                        8             -> 72
    //   <ValidateUser xmlns="SVCAPI">                  29             -> 101
    //   <AppId>abc</AppId>                             7 + 3 + 8      -> 119
    //   <                                               1             -> 120 (AFTER)
    // so "IPAddress" starts at column 121 (we used to quote 120, where the end tag finished).
    expect(position('<AppId>abc</AppId><IPAddress></IPAddress>')).toEqual([1, 121]);
    expect(position('<AppId>abc</AppId><IPAddress></IPAddress>', S12)).toEqual([1, 121 - S11.length + S12.length]);
  });

  it('an end tag after the failing element: the column of its name, after "</"', () => {
    expect(position('<AppId>abc</AppId>')).toEqual([1, AFTER + '</'.length]);
    expect(position('<login>x</login><AppId>2147483648</AppId>')).toEqual([1, columnOf('<login>x</login><AppId>2147483648</AppId>', 'ValidateUser>')]);
  });

  it('attributes: the next element is at its name, not at an attribute; the failing element\'s own do not count', () => {
    const params = '<AppId a="1">abc</AppId><IPAddress b="2" c="3"/>';
    expect(position(params)).toEqual([1, columnOf(params, 'IPAddress b=')]);
    const selfClosing = '<AppId a="x" />  <IPAddress/>';
    expect(position(selfClosing)).toEqual([1, columnOf(selfClosing, '  <IPAddress')]);
    const thenSelfClosing = '<AppId a="x"/><IPAddress b="2"/>';
    expect(position(thenSelfClosing)).toEqual([1, columnOf(thenSelfClosing, 'IPAddress b=')]);
  });

  it('text or white space after the failing element: its first character', () => {
    expect(position('<AppId>abc</AppId> <IPAddress/>')).toEqual([1, AFTER]);
    expect(position('<AppId>abc</AppId>x')).toEqual([1, AFTER]);
    expect(position('<AppId>abc</AppId>&amp;')).toEqual([1, AFTER]);
  });

  it('a comment, CDATA section or processing instruction after it: just inside its opener', () => {
    expect(position('<AppId>abc</AppId><!--c-->')).toEqual([1, AFTER + '<!--'.length]);
    expect(position('<AppId>abc</AppId><![CDATA[x]]>')).toEqual([1, AFTER + '<![CDATA['.length]);
    expect(position('<AppId>abc</AppId><?pi x?>')).toEqual([1, AFTER + '<?'.length]);
  });

  it('counts from the start of the line the next node is on', () => {
    expect(position('<AppId>abc</AppId>\n<IPAddress/>')).toEqual([1, AFTER]);
    // Line 2 is "  <AppId>abc</AppId>" (2 + 18 characters), then "<IPAddress/>" or "</ValidateUser>".
    expect(position('\n  <AppId>abc</AppId><IPAddress/>')).toEqual([2, 20 + '<'.length + 1]);
    expect(position('\n  <AppId>abc</AppId>')).toEqual([2, 20 + '</'.length + 1]);
    // Pretty-printed, the next node is the white space that ends the line: unchanged.
    expect(position('\n  <AppId>abc</AppId>\n')).toEqual([2, 21]);
  });
});
