/**
 * The fast XML path must never change an answer: wherever it reads a document at all, it must
 * build exactly the tree saxes builds (or hit the same size limit). Compared over every request
 * body of the golden captures and of the malformed-input corpus, plus hand-made edge cases.
 */
import { describe, expect, it } from 'vitest';
import { decodeRequestText } from '../../src/wire/decode-text.js';
import { readXmlDocumentFast } from '../../src/wire/fast-xml-reader.js';
import { parseMediaType } from '../../src/wire/media-type.js';
import { DEFAULT_XML_LIMITS, readXmlDocumentFully } from '../../src/wire/xml-reader.js';
import { buildCorpus } from '../robustness/corpus.js';
import { captureNames, readCapturedRequest } from '../support/captures.js';

const EDGE_CASES = [
  '<a/>',
  '<?xml version="1.0"?><a xmlns="u"><b x="1" y=\'2\'>t&amp;&#65;&#x42;&lt;</b></a>',
  '<p:a xmlns:p="u" p:x="1" x="2"><p:b xmlns:p="v"/><c xmlns=""/></p:a>',
  '<a xml:lang="en">  <b>one</b>two <c/>\n three</a>\n',
  '<a x="1" x="2"/>',
  '<p:a/>',
  '<a><b></a></b>',
  '<a>x</a><b/>',
  // Where .NET's reader stands after each element: at a name, an end tag's name, text.
  '<a><b>1</b><c x="1"/><d/>t<e></e></a>',
  '<a><b>1</b><!--x--><c/><![CDATA[y]]><d/><?p?></a>',
  '<a>]]></a>',
  '<a>&unknown;</a>',
  '<a>&#0;</a>',
  '<a>&#xD800;</a>',
  '<a xmlns:p=""/>',
  '<a xmlns:xml="u"/>',
  '<a b="<"/>',
  '<a b="1"c="2"/>',
  ' <?xml version="1.0"?><a/>',
  '<?xml version="2.0"?><a/>',
  '<a:b:c/>',
  '<é/>',
  '<a>\r\n</a>',
  '<a><!-- c --></a>',
  '<a><![CDATA[x]]></a>',
  '<a>' + '<b>'.repeat(40) + '</b>'.repeat(40) + '</a>',
  '',
  '   ',
  '<a',
  '<a></a',
];

function compare(text: string): boolean {
  const fast = readXmlDocumentFast(text, DEFAULT_XML_LIMITS);
  if (fast === null) return false;
  expect(fast).toEqual(readXmlDocumentFully(text, DEFAULT_XML_LIMITS));
  return true;
}

describe('fast XML path equals saxes wherever it answers', () => {
  it('on hand-made edge cases', () => {
    let answered = 0;
    for (const text of EDGE_CASES) if (compare(text)) answered++;
    expect(answered).toBeGreaterThanOrEqual(5);
  });

  it('on every captured request body', () => {
    let answered = 0;
    for (const name of captureNames()) {
      const req = readCapturedRequest(name);
      if (req.body.length === 0 || req.body.length > 2_000_000) continue;
      const media = parseMediaType(req.headers['content-type']);
      if (compare(decodeRequestText(req.body, media.params.get('charset'), media.type === 'application/soap+xml'))) answered++;
    }
    // The plain envelopes of the ok_* captures all take the fast path.
    expect(answered).toBeGreaterThan(60);
  });

  it('on the malformed-input corpus', () => {
    let answered = 0;
    let total = 0;
    for (const c of buildCorpus()) {
      if (c.body === undefined || c.body.length === 0) continue;
      total++;
      const media = parseMediaType(c.headers['content-type'] ?? c.headers['Content-Type']);
      if (compare(decodeRequestText(c.body, media.params.get('charset'), media.type === 'application/soap+xml'))) answered++;
    }
    expect(total).toBeGreaterThan(1000);
    expect(answered).toBeGreaterThan(100);
  });
});
