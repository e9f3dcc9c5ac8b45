/**
 * A small namespace-aware document reader for SOAP requests, on top of saxes (a conforming,
 * non-validating XML parser). What it guarantees, whatever the bytes:
 * - any DOCTYPE is rejected as soon as it is seen: no entity is ever expanded and no external
 *   resource ever read (saxes itself never fetches anything);
 * - nesting depth and element count are bounded, so deep or wide trees cost bounded memory;
 * - every element remembers where .NET's XmlReader stands once it has read past the element's
 *   end tag, in its 1-based (line, position) terms, because XmlSerializer faults quote
 *   "There is an error in XML document (7, 25)" (see xml-line-info.ts).
 */
import { SaxesParser } from 'saxes';
import { readXmlDocumentFast } from './fast-xml-reader.js';
import { nodePositionShift } from './xml-line-info.js';

export interface XmlAttribute {
  readonly ns: string;
  readonly local: string;
  readonly value: string;
}

export interface XmlElement {
  readonly ns: string;
  readonly local: string;
  readonly attributes: readonly XmlAttribute[];
  readonly children: XmlElement[];
  /** Direct character data (text and CDATA), concatenated. */
  text: string;
  /**
   * .NET XmlReader (LineNumber, LinePosition) of the node that follows this element's end tag
   * (or its `/>`): where the reader stands after ReadElementString, when XmlSerializer converts
   * the element's text. White space or text is at its first character, a start or end tag at
   * its name: `<a>x</a>` followed by `<b>` gives the column of `b`, not of `<`.
   */
  nextLine: number;
  nextColumn: number;
}

export type XmlReadFailure = 'empty' | 'malformed' | 'dtd' | 'too-large';
export type XmlRead = { readonly ok: true; readonly root: XmlElement } | { readonly ok: false; readonly reason: XmlReadFailure };

export interface XmlReadLimits {
  readonly maxDepth: number;
  readonly maxElements: number;
}

export const DEFAULT_XML_LIMITS: XmlReadLimits = Object.freeze({ maxDepth: 32, maxElements: 4096 });

const PROLOG_THEN_DOCTYPE = /^\uFEFF?\s*(?:<\?xml[^>]*\?>)?(?:\s|<!--[\s\S]*?-->|<\?[\s\S]*?\?>)*<!DOCTYPE/;

class Stop extends Error {
  constructor(readonly reason: XmlReadFailure) {
    super(reason);
  }
}

export function readXmlDocument(text: string, limits: XmlReadLimits = DEFAULT_XML_LIMITS): XmlRead {
  return readXmlDocumentFast(text, limits) ?? readXmlDocumentFully(text, limits);
}

/** saxes, for every document: the verdict on anything the fast path leaves to it. */
export function readXmlDocumentFully(text: string, limits: XmlReadLimits = DEFAULT_XML_LIMITS): XmlRead {
  const parser = new SaxesParser({ xmlns: true, position: true });
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  let count = 0;

  parser.on('doctype', () => {
    throw new Stop('dtd');
  });
  parser.on('opentag', (tag) => {
    if (stack.length >= limits.maxDepth || ++count > limits.maxElements) throw new Stop('too-large');
    const attributes: XmlAttribute[] = [];
    for (const attr of Object.values(tag.attributes)) {
      attributes.push({ ns: attr.uri, local: attr.local, value: attr.value });
    }
    const element: XmlElement = { ns: tag.uri, local: tag.local, attributes, children: [], text: '', nextLine: 0, nextColumn: 0 };
    const parent = stack[stack.length - 1];
    if (parent) parent.children.push(element);
    else root = element;
    stack.push(element);
  });
  parser.on('closetag', () => {
    const element = stack.pop();
    if (element) {
      // The text is written as one chunk, so position is an index into it: just after the '>'.
      element.nextLine = parser.line;
      element.nextColumn = parser.columnIndex + 1 + nodePositionShift(text, parser.position);
    }
  });
  const onText = (data: string): void => {
    const top = stack[stack.length - 1];
    if (top) top.text += data;
  };
  parser.on('text', onText);
  parser.on('cdata', onText);
  parser.on('error', (err) => {
    throw err;
  });

  try {
    parser.write(text).close();
  } catch (err) {
    if (err instanceof Stop) return { ok: false, reason: err.reason };
    // A DOCTYPE that never finishes still is a DTD: .NET refuses at `<!DOCTYPE`, before parsing it.
    if (root === undefined && PROLOG_THEN_DOCTYPE.test(text)) return { ok: false, reason: 'dtd' };
    // "Root element is missing." when nothing but the prolog (or nothing at all) was sent.
    return { ok: false, reason: root === undefined && !/</.test(text.replace(/^\s*<\?xml[^>]*\?>/, '')) ? 'empty' : 'malformed' };
  }
  return root ? { ok: true, root } : { ok: false, reason: 'empty' };
}

/** The value of an attribute by namespace and local name. */
export function attributeValue(element: XmlElement, ns: string, local: string): string | undefined {
  for (const a of element.attributes) if (a.ns === ns && a.local === local) return a.value;
  return undefined;
}
