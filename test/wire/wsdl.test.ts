import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OPERATIONS } from '../../src/contract/operations.js';
import { compileWsdl } from '../../src/wire/wsdl.js';
import { canonicalXml } from '../support/canonical-xml.js';

const CAPTURES = new URL('../fixtures/asmx/captures/', import.meta.url);
const CAPTURED_URL = 'http://127.0.0.1:8091';
const TEST_ORIGIN = 'http://svc.test:8080';
const TEST_URL = `${TEST_ORIGIN}/Authentication.asmx`;

/** The raw body of a `.http` capture (everything after the blank line ending the headers). */
function captureBody(name: string): string {
  const raw = readFileSync(new URL(`${name}.http`, CAPTURES), 'utf8');
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`${name}.http has no header/body separator`);
  return raw.slice(end + 4);
}

/** .NET's `wsdl:definitions` start tag: same declarations as Mono's, in .NET's order. */
const DOTNET_DEFINITIONS_TAG =
  '<wsdl:definitions xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/" xmlns:tm="http://microsoft.com/wsdl/mime/textMatching/" ' +
  'xmlns:soapenc="http://schemas.xmlsoap.org/soap/encoding/" xmlns:mime="http://schemas.xmlsoap.org/wsdl/mime/" xmlns:tns="SVCAPI" ' +
  'xmlns:s="http://www.w3.org/2001/XMLSchema" xmlns:soap12="http://schemas.xmlsoap.org/wsdl/soap12/" ' +
  'xmlns:http="http://schemas.xmlsoap.org/wsdl/http/" targetNamespace="SVCAPI" xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/">';

/** The capture turned into what .NET would send to TEST_URL. */
function expectedDotNetWsdl(capture: string): string {
  const body = captureBody(capture);
  const startTag = /<wsdl:definitions [^>]*>/.exec(body);
  if (!startTag) throw new Error('no wsdl:definitions start tag in capture');
  // Same declarations, only reordered: guard the rewrite itself against a capture that differs.
  const decls = (tag: string): string[] => (tag.match(/\s[\w:]+="[^"]*"/g) ?? []).map((a) => a.trim()).sort();
  expect(decls(DOTNET_DEFINITIONS_TAG)).toEqual(decls(startTag[0]));
  return body
    .replace(startTag[0], DOTNET_DEFINITIONS_TAG)
    .replaceAll(CAPTURED_URL, TEST_ORIGIN)
    .replace(/\r?\n/g, '\r\n');
}

describe('compileWsdl', () => {
  const wsdl = compileWsdl();

  it('has the meaning of the captured WSDL (canonical XML comparison)', () => {
    const captured = canonicalXml(captureBody('doc_wsdl_upper').replaceAll(CAPTURED_URL, TEST_ORIGIN));
    expect(captured.split('\n').length).toBeGreaterThan(500); // the canonicaliser saw the whole document
    expect(captured).toContain('<{http://schemas.xmlsoap.org/wsdl/}definitions targetNamespace="SVCAPI">');
    expect(canonicalXml(wsdl(TEST_URL))).toBe(captured);
  });

  it.each(['doc_wsdl_upper', 'doc_wsdl_lower'])('is byte-for-byte what .NET sends (%s: CRLF, .NET declaration order)', (capture) => {
    expect(wsdl(TEST_URL)).toBe(expectedDotNetWsdl(capture));
  });

  it('uses CRLF only, starts with the XML declaration and has no trailing newline', () => {
    const doc = wsdl(TEST_URL);
    expect(doc.startsWith('<?xml version="1.0" encoding="utf-8"?>\r\n<wsdl:definitions ')).toBe(true);
    expect(doc.replace(/\r\n/g, '')).not.toMatch(/[\r\n]/);
    expect(doc.endsWith('</wsdl:definitions>')).toBe(true);
  });

  it('puts the argument in the four port addresses, and only there', () => {
    const doc = wsdl('https://other.example/Authentication.asmx');
    const locations = [...doc.matchAll(/<(soap|soap12|http):address location="([^"]*)" \/>/g)].map((m) => [m[1], m[2]]);
    expect(locations).toEqual([
      ['soap', 'https://other.example/Authentication.asmx'],
      ['soap12', 'https://other.example/Authentication.asmx'],
      ['http', 'https://other.example/Authentication.asmx'],
      ['http', 'https://other.example/Authentication.asmx'],
    ]);
    expect(doc.split('other.example')).toHaveLength(5);
  });

  it('escapes the address as an XML attribute value', () => {
    const hostile = 'http://a"b<c>d&e\'f/Authentication.asmx';
    const doc = wsdl(hostile);
    expect(doc).toContain('location="http://a&quot;b&lt;c&gt;d&amp;e\'f/Authentication.asmx"');
    expect(doc).not.toContain('a"b');
    // Still well-formed, and the parsed value is the original string.
    const canonical = canonicalXml(doc);
    expect(canonical).toContain(`location=${JSON.stringify(hostile)}`);
  });

  it('renders once: repeated calls with the same URL give identical strings', () => {
    expect(wsdl(TEST_URL)).toBe(wsdl(TEST_URL));
  });

  describe('with the HttpGet protocol disabled', () => {
    const withoutGet = compileWsdl(OPERATIONS, { httpGet: false })(TEST_URL);

    it('omits the HttpGet messages, port type, binding and port', () => {
      expect(withoutGet).not.toMatch(/HttpGet/);
      expect(withoutGet).not.toContain('verb="GET"');
      expect(withoutGet).not.toContain('<http:urlEncoded />');
    });

    it('keeps everything else: it is the full WSDL minus exactly those parts', () => {
      const full = compileWsdl(OPERATIONS, { httpGet: true })(TEST_URL);
      expect(full).toBe(wsdl(TEST_URL));
      const stripped = full
        .replace(/ {2}<wsdl:message name="\w+HttpGet(In|Out)"( \/>|>[\s\S]*?<\/wsdl:message>)\r\n/g, '')
        .replace(/ {2}<wsdl:portType name="AuthenticationHttpGet">[\s\S]*?<\/wsdl:portType>\r\n/, '')
        .replace(/ {2}<wsdl:binding name="AuthenticationHttpGet"[\s\S]*?<\/wsdl:binding>\r\n/, '')
        .replace(/ {4}<wsdl:port name="AuthenticationHttpGet"[\s\S]*?<\/wsdl:port>\r\n/, '');
      expect(withoutGet).toBe(stripped);
    });

    it('still parses and still declares the HttpPost binding and the http return elements', () => {
      const canonical = canonicalXml(withoutGet);
      expect(canonical).toContain('name="AuthenticationHttpPost"');
      expect(canonical).toContain('name="DataTable"');
      const ports = [...withoutGet.matchAll(/<wsdl:port name="(\w+)"/g)].map((m) => m[1]);
      expect(ports).toEqual(['AuthenticationSoap', 'AuthenticationSoap12', 'AuthenticationHttpPost']);
    });
  });

  it('follows the contract: a new operation appears in every section', () => {
    const extra = [...OPERATIONS, { name: 'Ping', description: 'Ping.', params: [{ name: 'n', type: 'int' as const }], result: 'boolean' as const }];
    const doc = compileWsdl(extra)(TEST_URL);
    expect(doc).toContain('<s:element minOccurs="1" maxOccurs="1" name="n" type="s:int" />');
    for (const name of ['PingSoapIn', 'PingSoapOut', 'PingHttpGetIn', 'PingHttpGetOut', 'PingHttpPostIn', 'PingHttpPostOut']) {
      expect(doc).toContain(`<wsdl:message name="${name}">`);
    }
    expect(doc).toContain('<soap12:operation soapAction="SVCAPI/Ping" style="document" />');
    expect(doc).toContain('<http:operation location="/Ping" />');
  });
});
