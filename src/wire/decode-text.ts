/**
 * Request bytes to text. Like ASMX (RequestResponseUtils.GetEncoding), the Content-Type charset
 * wins when it names an encoding we know; otherwise the XML reader's own detection applies: a
 * byte-order mark, then the XML declaration's encoding, then UTF-8. Undecodable bytes become
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

export function decodeRequestText(body: Uint8Array, charset: string | undefined): string {
  if (charset !== undefined && charset !== '') {
    const decoder = decoderFor(charset);
    if (decoder) return decoder.decode(body);
  }
  if (body.length >= 2) {
    const b0 = body[0];
    const b1 = body[1];
    if (b0 === 0xff && b1 === 0xfe) return decoderFor('utf-16le')?.decode(body) ?? UTF8.decode(body);
    if (b0 === 0xfe && b1 === 0xff) return decoderFor('utf-16be')?.decode(body) ?? UTF8.decode(body);
  }
  // The declaration is ASCII-compatible in every encoding we sniff here.
  const head = Buffer.from(body.subarray(0, 128)).toString('latin1');
  const decl = /^(?:\uFEFF|\u00EF\u00BB\u00BF)?<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._:-]+)["']/.exec(head);
  if (decl?.[1]) {
    const decoder = decoderFor(decl[1]);
    if (decoder) return decoder.decode(body);
  }
  return UTF8.decode(body);
}
