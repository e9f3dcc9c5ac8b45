/**
 * `svcapi-auth compat check`: the same requests to the legacy service and to svcapi-auth, the
 * answers compared after normalising only what must differ between two deployments:
 *
 * - token and ticket values (each side logs in once and uses its own token on its own side;
 *   every random token-like value is replaced by its *form*, so a token written in another
 *   case or form still shows), and Guid.Empty-like values are kept as they are;
 * - expiry timestamps in JSON strings (`\/Date(...)\/`, `\/Date(...+0000)\/`, ISO);
 * - each side's own host, service URL and path (WSDL addresses, disco, help page);
 * - headers that describe the connection or the server rather than the answer: Date, Server,
 *   X-Powered-By, X-AspNet-Version, Content-Length, Connection, Keep-Alive, Transfer-Encoding;
 * - svcapi-auth's deliberate header deviations (docs/security.md "HTTP hardening"):
 *   `Cache-Control: no-store` on the token-carrying operations, `X-Content-Type-Options:
 *   nosniff`, the help page's Content-Security-Policy. These are listed as accepted, not counted.
 *
 * Everything else counts: status, the remaining headers, the body byte for byte. The requests:
 * every operation on every binding with good and wrong credentials, missing, empty, oversized
 * and malformed parameters, wrong SOAPAction, unknown operation, `?WSDL`, `?disco`, the help
 * page. Requests with the real password come first and wrong passwords last, so a login
 * throttle on either side cannot turn a later success into a failure. The password is never
 * shown: every rendering replaces it (as sent: raw, URL-encoded, XML-escaped) with ***.
 */
import { randomBytes } from 'node:crypto';
import { compareAnswers, displayText, operationOf, redact, secretForms, unifiedDiff, type RenderedAnswer } from './answer-compare.js';
import { BINDINGS, formEncode, operationRequest, readCallResult, soapEnvelope, type Binding, type CallArgs } from './asmx-calls.js';
import { DEFAULT_PROBE_LIMITS, probe, ProbeError, type ProbeLimits, type ProbeRequest, type ProbeResponse } from './http-probe.js';
import { LearnError, serviceUrl } from './learn.js';
import { recogniseTokenForm } from './recognise.js';

export { normaliseBody, redact, type RenderedAnswer } from './answer-compare.js';

export interface CheckOptions {
  readonly legacyUrl: string;
  readonly oursUrl: string;
  readonly login: string;
  readonly password: string;
  readonly appId: number;
  readonly ipAddress?: string;
  readonly limits?: ProbeLimits;
}

export interface CaseOutcome {
  readonly name: string;
  /** The request as sent to the legacy service (password shown as ***). */
  readonly request: { readonly method: string; readonly target: string; readonly headers: Readonly<Record<string, string>>; readonly body: string };
  readonly same: boolean;
  /** svcapi-auth's deliberate deviations seen in this answer (not counted as differences). */
  readonly accepted: readonly string[];
  readonly legacy: RenderedAnswer;
  readonly ours: RenderedAnswer;
  /** A unified diff of the two normalised answers ('' when the same). */
  readonly diff: string;
}

export interface CheckResult {
  readonly legacyUrl: string;
  readonly oursUrl: string;
  readonly outcomes: readonly CaseOutcome[];
  readonly same: number;
  readonly different: number;
}

/** The check could not run: a side cannot be reached or will not log the user in. */
export class CheckError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CheckError';
  }
}

interface Side {
  readonly label: 'legacy' | 'ours';
  readonly url: URL;
  readonly origin: URL;
  readonly path: string;
  token: string;
}

/** A request, written for one side (its service path and its own token). */
interface Case {
  readonly name: string;
  build(side: Side): ProbeRequest;
}


const op = (name: string, binding: Binding, args: CallArgs, extras?: Parameters<typeof operationRequest>[4]): Case => ({
  name: `${name} ${binding}`,
  build: (side) => operationRequest(side.path, binding, name.split(' ', 1)[0] ?? name, args, extras),
});

function cases(options: CheckOptions, wrongPassword: string, unknownToken: string): Case[] {
  const { login, password } = options;
  const app = String(options.appId);
  const ip = options.ipAddress ?? '';
  // Oversized, yet inside what IIS lets through by default (a 2048-character query string).
  const sizes: Readonly<Record<Binding, number>> = { soap11: 100_000, soap12: 100_000, get: 1_500, post: 100_000 };
  const big = (b: Binding): string => 'Z'.repeat(sizes[b]);
  const own = (side: Side): string => side.token;
  const withToken = (name: string, binding: Binding, args: (token: string) => CallArgs, extras?: (token: string) => Parameters<typeof operationRequest>[4]): Case => ({
    name: `${name} ${binding}`,
    build: (side) => operationRequest(side.path, binding, name.split(' ', 1)[0] ?? name, args(own(side)), extras?.(own(side))),
  });
  const list: Case[] = [
    { name: 'WSDL (?WSDL)', build: (s) => ({ method: 'GET', target: `${s.path}?WSDL` }) },
    { name: 'WSDL (?wsdl)', build: (s) => ({ method: 'GET', target: `${s.path}?wsdl` }) },
    { name: 'disco (?disco)', build: (s) => ({ method: 'GET', target: `${s.path}?disco` }) },
    { name: 'help page', build: (s) => ({ method: 'GET', target: s.path }) },
    { name: 'help page ?op=ValidateUser', build: (s) => ({ method: 'GET', target: `${s.path}?op=ValidateUser` }) },
  ];
  // Good credentials first: a throttle tripped by the wrong ones later cannot change these.
  for (const b of BINDINGS) list.push(op('ValidateUser good credentials', b, [['login', login], ['password', password], ['AppId', app], ['IPAddress', ip]]));
  list.push(
    op('ValidateUserJSON good credentials in the form', 'post', [['login', login], ['password', password], ['AppId', app], ['IPAddress', ip]]),
    op('ValidateUserJSON good credentials in the query', 'get', [], { query: formEncode([['login', login], ['password', password], ['AppId', app], ['IPAddress', ip]]) }),
  );
  if (/^[\x20-\x7e]*$/.test(password) && /^[\x20-\x7e]*$/.test(login)) {
    list.push(op('ValidateUserJSON good credentials in headers', 'post', [], { headers: { login, password, AppId: app, IPAddress: ip } }));
  }
  for (const b of BINDINGS) {
    list.push(
      withToken('ValidateUserToken own token', b, (t) => [['token', t]]),
      op('ValidateUserToken unknown token', b, [['token', unknownToken]]),
      op('ValidateUserToken empty token', b, [['token', '']]),
      op('ValidateUserToken missing token', b, []),
      op('ValidateUserToken oversized token', b, [['token', big(b)]]),
      withToken('WhatsNew', b, (t) => [['AppToken', t], ['AppID', app], ['AppVersion', ''], ['Language', ''], ['qtyNews', '10']]),
      op('WhatsNew without AppToken', b, [['AppToken', ''], ['AppID', app], ['AppVersion', ''], ['Language', ''], ['qtyNews', '3']]),
      op('WhatsNew unknown AppID', b, [['AppToken', ''], ['AppID', '2147483000'], ['AppVersion', ''], ['Language', ''], ['qtyNews', '10']]),
      op('WhatsNew qtyNews abc', b, [['AppToken', ''], ['AppID', app], ['AppVersion', ''], ['Language', ''], ['qtyNews', 'abc']]),
      op('WhatsNew qtyNews missing', b, [['AppToken', ''], ['AppID', app], ['AppVersion', ''], ['Language', '']]),
      withToken('GetUserLoginURL own token', b, (t) => [['token', t], ['AppID', app]]),
      op('GetUserLoginURL unknown token', b, [['token', unknownToken], ['AppID', app]]),
      withToken('GetUserLoginURL AppID abc', b, (t) => [['token', t], ['AppID', 'abc']]),
      op('GetUserLoginURL missing parameters', b, []),
      op('ValidateUser AppId abc', b, [['login', 'nobody-here'], ['password', 'x'], ['AppId', 'abc'], ['IPAddress', ip]]),
      op('ValidateUser AppId empty', b, [['login', 'nobody-here'], ['password', 'x'], ['AppId', ''], ['IPAddress', ip]]),
      op('ValidateUser AppId missing', b, [['login', 'nobody-here'], ['password', 'x'], ['IPAddress', ip]]),
      op('ValidateUser empty login and password', b, [['login', ''], ['password', ''], ['AppId', app], ['IPAddress', ip]]),
      op('ValidateUser oversized login', b, [['login', big(b)], ['password', 'x'], ['AppId', app], ['IPAddress', ip]]),
      op('ValidateUserJSON no inputs', b, []),
      op('ValidateUserTokenJSON no inputs', b, []),
    );
  }
  list.push(
    withToken('ValidateUserTokenJSON own token in the form', 'post', (t) => [['token', t]]),
    withToken('ValidateUserTokenJSON own token in the query', 'get', () => [], (t) => ({ query: `token=${encodeURIComponent(t)}` })),
    withToken('ValidateUserTokenJSON own token in a header', 'post', () => [], (t) => ({ headers: { token: t } })),
    op('ValidateUserTokenJSON unknown token', 'post', [['token', unknownToken]]),
    op('ValidateUserTokenJSON oversized token', 'post', [['token', big('post')]]),
    // Malformed requests and routing.
    { name: 'SOAP 1.1 malformed XML', build: (s) => ({ method: 'POST', target: s.path, headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"SVCAPI/ValidateUserToken"' }, body: '<?xml version="1.0"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><ValidateUserToken' }) },
    { name: 'SOAP 1.2 malformed XML', build: (s) => ({ method: 'POST', target: s.path, headers: { 'content-type': 'application/soap+xml; charset=utf-8' }, body: '<soap:Envelope xmlns:soap="http://www.w3.org/2003/05/soap-envelope"><soap:Body><</soap:Body>' }) },
    { name: 'SOAP 1.1 empty body', build: (s) => ({ method: 'POST', target: s.path, headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"SVCAPI/ValidateUserToken"' }, body: '' }) },
    { name: 'SOAP 1.1 wrong SOAPAction', build: (s) => ({ method: 'POST', target: s.path, headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"SVCAPI/NoSuchOp"' }, body: soapEnvelope('1.1', 'ValidateUserToken', [['token', s.token]]) }) },
    { name: 'SOAP 1.1 SOAPAction of another operation', build: (s) => ({ method: 'POST', target: s.path, headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"SVCAPI/ValidateUserToken"' }, body: soapEnvelope('1.1', 'GetUserLoginURL', [['token', s.token], ['AppID', app]]) }) },
    { name: 'SOAP 1.1 without SOAPAction', build: (s) => ({ method: 'POST', target: s.path, headers: { 'content-type': 'text/xml; charset=utf-8' }, body: soapEnvelope('1.1', 'ValidateUserToken', [['token', s.token]]) }) },
    { name: 'SOAP 1.1 unknown operation', build: (s) => ({ method: 'POST', target: s.path, headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"SVCAPI/NoSuchOp"' }, body: soapEnvelope('1.1', 'NoSuchOp', []) }) },
    { name: 'SOAP 1.2 unknown operation', build: (s) => ({ method: 'POST', target: s.path, headers: { 'content-type': 'application/soap+xml; charset=utf-8' }, body: soapEnvelope('1.2', 'NoSuchOp', []) }) },
    { name: 'SOAP 1.1 envelope as application/soap+xml', build: (s) => ({ method: 'POST', target: s.path, headers: { 'content-type': 'application/soap+xml; charset=utf-8' }, body: soapEnvelope('1.1', 'ValidateUserToken', [['token', s.token]]) }) },
    { name: 'SOAP 1.1 int parameter abc', build: (s) => ({ method: 'POST', target: s.path, headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"SVCAPI/ValidateUser"' }, body: soapEnvelope('1.1', 'ValidateUser', [['login', 'nobody-here'], ['password', 'x'], ['AppId', 'abc']]) }) },
    { name: 'HTTP GET unknown operation', build: (s) => ({ method: 'GET', target: `${s.path}/NoSuchOp` }) },
    { name: 'HTTP POST unknown operation', build: (s) => ({ method: 'POST', target: `${s.path}/NoSuchOp`, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' }) },
    { name: 'HTTP GET operation name in lower case', build: (s) => ({ method: 'GET', target: `${s.path}/validateusertoken?token=x` }) },
    { name: 'HTTP POST text/plain body', build: (s) => ({ method: 'POST', target: `${s.path}/ValidateUserToken`, headers: { 'content-type': 'text/plain' }, body: 'token=x' }) },
    { name: 'HTTP POST JSON body', build: (s) => ({ method: 'POST', target: `${s.path}/ValidateUserToken`, headers: { 'content-type': 'application/json' }, body: '{"token":"x"}' }) },
    { name: 'HTTP POST parameters in the query only', build: (s) => ({ method: 'POST', target: `${s.path}/ValidateUserToken?token=x`, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' }) },
    { name: 'HTTP GET duplicate int parameter', build: (s) => ({ method: 'GET', target: `${s.path}/GetUserLoginURL?token=x&AppID=2&AppID=3` }) },
    { name: 'PUT on the service', build: (s) => ({ method: 'PUT', target: s.path, headers: { 'content-type': 'text/xml' }, body: '' }) },
    { name: 'unknown path', build: (s) => ({ method: 'GET', target: `${s.path.replace(/[^/]*$/, '')}NoSuch.asmx` }) },
  );
  // Wrong passwords last (the same random password on both sides, never the real one).
  for (const b of BINDINGS) list.push(op('ValidateUser wrong password', b, [['login', login], ['password', wrongPassword], ['AppId', app], ['IPAddress', ip]]));
  list.push(op('ValidateUserJSON wrong password in the form', 'post', [['login', login], ['password', wrongPassword], ['AppId', app], ['IPAddress', ip]]));
  return list;
}

function shownRequest(req: ProbeRequest, secrets: readonly string[]): CaseOutcome['request'] {
  const headers: Record<string, string> = {};
  for (const [n, v] of Object.entries(req.headers ?? {})) headers[n] = redact(v, secrets);
  const body = req.body === undefined ? '' : Buffer.isBuffer(req.body) ? req.body.toString('utf8') : req.body;
  return { method: req.method, target: redact(req.target, secrets), headers, body: redact(body.length > 2000 ? `${body.slice(0, 2000)}... (${body.length} characters)` : body, secrets) };
}

/** Runs every case on both sides. Throws CheckError when a side cannot be reached or will not log in. */
export async function runCheck(options: CheckOptions, onCase?: (outcome: CaseOutcome) => void): Promise<CheckResult> {
  let legacyUrl: URL;
  let oursUrl: URL;
  try {
    legacyUrl = serviceUrl(options.legacyUrl, '--legacy');
    oursUrl = serviceUrl(options.oursUrl, '--ours');
  } catch (error) {
    if (error instanceof LearnError) throw new CheckError(error.message);
    throw error;
  }
  const limits = options.limits ?? DEFAULT_PROBE_LIMITS;
  const sides: [Side, Side] = [
    { label: 'legacy', url: legacyUrl, origin: new URL(legacyUrl.origin), path: legacyUrl.pathname, token: '' },
    { label: 'ours', url: oursUrl, origin: new URL(oursUrl.origin), path: oursUrl.pathname, token: '' },
  ];
  const secrets = secretForms(options.password);
  const send = async (side: Side, req: ProbeRequest): Promise<ProbeResponse> => {
    try {
      return await probe(side.origin, req, limits);
    } catch (error) {
      if (error instanceof ProbeError) throw new CheckError(`${side.label === 'legacy' ? 'the legacy service' : 'svcapi-auth'}: ${redact(error.message, secrets)}`);
      throw error;
    }
  };
  // Each side's own token, for the token operations on that side.
  for (const side of sides) {
    const req = operationRequest(side.path, 'soap11', 'ValidateUser', [['login', options.login], ['password', options.password], ['AppId', String(options.appId)], ['IPAddress', options.ipAddress ?? '']]);
    const result = readCallResult('soap11', 'ValidateUser', await send(side, req));
    if (result.kind !== 'string' || recogniseTokenForm(result.text) === null) {
      throw new CheckError(`${side.label === 'legacy' ? 'the legacy service' : 'svcapi-auth'} did not log ${JSON.stringify(options.login)} in to AppID ${options.appId} (${result.kind === 'string' ? `it answered ${JSON.stringify(redact(result.text, secrets))}` : result.kind}); both sides need the user`);
    }
    side.token = result.text;
  }
  let wrongPassword: string;
  do wrongPassword = `x-${randomBytes(18).toString('base64url')}`;
  while (wrongPassword === options.password);
  const unknownToken = '6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b';
  const outcomes: CaseOutcome[] = [];
  for (const c of cases(options, wrongPassword, unknownToken)) {
    const legacyReq = c.build(sides[0]);
    const legacy = await send(sides[0], legacyReq);
    const ours = await send(sides[1], c.build(sides[1]));
    const compared = compareAnswers(legacy, ours, sides, operationOf(legacyReq.target, typeof legacyReq.body === 'string' ? legacyReq.body : ''), secrets);
    const same = compared.same;
    const outcome: CaseOutcome = {
      name: c.name,
      request: shownRequest(legacyReq, secrets),
      same,
      accepted: compared.accepted,
      legacy: compared.legacy,
      ours: compared.ours,
      diff: same ? '' : unifiedDiff(compared.legacy, compared.ours),
    };
    outcomes.push(outcome);
    onCase?.(outcome);
  }
  const different = outcomes.filter((o) => !o.same).length;
  return { legacyUrl: `${legacyUrl.origin}${legacyUrl.pathname}`, oursUrl: `${oursUrl.origin}${oursUrl.pathname}`, outcomes, same: outcomes.length - different, different };
}

// --- reports ---------------------------------------------------------------------------------

/** The accepted deviations of a run, each with how many answers showed it. */
export function acceptedDeviations(result: CheckResult): Array<[string, number]> {
  const counts = new Map<string, number>();
  for (const o of result.outcomes) for (const a of o.accepted) counts.set(a.replace(/ \(.*\)$/, ''), (counts.get(a.replace(/ \(.*\)$/, '')) ?? 0) + 1);
  return [...counts];
}

export function summaryLine(result: CheckResult): string {
  return `${result.same} same, ${result.different} different`;
}

export function jsonReport(result: CheckResult): string {
  return `${JSON.stringify({
    legacy: result.legacyUrl,
    ours: result.oursUrl,
    summary: { same: result.same, different: result.different },
    acceptedDeviations: Object.fromEntries(acceptedDeviations(result)),
    cases: result.outcomes.map((o) => (o.same
      ? { name: o.name, same: true, request: { method: o.request.method, target: o.request.target } }
      : { name: o.name, same: false, request: o.request, legacy: o.legacy, ours: o.ours, diff: o.diff })),
  }, null, 2)}\n`;
}

function fence(text: string, lang = ''): string {
  const ticks = text.includes('```') ? '~~~~' : '```';
  return `${ticks}${lang}\n${text.replace(/\n$/, '')}\n${ticks}`;
}

export function markdownReport(result: CheckResult): string {
  const lines: string[] = [
    '# compat check',
    '',
    `Legacy: ${result.legacyUrl}  `,
    `svcapi-auth: ${result.oursUrl}`,
    '',
    `**${summaryLine(result)}**`,
    '',
    '| Request | Result |',
    '|---|---|',
    ...result.outcomes.map((o) => `| ${o.name.replace(/\|/g, '\\|')} | ${o.same ? 'same' : '**different**'} |`),
    '',
  ];
  const accepted = acceptedDeviations(result);
  if (accepted.length > 0) {
    lines.push('Accepted (svcapi-auth\'s deliberate deviations, docs/security.md): ' + accepted.map(([d, n]) => `${d} (${n})`).join('; '), '');
  }
  for (const o of result.outcomes.filter((x) => !x.same)) {
    const req = o.request;
    const reqText = `${req.method} ${req.target}\n${Object.entries(req.headers).map(([n, v]) => `${n}: ${v}`).join('\n')}\n\n${req.body}`;
    lines.push(`## ${o.name}`, '', 'Request (to the legacy service; svcapi-auth got the same with its own token):', '', fence(reqText, 'http'), '',
      'Legacy:', '', fence(displayText(o.legacy)), '', 'svcapi-auth:', '', fence(displayText(o.ours)), '', fence(o.diff, 'diff'), '');
  }
  return `${lines.join('\n')}\n`;
}
