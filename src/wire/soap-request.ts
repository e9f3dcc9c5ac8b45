/**
 * SOAP 1.1 and SOAP 1.2 requests on POST /Authentication.asmx, decoded as ASMX does
 * (SoapServerProtocol + XmlSerializer), rules as seen in the captures:
 *
 * - Transport by Content-Type: `text/xml` is the SOAP 1.1 protocol, `application/soap+xml` the
 *   SOAP 1.2 one; anything else is 415. The envelope namespace then decides the version of the
 *   answer: a 1.2 envelope sent as text/xml is answered as 1.2, a 1.1 envelope sent as
 *   application/soap+xml is 415, any other root is a VersionMismatch fault (always SOAP 1.1).
 * - Unreadable XML (and, on the 1.1 protocol, an empty body or any DTD) is 400 with no body; on
 *   the 1.2 protocol an empty body and a DTD are `soap:Receiver` faults.
 * - Routing (soapRouting): SOAP 1.1 on the SOAPAction header (quotes optional, URL-decoded;
 *   present but unknown or empty is a `soap:Client` fault; a known action runs that operation
 *   whatever the body holds); SOAP 1.2, and text/xml without SOAPAction, on the Content-Type
 *   `action` parameter (URL-decoded) when it names an operation, otherwise on the first body
 *   element (name and namespace); when neither names one, a missing or empty action asks for
 *   one and any other is "not recognized".
 * - Parameters are bound leniently: the operation element must match name and namespace, else
 *   every parameter takes its default; a missing or unknown child is ignored (null string, 0
 *   int); `xsi:nil` is null; only an unparsable int faults, quoting where .NET's reader stands
 *   once past its element (xml-line-info.ts).
 * - A header with mustUnderstand="1" is never understood: MustUnderstand fault. It is checked
 *   after the parameters are read (as .NET orders it) but before anything is executed.
 */
import type { ParamValue } from '../contract/operations.js';
import type { CompiledContract, CompiledOperation } from './compiled-contract.js';
import { decodeRequestText } from './decode-text.js';
import { parseXmlInt32 } from './dotnet-int.js';
import { urlDecode } from './http-form.js';
import { aspNetContentTypeParameter, parseMediaType, type MediaType } from './media-type.js';
import { SOAP11_NS, SOAP12_NS, XSI_NS, type SoapVersion } from './soap-envelope.js';
import { intReasonMessage, type WireError } from './wire-errors.js';
import { attributeValue, readXmlDocument, type XmlElement, type XmlReadLimits, DEFAULT_XML_LIMITS } from './xml-reader.js';

export interface SoapRequestInput {
  readonly body: Uint8Array;
  readonly contentType: string | undefined;
  /** `contentType` already parsed, when the caller has it. */
  readonly media?: MediaType;
  /** The SOAPAction header, raw; undefined when absent. */
  readonly soapAction: string | undefined;
}

export type SoapDecoded =
  | { readonly ok: true; readonly version: SoapVersion; readonly operation: CompiledOperation; readonly args: readonly ParamValue[] }
  | { readonly ok: false; readonly version: SoapVersion; readonly error: WireError };

/** Which SOAP protocol a Content-Type selects, or null when it is not a SOAP request at all. */
export function soapTransport(mediaType: string): SoapVersion | null {
  if (mediaType === 'text/xml') return '1.1';
  if (mediaType === 'application/soap+xml') return '1.2';
  return null;
}

function fail(version: SoapVersion, error: WireError): SoapDecoded {
  return { ok: false, version, error };
}

function firstChild(parent: XmlElement, ns: string, local: string): XmlElement | undefined {
  return parent.children.find((c) => c.ns === ns && c.local === local);
}

/**
 * Which child of the operation element binds each parameter, as XmlSerializer binds them: none
 * unless the payload is the operation's element (name and namespace); then, in document order,
 * the first child in the service namespace named after each parameter (later ones and unknown
 * children are ignored). The one statement of the rule, for soap-shape-memo.ts too.
 */
export function boundParameters(contract: CompiledContract, operation: CompiledOperation, payload: XmlElement | undefined): Array<[number, XmlElement]> {
  const bound: Array<[number, XmlElement]> = [];
  if (payload === undefined || payload.local !== operation.name || payload.ns !== contract.namespace) return bound;
  const seen = new Set<number>();
  for (const child of payload.children) {
    if (child.ns !== contract.namespace) continue;
    const index = operation.paramIndex.get(child.local);
    if (index === undefined || seen.has(index)) continue;
    seen.add(index);
    bound.push([index, child]);
  }
  return bound;
}

function stripQuotes(action: string): string {
  const t = action.trim();
  return t.length >= 2 && t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1) : t;
}

/**
 * What routes a SOAP request besides its body, and which of ASMX's two routers reads it
 * (RouteRequest of Soap11ServerProtocolHelper or Soap12ServerProtocolHelper). The SOAP 1.1
 * router only takes a text/xml request that carries a SOAPAction header, and reads that header
 * as sent; every other request, text/xml without SOAPAction included, goes to the SOAP 1.2
 * router (SoapServerProtocol.GuessVersion), which reads the Content-Type `action` parameter as
 * ContentType.GetParameter reads it (undefined when absent). Neither value is decoded yet.
 * The request shape memo keys on this, so it is the one statement of it.
 */
export interface SoapRouting {
  readonly by: 'soapaction' | 'action';
  readonly value: string | undefined;
}

export function soapRouting(
  transport: SoapVersion,
  input: SoapRequestInput,
  /** The Content-Type `action` parameter as ContentType.GetParameter reads it (the shape memo's is remembered per header). */
  actionOf: (contentType: string | undefined) => string | undefined = (contentType) => aspNetContentTypeParameter(contentType, 'action'),
): SoapRouting {
  if (transport === '1.1' && input.soapAction !== undefined) return { by: 'soapaction', value: input.soapAction };
  return { by: 'action', value: actionOf(input.contentType) };
}

export function decodeSoapRequest(contract: CompiledContract, input: SoapRequestInput, limits: XmlReadLimits = DEFAULT_XML_LIMITS): SoapDecoded {
  const media = input.media ?? parseMediaType(input.contentType);
  const transport = soapTransport(media.type);
  if (transport === null) return fail('1.1', { code: 'SOAP_UNSUPPORTED_MEDIA_TYPE' });

  const read = readXmlDocument(decodeRequestText(input.body, media.params.get('charset'), transport === '1.2'), limits);
  if (!read.ok) {
    if (transport === '1.2' && read.reason === 'empty') return fail('1.2', { code: 'SOAP_ROOT_MISSING' });
    if (transport === '1.2' && read.reason === 'dtd') return fail('1.2', { code: 'SOAP_DTD_PROHIBITED' });
    return fail(transport, { code: 'SOAP_UNREADABLE' });
  }

  const envelope = read.root;
  let version: SoapVersion;
  if (envelope.local === 'Envelope' && envelope.ns === SOAP11_NS) version = '1.1';
  else if (envelope.local === 'Envelope' && envelope.ns === SOAP12_NS) version = '1.2';
  else return fail('1.1', { code: 'SOAP_VERSION_MISMATCH', namespace: envelope.ns });
  if (transport === '1.2' && version === '1.1') return fail('1.1', { code: 'SOAP_UNSUPPORTED_MEDIA_TYPE' });

  const envNs = envelope.ns;
  const body = firstChild(envelope, envNs, 'Body');
  if (body === undefined) return fail(version, { code: 'SOAP_NO_BODY' });
  const payload = body.children[0];

  // Routing, as the two RouteRequest methods do it. Both URL-decode the action
  // (HttpUtility.UrlDecode) before looking it up, and quote the decoded one in their fault.
  let operation: CompiledOperation | undefined;
  const routing = soapRouting(transport, input);
  if (routing.by === 'soapaction') {
    const action = urlDecode(stripQuotes(routing.value ?? ''));
    operation = contract.bySoapAction.get(action);
    if (operation === undefined) return fail(version, { code: 'SOAP_UNKNOWN_ACTION', action });
  } else {
    // An empty parameter counts as none (`action != null && action.Length > 0`).
    const action = routing.value === undefined || routing.value === '' ? undefined : urlDecode(routing.value);
    if (action !== undefined) operation = contract.bySoapAction.get(action);
    if (operation === undefined && payload !== undefined && payload.ns === contract.namespace) {
      operation = contract.byName.get(payload.local);
    }
    if (operation === undefined) {
      // Soap12ServerProtocolHelper: a missing or empty action is asked for; one that was sent
      // (and neither it nor the body element named an operation) is "not recognized". The
      // fault is then written in the envelope's version: soap:Client on a SOAP 1.1 envelope.
      return fail(version, action === undefined ? { code: 'SOAP12_NO_VALID_ACTION' } : { code: 'SOAP12_UNKNOWN_ACTION', action });
    }
  }

  // Parameters: defaults, then whatever the operation element carries, in document order.
  const params = operation.spec.params;
  const args: ParamValue[] = params.map((p) => (p.type === 'int' ? 0 : null));
  for (const [index, child] of boundParameters(contract, operation, payload)) {
    const param = params[index];
    if (param === undefined) continue;
    if (child.children.length > 0) {
      return fail(version, { code: 'SOAP_BAD_PARAMETER', line: child.nextLine, column: child.nextColumn, detail: "'Element' is an invalid XmlNodeType." });
    }
    const nil = attributeValue(child, XSI_NS, 'nil');
    const isNil = nil !== undefined && (nil.trim() === 'true' || nil.trim() === '1');
    if (param.type === 'string') {
      args[index] = isNil ? null : child.text;
    } else {
      const parsed = parseXmlInt32(isNil ? '' : child.text);
      if (!parsed.ok) {
        return fail(version, { code: 'SOAP_BAD_PARAMETER', line: child.nextLine, column: child.nextColumn, detail: intReasonMessage(parsed.reason) });
      }
      args[index] = parsed.value;
    }
  }

  const header = firstChild(envelope, envNs, 'Header');
  if (header !== undefined) {
    for (const h of header.children) {
      const mu = attributeValue(h, envNs, 'mustUnderstand')?.trim();
      if (mu === '1' || mu === 'true') return fail(version, { code: 'SOAP_MUST_UNDERSTAND', header: h.local });
    }
  }

  return { ok: true, version, operation, args };
}
