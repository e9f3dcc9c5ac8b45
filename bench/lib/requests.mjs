/**
 * The requests the benchmark sends, built from the contract (dist/contract/operations.js) the
 * way a WSDL-generated proxy writes them, as test/support/asmx-client.ts does for the tests.
 */
import { URLSearchParams } from 'node:url';

export const BINDINGS = ['soap11', 'soap12', 'http-get', 'http-post'];

function xmlEscape(s) {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * { method, path, headers, body } of one call. `operations` is the contract's OPERATIONS;
 * `servicePath` the service's path (/Authentication.asmx).
 */
export function buildRequest(operations, binding, name, args, servicePath = '/Authentication.asmx') {
  const op = operations.find((o) => o.name === name);
  if (!op) throw new Error(`no operation ${name} in the contract`);
  if (binding === 'soap11' || binding === 'soap12') {
    const children = op.params
      .filter((p) => args[p.name] !== undefined)
      .map((p) => `<${p.name}>${xmlEscape(String(args[p.name] ?? ''))}</${p.name}>`)
      .join('');
    const envNs = binding === 'soap11' ? 'http://schemas.xmlsoap.org/soap/envelope/' : 'http://www.w3.org/2003/05/soap-envelope';
    const prefix = binding === 'soap11' ? 'soap' : 'soap12';
    const body =
      `<?xml version="1.0" encoding="utf-8"?><${prefix}:Envelope xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:${prefix}="${envNs}">` +
      `<${prefix}:Body><${name} xmlns="SVCAPI">${children}</${name}></${prefix}:Body></${prefix}:Envelope>`;
    const headers = binding === 'soap11'
      ? { 'Content-Type': 'text/xml; charset=utf-8', SOAPAction: `"SVCAPI/${name}"` }
      : { 'Content-Type': `application/soap+xml; charset=utf-8; action="SVCAPI/${name}"` };
    return { method: 'POST', path: servicePath, headers, body };
  }
  const form = new URLSearchParams();
  for (const p of op.params) form.append(p.name, String(args[p.name] ?? ''));
  if (binding === 'http-get') return { method: 'GET', path: `${servicePath}/${name}?${form}`, headers: {}, body: null };
  if (binding === 'http-post') {
    return { method: 'POST', path: `${servicePath}/${name}`, headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: form.toString() };
  }
  throw new Error(`unknown binding ${binding}`);
}

/** Sends one request with fetch; resolves { status, body }. */
export async function send(origin, req, timeoutMs = 30_000) {
  const res = await globalThis.fetch(`${origin}${req.path}`, {
    method: req.method, headers: req.headers, body: req.body ?? undefined, signal: globalThis.AbortSignal.timeout(timeoutMs),
  });
  return { status: res.status, body: await res.text() };
}

/** The token in a ValidateUser answer (any binding), or null. */
export function tokenIn(body) {
  const m = /<ValidateUserResult>([0-9a-f-]{36})<\/ValidateUserResult>|<string xmlns="SVCAPI">([0-9a-f-]{36})<\/string>/.exec(body);
  return m ? (m[1] ?? m[2]) : null;
}

/** Rows of a WhatsNew answer. */
export function newsRowsIn(body) {
  return (body.match(/<News diffgr:id="News\d+"/g) ?? []).length;
}
