/**
 * `svcapi-auth compat learn`: asks a live legacy Authentication.asmx the questions a client's
 * answers depend on, as a client asks them, and writes the answers down as a compatibility
 * profile (src/contract/compat-profile.ts) that `serve --compat FILE` reads:
 *
 * - `?WSDL`, compared canonically with ours (clients were generated from it);
 * - ValidateUser with a wrong password (random, never the real one): the failure value;
 * - ValidateUser with the real password: the token form;
 * - ValidateUserJSON / ValidateUserTokenJSON with their inputs in the query, the form and the
 *   headers: where they are read, in which order, and both JSON layouts;
 * - GetUserLoginURL with the real token (twice) and with an unknown one: the URL template and
 *   the "no URL" value;
 * - WhatsNew: the table's schema, its columns mapped to news fields, the DateTime form.
 *
 * It issues a handful of tokens on the legacy service (as any client login does) and makes two
 * failed logins with random passwords plus a few with an empty login. The password goes only
 * into requests: never into a message, the result or the profile (a profile value that would
 * carry it is dropped). Every exchange is bounded (http-probe.ts).
 */
import { randomBytes } from 'node:crypto';
import { compatProfileFromJson, CompatProfileError, tokenFormName } from '../compat-profile-file.js';
import type { JsonInputSource, JsonMember, JsonOperationProfile, NewsTableProfile, TokenForm } from '../contract/compat-profile.js';
import { OPERATIONS } from '../contract/operations.js';
import { cryptoRandomSource } from '../domain/random-source.js';
import { newTokenString } from '../domain/tokens.js';
import { compileWsdl } from '../wire/wsdl.js';
import { operationRequest, readCallResult, type Binding, type CallArgs, type CallExtras, type CallResult } from './asmx-calls.js';
import { DEFAULT_PROBE_LIMITS, probe, ProbeError, type ProbeLimits, type ProbeResponse } from './http-probe.js';
import { recogniseJson, recogniseLoginUrl, recogniseNewsTable, recogniseTokenForm, type RecognisedJson } from './recognise.js';
import { CanonicalXmlError, compareWsdl, type WsdlComparison } from './wsdl-compare.js';

export interface LearnOptions {
  /** The legacy service's URL, e.g. https://old.example/Authentication.asmx */
  readonly legacyUrl: string;
  readonly login: string;
  readonly password: string;
  readonly appId: number;
  /** IPAddress sent with the logins ('' by default; applications other than GPS may need one). */
  readonly ipAddress?: string;
  readonly limits?: ProbeLimits;
}

export interface LearnResult {
  /** The profile as written to the file (only what was learned; the rest keeps svcapi-auth's default). */
  readonly profile: Record<string, unknown>;
  /** One line per thing learned. */
  readonly learned: readonly string[];
  /** One line per thing that could not be decided (the default is kept for it). */
  readonly undecided: readonly string[];
  readonly wsdl: WsdlComparison | null;
}

/** Learning stopped: 'connection' (the service cannot be talked to) or 'refused' (it will not log this user in). */
export class LearnError extends Error {
  constructor(message: string, readonly kind: 'connection' | 'refused' | 'usage') {
    super(message);
    this.name = 'LearnError';
  }
}

/** Parses the --legacy URL: an absolute http(s) URL of the .asmx (its path is the service path). */
export function serviceUrl(text: string, flag = '--legacy'): URL {
  if (!URL.canParse(text)) throw new LearnError(`${flag}: not an absolute URL`, 'usage');
  const url = new URL(text);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new LearnError(`${flag}: must be an http or https URL`, 'usage');
  if (url.username !== '' || url.password !== '') throw new LearnError(`${flag}: must not carry a user name or password`, 'usage');
  if (url.pathname === '/' || url.pathname === '') throw new LearnError(`${flag}: give the service's own URL, e.g. ${url.origin}/Authentication.asmx`, 'usage');
  return url;
}

function randomPassword(not: string): string {
  let candidate: string;
  do candidate = `x-${randomBytes(18).toString('base64url')}`;
  while (candidate === not);
  return candidate;
}

/** Header values node can send as they are (printable Latin-1, no line breaks). */
function sendableInHeader(value: string): boolean {
  return /^[\x20-\x7e\xa0-\xff]*$/.test(value);
}

const SOURCES_TRIED: readonly JsonInputSource[] = ['query', 'form', 'header'];

export async function learnProfile(options: LearnOptions): Promise<LearnResult> {
  const url = serviceUrl(options.legacyUrl);
  const origin = new URL(url.origin);
  const path = url.pathname;
  const limits = options.limits ?? DEFAULT_PROBE_LIMITS;
  const { login, password, appId } = options;
  const ip = options.ipAddress ?? '';
  const learned: string[] = [];
  const undecided: string[] = [];
  const profile: Record<string, unknown> = {};

  async function send(req: Parameters<typeof probe>[1]): Promise<ProbeResponse> {
    try {
      return await probe(origin, req, limits);
    } catch (error) {
      if (error instanceof ProbeError) throw new LearnError(`cannot talk to the legacy service: ${error.message}`, 'connection');
      throw error;
    }
  }
  async function call(binding: Binding, operation: string, args: CallArgs, extras?: CallExtras): Promise<CallResult> {
    return readCallResult(binding, operation, await send(operationRequest(path, binding, operation, args, extras)));
  }
  const describe = (r: CallResult): string =>
    r.kind === 'fault' ? `a fault (HTTP ${r.status}: ${r.message})` : r.kind === 'unreadable' ? `an unreadable answer (${r.why})` : `a ${r.kind} result`;
  const loginArgs = (pw: string): CallArgs => [['login', login], ['password', pw], ['AppId', String(appId)], ['IPAddress', ip]];

  // 1. The service description.
  let wsdl: WsdlComparison | null = null;
  const wsdlAnswer = await send({ method: 'GET', target: `${path}?WSDL` });
  if (wsdlAnswer.status !== 200) {
    undecided.push(`WSDL: ?WSDL answered HTTP ${wsdlAnswer.status}; not compared`);
  } else {
    try {
      wsdl = compareWsdl(wsdlAnswer.body.toString('utf8'), compileWsdl(OPERATIONS)(url.href));
      learned.push(wsdl.patch === '' ? 'WSDL: the same as svcapi-auth\'s (compared canonically)' : `WSDL: differs from svcapi-auth's (${wsdl.removed} line(s) only in the legacy's, ${wsdl.added} only in ours; diff below)`);
    } catch (error) {
      if (!(error instanceof CanonicalXmlError)) throw error;
      undecided.push(`WSDL: cannot be read (${error.message}); not compared`);
    }
  }

  // 2. The failure value: a login with a random wrong password.
  const failed = await call('soap11', 'ValidateUser', loginArgs(randomPassword(password)));
  let failureValue: string | null = null;
  if (failed.kind !== 'string') {
    undecided.push(`ValidateUser failure value: a wrong password got ${describe(failed)}`);
  } else if (recogniseTokenForm(failed.text) !== null) {
    undecided.push('ValidateUser failure value: a wrong password got a token-like answer (does the legacy accept any password?); not written');
  } else {
    failureValue = failed.text;
    profile.validateUser = { failureValue };
    learned.push(`ValidateUser failure value: ${JSON.stringify(failureValue)}`);
  }

  // 3. A real login: the token form.
  const ok = await call('soap11', 'ValidateUser', loginArgs(password));
  if (ok.kind !== 'string') throw new LearnError(`ValidateUser with the given credentials got ${describe(ok)}`, 'connection');
  const recognised = ok.text === failureValue ? null : recogniseTokenForm(ok.text);
  if (recognised === null) {
    throw new LearnError(
      ok.text === failureValue || ok.text === ''
        ? `the legacy service did not log ${JSON.stringify(login)} in to AppID ${appId} (check the login, the password${ip === '' ? ', and whether the application needs --ip' : ''})`
        : 'ValidateUser with the given credentials answered something that is not a token in a known form (a GUID or 32 to 128 hex digits)',
      'refused',
    );
  }
  const token = ok.text;
  const form: TokenForm = recognised.form;
  profile.tokens = { form: tokenFormName(form) };
  learned.push(`token form: ${tokenFormName(form)}`);
  for (const note of recognised.notes) undecided.push(`token form: ${note}`);
  const tokenCheck = await call('soap11', 'ValidateUserToken', [['token', token]]);
  if (tokenCheck.kind !== 'boolean' || !tokenCheck.value) undecided.push(`ValidateUserToken: the new token got ${tokenCheck.kind === 'boolean' ? 'false' : describe(tokenCheck)} (expected true)`);
  const unknownToken = (): string => newTokenString(cryptoRandomSource, form);

  // 4 and 5. The JSON operations.
  async function learnJson(
    operation: 'ValidateUserJSON' | 'ValidateUserTokenJSON',
    inputs: Readonly<Record<string, string>>,
    conflicting: Readonly<Record<string, string>>,
    failing: Readonly<Record<string, string>>,
  ): Promise<Record<string, unknown> | null> {
    const which = operation === 'ValidateUserJSON' ? 'validateUser' : 'validateUserToken';
    const facts = { operation: which, login, appId, token: which === 'validateUserToken' ? token : null } as const;
    const asArgs = (values: Readonly<Record<string, string>>): CallArgs => Object.entries(values);
    const via = (source: JsonInputSource, values: Readonly<Record<string, string>>): CallExtras & { args: CallArgs } => {
      if (source === 'query') return { args: [], query: asArgs(values).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v ?? '')}`).join('&') };
      if (source === 'form') return { args: asArgs(values) };
      return { args: [], headers: { ...values } };
    };
    const ask = async (parts: ReadonlyArray<readonly [JsonInputSource, Readonly<Record<string, string>>]>): Promise<CallResult> => {
      let args: CallArgs = [];
      let query: string | undefined;
      let headers: Record<string, string> = {};
      for (const [source, values] of parts) {
        const p = via(source, values);
        args = [...args, ...p.args];
        if (p.query !== undefined) query = p.query;
        headers = { ...headers, ...p.headers };
      }
      return call('post', operation, args, { query, headers });
    };
    const succeeded = (r: RecognisedJson): boolean => r.members.some((m) => 'field' in m.value && (m.value.field === 'success' || m.value.field === 'valid' || (which === 'validateUser' && m.value.field === 'token')));
    const working: JsonInputSource[] = [];
    let success: RecognisedJson | null = null;
    let failure: RecognisedJson | null = null;
    for (const source of SOURCES_TRIED) {
      if (source === 'header' && !Object.values(inputs).every(sendableInHeader)) {
        undecided.push(`${operation}: headers not tried (the credentials cannot be sent as header values)`);
        continue;
      }
      const answer = await ask([[source, inputs]]);
      if (answer.kind !== 'string') {
        undecided.push(`${operation}: inputs in the ${source} got ${describe(answer)}`);
        continue;
      }
      const read = recogniseJson(answer.text, { ...facts, success: true });
      if (typeof read === 'string') {
        undecided.push(`${operation}: the answer with inputs in the ${source} is ${read}`);
        continue;
      }
      if (succeeded(read)) {
        working.push(source);
        success ??= read;
      }
    }
    if (working.length === 0) {
      undecided.push(`${operation}: none of query, form and headers was read (no success with the real ${which === 'validateUser' ? 'credentials' : 'token'}); its layout and inputs keep svcapi-auth's default`);
      return null;
    }
    // Which source wins when two carry a value: the real one in A, an empty one in B.
    const wins = new Map<JsonInputSource, number>(working.map((s) => [s, 0]));
    for (let i = 0; i < working.length; i++) {
      for (let j = i + 1; j < working.length; j++) {
        const a = working[i] as JsonInputSource;
        const b = working[j] as JsonInputSource;
        const answer = await ask([[a, inputs], [b, conflicting]]);
        const read = answer.kind === 'string' ? recogniseJson(answer.text, { ...facts, success: true }) : null;
        const winner = read !== null && typeof read !== 'string' && succeeded(read) ? a : b;
        wins.set(winner, (wins.get(winner) ?? 0) + 1);
      }
    }
    const sources = [...working].sort((x, y) => (wins.get(y) ?? 0) - (wins.get(x) ?? 0));
    const failedAnswer = await ask([[sources[0] as JsonInputSource, failing]]);
    if (failedAnswer.kind === 'string') {
      const read = recogniseJson(failedAnswer.text, { ...facts, success: false });
      if (typeof read === 'string') undecided.push(`${operation}: the failure answer is ${read}`);
      else failure = read;
    } else {
      undecided.push(`${operation}: the failure got ${describe(failedAnswer)}`);
    }
    const out: Record<string, unknown> = { inputs: { sources } };
    const shown = (members: readonly JsonMember[]): string => members.map((m) => `${m.key}=${'field' in m.value ? `<${m.value.field}>` : JSON.stringify(m.value.const)}`).join(', ');
    out.success = success?.members ?? [];
    learned.push(`${operation}: reads its inputs from ${sources.join(', ')} (in that order); success {${shown(success?.members ?? [])}}`);
    if (failure !== null) {
      out.failure = failure.members;
      learned.push(`${operation}: failure {${shown(failure.members)}}`);
    }
    const dates = success?.dates ?? null;
    if (dates !== null) {
      out.dates = dates;
      learned.push(`${operation}: dates as ${dates}`);
    } else if (which === 'validateUser' || success?.members.some((m) => 'field' in m.value && m.value.field === 'expiresAt') === true) {
      undecided.push(`${operation}: the date form (no date in the answer)`);
    }
    const escaping = success?.escaping ?? failure?.escaping ?? null;
    if (escaping !== null) {
      out.escaping = escaping;
      learned.push(`${operation}: strings escaped as ${escaping}`);
    } else {
      const guess: JsonOperationProfile['escaping'] = dates === 'ms-ajax' ? 'javascript-serializer' : dates === 'wcf' ? 'data-contract' : 'standard';
      out.escaping = guess;
      undecided.push(`${operation}: string escaping (no answer held a character it shows on); written as ${guess}, the usual one with ${dates ?? 'these'} dates`);
    }
    return out;
  }

  const json: Record<string, unknown> = {};
  const vuj = await learnJson(
    'ValidateUserJSON',
    { login, password, AppId: String(appId), IPAddress: ip },
    { login: '', password: '', AppId: String(appId), IPAddress: ip },
    { login, password: randomPassword(password), AppId: String(appId), IPAddress: ip },
  );
  if (vuj !== null) json.validateUser = vuj;
  const vutj = await learnJson('ValidateUserTokenJSON', { token }, { token: '' }, { token: unknownToken() });
  if (vutj !== null) json.validateUserToken = vutj;
  if (Object.keys(json).length > 0) profile.json = json;

  // 6. The login URL.
  const loginUrl: Record<string, unknown> = {};
  const first = await call('soap11', 'GetUserLoginURL', [['token', token], ['AppID', String(appId)]]);
  const none = await call('soap11', 'GetUserLoginURL', [['token', unknownToken()], ['AppID', String(appId)]]);
  if (none.kind === 'string') {
    loginUrl.none = none.text;
    learned.push(`GetUserLoginURL without a URL (unknown token): ${JSON.stringify(none.text)}`);
  } else {
    undecided.push(`GetUserLoginURL with an unknown token got ${describe(none)}`);
  }
  if (first.kind !== 'string') {
    undecided.push(`GetUserLoginURL: the real token got ${describe(first)}`);
  } else if (first.text === '' || (none.kind === 'string' && first.text === none.text)) {
    undecided.push(`GetUserLoginURL: no URL for AppID ${appId} with the real token (${JSON.stringify(first.text)}); the form is unknown`);
  } else {
    const again = await call('soap11', 'GetUserLoginURL', [['token', token], ['AppID', String(appId)]]);
    const template = recogniseLoginUrl(first.text, { token, appId, login, again: again.kind === 'string' ? again.text : null });
    if (typeof template === 'string') {
      undecided.push(`GetUserLoginURL: the URL ${template}`);
    } else {
      loginUrl.apps = { [String(appId)]: template.template };
      learned.push(`GetUserLoginURL for AppID ${appId}: ${template.template}`);
      for (const note of template.notes) undecided.push(`GetUserLoginURL: ${note}`);
    }
  }
  if (Object.keys(loginUrl).length > 0) profile.loginUrl = loginUrl;

  // 7. The WhatsNew table.
  const news = await call('soap11', 'WhatsNew', [['AppToken', token], ['AppID', String(appId)], ['AppVersion', ''], ['Language', ''], ['qtyNews', '100']]);
  if (news.kind !== 'table') {
    undecided.push(`WhatsNew: ${describe(news)}; the table keeps svcapi-auth's default`);
  } else {
    const table = recogniseNewsTable(news.table);
    if (typeof table === 'string') {
      undecided.push(`WhatsNew: ${table}; the table keeps svcapi-auth's default`);
    } else {
      const t: NewsTableProfile = table.table;
      const { maxRows: _maxRows, ...written } = t;
      profile.whatsNew = written;
      const cols = t.columns.map((c) => `${c.name} ${c.type} <- ${'field' in c.from ? c.from.field : 'attribute' in c.from ? `attribute ${c.from.attribute}` : 'constant'}`).join(', ');
      learned.push(`WhatsNew: data set ${t.dataSetName}, table ${t.tableName}, ${table.rows} row(s) for qtyNews=100; columns ${cols}`);
      learned.push(`WhatsNew: DateTimes ${t.dateTimes}${table.offset === null ? '' : ` (offset ${table.offset} seen: set timeZone to the legacy server's zone)`}`);
      for (const note of table.notes) undecided.push(`WhatsNew: ${note}`);
      undecided.push('WhatsNew: the most rows an answer carries (maxRows) is not learned; svcapi-auth\'s own limit applies');
    }
  }

  return { profile: finish(profile, password, undecided, url), learned, undecided, wsdl };
}

/**
 * The profile as it will be written: nothing that carries the password, and only what
 * compatProfileFromJson accepts (a section it refuses is left out, with the reason).
 */
function finish(profile: Record<string, unknown>, password: string, undecided: string[], url: URL): Record<string, unknown> {
  const secretForms = password === '' ? [] : [password, encodeURIComponent(password)];
  for (const key of Object.keys(profile)) {
    const text = JSON.stringify(profile[key]);
    if (secretForms.some((s) => text.includes(s) || text.includes(JSON.stringify(s).slice(1, -1)))) {
      delete profile[key];
      undecided.push(`${key}: not written (what the legacy answered would carry the password)`);
    }
  }
  for (let attempt = 0; attempt < 8; attempt++) {
    try {
      compatProfileFromJson(profile);
      break;
    } catch (error) {
      if (!(error instanceof CompatProfileError)) throw error;
      const section = error.key.split(/[.[]/, 1)[0] ?? '';
      if (section === '' || !(section in profile)) throw error;
      delete profile[section];
      undecided.push(`${section}: not written (${error.reason})`);
    }
  }
  return { description: `Learned by svcapi-auth compat learn from ${url.origin}${url.pathname} on ${new Date().toISOString().slice(0, 10)}`, ...profile };
}
