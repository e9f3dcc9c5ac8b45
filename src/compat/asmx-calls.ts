/**
 * Calls of Authentication.asmx as its clients make them, on each of the four bindings, and the
 * reading of their answers: what `compat learn` and `compat check` send. Requests are built as
 * the generated proxies write them (SOAP envelopes of one line, `SOAPAction` quoted, forms and
 * query strings percent-encoded); a parameter given as null is left out.
 */
import { SERVICE_NAMESPACE } from '../contract/operations.js';
import { SOAP11_NS, SOAP12_NS } from '../wire/soap-envelope.js';
import { readXmlDocument, type XmlElement } from '../wire/xml-reader.js';
import { escapeXmlText } from '../wire/xml-text.js';
import type { ProbeRequest, ProbeResponse } from './http-probe.js';

export type Binding = 'soap11' | 'soap12' | 'get' | 'post';
export const BINDINGS: readonly Binding[] = ['soap11', 'soap12', 'get', 'post'];

/** Parameters in order; a null value is not sent at all. */
export type CallArgs = readonly (readonly [string, string | null])[];

export interface CallExtras {
  /** Extra request headers (the JSON operations may read their inputs there). */
  readonly headers?: Readonly<Record<string, string>>;
  /** A query string added to the URL (without `?`), on any binding. */
  readonly query?: string;
}

const XML_DECL = '<?xml version="1.0" encoding="utf-8"?>';

export function soapEnvelope(version: '1.1' | '1.2', operation: string, args: CallArgs): string {
  const ns = version === '1.1' ? SOAP11_NS : SOAP12_NS;
  const params = args.filter(([, v]) => v !== null).map(([name, v]) => `<${name}>${escapeXmlText(v ?? '')}</${name}>`).join('');
  return `${XML_DECL}<soap:Envelope xmlns:soap="${ns}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema">`
    + `<soap:Body><${operation} xmlns="${SERVICE_NAMESPACE}">${params}</${operation}></soap:Body></soap:Envelope>`;
}

export function formEncode(args: CallArgs): string {
  return args.filter(([, v]) => v !== null).map(([name, v]) => `${encodeURIComponent(name)}=${encodeURIComponent(v ?? '')}`).join('&');
}

function withQuery(path: string, query: string | undefined): string {
  return query === undefined || query === '' ? path : `${path}${path.includes('?') ? '&' : '?'}${query}`;
}

/** The request a client sends for `operation` on `binding`, at the service path (e.g. /Authentication.asmx). */
export function operationRequest(servicePath: string, binding: Binding, operation: string, args: CallArgs, extras: CallExtras = {}): ProbeRequest {
  const headers = { ...extras.headers };
  switch (binding) {
    case 'soap11':
      return {
        method: 'POST',
        target: withQuery(servicePath, extras.query),
        headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${SERVICE_NAMESPACE}/${operation}"`, ...headers },
        body: soapEnvelope('1.1', operation, args),
      };
    case 'soap12':
      return {
        method: 'POST',
        target: withQuery(servicePath, extras.query),
        headers: { 'content-type': `application/soap+xml; charset=utf-8; action="${SERVICE_NAMESPACE}/${operation}"`, ...headers },
        body: soapEnvelope('1.2', operation, args),
      };
    case 'get': {
      const query = [formEncode(args), extras.query ?? ''].filter((q) => q !== '').join('&');
      return { method: 'GET', target: withQuery(`${servicePath}/${operation}`, query), headers };
    }
    case 'post':
      return {
        method: 'POST',
        target: withQuery(`${servicePath}/${operation}`, extras.query),
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: formEncode(args),
      };
  }
}

/** What an answer says, read as a client reads it. */
export type CallResult =
  | { readonly kind: 'string'; readonly text: string }
  | { readonly kind: 'boolean'; readonly value: boolean }
  | { readonly kind: 'table'; readonly table: XmlElement }
  | { readonly kind: 'fault'; readonly status: number; readonly message: string }
  | { readonly kind: 'unreadable'; readonly status: number; readonly why: string };

/** Big enough for a DataTable of 100 wide rows; the byte ceiling of the exchange bounds it first. */
const READ_LIMITS = Object.freeze({ maxDepth: 32, maxElements: 200_000 });

function child(element: XmlElement | undefined, ns: string, local: string): XmlElement | undefined {
  return element?.children.find((c) => c.ns === ns && c.local === local);
}

function firstLine(text: string): string {
  const line = text.split(/\r?\n/, 1)[0] ?? '';
  return line.length > 300 ? `${line.slice(0, 300)}...` : line;
}

/** Reads the answer of `operation` on `binding`: its result, a fault's message, or why it is neither. */
export function readCallResult(binding: Binding, operation: string, response: ProbeResponse): CallResult {
  const text = response.body.toString('utf8');
  const contentType = response.headers.find(([n]) => n === 'content-type')?.[1] ?? '';
  if (response.status !== 200) {
    if (contentType.startsWith('text/plain')) return { kind: 'fault', status: response.status, message: firstLine(text) };
    const doc = text === '' ? null : readXmlDocument(text, READ_LIMITS);
    if (doc?.ok === true) {
      const reason = findFirst(doc.root, (e) => e.local === 'faultstring' || e.local === 'Text');
      if (reason !== undefined) return { kind: 'fault', status: response.status, message: firstLine(reason.text) };
    }
    return { kind: 'unreadable', status: response.status, why: `HTTP ${response.status}` };
  }
  const doc = readXmlDocument(text, READ_LIMITS);
  if (!doc.ok) return { kind: 'unreadable', status: 200, why: doc.reason === 'too-large' ? 'an XML answer too deep or too large' : 'not an XML answer' };
  let result: XmlElement | undefined;
  if (binding === 'soap11' || binding === 'soap12') {
    const envNs = binding === 'soap11' ? SOAP11_NS : SOAP12_NS;
    if (doc.root.local !== 'Envelope' || doc.root.ns !== envNs) return { kind: 'unreadable', status: 200, why: 'not a SOAP envelope' };
    const response = child(child(doc.root, envNs, 'Body'), SERVICE_NAMESPACE, `${operation}Response`);
    result = child(response, SERVICE_NAMESPACE, `${operation}Result`);
    if (response !== undefined && result === undefined) return operation === 'ValidateUserToken' ? { kind: 'unreadable', status: 200, why: 'no result element' } : { kind: 'string', text: '' };
  } else {
    result = doc.root.ns === SERVICE_NAMESPACE ? doc.root : undefined;
  }
  if (result === undefined) return { kind: 'unreadable', status: 200, why: `not a ${operation} answer` };
  if (operation === 'WhatsNew') return { kind: 'table', table: result };
  if (operation === 'ValidateUserToken') {
    const value = result.text.trim();
    if (value === 'true' || value === 'false') return { kind: 'boolean', value: value === 'true' };
    return { kind: 'unreadable', status: 200, why: 'a boolean result that is neither true nor false' };
  }
  if (result.children.length > 0) return { kind: 'unreadable', status: 200, why: 'a string result with markup inside' };
  return { kind: 'string', text: result.text };
}

export function findFirst(element: XmlElement, test: (e: XmlElement) => boolean): XmlElement | undefined {
  if (test(element)) return element;
  for (const c of element.children) {
    const found = findFirst(c, test);
    if (found !== undefined) return found;
  }
  return undefined;
}
