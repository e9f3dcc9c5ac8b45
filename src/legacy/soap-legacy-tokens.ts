/**
 * The old Authentication.asmx's ValidateUserToken and GetUserLoginURL over SOAP 1.1, as token
 * passthrough (domain/legacy-token-passthrough.ts) asks them about tokens it issued.
 *
 * Like the ValidateUser client (soap-legacy-authenticator.ts) it only reads: an answer is the
 * `...Result` text of an HTTP 200 SOAP response of that operation, whatever it says; what counts
 * as "valid" (exactly `true`) or as a usable URL is the domain's judgement. Everything else (a
 * fault, another status, a redirect, garbage, an oversized or slow answer, a refused connection)
 * is 'unavailable'.
 */
import type { LegacyTokenReply, LegacyTokenService } from '../domain/legacy-token-passthrough.js';
import { readSoapResult, xmlText } from './soap-legacy-authenticator.js';
import { createLegacySoapTransport, type LegacySoapTransport } from './soap-transport.js';

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
  return {
    validateUserToken: (token) => ask('ValidateUserToken', validateUserTokenEnvelope(token)),
    getUserLoginUrl: (token, appId) => ask('GetUserLoginURL', getUserLoginUrlEnvelope(token, appId)),
    close: () => transport.close(),
  };
}
