/**
 * Reads the golden captures of test/fixtures/asmx/captures (copied from
 * shared/reference/asmx/captures): `NAME.req` is the exact request, `NAME.http` the response
 * (status line, headers without Date, blank line, raw body).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const CAPTURES_DIR = join(import.meta.dirname, '..', 'fixtures', 'asmx', 'captures');

export interface CapturedRequest {
  readonly method: string;
  readonly target: string;
  /** Header names lower-cased; later duplicates win. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

export interface CapturedResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

function splitHead(raw: Buffer): { lines: string[]; body: Buffer } {
  const end = raw.indexOf('\r\n\r\n');
  const head = raw.subarray(0, end < 0 ? raw.length : end).toString('latin1');
  return { lines: head.split('\r\n'), body: end < 0 ? Buffer.alloc(0) : raw.subarray(end + 4) };
}

function parseHeaders(lines: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return headers;
}

export function captureNames(): string[] {
  const index = readFileSync(join(CAPTURES_DIR, 'index.tsv'), 'utf8').trim().split('\n').slice(1);
  return index.map((line) => line.split('\t')[0] ?? '').filter((n) => n !== '');
}

/**
 * The captured request. The two 10 MB captures store only the first 64 KiB of their body; the
 * rest is rebuilt to the declared Content-Length (the filler `x`, then the closing tags).
 */
export function readCapturedRequest(name: string): CapturedRequest {
  const { lines, body } = splitHead(readFileSync(join(CAPTURES_DIR, `${name}.req`)));
  const [method = 'GET', target = '/'] = (lines[0] ?? '').split(' ');
  const headers = parseHeaders(lines.slice(1));
  const declared = Number(headers['content-length'] ?? body.length);
  let full = body;
  if (declared > body.length) {
    const tail = name.includes('soap') ? '</IPAddress>\n    </ValidateUser>\n  </soap:Body>\n</soap:Envelope>' : '';
    full = Buffer.concat([body, Buffer.alloc(declared - body.length - tail.length, 'x'), Buffer.from(tail)]);
  }
  return { method, target, headers, body: full };
}

export function readCapturedResponse(name: string): CapturedResponse {
  const { lines, body } = splitHead(readFileSync(join(CAPTURES_DIR, `${name}.http`)));
  const status = Number((lines[0] ?? '').split(' ')[1]);
  return { status, headers: parseHeaders(lines.slice(1)), body };
}
