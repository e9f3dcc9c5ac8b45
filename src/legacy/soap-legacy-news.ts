/**
 * The legacy Authentication.asmx's WhatsNew over SOAP 1.1, for `svcapi-auth news import
 * --from-legacy` (src/cli/news-import.ts). The old service is a peer across a trust boundary:
 * the call goes through soap-transport.ts like every other call to it (a timeout for the whole
 * exchange, a maximum answer size, redirects refused, `legacy.caFile` for an https URL) and the
 * answer is read by datatable-reader.ts (no DTD, bounded tree). Every failure is a value saying
 * what went wrong, in words that never carry the URL (it may hold credentials).
 */
import { SERVICE_NAMESPACE } from '../contract/operations.js';
import { readWhatsNewResponse, type DataTableRead } from '../wire/datatable-reader.js';
import { escapeXmlText } from '../wire/xml-text.js';
import { createLegacySoapTransport } from './soap-transport.js';

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
  /** PEM certificate(s) trusted for an https URL (`legacy.caFile`). */
  readonly ca?: string | Buffer;
}

export function whatsNewEnvelope(query: LegacyNewsQuery): string {
  const text = (v: string): string => escapeXmlText(v).replace(/\r/g, '&#xD;');
  return '<?xml version="1.0" encoding="utf-8"?>'
    + '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema">'
    + `<soap:Body><WhatsNew xmlns="${SERVICE_NAMESPACE}"><AppToken>${text(query.appToken ?? '')}</AppToken><AppID>${query.appId}</AppID>`
    + `<AppVersion>${text(query.appVersion)}</AppVersion><Language>${text(query.language)}</Language><qtyNews>${query.qtyNews}</qtyNews></WhatsNew></soap:Body></soap:Envelope>`;
}

/** The transport's kind of trouble in the words `news import` prints. */
function troubleInWords(reason: string): string {
  const status = /^HTTP (\d+)$/.exec(reason)?.[1];
  if (status !== undefined) return Number(status) >= 300 && Number(status) < 400 ? 'the service answered with a redirect (refused)' : `the service answered HTTP ${status}`;
  const size = /^an answer over (\d+) bytes$/.exec(reason)?.[1];
  if (size !== undefined) return `the answer is larger than ${size} bytes`;
  const time = /^no answer within (\d+) ms$/.exec(reason)?.[1];
  if (time !== undefined) return `no complete answer within ${time} ms`;
  if (reason === 'connection failed') return 'the connection failed';
  return reason;
}

/** One WhatsNew call; the DataTable it answered, or why there is none. */
export async function fetchLegacyWhatsNew(options: LegacyNewsOptions, query: LegacyNewsQuery): Promise<DataTableRead> {
  // The transport every call to the old service uses (soap-transport.ts): node:https with
  // legacy.caFile, no redirects, a whole-call timeout and a size cap.
  const transport = createLegacySoapTransport({
    url: options.url,
    timeoutMs: options.timeoutMs ?? 30_000,
    maxResponseBytes: options.maxResponseBytes ?? 16 * 1024 * 1024,
    maxSockets: 1,
    ...(options.ca !== undefined && { ca: options.ca }),
  });
  try {
    // A SOAP fault comes with 500; its text says more than the status.
    const reply = await transport.send({
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${SERVICE_NAMESPACE}/WhatsNew"` },
      body: whatsNewEnvelope(query),
      statuses: [200, 500],
    });
    if (reply.kind === 'unavailable') return { ok: false, reason: troubleInWords(reply.reason) };
    if (reply.status === 500) {
      const fault = readWhatsNewResponse(reply.text, SERVICE_NAMESPACE, query.qtyNews);
      return fault.ok ? { ok: false, reason: 'the service answered HTTP 500' } : fault;
    }
    return readWhatsNewResponse(reply.text, SERVICE_NAMESPACE, query.qtyNews);
  } finally {
    transport.close();
  }
}
