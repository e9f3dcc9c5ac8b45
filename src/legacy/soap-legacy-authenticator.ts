/**
 * The legacy Authentication.asmx as a LegacyAuthenticator: one SOAP 1.1 ValidateUser call per
 * question (lazy migration, domain/legacy-migration.ts). Any svcapi-auth instance speaks the same
 * contract, so one can stand in for the old service in tests.
 *
 * It only reads: an answer is the ValidateUserResult text of an HTTP 200 SOAP response, whatever
 * it says; judging it (a token in the old service's form, or not) is domain/legacy-guard.ts's job.
 * Everything else is 'unavailable': another status, a SOAP fault, an unreadable or oversized body,
 * a timeout (legacy.timeoutMs), a refused connection, a redirect. The token the old service issued
 * is not used; the caller gets one of ours.
 */
import type { LegacyAuthenticator, LegacyReply } from '../domain/legacy-guard.js';
import { readXmlDocument, type XmlElement } from '../wire/xml-reader.js';

export interface SoapLegacyOptions {
  /** The old service's endpoint, e.g. https://old.example/Authentication.asmx */
  readonly url: string;
  /** Whole call, connection to last byte (default 3000 ms). */
  readonly timeoutMs?: number;
  /** Largest answer read (default 64 KiB). */
  readonly maxResponseBytes?: number;
}

const SOAP11 = 'http://schemas.xmlsoap.org/soap/envelope/';

/** Text as XML character data; false when it holds a character XML 1.0 cannot carry. */
function xmlText(text: string): string | null {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text)) return null;
  // CR, LF and tab as references so the parser at the other end does not normalise them away.
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
    .replace(/\r/g, '&#xD;').replace(/\n/g, '&#xA;').replace(/\t/g, '&#x9;');
}

export function validateUserEnvelope(login: string, password: string, appId: number, ipAddress: string | null): string | null {
  const l = xmlText(login);
  const p = xmlText(password);
  const ip = xmlText(ipAddress ?? '');
  if (l === null || p === null || ip === null) return null;
  return '<?xml version="1.0" encoding="utf-8"?>'
    + `<soap:Envelope xmlns:soap="${SOAP11}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema">`
    + `<soap:Body><ValidateUser xmlns="SVCAPI"><login>${l}</login><password>${p}</password><AppId>${appId}</AppId><IPAddress>${ip}</IPAddress></ValidateUser></soap:Body></soap:Envelope>`;
}

function child(element: XmlElement | undefined, ns: string, local: string): XmlElement | undefined {
  return element?.children.find((c) => c.ns === ns && c.local === local);
}

/** The ValidateUserResult of a SOAP 1.1 response, '' for an empty one; null if it is not one. */
export function readValidateUserResult(xml: string): string | null {
  const doc = readXmlDocument(xml);
  if (!doc.ok || doc.root.ns !== SOAP11 || doc.root.local !== 'Envelope') return null;
  const response = child(child(doc.root, SOAP11, 'Body'), 'SVCAPI', 'ValidateUserResponse');
  if (response === undefined) return null;
  return child(response, 'SVCAPI', 'ValidateUserResult')?.text ?? '';
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

export function createSoapLegacyAuthenticator(options: SoapLegacyOptions): LegacyAuthenticator {
  const timeoutMs = options.timeoutMs ?? 3000;
  const maxBytes = options.maxResponseBytes ?? 64 * 1024;
  const unavailable = (reason: string): LegacyReply => ({ kind: 'unavailable', reason });
  return {
    async validateUser(login, password, appId, ipAddress) {
      const body = validateUserEnvelope(login, password, appId, ipAddress);
      if (body === null) return unavailable('credentials XML cannot carry');
      const signal = AbortSignal.timeout(timeoutMs);
      try {
        const response = await fetch(options.url, {
          method: 'POST',
          headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"SVCAPI/ValidateUser"' },
          body,
          redirect: 'error',
          signal,
        });
        if (response.status !== 200) {
          await response.body?.cancel().catch(() => undefined);
          return unavailable(`HTTP ${response.status}`);
        }
        const text = await readLimited(response, maxBytes);
        if (text === null) return unavailable(`an answer over ${maxBytes} bytes`);
        const result = readValidateUserResult(text);
        return result === null ? unavailable('not a ValidateUser response') : { kind: 'answer', result };
      } catch (error) {
        // Only the kind of trouble: a fetch error's message may carry the URL.
        return unavailable(signal.aborted ? `no answer within ${timeoutMs} ms` : (error as Error).name === 'TypeError' ? 'connection failed' : 'request failed');
      }
    },
  };
}
