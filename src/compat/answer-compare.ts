/**
 * Two answers to the same request, one from the legacy service and one from svcapi-auth,
 * compared after normalising only what must differ between two deployments. Shared by
 * `compat check` (src/compat/check.ts: its own requests) and the shadow and front modes
 * (src/compat/shadow.ts: live traffic), so both judge "the same" alike:
 *
 * - token and ticket values become their *form* (`{token:guid}`), so a token written in another
 *   case or form still shows; Guid.Empty-like values are kept as they are;
 * - expiry timestamps in JSON strings (`\/Date(...)\/`, `\/Date(...+0000)\/`, ISO);
 * - each side's own host, service URL and path (WSDL addresses, disco, help page);
 * - headers that describe the connection or the server rather than the answer: Date, Server,
 *   X-Powered-By, X-AspNet-Version, Content-Length, Connection, Keep-Alive, Transfer-Encoding;
 * - svcapi-auth's deliberate header deviations (docs/security.md "HTTP hardening"), listed as
 *   accepted, not counted.
 *
 * Everything else counts: status, the remaining headers, the body byte for byte.
 */
// diff's own subpath (its "exports" list lib/*.js): the patch maker and the line diff it uses,
// not the entry point's every diff, patch and converter (13 ms to load against 27, 2026-11-29;
// shadow mode loads this module at start).
import { createTwoFilesPatch } from 'diff/lib/patch/create.js';
import { tokenFormName } from '../compat-profile-file.js';
import { escapeXmlText } from '../wire/xml-text.js';
import { recogniseTokenForm, TOKEN_LIKE } from './recognise.js';

/** An answer as received: status, header pairs (names lower-cased, in order), body bytes. */
export interface RawAnswer {
  readonly status: number;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: Buffer;
}

/** An answer as compared and shown: normalised, headers `name: value` sorted. */
export interface RenderedAnswer {
  readonly status: number;
  readonly headers: readonly string[];
  readonly body: string;
}

/**
 * Where an answer came from: what its own host and service URL look like. The origin and host
 * as the service writes them (a Host header's `:80` kept), so a URL or its parts.
 */
export interface AnswerSide {
  readonly url: Pick<URL, 'origin' | 'host'>;
  readonly path: string;
}

export interface ComparedAnswers {
  readonly legacy: RenderedAnswer;
  readonly ours: RenderedAnswer;
  /** svcapi-auth's deliberate deviations seen in this answer (not counted as differences). */
  readonly accepted: string[];
  readonly same: boolean;
}

const DROPPED_HEADERS = new Set(['date', 'server', 'x-powered-by', 'x-aspnet-version', 'x-aspnetmvc-version', 'content-length', 'connection', 'keep-alive', 'transfer-encoding']);
/** The operations whose answers can carry a token or ticket (svcapi-auth sends them `no-store`). */
const SECRET_OPERATIONS = ['ValidateUser', 'ValidateUserJSON', 'GetUserLoginURL'];

export function replaceAllText(text: string, find: string, by: string): string {
  return find === '' ? text : text.split(find).join(by);
}

/** The forms a secret takes in requests and answers: raw, URL-encoded (both ways), XML-escaped, in a JSON string. */
export function secretForms(secret: string): string[] {
  if (secret === '') return [];
  const forms = new Set([secret, encodeURIComponent(secret), escapeXmlText(secret), encodeURIComponent(secret).replace(/%20/g, '+'), JSON.stringify(secret).slice(1, -1)]);
  return [...forms].sort((a, b) => b.length - a.length);
}

export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) out = replaceAllText(out, s, '***');
  return out;
}

/** What must differ between two deployments, replaced by a placeholder that keeps its form. */
export function normaliseBody(text: string, side: AnswerSide): string {
  let out = replaceAllText(text, `${side.url.origin}${side.path}`, '{service-url}');
  out = replaceAllText(out, side.url.host, '{host}');
  out = out.replace(TOKEN_LIKE, (value) => {
    const form = recogniseTokenForm(value);
    return form === null ? value : `{token:${tokenFormName(form.form)}}`;
  });
  out = out.replace(/\\\/Date\(-?\d+([+-]\d{4})?\)\\\//g, (_m, offset: string | undefined) => `\\/Date({time}${offset ?? ''})\\/`);
  out = out.replace(/"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?"/g, (_m, zone: string | undefined) => `"{iso-time:${zone === undefined ? 'local' : zone === 'Z' ? 'Z' : 'offset'}}"`);
  return out;
}

/** The operation a request names: the HTTP method in the path, or the SOAP body element. */
export function operationOf(target: string, body: string): string | undefined {
  return /^[^?]*\/(\w+)(?:\?|$)/.exec(target)?.[1] ?? /<(\w+) xmlns="SVCAPI"/.exec(body)?.[1];
}

/**
 * Both answers normalised and rendered, svcapi-auth's deliberate deviations set aside, and
 * whether what is left is the same. `operation` decides whether `Cache-Control: no-store` is
 * one of those deviations; `secrets` are shown as *** (compat check's password).
 */
export function compareAnswers(legacy: RawAnswer, ours: RawAnswer, sides: readonly [AnswerSide, AnswerSide], operation: string | undefined, secrets: readonly string[] = []): ComparedAnswers {
  const { legacy: a, ours: b, accepted } = keptHeaders(legacy, ours, operation);
  const render = (r: RawAnswer, headers: Map<string, string>, side: AnswerSide): RenderedAnswer => ({
    status: r.status,
    headers: [...headers].map(([n, v]) => `${n}: ${redact(normaliseBody(v, side), secrets)}`).sort(),
    body: redact(normaliseBody(r.body.toString('utf8'), side), secrets),
  });
  const renderedLegacy = render(legacy, a, sides[0]);
  const renderedOurs = render(ours, b, sides[1]);
  return { legacy: renderedLegacy, ours: renderedOurs, accepted, same: sameAnswer(renderedLegacy, renderedOurs) };
}

/**
 * The headers that count, by name (repeated ones joined), of both answers, with svcapi-auth's
 * deliberate deviations set aside (and named in `accepted`).
 */
function keptHeaders(legacy: RawAnswer, ours: RawAnswer, operation: string | undefined): { legacy: Map<string, string>; ours: Map<string, string>; accepted: string[] } {
  const accepted: string[] = [];
  const keep = (r: RawAnswer): Map<string, string> => {
    const m = new Map<string, string>();
    for (const [name, value] of r.headers) if (!DROPPED_HEADERS.has(name)) m.set(name, m.has(name) ? `${m.get(name) ?? ''}, ${value}` : value);
    return m;
  };
  const a = keep(legacy);
  const b = keep(ours);
  if (b.get('x-content-type-options') === 'nosniff' && !a.has('x-content-type-options')) {
    b.delete('x-content-type-options');
    accepted.push('X-Content-Type-Options: nosniff');
  }
  if (b.has('content-security-policy') && !a.has('content-security-policy') && (b.get('content-type') ?? '').startsWith('text/html')) {
    b.delete('content-security-policy');
    accepted.push('Content-Security-Policy on the help page');
  }
  if (b.get('cache-control') === 'no-store' && /^private(, max-age=0)?$/.test(a.get('cache-control') ?? '') && SECRET_OPERATIONS.includes(operation ?? '')) {
    b.set('cache-control', a.get('cache-control') ?? '');
    accepted.push(`Cache-Control: no-store (${operation ?? ''} can carry a token or ticket)`);
  }
  return { legacy: a, ours: b, accepted };
}

/**
 * compareAnswers's `same` without normalising or decoding, for the common case of live traffic:
 * the statuses equal, the headers that count equal as they are, and the bodies equal byte for
 * byte. Everything normaliseBody does to one text is the same for both (tokens, times), except
 * the side's own service URL and host, which it replaces on one side only: equal bytes holding
 * one of those may still compare different, so those go to compareAnswers (as does anything
 * else: false means "not shown the same here", never "different").
 */
export function sameWithoutNormalising(legacy: RawAnswer, ours: RawAnswer, sides: readonly [AnswerSide, AnswerSide], operation: string | undefined): boolean {
  if (legacy.status !== ours.status || !legacy.body.equals(ours.body)) return false;
  const { legacy: a, ours: b } = keptHeaders(legacy, ours, operation);
  if (a.size !== b.size) return false;
  for (const [name, value] of a) if (b.get(name) !== value) return false;
  // The texts normaliseBody replaces per side. One of them decoded from bytes that are not UTF-8
  // (U+FFFD) cannot be looked for in the bytes: such a side is not shown the same here.
  const sideTexts = sides.flatMap((side) => [`${side.url.origin}${side.path}`, side.url.host]).filter((t) => t !== '');
  for (const text of sideTexts) {
    if (text.includes('\uFFFD') || legacy.body.includes(text)) return false;
    for (const value of a.values()) if (value.includes(text)) return false;
  }
  return true;
}

export function sameAnswer(x: RenderedAnswer, y: RenderedAnswer): boolean {
  return x.status === y.status && x.body === y.body && x.headers.length === y.headers.length && x.headers.every((h, i) => h === y.headers[i]);
}

/** One line per element of a one-line XML document, for a readable diff (equality is decided before). */
export function displayText(answer: RenderedAnswer): string {
  const body = answer.body.includes('\n') ? answer.body : answer.body.replace(/></g, '>\n<');
  return `HTTP ${answer.status}\n${answer.headers.join('\n')}\n\n${body}\n`;
}

/**
 * A unified diff of two rendered answers. With `timeoutMs` (live traffic: a hostile answer must
 * not hold the event loop), a diff that takes longer is abandoned and said so.
 */
export function unifiedDiff(x: RenderedAnswer, y: RenderedAnswer, timeoutMs?: number): string {
  let a = displayText(x);
  let b = displayText(y);
  if (a === b) {
    // They differ only where the display split lines: show the bodies as escaped text instead.
    a = `HTTP ${x.status}\n${x.headers.join('\n')}\n\n${JSON.stringify(x.body)}\n`;
    b = `HTTP ${y.status}\n${y.headers.join('\n')}\n\n${JSON.stringify(y.body)}\n`;
  }
  const [from, to] = [a.replace(/\r/g, '\\r'), b.replace(/\r/g, '\\r')];
  const patch = timeoutMs === undefined
    ? createTwoFilesPatch('legacy', 'svcapi-auth', from, to, '', '', { context: 2 })
    : createTwoFilesPatch('legacy', 'svcapi-auth', from, to, '', '', { context: 2, timeout: timeoutMs });
  if (patch === undefined) return `(no diff: it took longer than ${timeoutMs ?? 0} ms; compare the two answers)\n`;
  return patch.replace(/^=+\n/, '');
}
