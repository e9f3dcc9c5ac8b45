/**
 * The service help page: `GET /Authentication.asmx` (operation list) and
 * `GET /Authentication.asmx?op=Name` (one operation: test form and sample messages), modelled on
 * what .NET Framework's DefaultWsdlHelpGenerator.aspx shows. Served as `text/html; charset=utf-8`.
 *
 * Differences from the .NET page, on purpose:
 * - operations are listed in contract order (.NET sorts them by name);
 * - an unknown `op` is reported as `undefined` so the caller can show the list (.NET shows a
 *   "Method not found" page);
 * - the test form is always shown (.NET shows it to local requests only);
 * - no inline script or event handler anywhere (the page runs under a strict CSP:
 *   `default-src 'none'; style-src 'unsafe-inline'; form-action 'self'`), HTML5 doctype, UTF-8.
 *
 * Everything is rendered at start-up into templates whose holes are the parts of the service URL
 * (the whole URL, its host, its path); every value is HTML-escaped, at compile time for the
 * contract's texts and per request for the URL parts (which come from the request's Host).
 */
import { OPERATIONS, SERVICE_NAME, SERVICE_NAMESPACE, SERVICE_PATH, type OperationSpec, type ParamSpec } from '../contract/operations.js';
import { offersHttpGet, type HttpGetOption } from './http-get-option.js';
import { htmlEncode } from './xml-text.js';

export interface HelpPageOptions {
  /** Which operations the HttpGet protocol offers (default all): for the others its sample section is left out. */
  readonly httpGet?: HttpGetOption;
}

export interface HelpPage {
  /** The operation list. */
  index(serviceUrl: string): string;
  /** One operation's page, or `undefined` when the contract has no operation of that exact name. */
  operation(serviceUrl: string, name: string): string | undefined;
}

// --- Templates ----------------------------------------------------------------------------------

/**
 * Holes in a template. Private-use characters: untouched by htmlEncode, never in contract texts,
 * so they survive compile-time escaping and are found again by a plain split.
 */
const SLOT = {
  url: '\uE000url\uE001',
  host: '\uE000host\uE001',
  path: '\uE000path\uE001',
} as const;
type SlotName = keyof typeof SLOT;
const SLOT_PATTERN = /(\uE000(?:url|host|path)\uE001)/;
const SLOT_BY_MARK = new Map<string, SlotName>(Object.entries(SLOT).map(([k, v]) => [v, k as SlotName]));

type Template = (values: Readonly<Record<SlotName, string>>) => string;

function compileTemplate(html: string): Template {
  // split() with a capturing group alternates literal text (even indexes) and slot marks (odd).
  const parts = html.split(SLOT_PATTERN);
  const slots = parts.map((part, i) => (i % 2 === 1 ? SLOT_BY_MARK.get(part) : undefined));
  return (values) => {
    let out = '';
    for (let i = 0; i < parts.length; i++) {
      const slot = slots[i];
      out += slot === undefined ? (parts[i] ?? '') : values[slot];
    }
    return out;
  };
}

/**
 * Host and path of the service URL as .NET's Uri gives them to the help generator
 * (`uri.Host`: no port, no user info; `uri.AbsolutePath`). Parsed by hand so that whatever the
 * Host header held, this never throws; the values are HTML-escaped by the caller.
 */
function urlParts(serviceUrl: string): Record<SlotName, string> {
  const m = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#]*)([^?#]*)/.exec(serviceUrl);
  const authority = m?.[1] ?? '';
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  const host = hostPort.startsWith('[') ? hostPort.slice(0, hostPort.indexOf(']') + 1) : hostPort.replace(/:[^:]*$/, '');
  const path = m ? (m[2] === '' ? '/' : (m[2] ?? '/')) : SERVICE_PATH;
  return { url: htmlEncode(serviceUrl), host: htmlEncode(host), path: htmlEncode(path) };
}

// --- Sample messages ----------------------------------------------------------------------------

/** Builds the HTML of a `<pre>` sample: literal text escaped, placeholders marked up. */
class Sample {
  private readonly out: string[] = [];

  text(s: string): this {
    this.out.push(htmlEncode(s));
    return this;
  }

  /** A placeholder the reader replaces (`string`, `int`, `length`...), shown like .NET's `font.value`. */
  value(s: string): this {
    this.out.push(`<span class="value">${htmlEncode(s)}</span>`);
    return this;
  }

  /** A parameter name in a query string or form body, shown like .NET's `font.key`. */
  key(s: string): this {
    this.out.push(`<span class="key">${htmlEncode(s)}</span>`);
    return this;
  }

  slot(name: SlotName): this {
    this.out.push(SLOT[name]);
    return this;
  }

  line(): this {
    this.out.push('\n');
    return this;
  }

  html(): string {
    return `<pre>${this.out.join('')}</pre>`;
  }
}

const XML_DECLARATION = '<?xml version="1.0" encoding="utf-8"?>';
const XSI = 'http://www.w3.org/2001/XMLSchema-instance';
const XSD = 'http://www.w3.org/2001/XMLSchema';
const SOAP11_ENV = 'http://schemas.xmlsoap.org/soap/envelope/';
const SOAP12_ENV = 'http://www.w3.org/2003/05/soap-envelope';

type SoapVersion = '1.1' | '1.2';

function soapEnvelopeStart(sample: Sample, version: SoapVersion): string {
  const prefix = version === '1.1' ? 'soap' : 'soap12';
  const ns = version === '1.1' ? SOAP11_ENV : SOAP12_ENV;
  sample.text(XML_DECLARATION).line();
  sample.text(`<${prefix}:Envelope xmlns:xsi="${XSI}" xmlns:xsd="${XSD}" xmlns:${prefix}="${ns}">`).line();
  sample.text(`  <${prefix}:Body>`).line();
  return prefix;
}

function soapEnvelopeEnd(sample: Sample, prefix: string): void {
  sample.text(`  </${prefix}:Body>`).line();
  sample.text(`</${prefix}:Envelope>`);
}

/** One element per parameter with its XSD type as placeholder; `<Op xmlns="SVCAPI" />` if none. */
function soapRequestBody(sample: Sample, op: OperationSpec): void {
  if (op.params.length === 0) {
    sample.text(`    <${op.name} xmlns="${SERVICE_NAMESPACE}" />`).line();
    return;
  }
  sample.text(`    <${op.name} xmlns="${SERVICE_NAMESPACE}">`).line();
  for (const p of op.params) sample.text(`      <${p.name}>`).value(p.type).text(`</${p.name}>`).line();
  sample.text(`    </${op.name}>`).line();
}

/**
 * The `OpResult` element. A DataTable is an inline schema then any XML (the diffgram); the help
 * generator writes the schema element in the XSD namespace, which inside the envelope already
 * has the `xsd` prefix, and keeps the end tag on the same line as the `xml` placeholder.
 */
function soapResponseBody(sample: Sample, op: OperationSpec): void {
  const result = `${op.name}Result`;
  sample.text(`    <${op.name}Response xmlns="${SERVICE_NAMESPACE}">`).line();
  if (op.result === 'DataTable') {
    sample.text(`      <${result}>`).line();
    sample.text('        <xsd:schema>').value('schema').text('</xsd:schema>').value('xml').text(`</${result}>`).line();
  } else {
    sample.text(`      <${result}>`).value(op.result).text(`</${result}>`).line();
  }
  sample.text(`    </${op.name}Response>`).line();
}

function soapContentType(version: SoapVersion): string {
  return version === '1.1' ? 'text/xml; charset=utf-8' : 'application/soap+xml; charset=utf-8';
}

function soapRequestSample(op: OperationSpec, version: SoapVersion): string {
  const s = new Sample();
  s.text('POST ').slot('path').text(' HTTP/1.1').line();
  s.text('Host: ').slot('host').line();
  s.text(`Content-Type: ${soapContentType(version)}`).line();
  s.text('Content-Length: ').value('length').line();
  // SOAP 1.2 carries the action in the Content-Type's action parameter, which the sample omits.
  if (version === '1.1') s.text(`SOAPAction: "${SERVICE_NAMESPACE}/${op.name}"`).line();
  s.line();
  const prefix = soapEnvelopeStart(s, version);
  soapRequestBody(s, op);
  soapEnvelopeEnd(s, prefix);
  return s.html();
}

function soapResponseSample(op: OperationSpec, version: SoapVersion): string {
  const s = new Sample();
  s.text('HTTP/1.1 200 OK').line();
  s.text(`Content-Type: ${soapContentType(version)}`).line();
  s.text('Content-Length: ').value('length').line();
  s.line();
  const prefix = soapEnvelopeStart(s, version);
  soapResponseBody(s, op);
  soapEnvelopeEnd(s, prefix);
  return s.html();
}

/** `login=string&password=string&AppId=string`: every HTTP parameter is a string on the wire. */
function formFields(s: Sample, params: readonly ParamSpec[]): void {
  params.forEach((p, i) => {
    if (i > 0) s.text('&');
    s.key(p.name).text('=').value('string');
  });
}

/**
 * The HTTP GET/POST result document. Outside an envelope no `xsd` prefix is declared, so the
 * DataTable's schema element gets the XSD namespace as its default namespace.
 */
function httpResponseSample(op: OperationSpec): string {
  const s = new Sample();
  s.text('HTTP/1.1 200 OK').line();
  s.text('Content-Type: text/xml; charset=utf-8').line();
  s.text('Content-Length: ').value('length').line();
  s.line();
  s.text(XML_DECLARATION).line();
  if (op.result === 'DataTable') {
    s.text(`<DataTable xmlns="${SERVICE_NAMESPACE}">`).line();
    s.text(`  <schema xmlns="${XSD}">`).value('schema').text('</schema>').value('xml').text('</DataTable>');
  } else {
    s.text(`<${op.result} xmlns="${SERVICE_NAMESPACE}">`).value(op.result).text(`</${op.result}>`);
  }
  return s.html();
}

function httpGetRequestSample(op: OperationSpec): string {
  const s = new Sample();
  // .NET writes the `?` even when there are no parameters.
  s.text('GET ').slot('path').text(`/${op.name}?`);
  formFields(s, op.params);
  s.text(' HTTP/1.1').line();
  s.text('Host: ').slot('host').line();
  return s.html();
}

function httpPostRequestSample(op: OperationSpec): string {
  const s = new Sample();
  s.text('POST ').slot('path').text(`/${op.name} HTTP/1.1`).line();
  s.text('Host: ').slot('host').line();
  s.text('Content-Type: application/x-www-form-urlencoded').line();
  s.text('Content-Length: ').value('length').line();
  s.line();
  formFields(s, op.params);
  return s.html();
}

function sampleSection(title: string, requestHtml: string, responseHtml: string): string {
  return [
    '<div class="sample">',
    `<h3>${htmlEncode(title)}</h3>`,
    `<p>The following is a sample ${htmlEncode(title)} request and response. The <span class="value">placeholders</span> shown need to be replaced with actual values.</p>`,
    requestHtml,
    responseHtml,
    '</div>',
  ].join('\n');
}

// --- Page -----------------------------------------------------------------------------------------

/** The look of the .NET page (Verdana, navy banner, beige samples); inline styles are allowed by the CSP. */
const STYLE = `
body { color: #000; background: #fff; font-family: Verdana, sans-serif; margin: 0; }
#content { margin-left: 30px; font-size: .7em; padding-bottom: 2em; }
a:link, a:active { color: #336699; font-weight: bold; text-decoration: underline; }
a:visited { color: #6699cc; font-weight: bold; text-decoration: underline; }
a:hover { color: #cc3300; font-weight: bold; text-decoration: underline; }
p { margin: 0 0 12px 0; }
pre { background: #e5e5cc; padding: 5px; font-family: "Courier New", monospace; font-size: x-small; margin-top: -5px; border: 1px solid #f0f0e0; }
td { font-size: .7em; }
h2 { font-size: 1.5em; font-weight: bold; margin: 25px 0 10px -15px; border-top: 1px solid #003366; color: #003366; }
h3 { font-size: 1.1em; margin: 10px 0 10px -15px; }
ul { margin: 10px 0 0 20px; }
li { margin-top: 10px; }
.value { color: darkblue; font-weight: bold; }
.key { color: darkgreen; font-weight: bold; }
.heading1 { color: #fff; font-family: Tahoma, sans-serif; font-size: 26px; background: #003366; margin: 0 0 0 -30px; padding: 10px 0 3px 15px; }
.intro { margin-left: -15px; }
.test-form table { border: 1px solid #dcdcdc; border-collapse: collapse; }
.test-form td { padding: 4px; }
.frmHeader { background: #dcdcdc; }
.frmHeader:first-child { border-right: 2px solid #fff; }
.frmInput { font-family: Verdana, sans-serif; font-size: 1em; }
.button { background: #dcdcdc; font-family: Verdana, sans-serif; font-size: 1em; border: 1px solid; border-color: #ccc #666 #666 #ccc; }
.submit-row { text-align: right; }
`;

function page(body: string): string {
  return [
    '<!DOCTYPE html>',
    '<html>',
    '<head>',
    '<meta charset="utf-8">',
    `<title>${htmlEncode(SERVICE_NAME)} Web Service</title>`,
    // Discovery link as .NET's page has it: the service path plus `?disco`.
    `<link rel="alternate" type="text/xml" href="${SLOT.path}?disco">`,
    `<style>${STYLE}</style>`,
    '</head>',
    '<body>',
    '<div id="content">',
    `<p class="heading1">${htmlEncode(SERVICE_NAME)}</p><br>`,
    body,
    '</div>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

/** Links are relative to the service path, like .NET's `EscapedFileName + "?op=" + name`. */
const FILE_NAME = SERVICE_PATH.slice(SERVICE_PATH.lastIndexOf('/') + 1);

function indexBody(operations: readonly OperationSpec[]): string {
  const items = operations.map((op) => {
    const href = `${FILE_NAME}?op=${encodeURIComponent(op.name)}`;
    const doc = op.description === '' ? '' : `\n<span><br>${htmlEncode(op.description)}</span>`;
    return `<li><a href="${htmlEncode(href)}">${htmlEncode(op.name)}</a>${doc}</li>`;
  });
  return [
    `<p class="intro">The following operations are supported. For a formal definition, please review the <a href="${htmlEncode(`${FILE_NAME}?WSDL`)}">Service Description</a>.</p>`,
    '<ul>',
    ...items,
    '</ul>',
  ].join('\n');
}

/** The HTTP POST test form: one text box per parameter (none for parameterless operations). */
function testForm(op: OperationSpec): string {
  const rows = op.params.map((p) => {
    const name = htmlEncode(p.name);
    return `<tr><td class="frmText">${name}:</td><td><input class="frmInput" type="text" size="50" name="${name}"></td></tr>`;
  });
  return [
    '<h3>Test</h3>',
    "<p>To test the operation using the HTTP POST protocol, click the 'Invoke' button.</p>",
    // target=_blank as .NET: the result (an XML document) opens next to the help page.
    `<form class="test-form" target="_blank" action="${SLOT.url}/${htmlEncode(op.name)}" method="POST">`,
    '<table>',
    ...(rows.length > 0 ? ['<tr><td class="frmHeader">Parameter</td><td class="frmHeader">Value</td></tr>', ...rows] : []),
    '<tr><td></td><td class="submit-row"><input type="submit" value="Invoke" class="button"></td></tr>',
    '</table>',
    '</form>',
  ].join('\n');
}

function operationBody(op: OperationSpec, httpGet: boolean): string {
  const sections = [
    sampleSection('SOAP 1.1', soapRequestSample(op, '1.1'), soapResponseSample(op, '1.1')),
    sampleSection('SOAP 1.2', soapRequestSample(op, '1.2'), soapResponseSample(op, '1.2')),
    ...(httpGet ? [sampleSection('HTTP GET', httpGetRequestSample(op), httpResponseSample(op))] : []),
    sampleSection('HTTP POST', httpPostRequestSample(op), httpResponseSample(op)),
  ];
  return [
    `<p class="intro">Click <a href="${htmlEncode(FILE_NAME)}">here</a> for a complete list of operations.</p>`,
    `<h2>${htmlEncode(op.name)}</h2>`,
    `<p class="intro">${htmlEncode(op.description)}</p>`,
    testForm(op),
    ...sections,
  ].join('\n');
}

/** Compiles the help pages for `operations` once; the returned functions only fill in the URL. */
export function compileHelpPage(operations: readonly OperationSpec[] = OPERATIONS, options: HelpPageOptions = {}): HelpPage {
  const indexTemplate = compileTemplate(page(indexBody(operations)));
  const opTemplates = new Map<string, Template>(
    operations.map((op) => [op.name, compileTemplate(page(operationBody(op, offersHttpGet(options.httpGet, op.name))))]),
  );
  return {
    index: (serviceUrl: string): string => indexTemplate(urlParts(serviceUrl)),
    operation: (serviceUrl: string, name: string): string | undefined => {
      const template = opTemplates.get(name);
      return template === undefined ? undefined : template(urlParts(serviceUrl));
    },
  };
}
