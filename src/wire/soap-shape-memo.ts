/**
 * The request shape memo: real clients send the same SOAP envelope over and over, differing
 * only in the text of the parameter elements. After decodeSoapRequest has decoded one such
 * request successfully, its text is kept as a template (fixed markup and white space around
 * "holes", the text of leaf elements `<a>text</a>`); a later request whose text is that
 * template with other hole texts is then decoded by a few string comparisons and indexOf.
 *
 * Why the answer is always the one decodeSoapRequest gives: a template is learned only from a
 * document the fast XML reader read (readXmlDocument's own first choice). A text matching the
 * template differs from it only inside leaf elements, by text without `<`; if every hole also
 * passes what the fast reader demands of element text (decodeLeafText), the fast reader
 * reads the same tree with only those texts changed, and the reference decoder's verdict
 * depends on element texts only through the parameters it binds. So the memo answers only
 * when the template's (successful) decision holds again: string parameters take the decoded
 * hole, int parameters must parse with parseXmlInt32; anything else (an invalid reference, a
 * character that needs saxes, an int that does not parse, hence every fault with its line and
 * column) goes to decodeSoapRequest, which stays the reference.
 *
 * Memory and time are bounded against clients that vary their requests on purpose: a key is
 * learned only for canonical routing values (so there are a few dozen keys at most), at most
 * MAX_TEMPLATES_PER_KEY templates per key and MAX_KEYS keys, learned from bodies of at most
 * MAX_BODY_BYTES, and once full the memo stops learning rather than evicting (no churn).
 */
import type { ParamValue } from '../contract/operations.js';
import type { CompiledContract, CompiledOperation } from './compiled-contract.js';
import { decodeRequestText } from './decode-text.js';
import { parseXmlInt32 } from './dotnet-int.js';
import { decodeLeafText, readXmlDocumentFast } from './fast-xml-reader.js';
import { aspNetContentTypeParameter, parseMediaType, type MediaType } from './media-type.js';
import { XSI_NS, type SoapVersion } from './soap-envelope.js';
import { boundParameters, decodeSoapRequest, soapRouting, soapTransport, type SoapDecoded, type SoapRequestInput, type SoapRouting } from './soap-request.js';
import { attributeValue, DEFAULT_XML_LIMITS, type XmlElement, type XmlReadLimits } from './xml-reader.js';

/** Templates kept per key: the client libraries of one operation and protocol (.NET, PHP, Java, Python, C++...). */
export const MAX_TEMPLATES_PER_KEY = 8;
/** Keys kept: far above the canonical routing values of the contract, a safety net only. */
export const MAX_KEYS = 64;
/** SOAP requests are well under 1 KiB; larger bodies neither use nor teach the memo. */
export const MAX_BODY_BYTES = 8192;

/** What a hole feeds: a parameter's position, or NO_PARAM when its text is never bound. */
const NO_PARAM = -1;

interface Template {
  /** Fixed text: fixed[0] hole[0] fixed[1] ... hole[n-1] fixed[n]. */
  readonly fixed: readonly string[];
  /** Per hole, the parameter it binds, or NO_PARAM. */
  readonly holeParams: readonly number[];
  /** Per hole, whether that parameter is an int. */
  readonly holeIsInt: readonly boolean[];
  readonly version: SoapVersion;
  readonly operation: CompiledOperation;
  /** The arguments of the learned request; hole-bound positions are overwritten per request. */
  readonly args: readonly ParamValue[];
  /** Scratch for the hole boundaries of the text being matched (matching is synchronous). */
  readonly starts: Int32Array;
  readonly ends: Int32Array;
}

export interface SoapShapeMemoStats {
  /** Requests answered by the memo. */
  readonly hits: number;
  /** Requests handed to the reference decoder. */
  readonly fullDecodes: number;
  readonly keys: number;
  readonly templates: number;
}

export interface SoapRequestDecoder {
  (input: SoapRequestInput): SoapDecoded;
  /** parseMediaType(header), remembered per header text (clients send the same Content-Type every time). */
  mediaType(header: string | undefined): MediaType;
  /** Counters for tests and diagnostics. */
  stats(): SoapShapeMemoStats;
}

/** Content-Type headers remembered, parsed: a client library sends one or two; once full, the rest are parsed each time. */
export const MAX_CONTENT_TYPES = 32;

export interface SoapShapeMemoOptions {
  /** The reference decoder used on a miss and learned from; replaceable so tests can count calls. */
  readonly decodeFully?: typeof decodeSoapRequest;
  /** false: every request takes the reference decoder (config `performance.shapeMemo`, the off switch). */
  readonly enabled?: boolean;
}

/**
 * A decoder equal to `decodeSoapRequest(contract, input, limits)` for every input, faster on
 * requests shaped like one it decoded successfully before. Its state lives in the closure: one
 * per contract, created at start-up.
 */
export function createSoapRequestDecoder(
  contract: CompiledContract,
  limits: XmlReadLimits = DEFAULT_XML_LIMITS,
  options: SoapShapeMemoOptions = {},
): SoapRequestDecoder {
  const decodeFully = options.decodeFully ?? decodeSoapRequest;
  const enabled = options.enabled ?? true;
  // Routing values a key may hold. An attacker could otherwise fill every key slot with
  // variants (` "SVCAPI/X" `, action="junk", action=SVCAPI%2FX...) that decode alike, keeping
  // real clients out. soapRouting has already trimmed the quotes of an `action` parameter.
  const canonicalActions = new Set<string>();
  const canonicalSoapActions = new Set<string>();
  for (const op of contract.operations) {
    canonicalActions.add(op.soapAction);
    canonicalSoapActions.add(op.soapAction);
    canonicalSoapActions.add(`"${op.soapAction}"`);
  }
  // Per transport, routing (which router, and its value as sent; see routingKey) -> templates.
  const memo: Record<SoapVersion, Map<string, Template[]>> = { '1.1': new Map(), '1.2': new Map() };
  let keys = 0;
  let templateCount = 0;
  let hits = 0;
  let fullDecodes = 0;

  // A Content-Type header, parsed, and its `action` parameter as ASMX reads it (computed when
  // first needed): SOAP 1.2 sends the action there, and the RFC 9110 parse plus ASMX's own read
  // of one header cost 1.5 µs per request against SOAP 1.1's 0.3.
  interface HeaderFacts {
    readonly media: MediaType;
    action?: string | undefined;
  }
  const headers = new Map<string, HeaderFacts>();
  const headerFacts = (header: string | undefined): HeaderFacts => {
    if (header === undefined || !enabled) return { media: parseMediaType(header) };
    let facts = headers.get(header);
    if (facts === undefined) {
      facts = { media: parseMediaType(header) };
      if (headers.size < MAX_CONTENT_TYPES) headers.set(header, facts);
    }
    return facts;
  };
  const actionOf = (facts: HeaderFacts) => (contentType: string | undefined): string | undefined => {
    if (!('action' in facts)) facts.action = aspNetContentTypeParameter(contentType, 'action');
    return facts.action;
  };

  const full = (input: SoapRequestInput, media: MediaType): SoapDecoded => {
    fullDecodes++;
    return decodeFully(contract, input.media === undefined ? { ...input, media } : input, limits);
  };

  const decoder = (input: SoapRequestInput): SoapDecoded => {
    const facts = headerFacts(input.contentType);
    const media = input.media ?? facts.media;
    const transport = soapTransport(media.type);
    if (!enabled || transport === null || input.body.length > MAX_BODY_BYTES) return full(input, media);
    // Besides the text, decodeSoapRequest reads only its routing (soapRouting: the SOAPAction
    // header, or else the Content-Type `action` parameter) and the charset, which matters only
    // for the text, decoded below exactly as decodeSoapRequest decodes it and matched as text.
    const routing = soapRouting(transport, input, actionOf(facts));
    const canonical = routing.by === 'soapaction' ? canonicalSoapActions : canonicalActions;
    if (routing.value !== undefined && !canonical.has(routing.value)) return full(input, media);
    const key = routingKey(routing);
    const table = memo[transport];
    const templates = table.get(key);
    const room = templates === undefined ? keys < MAX_KEYS : templates.length < MAX_TEMPLATES_PER_KEY;
    // Nothing to match and nothing to learn: not even the text is needed.
    if (templates === undefined && !room) return full(input, media);

    const text = decodeRequestText(input.body, media.params.get('charset'), transport === '1.2');
    let shapeKnown = false;
    if (templates !== undefined) {
      for (const template of templates) {
        const answer = answerFrom(template, text);
        if (answer === SHAPE_MISMATCH) continue;
        if (answer === HOLE_REFUSED) {
          // The shape is learned already; only a hole's text needs the reference decoder.
          shapeKnown = true;
          break;
        }
        hits++;
        return answer;
      }
    }

    const decoded = full(input, media);
    if (decoded.ok && room && !shapeKnown) {
      const template = learn(contract, text, decoded, limits);
      if (template !== null && !(templates ?? []).some((t) => sameFixed(t, template))) {
        if (templates === undefined) {
          table.set(key, [template]);
          keys++;
        } else {
          templates.push(template);
        }
        templateCount++;
      }
    }
    return decoded;
  };

  const stats = (): SoapShapeMemoStats => ({ hits, fullDecodes, keys, templates: templateCount });
  return Object.assign(decoder, { stats, mediaType: (header: string | undefined) => headerFacts(header).media });
}

/** One string per routing: the router, then the value as sent when there is one. */
function routingKey(routing: SoapRouting): string {
  return routing.value === undefined ? routing.by : `${routing.by} ${routing.value}`;
}

const SHAPE_MISMATCH = 0;
const HOLE_REFUSED = 1;

/**
 * `text.startsWith(piece, at)`, measured 10 times faster: V8's startsWith compares character by
 * character (576 ns for a 260-character envelope head and its tail, against 56 ns for a slice
 * and `===`, which compares flat strings as memory; Node 20, 2026-11-29). The memo compares the
 * whole fixed text of every request this way: 0.8 of its 1.1 µs a request went to startsWith.
 */
function matchesAt(text: string, piece: string, at: number): boolean {
  return text.slice(at, at + piece.length) === piece;
}

/** The memo's answer for `text`, or why the template cannot give it. */
function answerFrom(template: Template, text: string): SoapDecoded | typeof SHAPE_MISMATCH | typeof HOLE_REFUSED {
  const { fixed, starts, ends } = template;
  const first = fixed[0] as string;
  if (!matchesAt(text, first, 0)) return SHAPE_MISMATCH;
  let pos = first.length;
  const holes = fixed.length - 1;
  for (let h = 0; h < holes; h++) {
    // A hole is text, so it runs to the next '<', which must open the fixed text that follows.
    const lt = text.indexOf('<', pos);
    if (lt < 0) return SHAPE_MISMATCH;
    const next = fixed[h + 1] as string;
    if (!matchesAt(text, next, lt)) return SHAPE_MISMATCH;
    starts[h] = pos;
    ends[h] = lt;
    pos = lt + next.length;
  }
  if (pos !== text.length) return SHAPE_MISMATCH;

  const args = template.args.slice();
  for (let h = 0; h < holes; h++) {
    const raw = text.slice(starts[h], ends[h]);
    // Every hole, bound or not: one the fast reader would refuse sends the document to saxes.
    const value = decodeLeafText(raw);
    if (value === null) return HOLE_REFUSED;
    const param = template.holeParams[h] as number;
    if (param === NO_PARAM) continue;
    if (template.holeIsInt[h]) {
      const parsed = parseXmlInt32(value);
      // A fault quotes where the element ended: the reference decoder words it.
      if (!parsed.ok) return HOLE_REFUSED;
      args[param] = parsed.value;
    } else {
      args[param] = value;
    }
  }
  return { ok: true, version: template.version, operation: template.operation, args };
}

function sameFixed(a: Template, b: Template): boolean {
  return a.fixed.length === b.fixed.length && a.fixed.every((piece, i) => piece === b.fixed[i]);
}

function collectPreOrder(element: XmlElement, out: XmlElement[]): void {
  out.push(element);
  for (const child of element.children) collectPreOrder(child, out);
}

const SLASH = 0x2f;
const QUESTION = 0x3f;
const BANG = 0x21;

/**
 * A template from `text`, which decodeSoapRequest decoded as `decoded`; null when the memo
 * cannot prove a match would decode alike (then that shape is simply never memoised).
 */
function learn(contract: CompiledContract, text: string, decoded: SoapDecoded & { ok: true }, limits: XmlReadLimits): Template | null {
  // Only what the fast reader reads: then a match, with checked holes, is read by it too.
  const read = readXmlDocumentFast(text, limits);
  if (read === null || !read.ok) return null;
  const elements: XmlElement[] = [];
  collectPreOrder(read.root, elements);
  // With no '>' in attribute values, a tag ends at the first '>' after its '<'.
  for (const element of elements) for (const attribute of element.attributes) if (attribute.value.includes('>')) return null;

  // Split at each '<' (none stands in text or attribute values of a document the fast reader
  // read): markup up to the first '>', then character data. Start tags meet the elements in
  // document order, which is the tree's pre-order.
  const fixed: string[] = [];
  const holeElements: XmlElement[] = [];
  let pieceStart = 0;
  let nextElement = 0;
  for (let lt = text.indexOf('<'); lt >= 0; ) {
    const gt = text.indexOf('>', lt);
    if (gt < 0) return null;
    const following = text.indexOf('<', gt + 1);
    const kind = text.charCodeAt(lt + 1);
    if (kind !== SLASH && kind !== QUESTION && kind !== BANG) {
      const element = elements[nextElement++];
      if (element === undefined) return null;
      const selfClosing = text.charCodeAt(gt - 1) === SLASH;
      // `<a ...>text</a>`: the text (possibly empty) is a hole.
      if (!selfClosing && following >= 0 && text.charCodeAt(following + 1) === SLASH) {
        if (element.children.length !== 0 || decodeLeafText(text.slice(gt + 1, following)) !== element.text) return null;
        fixed.push(text.slice(pieceStart, gt + 1));
        holeElements.push(element);
        pieceStart = following;
      }
    }
    lt = following;
  }
  fixed.push(text.slice(pieceStart));
  if (nextElement !== elements.length) return null;

  // Which hole each parameter came from, by decodeSoapRequest's own binding rule
  // (boundParameters) on the first element of the Body. Parameters bound otherwise (a default,
  // a self-closing element) keep the learned value.
  const operation = decoded.operation;
  const params = operation.spec.params;
  const holeParams: number[] = holeElements.map(() => NO_PARAM);
  const holeIsInt: boolean[] = holeElements.map(() => false);
  const envelope = read.root;
  const body = envelope.children.find((c) => c.ns === envelope.ns && c.local === 'Body');
  const payload = body?.children[0];
  for (const [index, child] of boundParameters(contract, operation, payload)) {
    const hole = holeElements.indexOf(child);
    const param = params[index];
    if (hole < 0 || param === undefined) continue;
    // xsi:nil decides between the text and null: rare enough not to model at all.
    if (attributeValue(child, XSI_NS, 'nil') !== undefined) return null;
    // A cross-check of the binding above against the reference decoder's own answer.
    // (As there, whatever is not a string is read as an int.)
    const isInt = param.type !== 'string';
    const learned = decoded.args[index];
    if (isInt) {
      const parsed = parseXmlInt32(child.text);
      if (!parsed.ok || parsed.value !== learned) return null;
    } else if (child.text !== learned) {
      return null;
    }
    holeParams[hole] = index;
    holeIsInt[hole] = isInt;
  }

  return {
    fixed,
    holeParams,
    holeIsInt,
    version: decoded.version,
    operation,
    args: decoded.args.slice(),
    starts: new Int32Array(holeElements.length),
    ends: new Int32Array(holeElements.length),
  };
}
