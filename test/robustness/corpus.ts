/**
 * The malformed-input corpus: deterministic (a seeded PRNG, so a failing case has a stable name
 * and the same bytes on every run), grouped by family. Each case is one HTTP request plus,
 * where we know what ASMX answers, an expectation beyond the generic shape (shape.ts).
 *
 * Cost: every well-formed ValidateUser / ValidateUserJSON call runs one argon2 verification
 * (even without a login: the dummy hash), ~25 ms. Generated cases therefore target
 * ValidateUserToken, WhatsNew and GetUserLoginURL; only the captures, the two complete
 * truncation envelopes and the rare mutation that stays well-formed reach argon2.
 */
import { captureNames, readCapturedRequest, readCapturedResponse } from '../support/captures.js';
import { header, SOAP11_NS, SOAP12_NS, type ObservedResponse } from './shape.js';

export type SoapVersion = '1.1' | '1.2';
export type Expectation = (res: ObservedResponse) => string[];

/** Bugs this corpus found in src/, since fixed; their cases stay as one regression test each. */
export const FINDINGS = {
  F1: 'a malformed percent-escape in the URL path is answered by Fastify with a JSON 400 (FST_ERR_BAD_URL)',
  F2: 'a Content-Type Fastify cannot parse is answered 400 on SOAP (ASMX: 415) and with the HTML error page on HTTP POST (ASMX: text/plain "Request format is invalid")',
  F3: 'SOAP 1.2: a DOCTYPE that saxes cannot finish reading is a bare 400, not the "DTD is prohibited" fault',
  F4: 'request decoding: a byte-order mark does not override the Content-Type charset, and BOM-less UTF-16 is not detected on application/soap+xml',
} as const;
export type FindingId = keyof typeof FINDINGS;

export interface CorpusCase {
  readonly family: string;
  readonly name: string;
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'OPTIONS';
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: Buffer;
  readonly expect?: Expectation;
  /** The case showed a (now fixed) bug of src/: it runs in that finding's own regression test. */
  readonly knownBug?: FindingId;
}

// Deterministic randomness ---------------------------------------------------------------------

/** mulberry32: tiny, fast, good enough to spread test inputs; the seed names the corpus. */
export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(maxExclusive: number): number {
    return Math.floor(this.next() * maxExclusive);
  }
  pick<T>(items: readonly T[]): T {
    const item = items[this.int(items.length)];
    if (item === undefined) throw new Error('pick from an empty list');
    return item;
  }
  bytes(length: number): Buffer {
    const out = Buffer.alloc(length);
    for (let i = 0; i < length; i++) out[i] = this.int(256);
    return out;
  }
}

export const CORPUS_SEED = Number(process.env.ROBUSTNESS_SEED ?? 0x5eed_2a5b);

// Building blocks ------------------------------------------------------------------------------

const SERVICE = '/Authentication.asmx';
const DECL = '<?xml version="1.0" encoding="utf-8"?>';
const XSI = 'http://www.w3.org/2001/XMLSchema-instance';

export function envelope(version: SoapVersion, bodyInner: string, options: { decl?: boolean; rootAttrs?: string; header?: string } = {}): string {
  const ns = version === '1.1' ? SOAP11_NS : SOAP12_NS;
  return `${options.decl === false ? '' : DECL}<soap:Envelope xmlns:soap="${ns}" xmlns:xsi="${XSI}"${options.rootAttrs ?? ''}>${options.header ?? ''}<soap:Body>${bodyInner}</soap:Body></soap:Envelope>`;
}

/** The cheap operation: no argon2, a boolean answer. */
export const tokenOp = (inner: string, attrs = ''): string => `<ValidateUserToken xmlns="SVCAPI"${attrs}><token>${inner}</token></ValidateUserToken>`;

export function soapHeaders(version: SoapVersion, action = 'ValidateUserToken'): Record<string, string> {
  return version === '1.1'
    ? { 'content-type': 'text/xml; charset=utf-8', soapaction: `"SVCAPI/${action}"` }
    : { 'content-type': `application/soap+xml; charset=utf-8; action="SVCAPI/${action}"` };
}

function soapCase(family: string, name: string, version: SoapVersion, body: string | Buffer, extra: Partial<CorpusCase> = {}): CorpusCase {
  return {
    family,
    name: `${name} [SOAP ${version}]`,
    method: 'POST',
    url: SERVICE,
    headers: soapHeaders(version),
    body: typeof body === 'string' ? Buffer.from(body, 'utf8') : body,
    ...extra,
  };
}

const BOTH: readonly SoapVersion[] = ['1.1', '1.2'];

// Expectations ---------------------------------------------------------------------------------

export const status =
  (...codes: number[]): Expectation =>
  (res) =>
    codes.includes(res.status) ? [] : [`status ${res.status}, expected ${codes.join(' or ')}`];

const bodyIncludes =
  (text: string): Expectation =>
  (res) =>
    res.body.toString('utf8').includes(text) ? [] : [`body does not contain ${JSON.stringify(text)}`];

const all =
  (...expectations: Expectation[]): Expectation =>
  (res) =>
    expectations.flatMap((e) => e(res));

/** The exact SOAP 1.2 answer to any DTD, from the reference capture. */
const DTD_FAULT_12 = readCapturedResponse('f_soap12_dtd_external_entity').body.toString('utf8');

/** A DTD: 400 on SOAP 1.1, the soap:Receiver "DTD is prohibited" fault on SOAP 1.2 (README). */
function dtdProhibited(version: SoapVersion): Expectation {
  if (version === '1.1') return status(400);
  return (res) => {
    const problems = status(500)(res);
    if (res.body.toString('utf8') !== DTD_FAULT_12) problems.push('not the captured "DTD is prohibited" fault');
    return problems;
  };
}

/** No entity was ever expanded and no local file ever read, whatever the answer. */
const neverExpanded: Expectation = (res) => {
  const text = res.body.toString('utf8');
  const problems: string[] = [];
  if (/(lol){3}/.test(text)) problems.push('an entity was expanded ("lollollol" in the answer)');
  if (/root:/.test(text)) problems.push('/etc/passwd content ("root:") in the answer');
  if (/(QBLOW){3}/.test(text)) problems.push('the quadratic-blowup entity was expanded');
  return problems;
};

/**
 * Unreadable XML. SOAP 1.1 answers 400 whatever the fault (captures f_soap11_malformed_xml,
 * _empty_body, _dtd_*). SOAP 1.2 answers 400 when the damage is inside the operation element
 * (f_soap12_malformed_xml) but a soap:Receiver fault for what ASMX already meets while routing
 * (f_soap12_empty_body "Root element is missing.", f_soap12_dtd_*): which one an arbitrary
 * defect gets is not captured, so on 1.2 either a 400 or a (well-formed) fault is accepted.
 */
export function unreadable(version: SoapVersion): Expectation {
  return version === '1.1' ? status(400) : status(400, 500);
}

const rootMissing12: Expectation = all(status(500), bodyIncludes('Root element is missing.'));

/** ASMX's 415 for a body that is not SOAP at all (f_soap_ctype_text_plain). */
const unsupportedMedia = status(415);

// Families -------------------------------------------------------------------------------------

interface Seed {
  readonly name: string;
  readonly method: 'GET' | 'POST';
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

function captureSeeds(): Seed[] {
  const seeds: Seed[] = [];
  for (const name of captureNames()) {
    if (!/^(ok|f)_/.test(name) || name.startsWith('f_size_')) continue;
    const req = readCapturedRequest(name);
    if (req.method !== 'GET' && req.method !== 'POST') continue;
    // inject() computes Content-Length itself; a stale one would truncate mutated bodies.
    const { ['content-length']: _length, ...headers } = req.headers;
    seeds.push({ name, method: req.method, url: req.target, headers, body: req.body });
  }
  return seeds;
}

const isSoapSeed = (s: Seed): boolean => s.method === 'POST' && s.url.split('?')[0]?.toLowerCase() === SERVICE.toLowerCase() && s.body.length > 0;

function capturesFamily(seeds: readonly Seed[]): CorpusCase[] {
  return seeds.map((s) => ({ family: 'captures', name: s.name, method: s.method, url: s.url, headers: s.headers, body: s.method === 'POST' ? s.body : undefined }));
}

/** Every byte prefix of the SOAP 1.1 and SOAP 1.2 ValidateUser envelopes of the reference. */
function truncationFamily(): CorpusCase[] {
  const cases: CorpusCase[] = [];
  for (const [version, name] of [['1.1', 'ok_soap11_ValidateUser'], ['1.2', 'ok_soap12_ValidateUser']] as const) {
    const req = readCapturedRequest(name);
    const { ['content-length']: _length, ...headers } = req.headers;
    const full = req.body;
    for (let n = 0; n <= full.length; n++) {
      const prefix = full.subarray(0, n);
      const text = prefix.toString('utf8').trim();
      let expect: Expectation;
      if (n === full.length) expect = status(200);
      // Nothing but the prolog: "Root element is missing." on SOAP 1.2, an empty-body 400 on 1.1.
      else if (version === '1.2' && (text === '' || text === DECL)) expect = rootMissing12;
      else expect = unreadable(version);
      cases.push({ family: 'truncation', name: `${name} first ${n}/${full.length} bytes`, method: 'POST', url: SERVICE, headers, body: prefix, expect });
    }
  }
  return cases;
}

const CHEAP_OPS = ['ValidateUserToken', 'WhatsNew', 'GetUserLoginURL', 'ValidateUserTokenJSON'] as const;

/** Query-string safe text: printable ASCII (no '#', which would end the URL) and %XX escapes. */
function randomQuery(rng: Rng, length: number): string {
  let out = '';
  while (out.length < length) {
    const r = rng.next();
    if (r < 0.15) out += '%' + rng.int(256).toString(16).padStart(2, '0');
    else if (r < 0.25) out += rng.pick(['&', '=', '%', '+', '%u', '%zz', 'token=', 'AppID=', 'qtyNews=']);
    else {
      const c = 0x21 + rng.int(0x5e);
      out += c === 0x23 ? '%23' : String.fromCharCode(c);
    }
  }
  return out;
}

function randomBytesFamily(rng: Rng): CorpusCase[] {
  const cases: CorpusCase[] = [];
  const length = (): number => (rng.next() < 0.05 ? 8192 + rng.int(65536) : rng.int(2048));
  for (let i = 0; i < 100; i++) cases.push(soapCase('random-bytes', `random bytes #${i}`, '1.1', rng.bytes(length())));
  for (let i = 0; i < 100; i++) cases.push(soapCase('random-bytes', `random bytes #${i}`, '1.2', rng.bytes(length())));
  // A valid-looking start, then noise: gets the parser past the prolog.
  for (let i = 0; i < 50; i++) {
    const version = rng.pick(BOTH);
    const head = envelope(version, '').slice(0, rng.int(180));
    cases.push(soapCase('random-bytes', `prolog + random bytes #${i}`, version, Buffer.concat([Buffer.from(head), rng.bytes(rng.int(512))])));
  }
  for (let i = 0; i < 50; i++) {
    const op = rng.pick(CHEAP_OPS);
    cases.push({ family: 'random-bytes', name: `random form body #${i} -> ${op}`, method: 'POST', url: `${SERVICE}/${op}`, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: rng.bytes(length()) });
  }
  for (let i = 0; i < 50; i++) {
    const op = rng.pick(CHEAP_OPS);
    cases.push({ family: 'random-bytes', name: `random query #${i} -> ${op}`, method: 'GET', url: `${SERVICE}/${op}?${randomQuery(rng, rng.int(600))}`, headers: {} });
  }
  return cases;
}

/** Random sequences of XML-ish tokens: reach deeper into the parser than random bytes. */
const SOUP = [
  '<', '>', '</', '/>', '=', '"', "'", ' ', '\n', '?', '!', ':', '&', ';',
  DECL, '<?xml version="1.0"?>', '<!--', '-->', '<![CDATA[', ']]>', '<!DOCTYPE x>', '<?pi x?>',
  '&amp;', '&lt;', '&#x41;', '&#0;', '&bogus;', '&#xD800;',
  'soap:', 'Envelope', 'Body', 'Header', 'Fault', 'xmlns', 'xmlns:soap', 'xsi:nil="true"', 'soap:mustUnderstand="1"',
  `xmlns:soap="${SOAP11_NS}"`, `xmlns:soap="${SOAP12_NS}"`, 'xmlns="SVCAPI"', 'xmlns=""', `xmlns:xsi="${XSI}"`,
  `<soap:Envelope xmlns:soap="${SOAP11_NS}">`, `<soap:Envelope xmlns:soap="${SOAP12_NS}">`, '</soap:Envelope>', '<soap:Body>', '</soap:Body>',
  '<soap:Header>', '</soap:Header>', '<ValidateUserToken xmlns="SVCAPI">', '</ValidateUserToken>', '<WhatsNew xmlns="SVCAPI">', '</WhatsNew>',
  '<token>', '</token>', '<AppID>', '</AppID>', '<qtyNews>', '</qtyNews>', '<token/>', '<AppID />', '2', '-1', '99999999999', 'abc', '\u00e9', '\u0000',
] as const;

function soupFamily(rng: Rng): CorpusCase[] {
  const cases: CorpusCase[] = [];
  for (let i = 0; i < 160; i++) {
    const version = rng.pick(BOTH);
    const n = 3 + rng.int(80);
    let text = rng.next() < 0.5 ? DECL : '';
    for (let k = 0; k < n; k++) text += rng.pick(SOUP);
    cases.push(soapCase('token-soup', `token soup #${i}`, version, text, rng.next() < 0.3 ? { headers: { 'content-type': version === '1.1' ? 'text/xml' : 'application/soap+xml' } } : {}));
  }
  return cases;
}

const INTERESTING_BYTES = [...Buffer.from('<>/&;="\':!?[]-# \n\t'), 0x00, 0xff, 0xfe, 0xc3, 0xe2, 0x80, 0xbf, 0xef, 0xbb];

function mutate(rng: Rng, input: Buffer): { bytes: Buffer; how: string } {
  let bytes = Buffer.from(input);
  const steps: string[] = [];
  const count = 1 + rng.int(3);
  for (let s = 0; s < count; s++) {
    const at = rng.int(bytes.length + 1);
    const op = rng.int(6);
    if (op === 0 && bytes.length > 0) {
      const i = Math.min(at, bytes.length - 1);
      const bit = 1 << rng.int(8);
      bytes[i] = (bytes[i] ?? 0) ^ bit;
      steps.push(`flip@${i}^${bit}`);
    } else if (op === 1 && bytes.length > 0) {
      const i = Math.min(at, bytes.length - 1);
      const b = rng.pick(INTERESTING_BYTES);
      bytes[i] = b;
      steps.push(`set@${i}=${b}`);
    } else if (op === 2) {
      const ins = Buffer.from(Array.from({ length: 1 + rng.int(8) }, () => (rng.next() < 0.7 ? rng.pick(INTERESTING_BYTES) : rng.int(256))));
      bytes = Buffer.concat([bytes.subarray(0, at), ins, bytes.subarray(at)]);
      steps.push(`ins@${at}+${ins.length}`);
    } else if (op === 3) {
      const len = 1 + rng.int(16);
      bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + len)]);
      steps.push(`del@${at}-${len}`);
    } else if (op === 4) {
      const from = rng.int(bytes.length + 1);
      const chunk = bytes.subarray(from, from + 1 + rng.int(64));
      bytes = Buffer.concat([bytes.subarray(0, at), chunk, bytes.subarray(at)]);
      steps.push(`dup@${from}->${at}+${chunk.length}`);
    } else {
      const cut = rng.int(bytes.length + 1);
      bytes = Buffer.concat([bytes.subarray(cut), bytes.subarray(0, cut)]);
      steps.push(`rotate@${cut}`);
    }
  }
  return { bytes, how: steps.join(',') };
}

/** Mutates text that must stay a valid request target: the same operators over safe characters. */
function mutateQuery(rng: Rng, query: string): string {
  let q = query;
  for (let s = 1 + rng.int(3); s > 0; s--) {
    const at = rng.int(q.length + 1);
    const r = rng.int(4);
    if (r === 0) q = q.slice(0, at) + rng.pick(['%', '%z', '%zz', '%u12', '%uD800', '%00', '&', '=', '==', '&&', '+', '%C0%AF', '%FF']) + q.slice(at);
    else if (r === 1) q = q.slice(0, at) + q.slice(at + 1 + rng.int(8));
    else if (r === 2) q = q.slice(0, at) + randomQuery(rng, 1 + rng.int(6)) + q.slice(at);
    else q = q.slice(0, at) + q.slice(at).toUpperCase();
  }
  return q;
}

function mutationFamily(rng: Rng, seeds: readonly Seed[]): CorpusCase[] {
  const cases: CorpusCase[] = [];
  for (const seed of seeds) {
    if (isSoapSeed(seed)) {
      for (let i = 0; i < 6; i++) {
        const { bytes, how } = mutate(rng, seed.body);
        cases.push({ family: 'mutations', name: `${seed.name} mutated #${i} (${how})`, method: 'POST', url: seed.url, headers: seed.headers, body: bytes });
      }
    } else if (seed.method === 'GET') {
      const [path, query = ''] = seed.url.split('?');
      for (let i = 0; i < 4; i++) {
        cases.push({ family: 'mutations', name: `${seed.name} query mutated #${i}`, method: 'GET', url: `${path ?? SERVICE}?${mutateQuery(rng, query)}`, headers: seed.headers });
      }
    } else if (seed.body.length > 0) {
      for (let i = 0; i < 4; i++) {
        const { bytes, how } = mutate(rng, seed.body);
        cases.push({ family: 'mutations', name: `${seed.name} form mutated #${i} (${how})`, method: 'POST', url: seed.url, headers: seed.headers, body: bytes });
      }
    }
  }
  return cases;
}

function nestingFamily(): CorpusCase[] {
  const cases: CorpusCase[] = [];
  const nest = (n: number): string => '<a>'.repeat(n) + 'x' + '</a>'.repeat(n);
  for (const version of BOTH) {
    for (const depth of [10, 100, 10_000]) {
      // The reader bounds depth (src/wire/xml-reader.ts): deep trees are refused like unreadable XML.
      const deep = depth >= 100 ? status(400) : undefined;
      cases.push(soapCase('nesting', `${depth} levels inside Body`, version, envelope(version, nest(depth)), { expect: deep }));
      cases.push(soapCase('nesting', `${depth} levels inside <token>`, version, envelope(version, tokenOp(nest(depth))), { expect: deep ?? status(500) }));
      cases.push(soapCase('nesting', `${depth} levels inside soap:Header`, version, envelope(version, tokenOp('t'), { header: `<soap:Header>${nest(depth)}</soap:Header>` }), { expect: deep }));
    }
    cases.push(soapCase('nesting', '100 000 unclosed levels', version, DECL + `<soap:Envelope xmlns:soap="${version === '1.1' ? SOAP11_NS : SOAP12_NS}"><soap:Body>` + '<a>'.repeat(100_000), { expect: status(400) }));
    cases.push(soapCase('nesting', '100 000 siblings in the operation', version, envelope(version, `<ValidateUserToken xmlns="SVCAPI">${'<b/>'.repeat(100_000)}</ValidateUserToken>`), { expect: status(400) }));
  }
  return cases;
}

function sizeFamily(): CorpusCase[] {
  const cases: CorpusCase[] = [];
  const big = 900_000; // under the 1 MiB request limit with the envelope around it
  const manyAttrs = (n: number, f: (i: number) => string): string => Array.from({ length: n }, (_, i) => f(i)).join('');
  for (const version of BOTH) {
    const huge = 'v'.repeat(big);
    const ok = status(200);
    cases.push(soapCase('sizes', 'huge attribute value on Envelope', version, envelope(version, tokenOp('t'), { rootAttrs: ` a="${huge}"` }), { expect: ok }));
    cases.push(soapCase('sizes', 'huge attribute value on the operation', version, envelope(version, tokenOp('t', ` a="${huge}"`)), { expect: ok }));
    cases.push(soapCase('sizes', 'huge attribute value of &amp; references', version, envelope(version, tokenOp('t', ` a="${'&amp;'.repeat(big / 5)}"`)), { expect: ok }));
    cases.push(soapCase('sizes', 'huge token text', version, envelope(version, tokenOp(huge)), { expect: ok }));
    cases.push(soapCase('sizes', 'huge token of character references', version, envelope(version, tokenOp('&#x41;'.repeat(big / 6))), { expect: ok }));
    cases.push(soapCase('sizes', '50 000 attributes on the operation', version, envelope(version, tokenOp('t', manyAttrs(50_000, (i) => ` a${i}=""`))), { expect: ok }));
    cases.push(soapCase('sizes', '30 000 namespace declarations', version, envelope(version, tokenOp('t', manyAttrs(30_000, (i) => ` xmlns:p${i}="urn:${i}"`))), { expect: ok }));
    cases.push(soapCase('sizes', 'huge attribute name', version, envelope(version, tokenOp('t', ` ${'n'.repeat(big)}="1"`)), { expect: ok }));
    cases.push(soapCase('sizes', 'huge unknown element name', version, envelope(version, `<ValidateUserToken xmlns="SVCAPI"><${'e'.repeat(big)}/></ValidateUserToken>`), { expect: ok }));
    cases.push(soapCase('sizes', 'huge operation element name', version, envelope(version, `<${'O'.repeat(big)} xmlns="SVCAPI"/>`)));
    cases.push(soapCase('sizes', 'huge root element name', version, `${DECL}<${'R'.repeat(big)}/>`));
    cases.push(soapCase('sizes', 'huge envelope namespace', version, `${DECL}<soap:Envelope xmlns:soap="urn:${'n'.repeat(big)}"><soap:Body/></soap:Envelope>`, { expect: status(500) }));
    cases.push(soapCase('sizes', '50 000 comments in the token', version, envelope(version, tokenOp('a<!---->'.repeat(50_000))), { expect: ok }));
    cases.push(soapCase('sizes', '40 000 CDATA sections in the token', version, envelope(version, tokenOp('<![CDATA[a]]>'.repeat(40_000))), { expect: ok }));
    cases.push(soapCase('sizes', '40 000 processing instructions in Body', version, envelope(version, '<?p?>'.repeat(40_000) + tokenOp('t')), { expect: ok }));
  }
  return cases;
}

/**
 * Headers of the DTD captures: SOAP 1.1 with a SOAPAction, SOAP 1.2 without an action parameter
 * (so ASMX meets the DOCTYPE while routing on the body element: the captured Receiver fault).
 */
function dtdHeaders(version: SoapVersion): Record<string, string> {
  return version === '1.1' ? soapHeaders('1.1', 'WhatsNew') : { 'content-type': 'application/soap+xml; charset=utf-8' };
}

function entityFamily(): CorpusCase[] {
  const cases: CorpusCase[] = [];
  const laughs = ['<!ENTITY lol "lol">', ...Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? '' : i};`.repeat(10)}">`)].join('');
  const blow = 'QBLOW'.repeat(10_000);
  const variants: readonly (readonly [string, string, string, FindingId?])[] = [
    ['billion laughs', `<!DOCTYPE lolz [${laughs}]>`, '&lol9;'],
    ['quadratic blowup (50 kB entity x 20 000)', `<!DOCTYPE q [<!ENTITY a "${blow}">]>`, '&a;'.repeat(20_000)],
    ['external entity file:///etc/passwd', '<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>', '&xxe;'],
    ['external entity http://127.0.0.1:1/', '<!DOCTYPE x [<!ENTITY xxe SYSTEM "http://127.0.0.1:1/secret">]>', '&xxe;'],
    ['parameter entity SYSTEM file:///etc/passwd', '<!DOCTYPE x [<!ENTITY % pe SYSTEM "file:///etc/passwd"> %pe;]>', 't'],
    ['parameter entity defining a general entity', `<!DOCTYPE x [<!ENTITY % pe "<!ENTITY g 'lollollol'>"> %pe;]>`, '&g;'],
    ['external DTD SYSTEM', '<!DOCTYPE x SYSTEM "http://127.0.0.1:1/x.dtd">', 't'],
    ['external DTD PUBLIC', '<!DOCTYPE x PUBLIC "-//X//EN" "http://127.0.0.1:1/x.dtd">', 't'],
    ['DOCTYPE without subset', '<!DOCTYPE soap:Envelope>', 't'],
    ['entity in an attribute value', `<!DOCTYPE lolz [${laughs}]>`, 't</token><x a="&lol9;"/><token>t'],
    ['"]>" inside an entity value', '<!DOCTYPE x [<!ENTITY a "]>lollollol">]>', '&a;'],
    ['unterminated internal subset', '<!DOCTYPE x [<!ENTITY a "lol">', 't', 'F3'],
    ['unterminated entity value', '<!DOCTYPE x [<!ENTITY a "lol', 't', 'F3'],
    ['bare <!DOCTYPE', '<!DOCTYPE', 't', 'F3'],
  ];
  for (const version of BOTH) {
    for (const [name, doctype, token, bug] of variants) {
      const xml = `${DECL}${doctype}${envelope(version, tokenOp(token), { decl: false })}`;
      // A DOCTYPE so broken that the document ends inside it: what follows is never reached.
      const body = bug === 'F3' ? `${DECL}${doctype}` : xml;
      const knownBug = version === '1.2' ? bug : undefined;
      cases.push(soapCase('entities', name, version, body, { headers: dtdHeaders(version), expect: all(dtdProhibited(version), neverExpanded), ...(knownBug ? { knownBug } : {}) }));
    }
    // Without the XML declaration, and behind a UTF-8 byte-order mark.
    const xxe = `<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>${envelope(version, tokenOp('&xxe;'), { decl: false })}`;
    cases.push(soapCase('entities', 'external entity, no XML declaration', version, xxe, { headers: dtdHeaders(version), expect: all(dtdProhibited(version), neverExpanded) }));
    cases.push(soapCase('entities', 'external entity behind a UTF-8 BOM', version, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(DECL + xxe)]), { headers: dtdHeaders(version), expect: all(dtdProhibited(version), neverExpanded) }));
    // With an action parameter ASMX routes without reading the body, so where the DTD is met
    // (and so the fault's wording) is not captured: only "refused, never expanded" is asserted.
    cases.push(soapCase('entities', 'billion laughs with an action parameter', version, `${DECL}<!DOCTYPE lolz [${laughs}]>${envelope(version, tokenOp('&lol9;'), { decl: false })}`, { expect: all(unreadable(version), neverExpanded) }));
    // Entity references without any DTD are simply undeclared: unreadable XML on both versions.
    cases.push(soapCase('entities', 'undeclared entity reference', version, envelope(version, tokenOp('&lol9;')), { expect: all(unreadable(version), neverExpanded) }));
    cases.push(soapCase('entities', 'XInclude is not processed', version, envelope(version, tokenOp('<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="file:///etc/passwd" parse="text"/>')), { expect: all(status(500), neverExpanded) }));
  }
  return cases;
}

function oddNodesFamily(): CorpusCase[] {
  const cases: CorpusCase[] = [];
  const ok = status(200);
  for (const version of BOTH) {
    const bad = unreadable(version);
    const env = (inner: string): string => envelope(version, inner, { decl: false });
    const variants: readonly (readonly [string, string, Expectation?])[] = [
      ['whitespace before the XML declaration', ` ${DECL}${env(tokenOp('t'))}`, bad],
      ['comment before the XML declaration', `<!--c-->${DECL}${env(tokenOp('t'))}`, bad],
      ['PI before the XML declaration', `<?p x?>${DECL}${env(tokenOp('t'))}`, bad],
      ['two XML declarations', `${DECL}${DECL}${env(tokenOp('t'))}`, bad],
      ['XML declaration inside Body', `${DECL}${env(DECL + tokenOp('t'))}`, bad],
      ['XML declaration version 2.0', `<?xml version="2.0"?>${env(tokenOp('t'))}`, bad],
      ['comment before the root', `${DECL}<!-- c -->${env(tokenOp('t'))}`, ok],
      ['comment between Envelope and Body', envelope(version, tokenOp('t'), { header: '<!-- c -->' }), ok],
      ['comment inside the token', `${DECL}${env(tokenOp('a<!-- c -->b'))}`, ok],
      ['PI inside Body', `${DECL}${env('<?p data?>' + tokenOp('t'))}`, ok],
      ['PI inside the token', `${DECL}${env(tokenOp('a<?p data?>b'))}`, ok],
      ['xml-stylesheet PI pointing at a file', `${DECL}<?xml-stylesheet href="file:///etc/passwd"?>${env(tokenOp('t'))}`, ok],
      ['CDATA token', `${DECL}${env(tokenOp('<![CDATA[<&>]]>'))}`, ok],
      ['CDATA holding an envelope', `${DECL}${env(tokenOp(`<![CDATA[${envelope(version, tokenOp('x'))}]]>`))}`, ok],
      ['CDATA before the root', `${DECL}<![CDATA[x]]>${env(tokenOp('t'))}`, bad],
      ['CDATA in an attribute value', `${DECL}${env(tokenOp('t', ' a="<![CDATA[x]]>"'))}`, bad],
      ['"]]>" in text', `${DECL}${env(tokenOp('a]]>b'))}`, bad],
      ['"--" inside a comment', `${DECL}${env(tokenOp('a<!-- x -- y -->'))}`, bad],
      ['unterminated comment', `${DECL}${env(tokenOp('a<!-- x'))}`, bad],
      ['unterminated CDATA', `${DECL}${env(tokenOp('<![CDATA[x'))}`, bad],
      ['PI named xml inside Body', `${DECL}${env('<?xml x?>' + tokenOp('t'))}`, bad],
      ['PI without a target', `${DECL}${env('<? ?>' + tokenOp('t'))}`, bad],
      ['raw "<" in an attribute value', `${DECL}${env(tokenOp('t', ' a="<"'))}`, bad],
      ['raw "&" in text', `${DECL}${env(tokenOp('a & b'))}`, bad],
      ['comment after the root', `${DECL}${env(tokenOp('t'))}<!-- c -->`, ok],
      ['whitespace after the root', `${DECL}${env(tokenOp('t'))}\r\n\t `, ok],
      ['text after the root', `${DECL}${env(tokenOp('t'))}junk`],
      ['a second root', `${DECL}${env(tokenOp('t'))}${env(tokenOp('t'))}`],
      ['DOCTYPE inside Body', `${DECL}${env('<!DOCTYPE x>' + tokenOp('t'))}`, bad],
      ['mismatched end tag', `${DECL}${env(tokenOp('t</tokne>'))}`, bad],
      ['end tag only', '</soap:Envelope>', bad],
    ];
    for (const [name, xml, expect] of variants) cases.push(soapCase('odd-nodes', name, version, xml, expect ? { expect } : {}));
  }
  return cases;
}

function utf16(text: string, order: 'le' | 'be', bom: boolean): Buffer {
  const le = Buffer.from(text, 'utf16le');
  const body = order === 'le' ? le : Buffer.from(le).swap16();
  const mark = order === 'le' ? Buffer.from([0xff, 0xfe]) : Buffer.from([0xfe, 0xff]);
  return bom ? Buffer.concat([mark, body]) : body;
}

function encodingFamily(): CorpusCase[] {
  const cases: CorpusCase[] = [];
  const ok = status(200);
  for (const version of BOTH) {
    const bad = unreadable(version);
    const media = version === '1.1' ? 'text/xml' : 'application/soap+xml';
    const hdr = (contentType: string): Partial<CorpusCase> => ({ headers: { ...soapHeaders(version), 'content-type': contentType } });
    const xml16 = `<?xml version="1.0" encoding="utf-16"?>${envelope(version, tokenOp('t'), { decl: false })}`;
    const xml8 = envelope(version, tokenOp('t'));
    const withBytes = (bytes: readonly number[], where: 'text' | 'name'): Buffer => {
      const [head, tail] = where === 'text' ? envelope(version, tokenOp('a\u0001b')).split('\u0001') : envelope(version, tokenOp('t').replace('<token>', '<to\u0001ken>').replace('</token>', '</to\u0001ken>')).split('\u0001');
      return Buffer.concat([Buffer.from(head ?? ''), Buffer.from(bytes), Buffer.from(tail ?? '')]);
    };
    cases.push(soapCase('encoding', 'UTF-8 BOM', version, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(xml8)]), { expect: ok }));
    cases.push(soapCase('encoding', 'UTF-16LE with BOM, no charset', version, utf16(xml16, 'le', true), { ...hdr(media), expect: ok }));
    cases.push(soapCase('encoding', 'UTF-16BE with BOM, no charset', version, utf16(xml16, 'be', true), { ...hdr(media), expect: ok }));
    cases.push(soapCase('encoding', 'UTF-16LE without BOM, charset=utf-16', version, utf16(xml16, 'le', false), { ...hdr(`${media}; charset=utf-16`), expect: ok }));
    // .NET: StreamReader(stream, charset, detectEncodingFromByteOrderMarks: true): the BOM wins.
    cases.push(soapCase('encoding', 'UTF-16LE with BOM, charset=utf-8', version, utf16(xml16, 'le', true), { ...hdr(`${media}; charset=utf-8`), expect: ok, knownBug: 'F4' }));
    if (version === '1.2') {
      // application/* without charset: XmlTextReader(stream) detects UTF-16 from "<\0?\0".
      cases.push(soapCase('encoding', 'UTF-16LE without BOM, no charset', version, utf16(xml16, 'le', false), { ...hdr(media), expect: ok, knownBug: 'F4' }));
    } else {
      // text/* without charset: ASMX reads ASCII (RequestResponseUtils.GetEncoding), so this is unreadable.
      cases.push(soapCase('encoding', 'UTF-16LE without BOM, no charset', version, utf16(xml16, 'le', false), { ...hdr(media), expect: bad }));
    }
    cases.push(soapCase('encoding', 'UTF-16 declared, UTF-8 sent with charset=utf-16', version, Buffer.from(xml16), { ...hdr(`${media}; charset=utf-16`) }));
    cases.push(soapCase('encoding', 'UTF-32LE with BOM', version, Buffer.concat([Buffer.from([0xff, 0xfe, 0, 0]), Buffer.from(Array.from(xml8).flatMap((c) => [c.charCodeAt(0), 0, 0, 0]))]), hdr(media)));
    cases.push(soapCase('encoding', 'charset=bogus', version, xml8, { ...hdr(`${media}; charset=bogus`), expect: ok }));
    cases.push(soapCase('encoding', 'charset=utf-32 on a UTF-8 body', version, xml8, hdr(`${media}; charset=utf-32`)));
    cases.push(soapCase('encoding', 'charset=iso-8859-1 on UTF-8 bytes', version, envelope(version, tokenOp('caf\u00e9 \u20ac')), { ...hdr(`${media}; charset=iso-8859-1`), expect: ok }));
    cases.push(soapCase('encoding', 'encoding="bogus" in the declaration', version, `<?xml version="1.0" encoding="bogus"?>${envelope(version, tokenOp('t'), { decl: false })}`, hdr(media)));
    for (const [name, bytes] of [
      ['overlong "/" (C0 AF)', [0xc0, 0xaf]],
      ['lone 0xFF', [0xff]],
      ['UTF-8 encoded surrogate (ED A0 80)', [0xed, 0xa0, 0x80]],
      ['truncated sequence (E2 82)', [0xe2, 0x82]],
      ['lone continuation bytes', [0x80, 0x81, 0xbf]],
    ] as const) {
      // .NET's decoders replace bad sequences with U+FFFD: the text is still a value.
      cases.push(soapCase('encoding', `invalid UTF-8 in text: ${name}`, version, withBytes(bytes, 'text'), { expect: ok }));
      cases.push(soapCase('encoding', `invalid UTF-8 in an element name: ${name}`, version, withBytes(bytes, 'name')));
    }
    cases.push(soapCase('encoding', 'NUL byte in text', version, withBytes([0x00], 'text'), { expect: bad }));
    cases.push(soapCase('encoding', 'NUL byte in an element name', version, withBytes([0x00], 'name'), { expect: bad }));
    cases.push(soapCase('encoding', 'NUL byte first', version, Buffer.concat([Buffer.from([0]), Buffer.from(xml8)]), { expect: bad }));
    cases.push(soapCase('encoding', 'NUL bytes after the root', version, Buffer.concat([Buffer.from(xml8), Buffer.alloc(64)])));
    cases.push(soapCase('encoding', 'body of NUL bytes', version, Buffer.alloc(4096), { expect: bad }));
    cases.push(soapCase('encoding', 'control character in text', version, withBytes([0x01], 'text'), { expect: bad }));
    for (const ref of ['&#0;', '&#xD800;', '&#xFFFE;', '&#x110000;', '&#;', '&#x;', '&#99999999999999999999;']) {
      cases.push(soapCase('encoding', `character reference ${ref}`, version, envelope(version, tokenOp(`a${ref}b`)), { expect: bad }));
    }
    cases.push(soapCase('encoding', 'character reference &#x1F600;', version, envelope(version, tokenOp('&#x1F600;')), { expect: ok }));
  }
  return cases;
}

function namespaceFamily(): CorpusCase[] {
  const cases: CorpusCase[] = [];
  for (const version of BOTH) {
    const bad = unreadable(version);
    const ns = version === '1.1' ? SOAP11_NS : SOAP12_NS;
    const other = version === '1.1' ? SOAP12_NS : SOAP11_NS;
    const variants: readonly (readonly [string, string, Expectation?])[] = [
      ['unbound element prefix in Body', envelope(version, '<p:x/>' + tokenOp('t')), bad],
      ['unbound element prefix on the operation', envelope(version, '<p:ValidateUserToken><token>t</token></p:ValidateUserToken>'), bad],
      ['unbound attribute prefix', envelope(version, tokenOp('t', ' p:a="1"')), bad],
      ['unbound xsi prefix on xsi:nil', `${DECL}<soap:Envelope xmlns:soap="${ns}"><soap:Body><ValidateUserToken xmlns="SVCAPI"><token xsi:nil="true"/></ValidateUserToken></soap:Body></soap:Envelope>`, bad],
      ['unbound Envelope prefix', `${DECL}<soap:Envelope><soap:Body/></soap:Envelope>`, bad],
      ['prefix undeclared with xmlns:p=""', envelope(version, tokenOp('t', ' xmlns:p=""')), bad],
      ['xmlns:xml rebound', envelope(version, tokenOp('t', ' xmlns:xml="urn:x"')), bad],
      ['xmlns:xmlns declared', envelope(version, tokenOp('t', ' xmlns:xmlns="urn:x"')), bad],
      ['duplicate attribute', envelope(version, tokenOp('t', ' a="1" a="2"')), bad],
      ['duplicate attribute after namespace expansion', envelope(version, tokenOp('t', ' xmlns:p="urn:u" xmlns:q="urn:u" p:a="1" q:a="2"')), bad],
      ['duplicate xmlns:soap', `${DECL}<soap:Envelope xmlns:soap="${ns}" xmlns:soap="${ns}"><soap:Body>${tokenOp('t')}</soap:Body></soap:Envelope>`, bad],
      ['duplicate default xmlns', envelope(version, tokenOp('t', ' xmlns="SVCAPI"')), bad],
      ['token in no namespace (xmlns="")', envelope(version, '<ValidateUserToken xmlns="SVCAPI"><token xmlns="">t</token></ValidateUserToken>'), status(200)],
      ['Body in the other SOAP namespace', `${DECL}<soap:Envelope xmlns:soap="${ns}"><b:Body xmlns:b="${other}">${tokenOp('t')}</b:Body></soap:Envelope>`, status(500)],
      ['Envelope in no namespace', `${DECL}<Envelope><Body>${tokenOp('t')}</Body></Envelope>`, status(500)],
      ['Envelope in the service namespace', `${DECL}<Envelope xmlns="SVCAPI"><Body/></Envelope>`, status(500)],
      ['namespace URI with markup characters', `${DECL}<soap:Envelope xmlns:soap="urn:&lt;&amp;&quot;&gt;"><soap:Body/></soap:Envelope>`, status(500)],
      ['colon-only names', envelope(version, tokenOp('t', ' :="1"')), bad],
      ['element name with two colons', envelope(version, '<a:b:c xmlns:a="urn:a"/>' + tokenOp('t')), bad],
    ];
    for (const [name, xml, expect] of variants) cases.push(soapCase('namespaces', name, version, xml, expect ? { expect } : {}));
  }
  return cases;
}

function headerFamily(): CorpusCase[] {
  const cases: CorpusCase[] = [];
  const body11 = Buffer.from(envelope('1.1', tokenOp('t')));
  const body12 = Buffer.from(envelope('1.2', tokenOp('t')));
  const ok = status(200);
  const fault = status(500);
  const soap11 = (name: string, headers: Record<string, string>, expect?: Expectation, knownBug?: FindingId): void => {
    cases.push({ family: 'headers', name, method: 'POST', url: SERVICE, headers, body: body11, ...(expect ? { expect } : {}), ...(knownBug ? { knownBug } : {}) });
  };
  const soap12 = (name: string, contentType: string, expect?: Expectation, knownBug?: FindingId): void => {
    cases.push({ family: 'headers', name, method: 'POST', url: SERVICE, headers: { 'content-type': contentType }, body: body12, ...(expect ? { expect } : {}), ...(knownBug ? { knownBug } : {}) });
  };
  const ct = 'text/xml; charset=utf-8';
  soap11('SOAPAction of 64 KiB', { 'content-type': ct, soapaction: 'x'.repeat(65_536) }, fault);
  soap11('SOAPAction of 900 kB', { 'content-type': ct, soapaction: `"${'y'.repeat(900_000)}"` }, fault);
  soap11('SOAPAction with markup characters', { 'content-type': ct, soapaction: `"<a b='c'>&amp;</a>"` }, all(fault, bodyIncludes('&lt;a b=\'c\'&gt;&amp;amp;&lt;/a&gt;')));
  soap11('SOAPAction ""', { 'content-type': ct, soapaction: '""' }, fault);
  soap11('SOAPAction of one quote', { 'content-type': ct, soapaction: '"' }, fault);
  soap11('SOAPAction of three quotes', { 'content-type': ct, soapaction: '"""' }, fault);
  soap11('SOAPAction padded with spaces', { 'content-type': ct, soapaction: '   "SVCAPI/ValidateUserToken"   ' }, ok);
  soap11('SOAPAction list', { 'content-type': ct, soapaction: '"SVCAPI/ValidateUserToken", "SVCAPI/WhatsNew"' }, fault);
  soap11('SOAPAction of a tab', { 'content-type': ct, soapaction: '\t' }, fault);
  soap11('SOAPAction with Latin-1 bytes', { 'content-type': ct, soapaction: '"SVCAPI/\u00e9\u00ff"' }, fault);
  soap11('SOAPAction in another case', { 'content-type': ct, soapaction: '"svcapi/validateusertoken"' }, fault);
  soap11('charset=bogus', { 'content-type': 'text/xml; charset=bogus', soapaction: '"SVCAPI/ValidateUserToken"' }, ok);
  soap11('empty parameters ";;;"', { 'content-type': 'text/xml;;;', soapaction: '"SVCAPI/ValidateUserToken"' }, ok);
  soap11('quoted charset', { 'content-type': 'text/xml; charset="utf-8"', soapaction: '"SVCAPI/ValidateUserToken"' }, ok);
  soap11('unterminated quoted charset', { 'content-type': 'text/xml; charset="utf-8', soapaction: '"SVCAPI/ValidateUserToken"' });
  soap11('charset without a value', { 'content-type': 'text/xml; charset', soapaction: '"SVCAPI/ValidateUserToken"' }, ok);
  soap11('parameter without a name', { 'content-type': 'text/xml; =x', soapaction: '"SVCAPI/ValidateUserToken"' }, ok);
  soap11('charset value with a space', { 'content-type': 'text/xml; charset=utf-8 x', soapaction: '"SVCAPI/ValidateUserToken"' }, ok);
  soap11('two charsets', { 'content-type': 'text/xml; charset=utf-8; charset=utf-16', soapaction: '"SVCAPI/ValidateUserToken"' });
  soap11('upper-case media type', { 'content-type': 'TEXT/XML; CHARSET=UTF-8', soapaction: '"SVCAPI/ValidateUserToken"' }, ok);
  soap11('action parameter on text/xml is not routing', { 'content-type': 'text/xml; action="SVCAPI/WhatsNew"', soapaction: '"SVCAPI/ValidateUserToken"' }, ok);
  soap11('form content type', { 'content-type': 'application/x-www-form-urlencoded', soapaction: '"SVCAPI/ValidateUserToken"' }, unsupportedMedia);
  soap11('multipart content type', { 'content-type': 'multipart/form-data; boundary=x', soapaction: '"SVCAPI/ValidateUserToken"' }, unsupportedMedia);
  soap11('application/xml', { 'content-type': 'application/xml', soapaction: '"SVCAPI/ValidateUserToken"' }, unsupportedMedia);
  soap11('no Content-Type', { soapaction: '"SVCAPI/ValidateUserToken"' }, unsupportedMedia);
  // Content-Types Fastify's own parser refuses before our handler runs (finding F2): ASMX
  // compares the base type and answers 415 to anything that is not a SOAP type.
  for (const bad of ['', ';', 'x', '/', 'text/xml/', 'text /xml', '"text/xml"', 'text/xml,text/plain', 'text/xml\u00e9']) {
    soap11(`unparsable Content-Type ${JSON.stringify(bad)}`, { 'content-type': bad, soapaction: '"SVCAPI/ValidateUserToken"' }, unsupportedMedia, 'F2');
  }
  const a12 = 'application/soap+xml; charset=utf-8';
  soap12('action with an escaped quote', `${a12}; action="SVCAPI/ValidateUserToken\\"x"`, ok);
  soap12('action naming another operation', `${a12}; action="SVCAPI/WhatsNew"`, ok);
  soap12('empty action', `${a12}; action=`, ok);
  soap12('action of a backslash', `${a12}; action="\\\\"`, ok);
  soap12('unterminated action quote', `${a12}; action="SVCAPI/ValidateUserToken`);
  soap12('action of 64 KiB', `${a12}; action="${'z'.repeat(65_536)}"`, ok);
  soap12('two actions', `${a12}; action="SVCAPI/ValidateUserToken"; action="SVCAPI/WhatsNew"`, ok);
  soap12('action first, charset last', 'application/soap+xml;action=SVCAPI/ValidateUserToken;charset=utf-8', ok);
  soap12('upper-case parameter names', 'APPLICATION/SOAP+XML; CHARSET=UTF-8; ACTION="SVCAPI/ValidateUserToken"', ok);
  soap12('unparsable Content-Type', 'application/soap+xml, text/xml', unsupportedMedia, 'F2');
  return cases;
}

function httpFamily(rng: Rng): CorpusCase[] {
  const cases: CorpusCase[] = [];
  const get = (name: string, url: string, expect?: Expectation, knownBug?: FindingId): void => {
    cases.push({ family: 'http-get-post', name: `GET ${name}`, method: 'GET', url, headers: {}, ...(expect ? { expect } : {}), ...(knownBug ? { knownBug } : {}) });
  };
  /** contentType null sends no Content-Type header at all ('' sends an empty one). */
  const post = (name: string, url: string, body: string | Buffer, contentType: string | null = 'application/x-www-form-urlencoded', expect?: Expectation, knownBug?: FindingId): void => {
    const headers: Record<string, string> = contentType === null ? {} : { 'content-type': contentType };
    cases.push({ family: 'http-get-post', name: `POST ${name}`, method: 'POST', url, headers, body: typeof body === 'string' ? Buffer.from(body, 'latin1') : body, ...(expect ? { expect } : {}), ...(knownBug ? { knownBug } : {}) });
  };
  const ok = status(200);
  const err = status(500);
  const vut = `${SERVICE}/ValidateUserToken`;
  const wn = `${SERVICE}/WhatsNew`;
  for (const escape of ['%', '%z', '%zz', '%u', '%u12', '%u12zz', '%uZZZZ', '%uD800', '%uDC00%uD800', '%%%', '%0', 'a%', '%C0%AF', '%FF%FE', '%ED%A0%80', '%00', '%0D%0A', '+%2B+']) {
    get(`token=${escape}`, `${vut}?token=${escape}`, ok);
    post(`token=${escape}`, vut, `token=${escape}`, undefined, ok);
    get(`name escape ${escape}`, `${vut}?${escape}=1&token=t`, ok);
  }
  for (const q of ['=', '==', '=&=&=', '&&&&', 'token', '=token', '&=&token&=']) {
    get(`query ${JSON.stringify(q)}`, `${vut}?${q}`, err);
    post(`form ${JSON.stringify(q)}`, vut, q, undefined, err);
  }
  get('token==a', `${vut}?token==a`, ok);
  get('=token&token=', `${vut}?=token&token=`, ok);
  get('TOKEN in capitals', `${vut}?TOKEN=a`, ok);
  get('10 000 unknown parameters', `${vut}?${Array.from({ length: 10_000 }, (_, i) => `p${i}=${i}`).join('&')}&token=t`, ok);
  get('100 000 separators', `${vut}?${'&'.repeat(100_000)}`, err);
  get('token repeated 20 000 times', `${vut}?${'token=a&'.repeat(20_000)}`, ok);
  post('15 000 unknown parameters', vut, `${Array.from({ length: 15_000 }, (_, i) => `p${i}=${i}`).join('&')}&token=t`, undefined, ok);
  post('form of 900 kB', vut, `token=${'t'.repeat(900_000)}`, undefined, ok);
  post('AppID repeated 20 000 times', wn, `AppToken=a&AppVersion=1&Language=en&qtyNews=1${'&AppID=1'.repeat(20_000)}`, undefined, err);
  const wnQuery = (appId: string): string => `${wn}?AppToken=a&AppID=${appId}&AppVersion=1&Language=en&qtyNews=1`;
  for (const appId of ['%2B2', '%202%20', '2e0', '0x2', '%EF%BC%92', '-0', '2147483647', '2147483648', '-2147483649', '', '%092', '%002', '1,2', '%D9%A2', '99999999999999999999999999', '%3Cscript%3E']) {
    get(`WhatsNew AppID=${appId}`, wnQuery(appId));
  }
  post('form with charset=bogus', vut, 'token=t', 'application/x-www-form-urlencoded; charset=bogus', ok);
  post('form with ";;;"', vut, 'token=t', 'application/x-www-form-urlencoded;;;', ok);
  post('form with raw 0xFF bytes', vut, Buffer.from([0x74, 0x6f, 0x6b, 0x65, 0x6e, 0x3d, 0xff, 0xfe, 0x00]), undefined, ok);
  post('form with a UTF-8 BOM', vut, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('token=t')]));
  post('form sent as text/plain', vut, 'token=t', 'text/plain', err);
  post('form without Content-Type', vut, 'token=t', null, err);
  post('form sent as JSON', vut, '{"token":"t"}', 'application/json', err);
  post('form sent as multipart', vut, '--x\r\nContent-Disposition: form-data; name="token"\r\n\r\nt\r\n--x--', 'multipart/form-data; boundary=x', err);
  for (const bad of ['', 'x', '/', '"application/x-www-form-urlencoded"', 'application/x-www-form-urlencoded/']) {
    // ASMX: "Request format is invalid: <Content-Type>." as text/plain (f_post_ctype_text_plain).
    post(`form with unparsable Content-Type ${JSON.stringify(bad)}`, vut, 'token=t', bad, all(err, bodyIncludes('Request format is invalid')), 'F2');
  }
  cases.push({ family: 'http-get-post', name: 'GET with a body and Content-Type x', method: 'GET', url: `${vut}?token=t`, headers: { 'content-type': 'x' }, body: Buffer.from('garbage'), expect: ok });
  // Method names in the path (case-sensitive; anything else is "not valid").
  for (const path of ['ValidateUserToken%00', 'validateusertoken', 'ValidateUserToken/extra', 'A'.repeat(10_000), '%20', '/', '..%2F..%2Fetc%2Fpasswd', 'ValidateUserToken;x=1', '%3Cscript%3E', '%E2%82%AC']) {
    get(`method name ${path.slice(0, 40)}`, `${SERVICE}/${path}?token=t`, err);
    post(`method name ${path.slice(0, 40)}`, `${SERVICE}/${path}`, 'token=t', undefined, err);
  }
  get('empty method name', `${SERVICE}/`, err);
  // Malformed escapes in the path (finding F1).
  for (const path of [`${SERVICE}/%`, `${SERVICE}/%zz`, `${SERVICE}/%E0%A4%A`, `${SERVICE}/%C0%AF`, `${SERVICE}%zz`, '/%', `${SERVICE}/Valid%ZZateUserToken`]) {
    get(`path ${path}`, `${path}?token=t`, undefined, 'F1');
    post(`path ${path}`, path, 'token=t', undefined, undefined, 'F1');
    cases.push({ family: 'http-get-post', name: `POST SOAP to ${path}`, method: 'POST', url: path, headers: soapHeaders('1.1'), body: Buffer.from(envelope('1.1', tokenOp('t'))), knownBug: 'F1' });
  }
  // Random query strings and form bodies on the cheap operations.
  for (let i = 0; i < 60; i++) {
    const op = rng.pick(CHEAP_OPS);
    const q = Array.from({ length: 1 + rng.int(12) }, () => `${rng.pick(['token', 'AppID', 'appid', 'qtyNews', 'Language', 'AppVersion', 'AppToken', '', 'x'])}${rng.pick(['=', '', '=='])}${randomQuery(rng, rng.int(20))}`).join(rng.pick(['&', '&&', ';']));
    if (i % 2 === 0) get(`random parameters #${i} -> ${op}`, `${SERVICE}/${op}?${q}`);
    else post(`random parameters #${i} -> ${op}`, `${SERVICE}/${op}`, q);
  }
  return cases;
}

function documentationFamily(): CorpusCase[] {
  const cases: CorpusCase[] = [];
  const doc = (name: string, query: string): void => {
    cases.push({
      family: 'documentation',
      name,
      method: 'GET',
      url: `${SERVICE}?${query}`,
      headers: {},
      expect: (res) => {
        const ct = header(res, 'content-type');
        return res.status === 200 && (ct === 'text/xml; charset=utf-8' || ct === 'text/html; charset=utf-8') ? [] : [`documentation answered ${res.status} ${String(ct)}`];
      },
    });
  };
  for (const q of ['wsdl&x', 'WSDL=1', 'op=%3Cscript%3E', 'op=%zz', 'op=', 'op=ValidateUser&op=WhatsNew', '%', '%zz', 'disco=', `op=${'A'.repeat(10_000)}`, '&&&', '=']) doc(`documentation ?${q.slice(0, 40)}`, q);
  return cases;
}

function verbFamily(): CorpusCase[] {
  const cases: CorpusCase[] = [];
  for (const method of ['PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const) {
    for (const url of [SERVICE, `${SERVICE}/ValidateUserToken`]) {
      for (const contentType of ['text/xml', 'x', 'application/json']) {
        cases.push({
          family: 'other-verbs',
          name: `${method} ${url} as ${contentType}`,
          method,
          url,
          headers: { 'content-type': contentType },
          body: Buffer.from(contentType === 'application/json' ? '{"token":' : '<broken'),
          // README 4: IIS answers 405 with Allow before ASMX (or any body parser) sees the request.
          expect: (res) => (res.status === 405 && header(res, 'allow') === 'GET, HEAD, POST' ? [] : [`status ${res.status} / Allow ${String(header(res, 'allow'))}, expected 405 with Allow`]),
          ...(contentType === 'x' ? { knownBug: 'F2' as const } : {}),
        });
      }
    }
  }
  return cases;
}

export function buildCorpus(seed: number = CORPUS_SEED): CorpusCase[] {
  const rng = new Rng(seed);
  const seeds = captureSeeds();
  return [
    ...capturesFamily(seeds),
    ...truncationFamily(),
    ...randomBytesFamily(rng),
    ...soupFamily(rng),
    ...mutationFamily(rng, seeds),
    ...nestingFamily(),
    ...sizeFamily(),
    ...entityFamily(),
    ...oddNodesFamily(),
    ...encodingFamily(),
    ...namespaceFamily(),
    ...headerFamily(),
    ...httpFamily(rng),
    ...documentationFamily(),
    ...verbFamily(),
  ];
}
