/**
 * .NET's XmlReader line information, for the "There is an error in XML document (line, position)"
 * that XmlSerializer quotes: the LineNumber and LinePosition of the node the reader stands on
 * when a conversion fails. XmlTextReaderImpl (ParseElementContent, ParseElement,
 * ParseEndElement, ParsePI, ParseCDataOrComment) records a node's position after the markup
 * that opens it: an element at the first character of its name (after `<`), an end tag at its
 * name (after `</`), a processing instruction after `<?`, a comment after `<!--`, a CDATA
 * section after `<![CDATA[`; text and white space at their first character. (An attribute, when
 * the reader is moved to one, stands at its name; a parameter's conversion never runs there.)
 */

const LT = 0x3c;
const SLASH = 0x2f;
const QUESTION = 0x3f;
const BANG = 0x21;

/**
 * How many characters after `offset` .NET places the LinePosition of the node that starts at
 * `offset` in `text`. The opener never spans a line, so the line number is that of `offset`.
 */
export function nodePositionShift(text: string, offset: number): number {
  if (text.charCodeAt(offset) !== LT) return 0;
  switch (text.charCodeAt(offset + 1)) {
    case SLASH:
    case QUESTION:
      return 2;
    case BANG:
      if (text.startsWith('<!--', offset)) return 4;
      return text.startsWith('<![CDATA[', offset) ? 9 : 0;
    default:
      return 1;
  }
}
