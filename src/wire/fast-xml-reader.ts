/**
 * The fast path of readXmlDocument: a scanner for the plain XML that SOAP clients send (an XML
 * declaration, elements, attributes, namespace declarations, text with the five predefined
 * entities and character references), building the same tree saxes would, several times faster.
 *
 * It never decides that a document is wrong: anything outside that subset, or anything
 * malformed (DOCTYPE, comments, CDATA, processing instructions, carriage returns, control or
 * surrogate characters, non-ASCII names, unbound prefixes, duplicate attributes, mismatched
 * tags...), returns null and the caller reads the document with saxes, which gives the verdict.
 * So the fast path can only ever be faster, never different (test/wire/fast-xml-reader.test.ts
 * compares the two over the golden captures and the malformed-input corpus).
 */
import { nodePositionShift } from './xml-line-info.js';
import type { XmlAttribute, XmlElement, XmlRead, XmlReadLimits } from './xml-reader.js';

const XML_NS = 'http://www.w3.org/XML/1998/namespace';
const XMLNS_NS = 'http://www.w3.org/2000/xmlns/';

// Characters that need saxes: CR (line-end normalisation), C0 controls, surrogates, U+FFFE/FFFF.
// eslint-disable-next-line no-control-regex
const NEEDS_FULL_PARSER = /[\u0000-\u0008\u000B-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/;
const XML_DECL = /<\?xml[ \t\n]+version[ \t\n]*=[ \t\n]*(["'])1\.[0-9]+\1(?:[ \t\n]+encoding[ \t\n]*=[ \t\n]*(["'])[A-Za-z][A-Za-z0-9._-]*\2)?(?:[ \t\n]+standalone[ \t\n]*=[ \t\n]*(["'])(?:yes|no)\3)?[ \t\n]*\?>/y;
const ENTITY = /&(?:(lt|gt|amp|quot|apos)|#([0-9]{1,7})|#x([0-9A-Fa-f]{1,6}));/g;
const PREDEFINED: Readonly<Record<string, string>> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

class Bail extends Error {}
const BAIL = new Bail();

function isXmlChar(code: number): boolean {
  return code === 0x9 || code === 0xa || code === 0xd || (code >= 0x20 && code <= 0xd7ff) || (code >= 0xe000 && code <= 0xfffd) || (code >= 0x10000 && code <= 0x10ffff);
}

/** Replaces entity and character references; bails on any other `&`. */
function decode(raw: string): string {
  if (raw.indexOf('&') < 0) return raw;
  let refs = 0;
  const out = raw.replace(ENTITY, (_m, name: string | undefined, dec: string | undefined, hex: string | undefined) => {
    refs++;
    if (name !== undefined) return PREDEFINED[name] ?? '';
    const code = dec !== undefined ? Number(dec) : parseInt(hex ?? '', 16);
    if (!isXmlChar(code)) throw BAIL;
    return String.fromCodePoint(code);
  });
  // Every '&' must have been a reference.
  let amps = 0;
  for (let i = raw.indexOf('&'); i >= 0; i = raw.indexOf('&', i + 1)) amps++;
  if (amps !== refs) throw BAIL;
  return out;
}

/**
 * The text of a leaf element `<a>raw</a>` as scan() reads it (`raw` being everything between
 * the two tags), or null wherever readXmlDocumentFast would return null because of `raw`: a
 * character that needs saxes, `]]>`, or an `&` that is not a valid reference. For
 * soap-shape-memo.ts, which substitutes such text into a document this reader has already
 * read; it must stay in step with readXmlDocumentFast and scan().
 */
export function decodeLeafText(raw: string): string | null {
  if (NEEDS_FULL_PARSER.test(raw) || raw.includes('<') || raw.includes(']]>')) return null;
  try {
    return decode(raw);
  } catch (error) {
    if (error === BAIL) return null;
    throw error;
  }
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x09;
}

/** [A-Za-z_]: the ASCII name start characters (anything else is left to saxes). */
function isNameStart(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f;
}

/** [A-Za-z0-9._-]. */
function isNameChar(c: number): boolean {
  return isNameStart(c) || (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x2d;
}

/**
 * The end of the qualified name at `at` (prefix:local or local), by hand: a sticky regex
 * allocates a match per name, and names are most of what a SOAP envelope's markup is.
 */
function nameEnd(text: string, at: number): number {
  if (!isNameStart(text.charCodeAt(at))) throw BAIL;
  let i = at + 1;
  while (isNameChar(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i) === 0x3a /* : */ && isNameStart(text.charCodeAt(i + 1))) {
    i += 2;
    while (isNameChar(text.charCodeAt(i))) i++;
  }
  return i;
}

/** Whether `names` holds a duplicate; linear for the few attributes an element usually has. */
function hasDuplicate(names: readonly string[]): boolean {
  const n = names.length;
  if (n < 2) return false;
  if (n <= 8) {
    for (let i = 1; i < n; i++) for (let j = 0; j < i; j++) if (names[i] === names[j]) return true;
    return false;
  }
  return new Set(names).size !== n;
}

interface Scope {
  readonly prefixes: Readonly<Record<string, string>> | null;
  readonly defaultNs: string;
  readonly parent: Scope | null;
}

function resolve(scope: Scope, prefix: string): string | undefined {
  if (prefix === 'xml') return XML_NS;
  for (let s: Scope | null = scope; s !== null; s = s.parent) {
    const uri = s.prefixes?.[prefix];
    if (uri !== undefined) return uri;
  }
  return undefined;
}

export function readXmlDocumentFast(text: string, limits: XmlReadLimits): XmlRead | null {
  if (NEEDS_FULL_PARSER.test(text)) return null;
  try {
    return scan(text, limits);
  } catch (error) {
    if (error === BAIL) return null;
    throw error;
  }
}

function scan(text: string, limits: XmlReadLimits): XmlRead | null {
  const len = text.length;
  let pos = 0;
  if (text.startsWith('<?xml')) {
    XML_DECL.lastIndex = 0;
    const decl = XML_DECL.exec(text);
    if (decl === null) return null;
    pos = decl[0].length;
  }

  // Line bookkeeping for .NET's (line, position) of the node after each element: advanced
  // lazily, O(newlines). `offset` is just past the element's '>'.
  let line = 1;
  let lineStart = 0;
  let nextNewline = text.indexOf('\n');
  const locate = (offset: number, element: XmlElement): void => {
    while (nextNewline >= 0 && nextNewline < offset) {
      line++;
      lineStart = nextNewline + 1;
      nextNewline = text.indexOf('\n', lineStart);
    }
    element.nextLine = line;
    element.nextColumn = offset - lineStart + 1 + nodePositionShift(text, offset);
  };

  const elements: XmlElement[] = [];
  const qnames: string[] = [];
  const scopes: Scope[] = [];
  let scope: Scope = { prefixes: null, defaultNs: '', parent: null };
  let root: XmlElement | undefined;
  let count = 0;

  const readName = (at: number): string => text.slice(at, nameEnd(text, at));

  while (pos < len) {
    const lt = text.indexOf('<', pos);
    const end = lt < 0 ? len : lt;
    if (end > pos) {
      const chunk = text.slice(pos, end);
      const top = elements[elements.length - 1];
      if (top === undefined) {
        // Outside the root only white space may stand.
        for (let i = 0; i < chunk.length; i++) if (!isSpace(chunk.charCodeAt(i))) throw BAIL;
      } else {
        if (chunk.includes(']]>')) throw BAIL;
        top.text += decode(chunk);
      }
    }
    if (lt < 0) break;
    pos = lt + 1;
    const c = text.charCodeAt(pos);
    if (c === 0x2f /* / */) {
      const name = readName(pos + 1);
      pos += 1 + name.length;
      while (isSpace(text.charCodeAt(pos))) pos++;
      if (text.charCodeAt(pos) !== 0x3e /* > */) throw BAIL;
      pos++;
      const element = elements.pop();
      if (element === undefined || qnames.pop() !== name) throw BAIL;
      scope = scopes.pop() ?? scope;
      locate(pos, element);
      continue;
    }
    if (c === 0x21 /* ! */ || c === 0x3f /* ? */) return null;
    if (root !== undefined && elements.length === 0) throw BAIL; // a second root

    // Start tag.
    const qname = readName(pos);
    pos += qname.length;
    // Attributes as written: names and (entity-decoded) values, in parallel.
    const rawNames: string[] = [];
    const rawValues: string[] = [];
    let selfClosing = false;
    for (;;) {
      const before = pos;
      while (isSpace(text.charCodeAt(pos))) pos++;
      const d = text.charCodeAt(pos);
      if (d === 0x3e) {
        pos++;
        break;
      }
      if (d === 0x2f) {
        if (text.charCodeAt(pos + 1) !== 0x3e) throw BAIL;
        pos += 2;
        selfClosing = true;
        break;
      }
      if (pos === before) throw BAIL; // attributes must be separated by white space
      const attr = readName(pos);
      pos += attr.length;
      while (isSpace(text.charCodeAt(pos))) pos++;
      if (text.charCodeAt(pos) !== 0x3d /* = */) throw BAIL;
      pos++;
      while (isSpace(text.charCodeAt(pos))) pos++;
      const quote = text.charCodeAt(pos);
      if (quote !== 0x22 && quote !== 0x27) throw BAIL;
      const close = text.indexOf(quote === 0x22 ? '"' : "'", pos + 1);
      if (close < 0) throw BAIL;
      const value = text.slice(pos + 1, close);
      // '<' is not allowed; tab and newline would need attribute-value normalisation.
      if (value.includes('<') || value.includes('\t') || value.includes('\n')) throw BAIL;
      rawNames.push(attr);
      rawValues.push(decode(value));
      pos = close + 1;
    }

    if (elements.length >= limits.maxDepth || ++count > limits.maxElements) return { ok: false, reason: 'too-large' };

    // Namespace declarations first, then names.
    let prefixes: Record<string, string> | null = null;
    let defaultNs = scope.defaultNs;
    if (hasDuplicate(rawNames)) throw BAIL;
    for (let a = 0; a < rawNames.length; a++) {
      const name = rawNames[a] as string;
      const value = rawValues[a] as string;
      if (name === 'xmlns') {
        defaultNs = value;
      } else if (name.startsWith('xmlns:')) {
        const prefix = name.slice(6);
        if (prefix === 'xmlns' || value === '' || (prefix === 'xml') !== (value === XML_NS) || value === XMLNS_NS) throw BAIL;
        (prefixes ??= {})[prefix] = value;
      }
    }
    scopes.push(scope);
    scope = prefixes === null && defaultNs === scope.defaultNs ? scope : { prefixes, defaultNs, parent: scope };

    const attributes: XmlAttribute[] = [];
    // Expanded names of prefixed attributes, to refuse two that resolve alike; rarely needed.
    let expanded: Set<string> | null = null;
    for (let a = 0; a < rawNames.length; a++) {
      const name = rawNames[a] as string;
      const value = rawValues[a] as string;
      let ns: string;
      let local: string;
      if (name === 'xmlns' || name.startsWith('xmlns:')) {
        ns = XMLNS_NS;
        local = name === 'xmlns' ? 'xmlns' : name.slice(6);
      } else {
        const colon = name.indexOf(':');
        if (colon < 0) {
          ns = '';
          local = name;
        } else {
          const uri = resolve(scope, name.slice(0, colon));
          if (uri === undefined) throw BAIL;
          ns = uri;
          local = name.slice(colon + 1);
          const key = `{${ns}}${local}`;
          expanded ??= new Set<string>();
          if (expanded.has(key)) throw BAIL;
          expanded.add(key);
        }
      }
      attributes.push({ ns, local, value });
    }

    const colon = qname.indexOf(':');
    let ns: string;
    if (colon < 0) {
      ns = scope.defaultNs;
    } else {
      const uri = resolve(scope, qname.slice(0, colon));
      if (uri === undefined) throw BAIL;
      ns = uri;
    }
    const element: XmlElement = { ns, local: colon < 0 ? qname : qname.slice(colon + 1), attributes, children: [], text: '', nextLine: 0, nextColumn: 0 };
    const parent = elements[elements.length - 1];
    if (parent) parent.children.push(element);
    else root = element;

    if (selfClosing) {
      scope = scopes.pop() ?? scope;
      locate(pos, element);
    } else {
      elements.push(element);
      qnames.push(qname);
    }
  }

  if (root === undefined || elements.length > 0) return null;
  return { ok: true, root };
}
