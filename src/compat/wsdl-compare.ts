/**
 * WSDL documents compared by meaning, the way the proxy generators that read them see them:
 * namespace prefixes and declarations, attribute order, indentation and line endings do not
 * count; a prefixed name inside an attribute (`type="s:string"`, `message="tns:ValidateUserSoapIn"`)
 * is compared by its namespace; the port addresses (`location`) are each service's own URL and
 * are not compared. What is left is one line per element, attribute and text, so a unified diff
 * of two documents names exactly what a regenerated client would see differently.
 */
import { SaxesParser, type SaxesTagNS } from 'saxes';
import { createTwoFilesPatch } from 'diff/lib/patch/create.js';

/** Attribute values that are a QName in WSDL / XSD. */
const QNAME_VALUE = /^([A-Za-z_][\w.-]*):([A-Za-z_][\w.-]*)$/;

function expanded(uri: string, local: string): string {
  return uri === '' ? local : `{${uri}}${local}`;
}

export class CanonicalXmlError extends Error {}

/** One line per node, indented by depth; throws CanonicalXmlError for a document it will not read. */
export function canonicalWsdlLines(xml: string): string[] {
  if (/<!DOCTYPE/i.test(xml)) throw new CanonicalXmlError('the document has a DTD (refused)');
  const parser = new SaxesParser({ xmlns: true, position: false });
  const out: string[] = [];
  const scopes: Array<Record<string, string>> = [{ xml: 'http://www.w3.org/XML/1998/namespace' }];
  let depth = 0;
  const resolve = (prefix: string): string | undefined => {
    for (let i = scopes.length - 1; i >= 0; i--) {
      const uri = scopes[i]?.[prefix];
      if (uri !== undefined) return uri;
    }
    return undefined;
  };
  parser.on('opentag', (tag: SaxesTagNS) => {
    scopes.push({ ...tag.ns });
    const isAddress = tag.local === 'address';
    const attrs = Object.values(tag.attributes)
      .filter((a) => a.prefix !== 'xmlns' && !(a.prefix === '' && a.local === 'xmlns'))
      .map((a) => {
        let value = a.value;
        if (isAddress && a.local === 'location') value = '{service-url}';
        const q = QNAME_VALUE.exec(value);
        const uri = q === null ? undefined : resolve(q[1] ?? '');
        if (q !== null && uri !== undefined) value = expanded(uri, q[2] ?? '');
        return [expanded(a.uri, a.local), value] as const;
      })
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    out.push(`${'  '.repeat(depth)}<${expanded(tag.uri, tag.local)}>`);
    for (const [name, value] of attrs) out.push(`${'  '.repeat(depth + 1)}@${name}=${JSON.stringify(value)}`);
    depth += 1;
  });
  parser.on('closetag', () => {
    depth -= 1;
    scopes.pop();
  });
  const onText = (text: string): void => {
    if (text.trim() !== '') out.push(`${'  '.repeat(depth)}${JSON.stringify(text.trim())}`);
  };
  parser.on('text', onText);
  parser.on('cdata', onText);
  try {
    parser.write(xml).close();
  } catch (error) {
    throw new CanonicalXmlError(`not well-formed XML (${(error as Error).message.split('\n', 1)[0] ?? ''})`);
  }
  if (out.length === 0) throw new CanonicalXmlError('an empty document');
  return out;
}

export interface WsdlComparison {
  /** Canonical lines only in theirs / only in ours. */
  readonly removed: number;
  readonly added: number;
  /** A unified diff of the canonical forms ('' when they are equal). */
  readonly patch: string;
}

/** Compares two WSDL documents canonically (theirs first). */
export function compareWsdl(theirs: string, ours: string, labels: readonly [string, string] = ['legacy ?WSDL', 'svcapi-auth ?WSDL']): WsdlComparison {
  const a = canonicalWsdlLines(theirs);
  const b = canonicalWsdlLines(ours);
  if (a.length === b.length && a.every((line, i) => line === b[i])) return { removed: 0, added: 0, patch: '' };
  const patch = createTwoFilesPatch(labels[0], labels[1], `${a.join('\n')}\n`, `${b.join('\n')}\n`, '', '', { context: 3 });
  let removed = 0;
  let added = 0;
  for (const line of patch.split('\n').slice(2)) {
    if (line.startsWith('-') && !line.startsWith('---')) removed += 1;
    else if (line.startsWith('+') && !line.startsWith('+++')) added += 1;
  }
  return { removed, added, patch };
}
