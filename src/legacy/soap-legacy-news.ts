/**
 * The legacy Authentication.asmx's WhatsNew over SOAP 1.1, for `svcapi-auth news import
 * --from-legacy` (src/cli/news-import.ts). The old service is a peer across a trust boundary:
 * the call is bounded (a timeout for the whole exchange, a maximum answer size, redirects
 * refused) and the answer is read by datatable-reader.ts (no DTD, bounded tree). Every failure
 * is a value saying what went wrong, in words that never carry the URL (it may hold credentials).
 */
import { SERVICE_NAMESPACE } from '../contract/operations.js';
import { readWhatsNewResponse, type DataTableRead } from '../wire/datatable-reader.js';
import { escapeXmlText } from '../wire/xml-text.js';

export interface LegacyNewsQuery {
  readonly appId: number;
  /** '' asks for the service's default language. */
  readonly language: string;
  readonly appVersion: string;
  readonly qtyNews: number;
  /** AppToken: '' (public news only). */
  readonly appToken?: string;
}

export interface LegacyNewsOptions {
  /** The old service's endpoint, e.g. https://old.example/Authentication.asmx */
  readonly url: string;
  /** Whole call, connection to last byte (default 30 s). */
  readonly timeoutMs?: number;
  /** Largest answer read (default 16 MiB). */
  readonly maxResponseBytes?: number;
}

export function whatsNewEnvelope(query: LegacyNewsQuery): string {
  const text = (v: string): string => escapeXmlText(v).replace(/\r/g, '&#xD;');
  return '<?xml version="1.0" encoding="utf-8"?>'
    + '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema">'
    + `<soap:Body><WhatsNew xmlns="${SERVICE_NAMESPACE}"><AppToken>${text(query.appToken ?? '')}</AppToken><AppID>${query.appId}</AppID>`
    + `<AppVersion>${text(query.appVersion)}</AppVersion><Language>${text(query.language)}</Language><qtyNews>${query.qtyNews}</qtyNews></WhatsNew></soap:Body></soap:Envelope>`;
}

async function readLimited(response: Response, limit: number): Promise<string | null> {
  if (response.body === null) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > limit) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** One WhatsNew call; the DataTable it answered, or why there is none. */
export async function fetchLegacyWhatsNew(options: LegacyNewsOptions, query: LegacyNewsQuery): Promise<DataTableRead> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const maxBytes = options.maxResponseBytes ?? 16 * 1024 * 1024;
  const signal = AbortSignal.timeout(timeoutMs);
  let text: string | null;
  try {
    const response = await fetch(options.url, {
      method: 'POST',
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${SERVICE_NAMESPACE}/WhatsNew"` },
      body: whatsNewEnvelope(query),
      redirect: 'error',
      signal,
    });
    // A SOAP fault comes with 500; its text says more than the status.
    if (response.status !== 200 && response.status !== 500) {
      await response.body?.cancel().catch(() => undefined);
      return { ok: false, reason: `the service answered HTTP ${response.status}` };
    }
    text = await readLimited(response, maxBytes);
    if (text === null) {
      await response.body?.cancel().catch(() => undefined);
      return { ok: false, reason: `the answer is larger than ${maxBytes} bytes` };
    }
    if (response.status === 500) {
      const fault = readWhatsNewResponse(text, SERVICE_NAMESPACE, query.qtyNews);
      return fault.ok ? { ok: false, reason: 'the service answered HTTP 500' } : fault;
    }
  } catch (error) {
    // Only the kind of trouble: a fetch error's message may carry the URL.
    if (signal.aborted) return { ok: false, reason: `no complete answer within ${timeoutMs} ms` };
    const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
    if (typeof cause?.message === 'string' && /redirect/i.test(cause.message)) return { ok: false, reason: 'the service answered with a redirect (refused)' };
    return { ok: false, reason: `the connection failed${typeof cause?.code === 'string' ? ` (${cause.code})` : ''}` };
  }
  return readWhatsNewResponse(text, SERVICE_NAMESPACE, query.qtyNews);
}
