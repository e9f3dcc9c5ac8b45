/**
 * Request bytes to text, in ASMX's order: a byte-order mark; else the Content-Type charset when
 * it names an encoding we know (RequestResponseUtils.GetEncoding); else the XML reader's own
 * detection (UTF-16 by layout, the declaration's encoding, UTF-8). Undecodable bytes become
 * U+FFFD, as .NET's StreamReader does, never an exception.
 */

import { TextDecoder } from 'node:util';

const decoders = new Map<string, TextDecoder | null>();

function decoderFor(label: string): TextDecoder | null {
  const key = label.trim().toLowerCase();
  let decoder = decoders.get(key);
  if (decoder === undefined) {
    try {
      decoder = new TextDecoder(key, { fatal: false, ignoreBOM: false });
    } catch {
      decoder = null;
    }
    // Bounded: labels come from clients; keep only the first few distinct ones.
    if (decoders.size < 64) decoders.set(key, decoder);
  }
  return decoder;
}

const UTF8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: false });

/**
 * `detectWithoutCharset`: on SOAP 1.2, a missing charset leaves detection to XmlTextReader
 * (RequestResponseUtils.GetEncoding2 returns null), which recognises BOM-less UTF-16; on SOAP
 * 1.1 ASMX assumes a single-byte charset instead, so BOM-less UTF-16 is unreadable there. (We
 * still honour an ASCII-compatible declared encoding, and default to UTF-8, ASCII's superset.)
 */
export function decodeRequestText(body: Uint8Array, charset: string | undefined, detectWithoutCharset = true): string {
  // A byte-order mark wins over the charset parameter (StreamReader with
  // detectEncodingFromByteOrderMarks, as SoapServerProtocol.GetReaderForMessage creates it).
  const b0 = body[0];
  const b1 = body[1];
  if (b0 === 0xff && b1 === 0xfe) return withLabel('utf-16le', body);
  if (b0 === 0xfe && b1 === 0xff) return withLabel('utf-16be', body);
  if (b0 === 0xef && b1 === 0xbb && body[2] === 0xbf) return UTF8.decode(body);
  if (charset !== undefined && charset !== '') {
    const decoder = decoderFor(charset);
    if (decoder) return decoder.decode(body);
  }
  // Without a BOM or charset, XmlTextReader recognises UTF-16 by how `<?` is laid out.
  if (detectWithoutCharset && b0 === 0x3c && b1 === 0x00 && body[2] === 0x3f && body[3] === 0x00) return withLabel('utf-16le', body);
  if (detectWithoutCharset && b0 === 0x00 && b1 === 0x3c && body[2] === 0x00 && body[3] === 0x3f) return withLabel('utf-16be', body);
  // The declaration is ASCII-compatible in every encoding left.
  const head = Buffer.from(body.subarray(0, 128)).toString('latin1');
  const decl = /^<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._:-]+)["']/.exec(head);
  if (decl?.[1]) {
    const decoder = decoderFor(decl[1]);
    if (decoder) return decoder.decode(body);
  }
  return UTF8.decode(body);
}

function withLabel(label: string, body: Uint8Array): string {
  return (decoderFor(label) ?? UTF8).decode(body);
}
