/**
 * A test-only XML canonical form, to compare documents by meaning rather than by bytes:
 * - element and attribute names become `{namespace-uri}local` (prefixes do not matter);
 * - namespace declarations are dropped (their effect is already in the names);
 * - attributes are sorted by expanded name;
 * - whitespace-only text is dropped (indentation and line endings do not matter);
 * - the XML declaration, comments and processing instructions are ignored.
 * Prefixed values inside attributes (`type="s:string"`) are compared as written.
 *
 * One line per node, indented by depth, so a failing `expect(a).toBe(b)` diff is readable.
 */
import { SaxesParser, type SaxesAttributeNS, type SaxesTagNS } from 'saxes';

function expanded(uri: string, local: string): string {
  return uri === '' ? local : `{${uri}}${local}`;
}

function isNamespaceDeclaration(attr: SaxesAttributeNS): boolean {
  return attr.prefix === 'xmlns' || (attr.prefix === '' && attr.local === 'xmlns');
}

export function canonicalXml(xml: string): string {
  const parser = new SaxesParser({ xmlns: true, position: false });
  const out: string[] = [];
  let depth = 0;

  parser.on('opentag', (tag: SaxesTagNS) => {
    const attrs = Object.values(tag.attributes)
      .filter((a) => !isNamespaceDeclaration(a))
      .map((a) => [expanded(a.uri, a.local), a.value] as const)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, value]) => ` ${name}=${JSON.stringify(value)}`)
      .join('');
    out.push(`${'  '.repeat(depth)}<${expanded(tag.uri, tag.local)}${attrs}>`);
    depth += 1;
  });
  parser.on('closetag', (tag: SaxesTagNS) => {
    depth -= 1;
    out.push(`${'  '.repeat(depth)}</${expanded(tag.uri, tag.local)}>`);
  });
  const onText = (text: string): void => {
    if (text.trim() !== '') out.push(`${'  '.repeat(depth)}${JSON.stringify(text)}`);
  };
  parser.on('text', onText);
  parser.on('cdata', onText);
  parser.on('error', (err: Error) => {
    throw err;
  });

  parser.write(xml).close();
  return out.join('\n');
}
