import { describe, expect, it } from 'vitest';
import { OPERATIONS, type OperationSpec } from '../../src/contract/operations.js';
import { compileHelpPage } from '../../src/wire/help-page.js';
import { canonicalXml } from '../support/canonical-xml.js';

const URL_ = 'http://svc.test:8080/Authentication.asmx';
const HOSTILE_URL = 'http://evil"<>&\'.test/Authentication.asmx?"<b>&x=\'y\'';

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };
const decode = (s: string): string => s.replace(/&(amp|lt|gt|quot|#39);/g, (e) => ENTITIES[e] ?? e);

/** The text of each `<pre>`, tags stripped and entities decoded: what a reader sees. */
function preTexts(html: string): string[] {
  return [...html.matchAll(/<pre>([\s\S]*?)<\/pre>/g)].map((m) => decode((m[1] ?? '').replace(/<[^>]*>/g, '')));
}

/** Every start tag's name and raw attribute text. */
function tags(html: string): { name: string; attrs: string }[] {
  return [...html.matchAll(/<([a-zA-Z][a-zA-Z0-9]*)((?:\s+[^\s=>]+(?:="[^"]*")?)*)\s*\/?>/g)].map((m) => ({ name: (m[1] ?? '').toLowerCase(), attrs: m[2] ?? '' }));
}

function attr(tagAttrs: string, name: string): string | undefined {
  const m = new RegExp(`\\s${name}="([^"]*)"`).exec(tagAttrs);
  return m ? decode(m[1] ?? '') : undefined;
}

/** Checks shared by every page we serve. */
function expectSafeHtml(html: string): void {
  expect(html.toLowerCase()).not.toContain('<script');
  expect(html).not.toMatch(/\son[a-z]+\s*=/i); // no inline event handlers
  expect(html).not.toMatch(/javascript:/i);
  expect(html).not.toMatch(/[\uE000-\uF8FF]/); // no template slot left unfilled
  // Every "<" starts a tag or the doctype: all text was escaped.
  const stray = html.replace(/<!DOCTYPE html>/, '').replace(/<\/?[a-zA-Z][a-zA-Z0-9]*((?:\s+[^\s=>]+(?:="[^"]*")?)*)\s*\/?>/g, '');
  expect(stray).not.toContain('<');
  expect(stray).not.toContain('>');
}

describe('compileHelpPage: index', () => {
  const help = compileHelpPage();
  const html = help.index(URL_);

  it('has the service heading, the intro with the Service Description link, and is a complete page', () => {
    expect(html.startsWith('<!DOCTYPE html>\n<html>')).toBe(true);
    expect(html).toContain('<meta charset="utf-8">');
    expect(html).toContain('<title>Authentication Web Service</title>');
    expect(html).toContain('<p class="heading1">Authentication</p>');
    expect(html).toContain('The following operations are supported. For a formal definition, please review the <a href="Authentication.asmx?WSDL">Service Description</a>.');
    expect(html).toContain('<link rel="alternate" type="text/xml" href="/Authentication.asmx?disco">');
    expectSafeHtml(html);
  });

  it('lists the six operations in contract order, each linking to ?op=Name, with its description', () => {
    const links = [...html.matchAll(/<li><a href="([^"]*)">([^<]*)<\/a>/g)].map((m) => [m[1], m[2]]);
    expect(links).toEqual(OPERATIONS.map((op) => [`Authentication.asmx?op=${op.name}`, op.name]));
    expect(links).toHaveLength(6);
    for (const op of OPERATIONS) expect(decode(html)).toContain(op.description);
  });

  it('escapes a hostile service URL', () => {
    const page = help.index(HOSTILE_URL);
    expectSafeHtml(page);
    expect(page).not.toContain('evil"');
    expect(page).toContain('href="/Authentication.asmx?disco"'); // the path part, escaped (nothing to escape here)
  });

  it('does not show version banners', () => {
    expect(html).not.toMatch(/\bversion\s*[:=]?\s*\d|X-AspNet|\bMono\b|\.NET Framework|Microsoft/i);
  });
});

describe('compileHelpPage: operation pages', () => {
  const help = compileHelpPage();

  it('returns undefined for an unknown or differently-cased operation', () => {
    expect(help.operation(URL_, 'NoSuchOp')).toBeUndefined();
    expect(help.operation(URL_, 'validateuser')).toBeUndefined();
    expect(help.operation(URL_, '__proto__')).toBeUndefined();
    expect(help.operation(URL_, 'constructor')).toBeUndefined();
  });

  it.each(OPERATIONS.map((op) => [op.name, op] as const))('%s: heading, description, back link, form and four sample sections', (_name, op) => {
    const html = help.operation(URL_, op.name);
    expect(html).toBeDefined();
    if (html === undefined) return;
    expectSafeHtml(html);

    expect(html).toContain(`<h2>${op.name}</h2>`);
    expect(decode(html)).toContain(`<p class="intro">${op.description}</p>`);
    expect(html).toContain('Click <a href="Authentication.asmx">here</a> for a complete list of operations.');
    expect(html).toContain('<h3>Test</h3>');

    // The form: POST to serviceUrl/Name, one text input per parameter in order, then Invoke.
    const all = tags(html);
    const forms = all.filter((t) => t.name === 'form');
    expect(forms).toHaveLength(1);
    const form = forms[0]?.attrs ?? '';
    expect(attr(form, 'method')).toBe('POST');
    expect(attr(form, 'action')).toBe(`${URL_}/${op.name}`);
    const inputs = all.filter((t) => t.name === 'input');
    const textInputs = inputs.filter((t) => attr(t.attrs, 'type') === 'text').map((t) => attr(t.attrs, 'name'));
    expect(textInputs).toEqual(op.params.map((p) => p.name));
    const submits = inputs.filter((t) => attr(t.attrs, 'type') === 'submit');
    expect(submits.map((t) => attr(t.attrs, 'value'))).toEqual(['Invoke']);

    const sections = [...html.matchAll(/<h3>([^<]*)<\/h3>/g)].map((m) => m[1]);
    expect(sections).toEqual(['Test', 'SOAP 1.1', 'SOAP 1.2', 'HTTP GET', 'HTTP POST']);
    expect(preTexts(html)).toHaveLength(8);
  });

  it('every XML sample is well-formed XML in the SVCAPI namespace', () => {
    for (const op of OPERATIONS) {
      const html = help.operation(URL_, op.name) ?? '';
      for (const text of preTexts(html)) {
        const xmlStart = text.indexOf('<?xml');
        if (xmlStart < 0) continue;
        const canonical = canonicalXml(text.slice(xmlStart));
        expect(canonical).toContain('{SVCAPI}');
      }
    }
  });

  it('ValidateUser: SOAP 1.1 request and response as .NET shows them', () => {
    const [request, response] = preTexts(help.operation(URL_, 'ValidateUser') ?? '');
    expect(request).toBe([
      'POST /Authentication.asmx HTTP/1.1',
      'Host: svc.test',
      'Content-Type: text/xml; charset=utf-8',
      'Content-Length: length',
      'SOAPAction: "SVCAPI/ValidateUser"',
      '',
      '<?xml version="1.0" encoding="utf-8"?>',
      '<soap:Envelope xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/">',
      '  <soap:Body>',
      '    <ValidateUser xmlns="SVCAPI">',
      '      <login>string</login>',
      '      <password>string</password>',
      '      <AppId>int</AppId>',
      '      <IPAddress>string</IPAddress>',
      '    </ValidateUser>',
      '  </soap:Body>',
      '</soap:Envelope>',
    ].join('\n'));
    expect(response).toBe([
      'HTTP/1.1 200 OK',
      'Content-Type: text/xml; charset=utf-8',
      'Content-Length: length',
      '',
      '<?xml version="1.0" encoding="utf-8"?>',
      '<soap:Envelope xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/">',
      '  <soap:Body>',
      '    <ValidateUserResponse xmlns="SVCAPI">',
      '      <ValidateUserResult>string</ValidateUserResult>',
      '    </ValidateUserResponse>',
      '  </soap:Body>',
      '</soap:Envelope>',
    ].join('\n'));
  });

  it('ValidateUser: SOAP 1.2 has no SOAPAction header and the soap12 envelope', () => {
    const [, , request] = preTexts(help.operation(URL_, 'ValidateUser') ?? '');
    expect(request).toContain('Content-Type: application/soap+xml; charset=utf-8\nContent-Length: length\n\n<?xml');
    expect(request).not.toContain('SOAPAction');
    expect(request).toContain('<soap12:Envelope xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:soap12="http://www.w3.org/2003/05/soap-envelope">');
  });

  it('ValidateUser: HTTP GET and POST samples send every parameter as string', () => {
    const pres = preTexts(help.operation(URL_, 'ValidateUser') ?? '');
    expect(pres[4]).toBe('GET /Authentication.asmx/ValidateUser?login=string&password=string&AppId=string&IPAddress=string HTTP/1.1\nHost: svc.test\n');
    expect(pres[5]).toBe('HTTP/1.1 200 OK\nContent-Type: text/xml; charset=utf-8\nContent-Length: length\n\n<?xml version="1.0" encoding="utf-8"?>\n<string xmlns="SVCAPI">string</string>');
    expect(pres[6]).toBe([
      'POST /Authentication.asmx/ValidateUser HTTP/1.1',
      'Host: svc.test',
      'Content-Type: application/x-www-form-urlencoded',
      'Content-Length: length',
      '',
      'login=string&password=string&AppId=string&IPAddress=string',
    ].join('\n'));
    expect(pres[7]).toBe(pres[5]);
  });

  it('marks placeholders and parameter names like .NET (value / key)', () => {
    const html = help.operation(URL_, 'ValidateUserToken') ?? '';
    expect(html).toContain('<span class="key">token</span>=<span class="value">string</span>');
    expect(html).toContain('Content-Length: <span class="value">length</span>');
    expect(html).toContain('&lt;ValidateUserTokenResult&gt;<span class="value">boolean</span>&lt;/ValidateUserTokenResult&gt;');
  });

  it('ValidateUserToken: boolean results', () => {
    const pres = preTexts(help.operation(URL_, 'ValidateUserToken') ?? '');
    expect(pres[1]).toContain('      <ValidateUserTokenResult>boolean</ValidateUserTokenResult>');
    expect(pres[5]).toMatch(/\n<boolean xmlns="SVCAPI">boolean<\/boolean>$/);
  });

  it('WhatsNew: the DataTable result is a schema then xml, as the help generator writes it', () => {
    const pres = preTexts(help.operation(URL_, 'WhatsNew') ?? '');
    expect(pres[0]).toContain('      <AppID>int</AppID>\n');
    expect(pres[0]).toContain('      <qtyNews>int</qtyNews>\n');
    expect(pres[1]).toContain('      <WhatsNewResult>\n        <xsd:schema>schema</xsd:schema>xml</WhatsNewResult>\n    </WhatsNewResponse>');
    expect(pres[5]).toMatch(/\n<DataTable xmlns="SVCAPI">\n {2}<schema xmlns="http:\/\/www\.w3\.org\/2001\/XMLSchema">schema<\/schema>xml<\/DataTable>$/);
  });

  it('parameterless operations: an empty request element, a bare GET "?", an empty POST body, just the Invoke button', () => {
    const html = help.operation(URL_, 'ValidateUserJSON') ?? '';
    const pres = preTexts(html);
    expect(pres[0]).toContain('    <ValidateUserJSON xmlns="SVCAPI" />\n');
    expect(pres[4]).toBe('GET /Authentication.asmx/ValidateUserJSON? HTTP/1.1\nHost: svc.test\n');
    expect(pres[6]?.endsWith('Content-Length: length\n\n')).toBe(true);
    expect(html).not.toContain('frmHeader">Parameter');
    expect(html).toContain('<input type="submit" value="Invoke" class="button">');
  });

  it('takes host and path from the service URL (Uri.Host has no port)', () => {
    const pres = preTexts(help.operation('https://[::1]:8443/svc/Authentication.asmx', 'GetUserLoginURL') ?? '');
    expect(pres[0]).toMatch(/^POST \/svc\/Authentication\.asmx HTTP\/1\.1\nHost: \[::1\]\n/);
    expect(pres[4]).toMatch(/^GET \/svc\/Authentication\.asmx\/GetUserLoginURL\?token=string&AppID=string HTTP\/1\.1\nHost: \[::1\]\n$/);
  });

  it('escapes a hostile service URL everywhere it appears', () => {
    for (const op of OPERATIONS) {
      const html = help.operation(HOSTILE_URL, op.name) ?? '';
      expectSafeHtml(html);
      expect(html).not.toContain('evil"');
      const form = tags(html).find((t) => t.name === 'form');
      expect(attr(form?.attrs ?? '', 'action')).toBe(`${HOSTILE_URL}/${op.name}`);
      expect(preTexts(html)[0]).toContain('Host: evil"<>&\'.test\n');
    }
  });

  it('escapes the contract texts too (names, descriptions, parameter names)', () => {
    const odd: OperationSpec = {
      name: 'Op<i>',
      description: '<script>alert(1)</script> & "quoted" \'single\'',
      params: [{ name: 'a"b<c>', type: 'string' }],
      result: 'string',
    };
    const custom = compileHelpPage([odd]);
    for (const html of [custom.index(URL_), custom.operation(URL_, 'Op<i>') ?? '']) {
      expectSafeHtml(html);
      expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot; &#39;single&#39;');
    }
    const html = custom.operation(URL_, 'Op<i>') ?? '';
    expect(html).toContain('<h2>Op&lt;i&gt;</h2>');
    expect(html).toContain('name="a&quot;b&lt;c&gt;"');
    expect(custom.index(URL_)).toContain('href="Authentication.asmx?op=Op%3Ci%3E"');
  });

  it('leaves out the HTTP GET section when the HttpGet protocol is disabled', () => {
    const noGet = compileHelpPage(OPERATIONS, { httpGet: false });
    const html = noGet.operation(URL_, 'ValidateUser') ?? '';
    const sections = [...html.matchAll(/<h3>([^<]*)<\/h3>/g)].map((m) => m[1]);
    expect(sections).toEqual(['Test', 'SOAP 1.1', 'SOAP 1.2', 'HTTP POST']);
    expect(html).not.toContain('GET /Authentication.asmx');
    expect(noGet.index(URL_)).toBe(compileHelpPage().index(URL_));
  });
});
