/**
 * SOAP 1.1 / 1.2 response envelopes, byte for byte as ASMX writes them: XML declaration, then
 * the envelope on one line (no newlines), prefix `soap` for both versions, namespace
 * declarations in the order soap, xsi, xsd. Prefix and suffix of every response are built
 * once per operation at start-up; a response is prefix + escaped value + suffix.
 */
import { escapeXmlText } from './xml-text.js';
import { messageChain, type WireError } from './wire-errors.js';

export type SoapVersion = '1.1' | '1.2';

export const SOAP11_NS = 'http://schemas.xmlsoap.org/soap/envelope/';
export const SOAP12_NS = 'http://www.w3.org/2003/05/soap-envelope';
export const XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance';
export const XSD_NS = 'http://www.w3.org/2001/XMLSchema';

export const SOAP_CONTENT_TYPE: Readonly<Record<SoapVersion, string>> = {
  '1.1': 'text/xml; charset=utf-8',
  '1.2': 'application/soap+xml; charset=utf-8',
};

const XML_DECL = '<?xml version="1.0" encoding="utf-8"?>';

function envelopeOpen(version: SoapVersion): string {
  const ns = version === '1.1' ? SOAP11_NS : SOAP12_NS;
  return `${XML_DECL}<soap:Envelope xmlns:soap="${ns}" xmlns:xsi="${XSI_NS}" xmlns:xsd="${XSD_NS}">`;
}
const ENVELOPE_CLOSE = '</soap:Body></soap:Envelope>';

/** Precomputed pieces of one operation's response for one SOAP version. */
export interface SoapResponseFrame {
  /** `...<soap:Body><OpResponse xmlns="SVCAPI"><OpResult>` */
  readonly open: string;
  /** `</OpResult></OpResponse></soap:Body></soap:Envelope>` */
  readonly close: string;
  /** The whole envelope for an empty string result: `<OpResult />`. */
  readonly empty: string;
  /**
   * The whole envelope for a boolean result, [false, true], as UTF-8 bytes: a boolean answer
   * has only these two, so it is neither concatenated nor encoded per request (ValidateUserToken,
   * the hot path). Shared by every answer: write them, never modify them.
   */
  readonly booleanBodies: readonly [Buffer, Buffer];
}

export function compileSoapResponseFrame(version: SoapVersion, namespace: string, operation: string): SoapResponseFrame {
  const head = `${envelopeOpen(version)}<soap:Body><${operation}Response xmlns="${namespace}">`;
  const tail = `</${operation}Response>${ENVELOPE_CLOSE}`;
  const open = `${head}<${operation}Result>`;
  const close = `</${operation}Result>${tail}`;
  return Object.freeze({
    open,
    close,
    empty: `${head}<${operation}Result />${tail}`,
    booleanBodies: Object.freeze([Buffer.from(`${open}false${close}`, 'utf8'), Buffer.from(`${open}true${close}`, 'utf8')] as const),
  });
}

/** A string result: `<OpResult />` when empty, as XmlSerializer writes it. */
export function writeSoapString(frame: SoapResponseFrame, value: string): string {
  return value === '' ? frame.empty : frame.open + escapeXmlText(value) + frame.close;
}

// Faults ----------------------------------------------------------------------------------

type FaultCode = 'Client' | 'Server' | 'MustUnderstand' | 'VersionMismatch';

function faultCode(error: WireError): FaultCode {
  switch (error.code) {
    case 'SOAP_MUST_UNDERSTAND':
      return 'MustUnderstand';
    case 'SOAP_VERSION_MISMATCH':
      return 'VersionMismatch';
    case 'SOAP_BAD_PARAMETER':
    case 'SOAP_UNKNOWN_ACTION':
    case 'SOAP12_NO_VALID_ACTION':
    case 'SOAP12_UNKNOWN_ACTION':
    case 'MISSING_PARAMETER':
    case 'CANNOT_CONVERT':
    case 'INVALID_METHOD_NAME':
    case 'METHOD_NAME_CASE':
    case 'REQUEST_FORMAT_INVALID':
    case 'REQUEST_FORMAT_UNRECOGNIZED':
    case 'SCRIPT_SERVICE_REQUIRED':
      return 'Client';
    case 'SOAP_NO_BODY':
      return 'Client';
    default:
      return 'Server';
  }
}

/** SOAP 1.2 renames the codes (Client -> Sender, Server -> Receiver); ASMX words NO_BODY as a receiver fault there. */
function soap12Code(error: WireError): string {
  if (error.code === 'SOAP_NO_BODY') return 'Receiver';
  const code = faultCode(error);
  return code === 'Client' ? 'Sender' : code === 'Server' ? 'Receiver' : code;
}

const UPGRADE_HEADER =
  '<soap:Header><soap12:Upgrade xmlns:soap12="http://www.w3.org/2003/05/soap-envelope">' +
  `<soap12:SupportedEnvelope qname="soap:Envelope" xmlns:soap="${SOAP11_NS}" />` +
  `<soap12:SupportedEnvelope qname="soap12:Envelope" xmlns:soap12="${SOAP12_NS}" />` +
  '</soap12:Upgrade></soap:Header>';

/** Messages of a chain joined as .NET's Exception.ToString-less fault text does. */
export function joinChain(messages: readonly string[]): string {
  return messages.join(' ---> ');
}

export interface SoapFault {
  /** The version the fault is written in: a VersionMismatch is always SOAP 1.1 (ASMX cannot know better). */
  readonly version: SoapVersion;
  readonly body: string;
  /** A MustUnderstand fault is raised after the method was bound, when the success header was already set. */
  readonly cacheControl: string;
}

export function writeSoapFault(version: SoapVersion, error: WireError): SoapFault {
  const v: SoapVersion = error.code === 'SOAP_VERSION_MISMATCH' ? '1.1' : version;
  const text = escapeXmlText(joinChain(messageChain(error, v === '1.1' ? 'soap-1.1' : 'soap-1.2')));
  // No <detail /> on MustUnderstand faults: ASMX raises them outside the method's exception path.
  const withDetail = error.code !== 'SOAP_MUST_UNDERSTAND';
  let fault: string;
  if (v === '1.1') {
    fault = `<soap:Fault><faultcode>soap:${faultCode(error)}</faultcode><faultstring>${text}</faultstring>${withDetail ? '<detail />' : ''}</soap:Fault>`;
  } else {
    fault =
      `<soap:Fault><soap:Code><soap:Value>soap:${soap12Code(error)}</soap:Value></soap:Code>` +
      `<soap:Reason><soap:Text xml:lang="en">${text}</soap:Text></soap:Reason>${withDetail ? '<soap:Detail />' : ''}</soap:Fault>`;
  }
  const header = error.code === 'SOAP_VERSION_MISMATCH' ? UPGRADE_HEADER : '';
  return {
    version: v,
    body: `${envelopeOpen(v)}${header}<soap:Body>${fault}${ENVELOPE_CLOSE}`,
    cacheControl: error.code === 'SOAP_MUST_UNDERSTAND' ? 'private, max-age=0' : 'private',
  };
}
