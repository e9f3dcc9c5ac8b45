import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compileDisco } from '../../src/wire/disco.js';
import { canonicalXml } from '../support/canonical-xml.js';

const CAPTURES = new URL('../fixtures/asmx/captures/', import.meta.url);
const CAPTURED_URL = 'http://127.0.0.1:8091';
const TEST_ORIGIN = 'http://svc.test:8080';
const TEST_URL = `${TEST_ORIGIN}/Authentication.asmx`;

function captureBody(name: string): string {
  const raw = readFileSync(new URL(`${name}.http`, CAPTURES), 'utf8');
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`${name}.http has no header/body separator`);
  return raw.slice(end + 4);
}

describe('compileDisco', () => {
  const disco = compileDisco();

  it('is byte-for-byte the captured disco document with CRLF and our host', () => {
    const expected = captureBody('doc_disco').replaceAll(CAPTURED_URL, TEST_ORIGIN).replace(/\r?\n/g, '\r\n');
    expect(disco(TEST_URL)).toBe(expected);
  });

  it('points contractRef at URL?wsdl, docRef and both SOAP addresses at the URL', () => {
    const doc = disco('https://other.example/x/Authentication.asmx');
    expect(doc).toContain('ref="https://other.example/x/Authentication.asmx?wsdl" docRef="https://other.example/x/Authentication.asmx"');
    expect(doc.match(/<soap address="https:\/\/other\.example\/x\/Authentication\.asmx"/g)).toHaveLength(2);
  });

  it('escapes the URL and stays well-formed', () => {
    const hostile = 'http://a"b<c>&d/Authentication.asmx';
    const doc = disco(hostile);
    expect(doc).toContain('docRef="http://a&quot;b&lt;c&gt;&amp;d/Authentication.asmx"');
    expect(canonicalXml(doc)).toContain(`docRef=${JSON.stringify(hostile)}`);
  });
});
