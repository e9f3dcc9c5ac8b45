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
import { createLegacySoapTransport, type LegacySoapTransport } from './soap-transport.js';

export interface SoapLegacyOptions {
  /** The old service's endpoint, e.g. https://old.example/Authentication.asmx */
  readonly url: string;
  /** Whole call, connection to last byte (default 3000 ms). */
  readonly timeoutMs?: number;
  /** Largest answer read (default 64 KiB). */
  readonly maxResponseBytes?: number;
  /** PEM certificate(s) trusted for an https URL (`legacy.caFile`). */
  readonly ca?: string | Buffer;
  /** The connection to use instead of one made from the options above (serve shares one). */
  readonly transport?: LegacySoapTransport;
}

const SOAP11 = 'http://schemas.xmlsoap.org/soap/envelope/';

/** Text as XML character data; false when it holds a character XML 1.0 cannot carry. */
export function xmlText(text: string): string | null {
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

/**
 * The `<operation>Result` text of a SOAP 1.1 `<operation>Response` in the SVCAPI namespace, ''
 * for an empty one; null if the document is not one (a fault, another operation, not XML).
 */
export function readSoapResult(xml: string, operation: string): string | null {
  const doc = readXmlDocument(xml);
  if (!doc.ok || doc.root.ns !== SOAP11 || doc.root.local !== 'Envelope') return null;
  const response = child(child(doc.root, SOAP11, 'Body'), 'SVCAPI', `${operation}Response`);
  if (response === undefined) return null;
  return child(response, 'SVCAPI', `${operation}Result`)?.text ?? '';
}

/** The ValidateUserResult of a SOAP 1.1 response, '' for an empty one; null if it is not one. */
export function readValidateUserResult(xml: string): string | null {
  return readSoapResult(xml, 'ValidateUser');
}

export function createSoapLegacyAuthenticator(options: SoapLegacyOptions): LegacyAuthenticator {
  const transport = options.transport ?? createLegacySoapTransport({
    url: options.url,
    timeoutMs: options.timeoutMs ?? 3000,
    maxResponseBytes: options.maxResponseBytes ?? 64 * 1024,
    ...(options.ca !== undefined && { ca: options.ca }),
  });
  const unavailable = (reason: string): LegacyReply => ({ kind: 'unavailable', reason });
  return {
    async validateUser(login, password, appId, ipAddress) {
      const body = validateUserEnvelope(login, password, appId, ipAddress);
      if (body === null) return unavailable('credentials XML cannot carry');
      const reply = await transport.post('ValidateUser', body);
      if (reply.kind === 'unavailable') return reply;
      const result = readValidateUserResult(reply.text);
      return result === null ? unavailable('not a ValidateUser response') : { kind: 'answer', result };
    },
  };
}
