/**
 * "Answers in the ASMX shape": what any response of the service must look like, whatever was
 * sent. This is deliberately independent of src/ (its own saxes tree, its own constants), so a
 * bug in the wire layer cannot hide itself by being used to check its own output.
 *
 * The rules (shared/reference/asmx/README.md, src/wire/wire-response.ts):
 * - POST /Authentication.asmx: 200 and 500 are one-line SOAP envelopes of the protocol's version
 *   (a VersionMismatch fault is always SOAP 1.1) whose Body holds `<OpResponse xmlns="SVCAPI">`
 *   or `<soap:Fault>`; 400 and 415 have an empty body. The one HTML answer is the ASP.NET error
 *   page for a JSON post (README 5).
 * - /Authentication.asmx/Op: 200 is `<?xml ...?>` CRLF `<string|boolean|DataTable xmlns="SVCAPI"`,
 *   500 is text/plain ending in CRLF; `/Authentication.asmx/` alone is ASP.NET's error page.
 * - Cache-Control `private, max-age=0` on successes, `private` on errors (a MustUnderstand
 *   fault keeps the success value: ASMX raises it after the method was bound); `no-store` is
 *   accepted on the answers of operations whose result can carry a secret (product decision).
 * - Nothing that betrays the implementation: stack traces, paths, JS/SQLite error names,
 *   framework error codes, version banners.
 */
import { TextDecoder } from 'node:util';
import { SaxesParser } from 'saxes';
import { OPERATIONS } from '../../src/contract/operations.js';

export const SOAP11_NS = 'http://schemas.xmlsoap.org/soap/envelope/';
export const SOAP12_NS = 'http://www.w3.org/2003/05/soap-envelope';
export const SERVICE_NS = 'SVCAPI';
export const OPERATION_NAMES: readonly string[] = OPERATIONS.map((o) => o.name);
/**
 * Operations whose answers can carry a token or ticket: a product decision (golden DEVIATIONS)
 * sends them with `Cache-Control: no-store` instead of ASMX's values. Taken from the contract
 * data so the oracle follows that decision; everything else here is independent of src/.
 */
const SECRET_OPERATIONS: ReadonlySet<string> = new Set(OPERATIONS.filter((o) => o.resultCarriesSecret === true).map((o) => o.name));

export const SOAP11_CT = 'text/xml; charset=utf-8';
export const SOAP12_CT = 'application/soap+xml; charset=utf-8';
const XML_DECL = '<?xml version="1.0" encoding="utf-8"?>';

export interface SentRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
}

export interface ObservedResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | number | undefined>>;
  readonly body: Buffer;
}

export interface XmlNode {
  readonly ns: string;
  readonly local: string;
  readonly prefix: string;
  readonly children: XmlNode[];
  text: string;
}

/** Well-formedness and namespaces by saxes; null plus the error when the document is broken. */
export function parseXml(text: string): { root: XmlNode; error?: undefined } | { root?: undefined; error: string } {
  const parser = new SaxesParser({ xmlns: true });
  const stack: XmlNode[] = [];
  let root: XmlNode | undefined;
  let error: string | undefined;
  parser.on('error', (e) => {
    error ??= e.message;
  });
  parser.on('doctype', () => {
    error ??= 'response carries a DOCTYPE';
  });
  parser.on('opentag', (tag) => {
    const node: XmlNode = { ns: tag.uri, local: tag.local, prefix: tag.prefix, children: [], text: '' };
    const parent = stack[stack.length - 1];
    if (parent) parent.children.push(node);
    else root = node;
    stack.push(node);
  });
  parser.on('closetag', () => {
    stack.pop();
  });
  parser.on('text', (t) => {
    const top = stack[stack.length - 1];
    if (top) top.text += t;
  });
  parser.write(text).close();
  if (error !== undefined) return { error };
  return root ? { root } : { error: 'no root element' };
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/** What gives the implementation away; never acceptable in an answer to a client. */
const LEAKS: readonly [RegExp, string][] = [
  [/\n\s{4}at /, 'stack trace'],
  [/\/work\//, 'file path /work/'],
  [/node_modules/, 'node_modules path'],
  [/Error:/, '"Error:"'],
  [/TypeError|RangeError|SyntaxError|ReferenceError/, 'JavaScript error name'],
  [/SqliteError|SQLITE_/, 'SQLite error'],
  [/FST_[A-Z_]+/, 'Fastify error code'],
  [/"statusCode"\s*:/, 'framework JSON error body'],
  [/An internal error occurred\./, 'internal error (an exception escaped somewhere)'],
];

export function header(res: ObservedResponse, name: string): string | undefined {
  const v = res.headers[name.toLowerCase()];
  return v === undefined ? undefined : Array.isArray(v) ? v.join(', ') : String(v);
}

function mediaTypeOf(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return (q < 0 ? url : url.slice(0, q)).toLowerCase();
}

function requestHeader(req: SentRequest, name: string): string | undefined {
  for (const [k, v] of Object.entries(req.headers)) if (k.toLowerCase() === name) return v;
  return undefined;
}

/**
 * The operation a request addressed, as far as its answer tells: the `OpResponse` element of a
 * SOAP success, else the SOAPAction / action parameter, else the method name of the path.
 */
function operationOf(req: SentRequest, responseBody: string): string {
  const response = /<soap:Body><([A-Za-z]+)Response xmlns="SVCAPI">/.exec(responseBody)?.[1];
  if (response !== undefined) return response;
  const action = requestHeader(req, 'soapaction') ?? /action="?([^";]*)/i.exec(requestHeader(req, 'content-type') ?? '')?.[1] ?? '';
  const fromAction = /SVCAPI\/([A-Za-z]+)/.exec(action)?.[1];
  if (fromAction !== undefined) return fromAction;
  const path = req.url.split('?')[0] ?? '';
  return path.slice(path.lastIndexOf('/') + 1);
}

function decodablePath(url: string): boolean {
  try {
    decodeURIComponent(url.split('?')[0] ?? '');
    return true;
  } catch {
    return false;
  }
}

function isRuntimeErrorPage(contentType: string | undefined, body: string): boolean {
  return contentType === 'text/html' && body.startsWith('<!DOCTYPE html>') && body.includes('Runtime Error');
}

function soapEnvelopeProblems(req: SentRequest, res: ObservedResponse, body: string): string[] {
  const problems: string[] = [];
  const contentType = header(res, 'content-type');
  const version = contentType === SOAP11_CT ? '1.1' : contentType === SOAP12_CT ? '1.2' : null;
  if (version === null) return [`SOAP ${res.status} with Content-Type ${String(contentType)}`];
  const ns = version === '1.1' ? SOAP11_NS : SOAP12_NS;
  if (!body.startsWith(`${XML_DECL}<soap:Envelope xmlns:soap="${ns}"`)) problems.push('envelope does not start with the declaration and <soap:Envelope xmlns:soap=...> of its version');
  if (/[\r\n]/.test(body)) problems.push('SOAP envelope contains a newline');
  const parsed = parseXml(body);
  if (parsed.root === undefined) return [...problems, `envelope is not well-formed XML: ${parsed.error}`];
  const env = parsed.root;
  if (env.ns !== ns || env.local !== 'Envelope' || env.prefix !== 'soap') problems.push(`root is {${env.ns}}${env.local}`);
  const bodies = env.children.filter((c) => c.ns === ns && c.local === 'Body');
  const others = env.children.filter((c) => !(c.ns === ns && (c.local === 'Body' || c.local === 'Header')));
  if (bodies.length !== 1 || others.length > 0) problems.push('Envelope must hold [Header] Body and nothing else');
  const content = bodies[0]?.children ?? [];
  const payload = content[0];
  if (content.length !== 1 || payload === undefined) return [...problems, `soap:Body holds ${content.length} elements`];

  const requestMedia = mediaTypeOf(requestHeader(req, 'content-type'));
  if (res.status === 200) {
    const op = OPERATION_NAMES.find((o) => payload.local === `${o}Response`);
    if (payload.ns !== SERVICE_NS || op === undefined) problems.push(`200 whose Body holds {${payload.ns}}${payload.local}`);
    else if (payload.children.length !== 1 || payload.children[0]?.local !== `${op}Result`) problems.push(`${op}Response without its single ${op}Result`);
    if (env.children.length !== 1) problems.push('success envelope with a Header');
    if (requestMedia === 'application/soap+xml' && version !== '1.2') problems.push('SOAP 1.2 request answered in SOAP 1.1');
    return problems;
  }

  // 500: a fault.
  if (payload.ns !== ns || payload.local !== 'Fault') return [...problems, `500 whose Body holds {${payload.ns}}${payload.local}`];
  let code: string | undefined;
  if (version === '1.1') {
    const names = payload.children.map((c) => c.local).join(',');
    if (names !== 'faultcode,faultstring,detail' && names !== 'faultcode,faultstring') problems.push(`SOAP 1.1 fault children ${names}`);
    code = payload.children.find((c) => c.local === 'faultcode')?.text;
    if (!['soap:Client', 'soap:Server', 'soap:MustUnderstand', 'soap:VersionMismatch'].includes(code ?? '')) problems.push(`faultcode ${String(code)}`);
  } else {
    const names = payload.children.map((c) => c.local).join(',');
    if (names !== 'Code,Reason,Detail' && names !== 'Code,Reason') problems.push(`SOAP 1.2 fault children ${names}`);
    code = payload.children.find((c) => c.local === 'Code')?.children.find((c) => c.local === 'Value')?.text;
    if (!['soap:Sender', 'soap:Receiver', 'soap:MustUnderstand', 'soap:VersionMismatch'].includes(code ?? '')) problems.push(`Code/Value ${String(code)}`);
    const reason = payload.children.find((c) => c.local === 'Reason')?.children.find((c) => c.local === 'Text');
    if (reason === undefined) problems.push('SOAP 1.2 fault without Reason/Text');
  }
  const versionMismatch = code === 'soap:VersionMismatch';
  // A VersionMismatch is written in SOAP 1.1 with the Upgrade header; every other fault has no Header.
  if (versionMismatch !== (env.children.length === 2)) problems.push('Header present/absent where it should not be');
  if (requestMedia === 'application/soap+xml' && version !== '1.2' && !versionMismatch) problems.push('SOAP 1.2 request answered with a SOAP 1.1 fault');
  const mustUnderstand = code === 'soap:MustUnderstand';
  const cache = header(res, 'cache-control');
  const secretOk = cache === 'no-store' && SECRET_OPERATIONS.has(operationOf(req, body));
  if (!secretOk && cache !== (mustUnderstand ? 'private, max-age=0' : 'private')) problems.push(`fault with Cache-Control ${String(cache)}`);
  return problems;
}

/** Every way the answer to `req` departs from what ASMX could have sent. Empty = in shape. */
export function shapeProblems(req: SentRequest, res: ObservedResponse): string[] {
  const problems: string[] = [];
  const contentType = header(res, 'content-type');
  let body: string;
  try {
    body = STRICT_UTF8.decode(res.body);
  } catch {
    problems.push('body is not valid UTF-8');
    body = res.body.toString('latin1');
  }
  for (const [pattern, what] of LEAKS) if (pattern.test(body)) problems.push(`body leaks ${what}`);
  for (const banner of ['server', 'x-powered-by', 'x-aspnet-version']) {
    if (header(res, banner) !== undefined) problems.push(`version banner header ${banner}`);
  }
  if (contentType === undefined) problems.push('no Content-Type');
  const path = pathOf(req.url);
  const method = req.method.toUpperCase();
  const requestMedia = mediaTypeOf(requestHeader(req, 'content-type'));

  const cache = header(res, 'cache-control');
  const secret = SECRET_OPERATIONS.has(operationOf(req, body));
  if (!(secret && cache === 'no-store')) {
    if (res.status === 200 && cache !== 'private, max-age=0') problems.push(`200 with Cache-Control ${String(cache)}`);
    if (res.status !== 200 && res.status !== 500 && cache !== 'private') problems.push(`${res.status} with Cache-Control ${String(cache)}`);
    if (res.status === 500 && path.startsWith('/authentication.asmx/') && cache !== 'private' && contentType?.startsWith('text/plain')) problems.push(`500 with Cache-Control ${String(cache)}`);
  }

  // A path that cannot be percent-decoded never reaches ASMX: IIS may refuse it with its own
  // 400 page; routing it like any other unknown name (404 / "not valid") is as good.
  if (!decodablePath(req.url) && res.status === 400) {
    if (!String(contentType).startsWith('text/html')) problems.push(`400 with Content-Type ${String(contentType)} (IIS answers with an HTML page)`);
    return problems;
  }

  if (path === '/authentication.asmx' && method === 'POST') {
    switch (res.status) {
      case 400: {
        const expected = requestMedia === 'application/soap+xml' ? SOAP12_CT : SOAP11_CT;
        if (contentType !== expected) problems.push(`400 with Content-Type ${String(contentType)} (expected ${expected})`);
        if (res.body.length !== 0) problems.push('400 with a body');
        break;
      }
      case 415:
        if (contentType !== SOAP11_CT) problems.push(`415 with Content-Type ${String(contentType)}`);
        if (res.body.length !== 0) problems.push('415 with a body');
        break;
      case 200:
        problems.push(...soapEnvelopeProblems(req, res, body));
        break;
      case 500:
        // README 5: a JSON post to the service is refused by the ASP.NET pipeline's error page.
        if (requestMedia === 'application/json') {
          if (!isRuntimeErrorPage(contentType, body)) problems.push('JSON post not answered with the ASP.NET error page');
        } else {
          problems.push(...soapEnvelopeProblems(req, res, body));
        }
        break;
      default:
        problems.push(`SOAP status ${res.status}`);
    }
    return problems;
  }

  if (path.startsWith('/authentication.asmx/') && (method === 'GET' || method === 'POST')) {
    if (res.status === 200) {
      if (contentType !== 'text/xml; charset=utf-8') problems.push(`200 with Content-Type ${String(contentType)}`);
      if (!/^<\?xml version="1\.0" encoding="utf-8"\?>\r\n<(string|boolean|DataTable) xmlns="SVCAPI"( \/>|>)/.test(body)) problems.push('200 is not <?xml?> CRLF <string|boolean|DataTable xmlns="SVCAPI">');
      if (/(^|[^\r])\n/.test(body)) problems.push('bare LF in an HTTP GET/POST document (CRLF on .NET)');
      const parsed = parseXml(body);
      if (parsed.root === undefined) problems.push(`result is not well-formed XML: ${parsed.error}`);
    } else if (res.status === 500) {
      // "/Authentication.asmx/" names no method: ASP.NET fails before ASMX runs (its HTML page).
      if (path === '/authentication.asmx/') {
        if (!isRuntimeErrorPage(contentType, body)) problems.push('empty method name not answered with the ASP.NET error page');
      } else {
        if (contentType !== 'text/plain; charset=utf-8') problems.push(`500 with Content-Type ${String(contentType)} (expected text/plain; charset=utf-8)`);
        if (!body.endsWith('\r\n')) problems.push('text/plain error does not end in CRLF');
        if (/(^|[^\r])\n/.test(body)) problems.push('bare LF in a text/plain error');
      }
    } else {
      problems.push(`HTTP GET/POST status ${res.status}`);
    }
    return problems;
  }

  // Anything else (other paths, documentation, other verbs): IIS / ASP.NET HTML pages, or documents.
  if (res.status >= 400 && !String(contentType).startsWith('text/html')) problems.push(`${res.status} with Content-Type ${String(contentType)} (IIS answers with an HTML page)`);
  return problems;
}
