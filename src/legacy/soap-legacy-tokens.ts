/**
 * The old Authentication.asmx's ValidateUserToken and GetUserLoginURL over SOAP 1.1, as token
 * passthrough (domain/legacy-token-passthrough.ts) asks them about tokens it issued, and its
 * ValidateUserTokenJSON, which token adoption (domain/legacy-token-adoption.ts) asks for the
 * owner and expiry of a token passthrough vouched for.
 *
 * ValidateUserTokenJSON declares no parameter (spec: "how they receive ... the token: not
 * shown"): it reads the token where the compatibility profile's `json.validateUserToken.inputs`
 * says, and the call puts it in one of those places, preferring a header, the bearer
 * credential or a cookie (never written to the old server's URL log), over SOAP 1.1, which ASMX
 * always offers; then the form, over the HTTP POST binding (`<url>/ValidateUserTokenJSON`, which
 * ASMX offers remote callers only when configured to, as `compat learn` found it); the query
 * string last, over SOAP 1.1 (the capture ok_soap11_ValidateUserTokenJSON shows the old service
 * reading it there).
 *
 * Like the ValidateUser client (soap-legacy-authenticator.ts) it only reads: an answer is the
 * `...Result` text of an HTTP 200 SOAP response of that operation, whatever it says; what counts
 * as "valid" (exactly `true`) or as a usable URL is the domain's judgement. Everything else (a
 * fault, another status, a redirect, garbage, an oversized or slow answer, a refused connection)
 * is 'unavailable'.
 */
import type { JsonInputs } from '../contract/compat-profile.js';
import type { LegacyTokenReply, LegacyTokenService } from '../domain/legacy-token-passthrough.js';
import { readXmlDocument } from '../wire/xml-reader.js';
import { readSoapResult, xmlText } from './soap-legacy-authenticator.js';
import { createLegacySoapTransport, type LegacyPost, type LegacySoapTransport } from './soap-transport.js';

const ENVELOPE_START = '<?xml version="1.0" encoding="utf-8"?>'
  + '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body>';
const ENVELOPE_END = '</soap:Body></soap:Envelope>';

export function validateUserTokenEnvelope(token: string): string | null {
  const t = xmlText(token);
  return t === null ? null : `${ENVELOPE_START}<ValidateUserToken xmlns="SVCAPI"><token>${t}</token></ValidateUserToken>${ENVELOPE_END}`;
}

export function getUserLoginUrlEnvelope(token: string, appId: number): string | null {
  const t = xmlText(token);
  if (t === null || !Number.isSafeInteger(appId)) return null;
  return `${ENVELOPE_START}<GetUserLoginURL xmlns="SVCAPI"><token>${t}</token><AppID>${appId}</AppID></GetUserLoginURL>${ENVELOPE_END}`;
}

const SOAP_HEADERS = (operation: string): Record<string, string> => ({ 'content-type': 'text/xml; charset=utf-8', soapaction: `"SVCAPI/${operation}"` });

/** A cookie name or value that needs no quoting (RFC 6265 token / cookie-octet). */
const COOKIE_SAFE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * The POST that hands `token` to the old ValidateUserTokenJSON where the profile's inputs say it
 * reads it (preference in the module comment), and how its answer is read; null when no listed
 * place can carry it.
 */
export function validateUserTokenJsonCall(token: string, inputs: JsonInputs): { readonly post: LegacyPost; readonly binding: 'soap11' | 'http-post' } | null {
  const name = inputs.names.token ?? 'token';
  const soap = `${ENVELOPE_START}<ValidateUserTokenJSON xmlns="SVCAPI" />${ENVELOPE_END}`;
  const soapWith = (headers: Record<string, string>, query?: string): { post: LegacyPost; binding: 'soap11' } => ({
    post: { headers: { ...SOAP_HEADERS('ValidateUserTokenJSON'), ...headers }, body: soap, ...(query !== undefined && { query }) }, binding: 'soap11',
  });
  // eslint-disable-next-line no-control-regex -- a header value never carries controls
  const headerSafe = !/[\u0000-\u001f\u007f]/.test(token);
  for (const source of ['header', 'bearer', 'cookie', 'form', 'query'] as const) {
    if (!inputs.sources.includes(source)) continue;
    switch (source) {
      case 'header':
        if (headerSafe) return soapWith({ [name.toLowerCase()]: token });
        break;
      case 'bearer':
        if (headerSafe) return soapWith({ authorization: `Bearer ${token}` });
        break;
      case 'cookie':
        if (COOKIE_SAFE.test(name) && COOKIE_SAFE.test(token)) return soapWith({ cookie: `${name}=${token}` });
        break;
      case 'form':
        return {
          post: { pathSuffix: '/ValidateUserTokenJSON', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `${encodeURIComponent(name)}=${encodeURIComponent(token)}` },
          binding: 'http-post',
        };
      case 'query':
        return soapWith({}, `${encodeURIComponent(name)}=${encodeURIComponent(token)}`);
    }
  }
  return null;
}

/** The text of an HTTP POST binding's answer, `<string xmlns="SVCAPI">...</string>`; null if it is not one. */
export function readHttpStringResult(xml: string): string | null {
  const doc = readXmlDocument(xml);
  if (!doc.ok || doc.root.ns !== 'SVCAPI' || doc.root.local !== 'string' || doc.root.children.length > 0) return null;
  return doc.root.text;
}

export interface SoapLegacyTokenOptions {
  readonly url: string;
  /** Whole call (default 1000 ms: `legacy.tokenTimeoutMs`); a client is waiting for this answer. */
  readonly timeoutMs?: number;
  /** Largest answer read (default 16 KiB: a boolean or one URL, in an envelope). */
  readonly maxResponseBytes?: number;
  readonly ca?: string | Buffer;
  /** Sockets at most (passthrough's `legacy.maxConcurrent`). */
  readonly maxSockets?: number;
  /** The connection to use instead of one made from the options above. */
  readonly transport?: LegacySoapTransport;
  /**
   * Where the old ValidateUserTokenJSON reads its token (the compatibility profile's
   * `json.validateUserToken.inputs`); without it the client has no validateUserTokenJson.
   */
  readonly jsonInputs?: JsonInputs;
}

export interface SoapLegacyTokenService extends LegacyTokenService {
  close(): void;
}

export function createSoapLegacyTokenService(options: SoapLegacyTokenOptions): SoapLegacyTokenService {
  const transport = options.transport ?? createLegacySoapTransport({
    url: options.url,
    timeoutMs: options.timeoutMs ?? 1000,
    maxResponseBytes: options.maxResponseBytes ?? 16 * 1024,
    ...(options.ca !== undefined && { ca: options.ca }),
    ...(options.maxSockets !== undefined && { maxSockets: options.maxSockets }),
  });
  const ask = async (operation: string, envelope: string | null): Promise<LegacyTokenReply> => {
    if (envelope === null) return { kind: 'unavailable', reason: 'a token XML cannot carry' };
    const reply = await transport.post(operation, envelope);
    if (reply.kind === 'unavailable') return reply;
    const result = readSoapResult(reply.text, operation);
    return result === null ? { kind: 'unavailable', reason: `not a ${operation} response` } : { kind: 'answer', result };
  };
  const jsonInputs = options.jsonInputs;
  const askJson = async (token: string, inputs: JsonInputs): Promise<LegacyTokenReply> => {
    const call = validateUserTokenJsonCall(token, inputs);
    if (call === null) return { kind: 'unavailable', reason: 'no place of json.validateUserToken.inputs can carry the token' };
    const reply = await transport.send(call.post);
    if (reply.kind === 'unavailable') return reply;
    const result = call.binding === 'soap11' ? readSoapResult(reply.text, 'ValidateUserTokenJSON') : readHttpStringResult(reply.text);
    return result === null ? { kind: 'unavailable', reason: 'not a ValidateUserTokenJSON response' } : { kind: 'answer', result };
  };
  return {
    validateUserToken: (token) => ask('ValidateUserToken', validateUserTokenEnvelope(token)),
    getUserLoginUrl: (token, appId) => ask('GetUserLoginURL', getUserLoginUrlEnvelope(token, appId)),
    ...(jsonInputs !== undefined && { validateUserTokenJson: (token: string) => askJson(token, jsonInputs) }),
    close: () => transport.close(),
  };
}
