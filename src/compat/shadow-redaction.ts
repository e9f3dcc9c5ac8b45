/**
 * What a kept shadow difference may show of live traffic (src/compat/shadow.ts): the request and
 * both answers with every credential replaced by a *fingerprint*, `{fp:0123456789}`, the first
 * 10 hex digits of an HMAC-SHA256 under a key of this installation (Store.installationSecret).
 * The same value gives the same fingerprint on every binding and in every instance sharing the
 * database, so an operator can follow one token through requests and answers without seeing it;
 * without the key, a fingerprint cannot be checked against guessed passwords.
 *
 * Replaced:
 * - the parameters that carry a login, a password or a token (login, password, token, AppToken,
 *   and the names the compatibility profile gives the JSON operations' inputs) in the query, in
 *   a form body and in SOAP elements, whatever their case;
 * - the Authorization header's credentials, every cookie's value, and headers named as inputs;
 * - in the answers: those values wherever they appear (raw, URL-encoded, XML-escaped, in a JSON
 *   string), and any token-like value left (a GUID, 32 to 128 hex digits).
 *
 * A body that cannot be read with certainty (XML that does not parse, a content type that is
 * neither a form nor XML) is not shown at all: its size and fingerprint stand for it.
 */
import { createHmac } from 'node:crypto';
import { urlDecode } from '../wire/http-form.js';
import { readXmlDocument, type XmlElement } from '../wire/xml-reader.js';
import { secretForms } from './answer-compare.js';
import { isDegenerate, TOKEN_LIKE } from './recognise.js';

export interface ShownRequest {
  readonly method: string;
  readonly target: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface RedactableRequest {
  readonly method: string;
  readonly target: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
}

/** The request as it may be kept, and the scrubber for texts derived from its answers. */
export interface Redaction {
  readonly request: ShownRequest;
  /** Replaces this request's secrets and any token-like value in a text (an answer, a diff). */
  scrub(text: string): string;
}

/** The parameter names that carry credentials on every binding, before the profile adds its own. */
export const CREDENTIAL_NAMES: readonly string[] = ['login', 'password', 'token', 'apptoken'];

const FINGERPRINT = /^\{fp:[0-9a-f]{10}\}$/;

export function createFingerprinter(key: string): (value: string) => string {
  return (value) => `{fp:${createHmac('sha256', key).update(value, 'utf8').digest('hex').slice(0, 10)}}`;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Text of an XML element's content as a parser reads it: CDATA unwrapped, references resolved. */
function xmlContentText(raw: string): string {
  return raw.replace(/<!\[CDATA\[([\s\S]*?)\]\]>|&(lt|gt|amp|quot|apos|#\d+|#x[0-9a-fA-F]+);/g, (whole, cdata: string | undefined, ref: string | undefined) => {
    if (cdata !== undefined) return cdata;
    switch (ref) {
      case 'lt': return '<';
      case 'gt': return '>';
      case 'amp': return '&';
      case 'quot': return '"';
      case 'apos': return "'";
      default: {
        const code = ref?.startsWith('#x') === true ? parseInt(ref.slice(2), 16) : Number(ref?.slice(1));
        return Number.isInteger(code) && code >= 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
      }
    }
  });
}

function walk(element: XmlElement, visit: (e: XmlElement) => void): void {
  visit(element);
  for (const child of element.children) walk(child, visit);
}

function withheld(body: string, fp: (v: string) => string): string {
  return `${fp(body)} (${Buffer.byteLength(body)} bytes withheld)`;
}

/**
 * The redaction of one request. `names`: lower-cased parameter and header names that carry
 * credentials (CREDENTIAL_NAMES and the profile's input names).
 */
export function redactRequest(req: RedactableRequest, names: ReadonlySet<string>, fp: (value: string) => string): Redaction {
  const secrets = new Set<string>();
  const hide = (value: string): string => {
    if (value === '') return value;
    secrets.add(value);
    return fp(value);
  };
  /** `a=1&b=2` with the credential values replaced, names and order kept. */
  const formText = (text: string): string => text.split('&').map((pair) => {
    const eq = pair.indexOf('=');
    if (eq < 0) return pair;
    const name = urlDecode(pair.slice(0, eq)).toLowerCase();
    return names.has(name) ? `${pair.slice(0, eq)}=${hide(urlDecode(pair.slice(eq + 1)))}` : pair;
  }).join('&');

  const q = req.target.indexOf('?');
  const target = q < 0 ? req.target : `${req.target.slice(0, q)}?${formText(req.target.slice(q + 1))}`;

  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    const lower = name.toLowerCase();
    if (lower === 'authorization') {
      const space = value.indexOf(' ');
      headers[lower] = space < 0 ? hide(value) : `${value.slice(0, space)} ${hide(value.slice(space + 1).trim())}`;
    } else if (lower === 'cookie') {
      headers[lower] = value.split(';').map((part) => {
        const eq = part.indexOf('=');
        return eq < 0 ? hide(part.trim()) : `${part.slice(0, eq).trim()}=${hide(part.slice(eq + 1).trim())}`;
      }).join('; ');
      // A cookie's value may be read URL-decoded (ASP.NET's Request.Cookies).
      for (const part of value.split(';')) {
        const eq = part.indexOf('=');
        if (eq >= 0) secrets.add(urlDecode(part.slice(eq + 1).trim()));
      }
    } else if (names.has(lower)) {
      headers[lower] = hide(value);
    } else {
      headers[lower] = value;
    }
  }

  const text = Buffer.from(req.body.buffer, req.body.byteOffset, req.body.byteLength).toString('utf8');
  const type = (headers['content-type'] ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? '';
  let body: string;
  if (text === '') {
    body = '';
  } else if (type === 'application/x-www-form-urlencoded' || (type === '' && req.method === 'POST' && !text.trimStart().startsWith('<'))) {
    body = formText(text);
  } else if (type.includes('xml')) {
    body = redactXml(text, names, hide, fp);
  } else {
    body = withheld(text, fp);
  }

  const patterns = [...secrets].filter((s) => s !== '').flatMap((s) => secretForms(s).map((form) => ({
    // A short value is replaced only where it stands alone, not inside a longer word.
    pattern: new RegExp(`${/^[0-9A-Za-z]/.test(form) ? '(?<![0-9A-Za-z])' : ''}${escapeRegExp(form)}${/[0-9A-Za-z]$/.test(form) ? '(?![0-9A-Za-z])' : ''}`, 'g'),
    by: fp(s),
  })));
  const scrub = (value: string): string => {
    let out = value;
    for (const { pattern, by } of patterns) out = out.replace(pattern, by);
    return out.replace(TOKEN_LIKE, (token) => (isDegenerate(token) ? token : fp(token)));
  };
  return { request: { method: req.method, target: scrub(target), headers: Object.fromEntries(Object.entries(headers).map(([n, v]) => [n, scrub(v)])), body: scrub(body) }, scrub };
}

/**
 * A SOAP body with the text of every credential element replaced, checked by parsing the
 * result: if any such element still holds something other than a fingerprint (a form the
 * replacement did not foresee), or the body does not parse, the whole body is withheld.
 */
function redactXml(text: string, names: ReadonlySet<string>, hide: (value: string) => string, fp: (value: string) => string): string {
  const original = readXmlDocument(text);
  if (!original.ok) return withheld(text, fp);
  walk(original.root, (e) => {
    if (names.has(e.local.toLowerCase())) hide(e.text);
  });
  const replaced = text.replace(
    /<((?:[A-Za-z_][\w.-]*:)?)([A-Za-z_][\w.-]*)((?:\s[^>]*)?)>((?:[^<]|<!\[CDATA\[[\s\S]*?\]\]>)*)<\/\1\2(\s*)>/g,
    (whole, prefix: string, local: string, attrs: string, content: string, space: string) => (names.has(local.toLowerCase())
      ? `<${prefix}${local}${attrs}>${hide(xmlContentText(content))}</${prefix}${local}${space}>`
      : whole),
  );
  const check = readXmlDocument(replaced);
  let safe = check.ok;
  if (check.ok) {
    walk(check.root, (e) => {
      if (names.has(e.local.toLowerCase()) && e.text !== '' && !FINGERPRINT.test(e.text)) safe = false;
    });
  }
  return safe ? replaced : withheld(text, fp);
}
