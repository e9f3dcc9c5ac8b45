/**
 * The request shape memo must never change an answer: whatever it is asked, a decoder built by
 * createSoapRequestDecoder answers exactly what decodeSoapRequest answers. Compared over the
 * golden captures and the malformed-input corpus (after learning every shape they teach), over
 * hole texts substituted into learned envelopes, and across routing keys; plus that the memo is
 * really used, and stays within its bounds.
 */
import { describe, expect, it } from 'vitest';
import { OPERATIONS, type OperationName, type OperationSpec } from '../../src/contract/operations.js';
import { compileContract, type CompiledContract } from '../../src/wire/compiled-contract.js';
import { decodeSoapRequest, type SoapDecoded, type SoapRequestInput } from '../../src/wire/soap-request.js';
import { createSoapRequestDecoder, MAX_BODY_BYTES, MAX_CONTENT_TYPES, MAX_KEYS, MAX_TEMPLATES_PER_KEY, type SoapRequestDecoder } from '../../src/wire/soap-shape-memo.js';
import { parseMediaType } from '../../src/wire/media-type.js';
import { buildCorpus } from '../robustness/corpus.js';
import { captureNames, readCapturedRequest } from '../support/captures.js';

const contract = compileContract({ timeZone: 'UTC' });
const S11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const S12 = 'http://www.w3.org/2003/05/soap-envelope';
const XSI = 'http://www.w3.org/2001/XMLSchema-instance';

function input(body: string | Buffer, contentType: string | undefined, soapAction?: string): SoapRequestInput {
  return { body: typeof body === 'string' ? Buffer.from(body, 'utf8') : body, contentType, soapAction };
}

/** A decoder whose reference decoder counts its calls. */
function countingDecoder(c: CompiledContract = contract): { decode: SoapRequestDecoder; calls: () => number } {
  let calls = 0;
  const decode = createSoapRequestDecoder(c, undefined, {
    decodeFully: (...args) => {
      calls++;
      return decodeSoapRequest(...args);
    },
  });
  return { decode, calls: () => calls };
}

function reference(req: SoapRequestInput, c: CompiledContract = contract): SoapDecoded {
  return decodeSoapRequest(c, req);
}

function capturedInputs(): SoapRequestInput[] {
  const out: SoapRequestInput[] = [];
  for (const name of captureNames()) {
    const req = readCapturedRequest(name);
    if (req.body.length > 2_000_000) continue;
    out.push(input(req.body, req.headers['content-type'], req.headers.soapaction));
  }
  return out;
}

function corpusInputs(): SoapRequestInput[] {
  const out: SoapRequestInput[] = [];
  for (const c of buildCorpus()) {
    if (c.method !== 'POST' || c.body === undefined || c.body.length > 2_000_000) continue;
    out.push(input(c.body, c.headers['content-type'] ?? c.headers['Content-Type'], c.headers.soapaction ?? c.headers.SOAPAction));
  }
  return out;
}

describe('the shape memo answers exactly as decodeSoapRequest', () => {
  it('switched off (performance.shapeMemo: false), every request takes the reference decoder and nothing is learned', () => {
    const inputs = capturedInputs();
    const decode = createSoapRequestDecoder(contract, undefined, { enabled: false });
    for (let pass = 0; pass < 2; pass++) inputs.forEach((req, i) => expect(decode(req), `#${i}`).toEqual(reference(req)));
    expect(decode.stats()).toMatchObject({ hits: 0, templates: 0 });
  });

  it('over the golden captures and the malformed-input corpus, after learning every valid shape', () => {
    const inputs = [...capturedInputs(), ...corpusInputs()];
    expect(inputs.length).toBeGreaterThan(1000);
    const expected = inputs.map((req) => reference(req));
    const { decode, calls } = countingDecoder();
    // First pass: learns from every successful decode (and must already agree).
    inputs.forEach((req, i) => expect(decode(req), `learning #${i}`).toEqual(expected[i]));
    const learned = decode.stats();
    expect(learned.templates).toBeGreaterThan(10);
    // Second pass: every learned shape now answers from the memo.
    const before = calls();
    inputs.forEach((req, i) => expect(decode(req), `#${i}`).toEqual(expected[i]));
    // And with the Content-Type already parsed, as src/http/app.ts passes it.
    inputs.forEach((req, i) => expect(decode({ ...req, media: parseMediaType(req.contentType) }), `media #${i}`).toEqual(expected[i]));
    const hits = decode.stats().hits - learned.hits;
    expect(hits).toBeGreaterThan(100);
    expect(calls() - before).toBe(2 * inputs.length - hits);
  });

  it('with every valid shape of those learned in turn, against every request of its routing key', () => {
    // A key holds only a few templates, so the shapes are learned four at a time, each batch by
    // a fresh decoder that then decodes every request sharing the key.
    const groups = new Map<string, { inputs: SoapRequestInput[]; expected: SoapDecoded[] }>();
    for (const req of [...capturedInputs(), ...corpusInputs()]) {
      // Larger bodies never reach the memo (the test above has them).
      if (req.body.length > MAX_BODY_BYTES) continue;
      const media = parseMediaType(req.contentType);
      const key = `${media.type}|${media.type === 'text/xml' ? req.soapAction : media.params.get('action')}`;
      const group = groups.get(key) ?? { inputs: [], expected: [] };
      group.inputs.push(req);
      group.expected.push(reference(req));
      groups.set(key, group);
    }
    let hits = 0;
    for (const [key, group] of groups) {
      const valid = group.inputs.filter((_, i) => group.expected[i]?.ok === true);
      for (let from = 0; from < valid.length; from += MAX_TEMPLATES_PER_KEY) {
        const decode = createSoapRequestDecoder(contract);
        for (const req of valid.slice(from, from + MAX_TEMPLATES_PER_KEY)) decode(req);
        const learnedHits = decode.stats().hits;
        group.inputs.forEach((req, i) => expect(decode(req), `${key} #${i}`).toEqual(group.expected[i]));
        hits += decode.stats().hits - learnedHits;
      }
    }
    expect(hits).toBeGreaterThan(500);
  });
});

// Valid envelopes of the cheap and the parameter-rich operations, in the captured layout
// (declaration, indentation) and in the compact one; `$0`, `$1`... mark the hole texts.
interface Shape {
  readonly name: string;
  readonly template: string;
  readonly valid: readonly string[];
  readonly operation: string;
}

const INDENTED = (ns: string, prefix: string, inner: string, header = ''): string =>
  `<?xml version="1.0" encoding="utf-8"?>\n<${prefix}:Envelope xmlns:xsi="${XSI}" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:${prefix}="${ns}">\n${header}  <${prefix}:Body>\n    ${inner}\n  </${prefix}:Body>\n</${prefix}:Envelope>`;
const COMPACT = (ns: string, prefix: string, inner: string, header = ''): string =>
  `<${prefix}:Envelope xmlns:${prefix}="${ns}" xmlns:xsi="${XSI}">${header}<${prefix}:Body>${inner}</${prefix}:Body></${prefix}:Envelope>`;

const OPS: readonly { operation: string; inner: string; valid: readonly string[] }[] = [
  {
    operation: 'ValidateUser',
    inner: '<ValidateUser xmlns="SVCAPI">\n      <login>$0</login>\n      <password>$1</password>\n      <AppId>$2</AppId>\n      <IPAddress>$3</IPAddress>\n    </ValidateUser>',
    valid: ['demo', 'demo-pass', '2', ''],
  },
  { operation: 'ValidateUserToken', inner: '<ValidateUserToken xmlns="SVCAPI"><token>$0</token></ValidateUserToken>', valid: ['00000000-0000-0000-0000-000000000000'] },
  {
    operation: 'WhatsNew',
    inner: '<WhatsNew xmlns="SVCAPI"><AppToken>$0</AppToken><AppID>$1</AppID><AppVersion>$2</AppVersion><Language>$3</Language><qtyNews>$4</qtyNews></WhatsNew>',
    valid: ['tok', '2', '1.0', 'en', '5'],
  },
  { operation: 'GetUserLoginURL', inner: '<GetUserLoginURL xmlns="SVCAPI"><token>$0</token><AppID>$1</AppID></GetUserLoginURL>', valid: ['tok', '7'] },
  // Holes that bind nothing: a header's text, a duplicate, an unknown child, a nil string.
  {
    operation: 'WhatsNew',
    inner: '<WhatsNew xmlns="SVCAPI"><AppID>$0</AppID><AppID>$1</AppID><Other>$2</Other><AppToken xsi:nil="true"/><Language/></WhatsNew>',
    valid: ['1', '2', 'x'],
  },
];
const HEADER = (prefix: string): string => `<${prefix}:Header><h:Trace xmlns:h="urn:t" ${prefix}:mustUnderstand="0">$H</h:Trace></${prefix}:Header>`;

function shapes(): Shape[] {
  const out: Shape[] = [];
  for (const [version, ns, prefix] of [
    ['1.1', S11, 'soap'],
    ['1.2', S12, 'soap12'],
  ] as const) {
    for (const op of OPS) {
      for (const [layout, wrap] of [
        ['indented', INDENTED],
        ['compact', COMPACT],
      ] as const) {
        out.push({ name: `${op.operation} ${layout} SOAP ${version}`, template: wrap(ns, prefix, op.inner), valid: op.valid, operation: op.operation });
        out.push({ name: `${op.operation} ${layout} SOAP ${version} + header`, template: wrap(ns, prefix, op.inner, HEADER(prefix)), valid: [...op.valid, 'trace'], operation: op.operation });
      }
    }
  }
  return out;
}

function fill(template: string, holes: readonly string[]): string {
  return template.replace(/\$(\d|H)/g, (_m, k: string) => {
    const value = k === 'H' ? holes[holes.length - 1] : holes[Number(k)];
    if (value === undefined) throw new Error(`no value for $${k}`);
    return value;
  });
}

const HOLE_TEXTS = [
  '',
  'demo',
  '&amp;&lt;&#x41;&#65;',
  '&gt;&quot;&apos;&#x10FFFF;&#13;&#9;',
  '&foo;',
  '&#0;',
  '&#xD800;',
  '&#x110000;',
  '&#;',
  '&',
  '&amp',
  'a & b',
  ']]>',
  ']]',
  'a]]>b',
  '>',
  'a\rb',
  '\r\n',
  'a\tb',
  'a\nb',
  ' \n\t ',
  'José',
  'é€',
  '😀',
  'a\uD800b',
  '\uDC00',
  '\uFFFE',
  '\uFFFF',
  '\uFFFD',
  '\u0001',
  '\u000B',
  '\u0085\u2028',
  'abc',
  ' 12 ',
  '\t7\n',
  '&#32;5&#10;',
  '+5',
  '-5',
  '+-5',
  '1 2',
  '0x10',
  '1e3',
  '１２',
  '2147483647',
  '2147483648',
  '-2147483648',
  '-2147483649',
  '99999999999999999999',
  '-0',
  '0',
  '00012',
  'x'.repeat(9000),
];

function contentTypes(version: '1.1' | '1.2', operation: string): { contentType: string; soapAction?: string }[] {
  return version === '1.1'
    ? [
        { contentType: 'text/xml; charset=utf-8', soapAction: `"SVCAPI/${operation}"` },
        { contentType: 'text/xml; charset=utf-8', soapAction: `SVCAPI/${operation}` },
        { contentType: 'text/xml' },
      ]
    : [{ contentType: `application/soap+xml; charset=utf-8; action="SVCAPI/${operation}"` }, { contentType: 'application/soap+xml; charset=utf-8' }];
}

describe('hole texts substituted into learned envelopes', () => {
  it('decode as decodeSoapRequest decodes them, one hole at a time and all at once', () => {
    let compared = 0;
    let hits = 0;
    for (const shape of shapes()) {
      const version = shape.name.includes('SOAP 1.2') ? '1.2' : '1.1';
      for (const { contentType, soapAction } of contentTypes(version, shape.operation)) {
        // One decoder per shape and key: shapes sharing a key would otherwise fill it.
        const { decode, calls } = countingDecoder();
        const learnFrom = input(fill(shape.template, shape.valid), contentType, soapAction);
        const learned = reference(learnFrom);
        expect(learned, shape.name).toMatchObject({ ok: true });
        expect(decode(learnFrom), shape.name).toEqual(learned);
        // The learned request itself now comes from the memo.
        const before = calls();
        expect(decode(learnFrom), shape.name).toEqual(learned);
        expect(calls(), `${shape.name} is memoised`).toBe(before);
        for (let hole = 0; hole < shape.valid.length; hole++) {
          for (const text of HOLE_TEXTS) {
            const holes = shape.valid.slice();
            holes[hole] = text;
            const req = input(fill(shape.template, holes), contentType, soapAction);
            expect(decode(req), `${shape.name}, hole ${hole} = ${JSON.stringify(text)}`).toEqual(reference(req));
            compared++;
          }
        }
        for (const text of HOLE_TEXTS) {
          const req = input(fill(shape.template, shape.valid.map(() => text)), contentType, soapAction);
          expect(decode(req), `${shape.name}, every hole = ${JSON.stringify(text)}`).toEqual(reference(req));
          compared++;
        }
        hits += decode.stats().hits - 1;
      }
    }
    expect(compared).toBeGreaterThan(5000);
    // Most substitutions are plain text and hit; the others went to the reference decoder.
    expect(hits).toBeGreaterThan(compared / 3);
  });

  it('answers with the operation, version and arguments of the substituted texts', () => {
    const { decode, calls } = countingDecoder();
    const shape = INDENTED(S11, 'soap', OPS[0]?.inner ?? '');
    const ct = 'text/xml; charset=utf-8';
    decode(input(fill(shape, ['demo', 'demo-pass', '2', '']), ct, '"SVCAPI/ValidateUser"'));
    const before = calls();
    const r = decode(input(fill(shape, ['a&amp;b', '', ' -17 ', 'x&#x41;']), ct, '"SVCAPI/ValidateUser"'));
    expect(r).toMatchObject({ ok: true, version: '1.1', operation: { name: 'ValidateUser' }, args: ['a&b', '', -17, 'xA'] });
    expect(calls()).toBe(before);
    // An int that does not parse: the reference decoder words the fault, with its position.
    const badReq = input(fill(shape, ['demo', 'demo-pass', '2x', '']), ct, '"SVCAPI/ValidateUser"');
    const bad = decode(badReq);
    expect(bad).toEqual(reference(badReq));
    expect(bad).toMatchObject({ ok: false, error: { code: 'SOAP_BAD_PARAMETER', line: 7 } });
    expect(calls()).toBe(before + 1);
  });

  it('matches the whole text only: nothing may precede or follow the template', () => {
    const { decode, calls } = countingDecoder();
    const xml = COMPACT(S11, 'soap', '<ValidateUserToken xmlns="SVCAPI"><token>t</token></ValidateUserToken>');
    const sa = '"SVCAPI/ValidateUserToken"';
    decode(input(xml, 'text/xml', sa));
    const before = calls();
    // Cut short inside the fixed head, and inside the fixed text after the hole (a comparison
    // that would run past the end of the text).
    const cut = [xml.slice(0, 20), xml.slice(0, xml.indexOf('</token>') + 3), xml.slice(0, xml.indexOf('<token>') + 4)];
    const variants = [`${xml}\n`, `${xml}<x/>`, `${xml}x`, `${xml}<!-- c -->`, ` ${xml}`, `<?xml version="1.0"?>${xml}`, xml.slice(0, -1), xml.replace('</token>', '</token>\n'), ...cut];
    for (const text of variants) {
      const req = input(text, 'text/xml', sa);
      expect(decode(req), JSON.stringify(text)).toEqual(reference(req));
    }
    expect(calls() - before).toBe(variants.length);
  });

  it('never reuses a template of another routing key', () => {
    const { decode } = countingDecoder();
    const token = COMPACT(S11, 'soap', '<ValidateUserToken xmlns="SVCAPI"><token>t</token></ValidateUserToken>');
    const token12 = COMPACT(S12, 'soap12', '<ValidateUserToken xmlns="SVCAPI"><token>t</token></ValidateUserToken>');
    const learnFrom = [
      input(token, 'text/xml; charset=utf-8', '"SVCAPI/ValidateUserToken"'),
      input(token12, 'application/soap+xml; charset=utf-8; action="SVCAPI/ValidateUserToken"'),
    ];
    for (const req of learnFrom) decode(req);
    expect(decode.stats().templates).toBe(2);
    const others = [
      input(token, 'text/xml; charset=utf-8', '"SVCAPI/WhatsNew"'),
      input(token, 'text/xml; charset=utf-8', '"SVCAPI/GetUserLoginURL"'),
      input(token, 'text/xml; charset=utf-8', '"SVCAPI/Nope"'),
      input(token, 'text/xml; charset=utf-8', ''),
      input(token, 'text/xml; charset=utf-8'),
      input(token, 'application/soap+xml; charset=utf-8; action="SVCAPI/ValidateUserToken"'),
      input(token, 'application/xml', '"SVCAPI/ValidateUserToken"'),
      input(token, undefined, '"SVCAPI/ValidateUserToken"'),
      input(token12, 'application/soap+xml; charset=utf-8; action="SVCAPI/WhatsNew"'),
      input(token12, 'application/soap+xml; charset=utf-8; action="SVCAPI/GetUserLoginURL"'),
      input(token12, 'application/soap+xml; charset=utf-8'),
      input(token12, 'text/xml; charset=utf-8', '"SVCAPI/WhatsNew"'),
      input(token12, 'text/xml; charset=utf-8'),
      // Without SOAPAction, text/xml routes on its action parameter (the SOAP 1.2 router).
      input(token, 'text/xml; charset=utf-8; action="SVCAPI/WhatsNew"'),
    ];
    const hits = decode.stats().hits;
    for (const req of others) expect(decode(req), `${req.contentType} ${req.soapAction}`).toEqual(reference(req));
    // None was answered from a template learned under another key...
    expect(decode.stats().hits).toBe(hits);
    // ...and once learned under their own key, they still agree.
    for (const req of others) expect(decode(req), `${req.contentType} ${req.soapAction}`).toEqual(reference(req));
    expect(decode.stats().hits).toBeGreaterThan(hits);
  });

  it('keys SOAP 1.2 on the action parameter as ASMX reads it (ContentType.GetParameter, then UrlDecode)', () => {
    const token12 = COMPACT(S12, 'soap12', '<ValidateUserToken xmlns="SVCAPI"><token>t</token></ValidateUserToken>');
    // Each routes to WhatsNew (the last: by its body element, its action being unknown), which
    // no RFC 9110 reading of the header sees: none may come from a template of another key.
    const variants = [
      'application/soap+xml; charset=utf-8; actionX=SVCAPI/WhatsNew',
      'application/soap+xml; charset=utf-8; action; action=SVCAPI/WhatsNew',
      "application/soap+xml; charset=utf-8; action='SVCAPI/WhatsNew'",
      'application/soap+xml; charset=utf-8; action="SVCAPI/WhatsNew;x"',
      'application/soap+xml; charset=utf-8; action="SVCAPI%2FWhatsNew"',
      'application/soap+xml; charset=utf-8; action="SVCAPI/ValidateUserToken\\"x"',
    ];
    for (const contentType of variants) {
      const { decode } = countingDecoder();
      decode(input(token12, 'application/soap+xml; charset=utf-8'));
      decode(input(token12, 'application/soap+xml; charset=utf-8; action="SVCAPI/ValidateUserToken"'));
      expect(decode.stats().templates).toBe(2);
      const req = input(token12, contentType);
      const expected = reference(req);
      expect(expected, contentType).toMatchObject({ ok: true, operation: { name: contentType.includes('WhatsNew') ? 'WhatsNew' : 'ValidateUserToken' } });
      expect(decode(req), contentType).toEqual(expected);
      expect(decode.stats().hits, contentType).toBe(0);
    }
  });

  it('matches on the decoded text, whatever charset it came in', () => {
    const { decode, calls } = countingDecoder();
    const xml = COMPACT(S11, 'soap', '<ValidateUserToken xmlns="SVCAPI"><token>$0</token></ValidateUserToken>');
    decode(input(fill(xml, ['abc']), 'text/xml; charset=utf-8', '"SVCAPI/ValidateUserToken"'));
    const before = calls();
    const cases = [
      input(Buffer.from(fill(xml, ['José']), 'latin1'), 'text/xml; charset=iso-8859-1', '"SVCAPI/ValidateUserToken"'),
      input(Buffer.from(fill(xml, ['José']), 'latin1'), 'text/xml; charset=utf-8', '"SVCAPI/ValidateUserToken"'),
      input(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(fill(xml, ['José']), 'utf16le')]), 'text/xml', '"SVCAPI/ValidateUserToken"'),
      input(Buffer.from(fill(xml, ['José']), 'utf16le'), 'text/xml; charset=utf-16', '"SVCAPI/ValidateUserToken"'),
      input(Buffer.from(fill(xml, ['José']), 'utf16le'), 'text/xml', '"SVCAPI/ValidateUserToken"'),
      input(Buffer.from(fill(xml, ['José'])), 'text/xml; charset=bogus', '"SVCAPI/ValidateUserToken"'),
    ];
    for (const req of cases) expect(decode(req), req.contentType).toEqual(reference(req));
    expect(decode.stats().hits).toBeGreaterThanOrEqual(4);
    expect(calls() - before).toBeLessThanOrEqual(2);
  });

  it('learns nothing it cannot prove: xsi:nil on a hole, ">" in an attribute, CDATA, comments, CR', () => {
    const { decode } = countingDecoder();
    const ct = 'text/xml; charset=utf-8';
    const sa = '"SVCAPI/ValidateUserToken"';
    const unlearnable = [
      COMPACT(S11, 'soap', `<ValidateUserToken xmlns="SVCAPI"><token xsi:nil="false">t</token></ValidateUserToken>`),
      COMPACT(S11, 'soap', `<ValidateUserToken xmlns="SVCAPI"><token xsi:nil="true">t</token></ValidateUserToken>`),
      COMPACT(S11, 'soap', `<ValidateUserToken xmlns="SVCAPI"><token a="x>y">t</token></ValidateUserToken>`),
      COMPACT(S11, 'soap', `<ValidateUserToken xmlns="SVCAPI" a="x>y"><token>t</token></ValidateUserToken>`),
      COMPACT(S11, 'soap', `<ValidateUserToken xmlns="SVCAPI"><token><![CDATA[t]]></token></ValidateUserToken>`),
      COMPACT(S11, 'soap', `<ValidateUserToken xmlns="SVCAPI"><!-- c --><token>t</token></ValidateUserToken>`),
      COMPACT(S11, 'soap', `<ValidateUserToken xmlns="SVCAPI">\r\n<token>t</token></ValidateUserToken>`),
    ];
    for (const xml of unlearnable) {
      const req = input(xml, ct, sa);
      expect(decode(req)).toEqual(reference(req));
      expect(reference(req)).toMatchObject({ ok: true });
    }
    expect(decode.stats().templates).toBe(0);
    // Variants of those shapes still agree.
    for (const xml of unlearnable) {
      const req = input(xml.replace('>t<', '>u<').replace('x>y', 'x&gt;y'), ct, sa);
      expect(decode(req)).toEqual(reference(req));
    }
  });
});

describe('Content-Type headers remembered', () => {
  it('parse as parseMediaType parses them, every header of the captures and the corpus, remembered or not (full, or switched off)', () => {
    const headers = [...capturedInputs(), ...corpusInputs()].map((r) => r.contentType);
    headers.push(undefined, '', 'application/soap+xml; charset=utf-8; action="SVCAPI/ValidateUserToken"', 'text/xml;charset="utf-8"; x=";"');
    for (const decode of [createSoapRequestDecoder(contract), createSoapRequestDecoder(contract, undefined, { enabled: false })]) {
      for (let round = 0; round < 2; round++) {
        for (const header of headers) expect(decode.mediaType(header), String(header)).toEqual(parseMediaType(header));
      }
    }
    expect(new Set(headers).size).toBeGreaterThan(MAX_CONTENT_TYPES);
  });

  it('route SOAP 1.2 by the remembered action parameter exactly as by a fresh read, for every spelling', () => {
    const { decode } = countingDecoder();
    const xml12 = COMPACT(S12, 'soap12', '<ValidateUserToken xmlns="SVCAPI"><token>t</token></ValidateUserToken>');
    const spellings = ['action="SVCAPI/ValidateUserToken"', 'action=SVCAPI/ValidateUserToken', ' ACTION = "SVCAPI/WhatsNew"', 'actionX="SVCAPI/ValidateUserToken"', 'action="SVCAPI%2FValidateUserToken"', 'charset=utf-8'];
    for (let round = 0; round < 3; round++) {
      for (const spelling of spellings) {
        const req = input(xml12, `application/soap+xml; charset=utf-8; ${spelling}`);
        expect(decode(req), spelling).toEqual(reference(req));
      }
    }
  });
});

describe('bounds', () => {
  it(`keeps at most ${MAX_TEMPLATES_PER_KEY} templates per key, and decodes every other shape all the same`, () => {
    const { decode } = countingDecoder();
    const ct = 'text/xml; charset=utf-8';
    const sa = '"SVCAPI/ValidateUserToken"';
    const reqs = Array.from({ length: 20 }, (_, i) => input(COMPACT(S11, 'soap', `<ValidateUserToken xmlns="SVCAPI"><x${i}/><token>t${i}</token></ValidateUserToken>`), ct, sa));
    for (const req of reqs) expect(decode(req)).toEqual(reference(req));
    expect(decode.stats()).toMatchObject({ keys: 1, templates: MAX_TEMPLATES_PER_KEY });
    for (const req of reqs) expect(decode(req)).toEqual(reference(req));
    expect(decode.stats()).toMatchObject({ keys: 1, templates: MAX_TEMPLATES_PER_KEY, hits: MAX_TEMPLATES_PER_KEY });
  });

  it('does not learn keys from non-canonical routing values', () => {
    const { decode } = countingDecoder();
    const xml = COMPACT(S11, 'soap', '<ValidateUserToken xmlns="SVCAPI"><token>t</token></ValidateUserToken>');
    const xml12 = COMPACT(S12, 'soap12', '<ValidateUserToken xmlns="SVCAPI"><token>t</token></ValidateUserToken>');
    for (let i = 0; i < 100; i++) {
      const pad = ' '.repeat(i);
      for (const req of [input(xml, 'text/xml', `${pad}"SVCAPI/ValidateUserToken"${pad}`), input(xml12, `application/soap+xml; action="urn:junk:${i}"`)]) {
        expect(decode(req)).toEqual(reference(req));
      }
    }
    // Only the unpadded SOAPAction (i = 0) is canonical.
    expect(decode.stats()).toMatchObject({ keys: 1, templates: 1 });
  });

  it(`keeps at most ${MAX_KEYS} keys`, () => {
    // A contract with enough operations for more canonical routing values than MAX_KEYS.
    const specs: OperationSpec[] = Array.from({ length: MAX_KEYS }, (_, i) => ({
      name: `Op${i}`,
      description: '',
      params: [{ name: 'token', type: 'string' as const }],
      result: 'boolean' as const,
    }));
    // Names outside OperationName on purpose: only decoding runs here, no handler is looked up.
    const big = compileContract({ timeZone: 'UTC' }, [...OPERATIONS, ...specs] as readonly OperationSpec<OperationName>[]);
    const { decode } = countingDecoder(big);
    const reqs: SoapRequestInput[] = [];
    for (const spec of specs) {
      const xml = COMPACT(S11, 'soap', `<${spec.name} xmlns="SVCAPI"><token>t</token></${spec.name}>`);
      reqs.push(input(xml, 'text/xml', `"SVCAPI/${spec.name}"`), input(xml, 'text/xml', `SVCAPI/${spec.name}`));
    }
    for (const req of reqs) expect(decode(req)).toEqual(reference(req, big));
    expect(decode.stats()).toMatchObject({ keys: MAX_KEYS, templates: MAX_KEYS });
    for (const req of reqs) expect(decode(req)).toEqual(reference(req, big));
    expect(decode.stats()).toMatchObject({ keys: MAX_KEYS, templates: MAX_KEYS, hits: MAX_KEYS });
  });
});
