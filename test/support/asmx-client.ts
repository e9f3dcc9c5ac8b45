/**
 * A minimal ASMX client for tests, generated from the contract like a WSDL-generated proxy:
 * it writes a call in any of the four bindings and reads back the result value.
 */
import type { InjectableApp } from './inject.js';
import { OPERATIONS, type OperationSpec } from '../../src/contract/operations.js';

export type BindingName = 'soap11' | 'soap12' | 'http-get' | 'http-post';
export const BINDINGS: readonly BindingName[] = ['soap11', 'soap12', 'http-get', 'http-post'];

export type Args = Readonly<Record<string, string | number | null>>;

export interface RawRequest {
  readonly method: 'GET' | 'POST';
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly payload?: string;
}

function spec(name: string): OperationSpec {
  const op = OPERATIONS.find((o) => o.name === name);
  if (!op) throw new Error(`no operation ${name}`);
  return op;
}

function xmlEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The request a generated proxy would send. `query` adds a query string (the JSON operations read it). */
export function buildRequest(binding: BindingName, name: string, args: Args, query = ''): RawRequest {
  const op = spec(name);
  const q = query === '' ? '' : `?${query}`;
  if (binding === 'soap11' || binding === 'soap12') {
    const children = op.params
      .filter((p) => args[p.name] !== undefined)
      .map((p) => {
        const v = args[p.name];
        return v === null ? `<${p.name} xsi:nil="true" />` : `<${p.name}>${xmlEscape(String(v))}</${p.name}>`;
      })
      .join('');
    const envNs = binding === 'soap11' ? 'http://schemas.xmlsoap.org/soap/envelope/' : 'http://www.w3.org/2003/05/soap-envelope';
    const payload =
      `<?xml version="1.0" encoding="utf-8"?><env:Envelope xmlns:env="${envNs}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">` +
      `<env:Body><${name} xmlns="SVCAPI">${children}</${name}></env:Body></env:Envelope>`;
    const headers: Record<string, string> =
      binding === 'soap11'
        ? { 'content-type': 'text/xml; charset=utf-8', soapaction: `"SVCAPI/${name}"` }
        : { 'content-type': `application/soap+xml; charset=utf-8; action="SVCAPI/${name}"` };
    return { method: 'POST', url: `/Authentication.asmx${q}`, headers, payload };
  }
  const form = new URLSearchParams();
  for (const p of op.params) form.append(p.name, String(args[p.name] ?? ''));
  if (binding === 'http-get') {
    const all = [form.toString(), query].filter((s) => s !== '').join('&');
    return { method: 'GET', url: `/Authentication.asmx/${name}${all === '' ? '' : `?${all}`}`, headers: {} };
  }
  return { method: 'POST', url: `/Authentication.asmx/${name}${q}`, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: form.toString() };
}

function xmlUnescape(s: string): string {
  return s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&amp;/g, '&');
}

export type TableRows = Array<Record<string, string>>;

/** Reads the result of a 200 response: string, boolean or the DataTable's rows (cells as text). */
export function parseResult(binding: BindingName, name: string, body: string, tableName = 'News'): string | boolean | TableRows {
  const op = spec(name);
  let inner: string;
  if (binding === 'soap11' || binding === 'soap12') {
    const m = new RegExp(`<${name}Result>([\\s\\S]*)</${name}Result>|<${name}Result />`).exec(body);
    if (!m) throw new Error(`no ${name}Result in ${body}`);
    inner = m[1] ?? '';
  } else {
    const m = /<(string|boolean|DataTable) xmlns="SVCAPI">([\s\S]*)<\/\1>|<string xmlns="SVCAPI" \/>/.exec(body);
    if (!m) throw new Error(`no result document in ${body}`);
    inner = m[2] ?? '';
  }
  if (op.result === 'boolean') return inner === 'true';
  if (op.result === 'string') return xmlUnescape(inner);
  const rows: TableRows = [];
  for (const row of inner.matchAll(new RegExp(`<${tableName} diffgr:id="${tableName}\\d+" msdata:rowOrder="\\d+">([\\s\\S]*?)</${tableName}>`, 'g'))) {
    const cells: Record<string, string> = {};
    for (const cell of (row[1] ?? '').matchAll(/<(\w+)>([^<]*)<\/\1>|<(\w+) \/>/g)) {
      if (cell[1]) cells[cell[1]] = xmlUnescape(cell[2] ?? '');
      else if (cell[3]) cells[cell[3]] = '';
    }
    rows.push(cells);
  }
  return rows;
}

/** Calls through `app.inject()` and returns the result value; throws on a non-200 answer. */
export async function call(app: InjectableApp, binding: BindingName, name: string, args: Args, options: { query?: string; headers?: Record<string, string> } = {}): Promise<string | boolean | TableRows> {
  const req = buildRequest(binding, name, args, options.query);
  const res = await app.inject({ method: req.method, url: req.url, headers: { ...req.headers, ...options.headers }, ...(req.payload !== undefined ? { payload: req.payload } : {}) });
  if (res.statusCode !== 200) throw new Error(`${binding} ${name}: HTTP ${res.statusCode}: ${res.body}`);
  return parseResult(binding, name, res.body);
}
