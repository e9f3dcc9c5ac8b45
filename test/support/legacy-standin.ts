/**
 * A stand-in for *another* legacy Authentication.asmx, for the compat tools' tests: a small
 * node:http server (not our app) that answers the six operations on the four bindings the way a
 * different deployment would. Its choices are a CompatProfile (failure value, token form, the two
 * JSON layouts and where they read their inputs, login URL templates, the WhatsNew table), its
 * users, applications and news are data, and it can be made hostile (slow, huge answers, wrong
 * values, not HTTP, down).
 *
 * Everything that is not one of those choices is ASMX's and comes from our own wire layer
 * (src/wire): request decoding and routing, envelopes, faults, the text/plain 500s, the WSDL,
 * disco and help page, the DataTable layout. It adds what an IIS server sends and svcapi-auth
 * does not (Server, X-Powered-By, X-AspNet-Version), and none of svcapi-auth's deliberate
 * header deviations (no-store, nosniff, CSP): `compat check` must cope with both.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { CompatProfile, JsonMember, JsonOperationProfile, NewsColumn } from '../../src/contract/compat-profile.js';
import { deepFreeze } from '../../src/contract/compat-profile.js';
import { OPERATIONS, SERVICE_PATH, type ParamValue } from '../../src/contract/operations.js';
import { cryptoRandomSource } from '../../src/domain/random-source.js';
import { newTokenString } from '../../src/domain/tokens.js';
import { compileContract, type CompiledContract, type CompiledOperation, type ResultValue } from '../../src/wire/compiled-contract.js';
import { compileDataTableWriter, compileDateTimeFormatter, type Cell, type DataTableWriter, type Row } from '../../src/wire/datatable.js';
import { compileDisco } from '../../src/wire/disco.js';
import { parseClrInt32 } from '../../src/wire/dotnet-int.js';
import { compileHelpPage } from '../../src/wire/help-page.js';
import { bindHttpArgs, FormCollection, lookupHttpMethod, parseUrlEncoded, readFormBody } from '../../src/wire/http-form.js';
import { writeHttpResult } from '../../src/wire/http-result.js';
import { parseMediaType } from '../../src/wire/media-type.js';
import { SOAP_CONTENT_TYPE } from '../../src/wire/soap-envelope.js';
import { decodeSoapRequest } from '../../src/wire/soap-request.js';
import { writeSoapResult } from '../../src/wire/soap-result.js';
import { httpErrorResponse, pageResponse, soapErrorResponse, success, XML_CONTENT_TYPE, type WireResponse } from '../../src/wire/wire-response.js';
import { compileWsdl } from '../../src/wire/wsdl.js';

/** The other legacy's choices (what the brief of the compat tools describes). */
export const STANDIN_PROFILE: CompatProfile = deepFreeze<CompatProfile>({
  validateUser: { failureValue: '00000000-0000-0000-0000-000000000000' },
  tokens: { form: { kind: 'guid', case: 'upper', dashes: true, braces: false } },
  json: {
    validateUser: {
      inputs: { sources: ['query', 'form', 'header'], names: { login: 'login', password: 'password', appId: 'AppId', ipAddress: 'IPAddress' } },
      success: [
        { key: 'Success', value: { field: 'success' } },
        { key: 'Token', value: { field: 'token' } },
        { key: 'Message', value: { const: 'OK' } },
        { key: 'ExpiresAt', value: { field: 'expiresAt' } },
      ],
      failure: [
        { key: 'Success', value: { const: false } },
        { key: 'Token', value: { const: null } },
        { key: 'Message', value: { const: 'Invalid credentials' } },
        { key: 'ExpiresAt', value: { const: null } },
      ],
      dates: 'ms-ajax',
      escaping: 'javascript-serializer',
    },
    validateUserToken: {
      inputs: { sources: ['query', 'form', 'header'], names: { token: 'token' } },
      success: [
        { key: 'Valid', value: { field: 'valid' } },
        { key: 'ExpiresAt', value: { field: 'expiresAt' } },
      ],
      failure: [
        { key: 'Valid', value: { const: false } },
        { key: 'ExpiresAt', value: { const: null } },
      ],
      dates: 'ms-ajax',
      escaping: 'javascript-serializer',
    },
  },
  loginUrl: { default: null, apps: { 2: 'https://gps.example/AutoLogin.aspx?app={appId}&token={token}' }, none: '' },
  whatsNew: {
    dataSetName: 'NewDataSet',
    tableName: 'Noticias',
    columns: [
      { name: 'IdNoticia', type: 'int', from: { field: 'newsId' } },
      { name: 'Titulo', type: 'string', from: { field: 'title' } },
      { name: 'Texto', type: 'string', from: { field: 'body' } },
      { name: 'Idioma', type: 'string', from: { field: 'language' } },
      { name: 'Link', type: 'string', from: { field: 'url' } },
      { name: 'DataPublicacao', type: 'dateTime', from: { field: 'publishedAt' } },
      { name: 'Destaque', type: 'boolean', from: { attribute: 'Destaque' } },
    ],
    dateTimes: 'zone',
    maxRows: null,
  },
});

export interface StandinUser {
  readonly login: string;
  readonly password: string;
  readonly appIds: readonly number[];
}

export interface StandinApp {
  readonly appId: number;
  /** For a `null` template ({loginUrl} or svcapi-auth's own `?ticket=` form). */
  readonly loginUrl?: string | null;
}

export interface StandinNews {
  readonly newsId: number;
  readonly appId: number;
  readonly title: string;
  readonly body: string;
  readonly language: string;
  readonly url: string;
  readonly publishedAt: Date;
  readonly expiresAt?: Date | null;
  readonly attributes?: Readonly<Record<string, string | number | boolean>>;
}

/** Ways to make it a bad neighbour; changeable while it runs. */
export interface Hostility {
  /** Wait this long before answering anything. */
  delayMs?: number;
  /** Append this many bytes of padding to every answer (sent chunked, no Content-Length). */
  hugeBytes?: number;
  /** Answer every connection with bytes that are not HTTP, then close it. */
  garbage?: boolean;
  /** ValidateUser says a token for any password; the JSON operations answer non-JSON; WhatsNew a table without a schema. */
  wrongValues?: boolean;
  /** Reset every connection at once. */
  down?: boolean;
}

export interface StandinOptions {
  readonly profile?: CompatProfile;
  /** The legacy server's zone (its DateTimes carry this zone's offset); default America/Sao_Paulo (-03:00). */
  readonly timeZone?: string;
  readonly users?: readonly StandinUser[];
  readonly apps?: readonly StandinApp[];
  readonly news?: readonly StandinNews[];
  readonly tokenLifetimeMs?: number;
  readonly hostility?: Hostility;
}

export interface LegacyStandin {
  /** e.g. http://127.0.0.1:40123/Authentication.asmx */
  readonly url: string;
  readonly hostility: Hostility;
  /** Requests seen (method and target), for tests that look at what a tool sent. */
  readonly requests: Array<{ readonly method: string; readonly target: string; readonly headers: IncomingMessage['headers']; readonly body: string }>;
  close(): Promise<void>;
}

export const STANDIN_USER: StandinUser = Object.freeze({ login: 'maria', password: 'S3nha-Forte!', appIds: Object.freeze([2]) });

/** Sample news of AppID 2, in Portuguese, published at 10:30 UTC (07:30 in São Paulo). */
export const STANDIN_NEWS: readonly StandinNews[] = Object.freeze([1, 2, 3].map((n): StandinNews => ({
  newsId: 40 + n,
  appId: 2,
  title: `Novidade ${n}`,
  body: `Texto da novidade ${n} & <mais>`,
  language: 'pt-BR',
  url: `https://gps.example/novidades/${n}`,
  publishedAt: new Date(Date.UTC(2024, 10, n, 10, 30, 0)),
  attributes: { Destaque: n === 3 },
})));

const IIS_HEADERS: Readonly<Record<string, string>> = { server: 'Microsoft-IIS/10.0', 'x-aspnet-version': '4.0.30319', 'x-powered-by': 'ASP.NET' };
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;
const SERVICE_PATH_LOWER = SERVICE_PATH.toLowerCase();

// --- JSON as the profile says ----------------------------------------------------------------

function jsonString(value: string, escaping: JsonOperationProfile['escaping']): string {
  let text = JSON.stringify(value);
  if (escaping === 'javascript-serializer') text = text.replace(/[<>&']/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (escaping === 'data-contract') text = text.replace(/\//g, '\\/');
  return text;
}

function jsonDate(date: Date, dates: JsonOperationProfile['dates']): string {
  if (dates === 'ms-ajax') return `"\\/Date(${date.getTime()})\\/"`;
  if (dates === 'wcf') return `"\\/Date(${date.getTime()}+0000)\\/"`;
  return JSON.stringify(date.toISOString());
}

interface JsonFacts {
  readonly token?: string;
  readonly expiresAt?: Date;
  readonly login?: string;
  readonly appId?: number;
}

function writeJson(op: JsonOperationProfile, members: readonly JsonMember[], facts: JsonFacts): string {
  const parts = members.map((m) => {
    let value: string;
    if ('const' in m.value) {
      const c = m.value.const;
      value = typeof c === 'string' ? jsonString(c, op.escaping) : JSON.stringify(c);
    } else {
      switch (m.value.field) {
        case 'success':
        case 'valid':
          value = 'true';
          break;
        case 'token':
          value = facts.token === undefined ? 'null' : jsonString(facts.token, op.escaping);
          break;
        case 'expiresAt':
          value = facts.expiresAt === undefined ? 'null' : jsonDate(facts.expiresAt, op.dates);
          break;
        case 'login':
          value = facts.login === undefined ? 'null' : jsonString(facts.login, op.escaping);
          break;
        case 'appId':
          value = facts.appId === undefined ? 'null' : String(facts.appId);
          break;
      }
    }
    return `${jsonString(m.key, op.escaping)}:${value}`;
  });
  return `{${parts.join(',')}}`;
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim().toLowerCase() === name.toLowerCase()) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}

// --- the WhatsNew table as the profile says --------------------------------------------------

const WRITER_TYPE = { int: 'int', long: 'string', string: 'string', dateTime: 'string', boolean: 'string', decimal: 'string', double: 'string' } as const;

/**
 * Our DataTable writer knows int, string and dateTime columns with the zone's offset; the other
 * legacy has more types and DateTime forms. Its cells are written as text by the writer and the
 * schema's declared types put right afterwards (the layout around them is the writer's).
 */
function standinTableWriter(columns: readonly NewsColumn[], dataSetName: string, tableName: string, timeZone: string): DataTableWriter {
  const writer = compileDataTableWriter({ dataSetName, tableName, columns: columns.map((c) => ({ name: c.name, type: WRITER_TYPE[c.type] })) }, timeZone);
  const fixes = columns.filter((c) => WRITER_TYPE[c.type] !== c.type).map((c) => [
    `<xs:element name="${c.name}" type="xs:string" minOccurs="0" />`,
    `<xs:element name="${c.name}" type="xs:${c.type}" minOccurs="0" />`,
  ] as const);
  const fix = (text: string): string => fixes.reduce((t, [from, to]) => t.replace(from, to), text);
  return { compact: (rows) => fix(writer.compact(rows)), indented: (rows, indent) => fix(writer.indented(rows, indent)) };
}

// --- the server ------------------------------------------------------------------------------

interface Session {
  readonly login: string;
  readonly appId: number;
  readonly expiresAt: Date;
}

export async function startLegacyStandin(options: StandinOptions = {}): Promise<LegacyStandin> {
  const profile = options.profile ?? STANDIN_PROFILE;
  const timeZone = options.timeZone ?? 'America/Sao_Paulo';
  const users = options.users ?? [STANDIN_USER];
  const apps = new Map((options.apps ?? [{ appId: 2, loginUrl: 'https://gps.example/login' }]).map((a) => [a.appId, a]));
  const news = options.news ?? STANDIN_NEWS;
  const lifetime = options.tokenLifetimeMs ?? 24 * 3_600_000;
  const hostility: Hostility = { ...options.hostility };
  const sessions = new Map<string, Session>();
  const requests: LegacyStandin['requests'] = [];

  const wt = profile.whatsNew;
  const base = compileContract({ timeZone });
  const contract: CompiledContract = { ...base, table: standinTableWriter(wt.columns, wt.dataSetName, wt.tableName, timeZone) };
  const wsdl = compileWsdl(OPERATIONS);
  const disco = compileDisco();
  const help = compileHelpPage(OPERATIONS);
  const zoneDate = compileDateTimeFormatter(timeZone);
  const utcDate = compileDateTimeFormatter('UTC');
  const formatDate = (d: Date): string => (wt.dateTimes === 'zone' ? zoneDate(d) : wt.dateTimes === 'utc' ? utcDate(d).replace(/\+00:00$/, 'Z') : zoneDate(d).slice(0, -6));
  const newToken = (): string => newTokenString(cryptoRandomSource, profile.tokens.form);

  function validSession(token: string | null): Session | null {
    if (token === null) return null;
    const s = sessions.get(token);
    return s !== undefined && s.expiresAt.getTime() > Date.now() ? s : null;
  }

  function login(loginName: string | null, password: string | null, appId: number): { token: string; session: Session } | null {
    const user = users.find((u) => u.login.toLowerCase() === (loginName ?? '').toLowerCase());
    const good = user !== undefined && user.password === password && user.appIds.includes(appId);
    if (!good && hostility.wrongValues !== true) return null;
    const token = newToken();
    const session = { login: user?.login ?? loginName ?? '', appId, expiresAt: new Date(Date.now() + lifetime) };
    sessions.set(token, session);
    return { token, session };
  }

  function cell(item: StandinNews, column: NewsColumn): Cell {
    const from = column.from;
    let value: string | number | boolean | Date | null | undefined;
    if ('const' in from) value = from.const;
    else if ('attribute' in from) value = item.attributes?.[from.attribute];
    else {
      switch (from.field) {
        case 'membersOnly':
        case 'minVersion':
        case 'maxVersion':
          value = null;
          break;
        default:
          value = item[from.field];
      }
    }
    if (value === undefined || value === null) return null;
    if (value instanceof Date) return formatDate(value);
    if (column.type === 'int') return Number(value);
    return String(value);
  }

  function whatsNew(appId: number, language: string | null, qtyNews: number): Row[] {
    const wanted = (language ?? '').toLowerCase();
    const limit = Math.max(0, Math.min(qtyNews, wt.maxRows ?? 100));
    return news
      .filter((n) => n.appId === appId && (wanted === '' || n.language.toLowerCase() === wanted || n.language.toLowerCase().split('-')[0] === wanted))
      .sort((a, b) => b.publishedAt.getTime() - a.publishedAt.getTime() || b.newsId - a.newsId)
      .slice(0, limit)
      .map((item) => wt.columns.map((c) => cell(item, c)));
  }

  function loginUrl(token: string | null, appId: number): string {
    const session = validSession(token);
    const user = session === null ? undefined : users.find((u) => u.login === session.login);
    if (session === null || token === null || (user !== undefined && !user.appIds.includes(appId))) return profile.loginUrl.none;
    const app = apps.get(appId);
    const template = profile.loginUrl.apps[String(appId)] ?? profile.loginUrl.default;
    const configured = app?.loginUrl ?? null;
    if (template === null) return configured === null ? profile.loginUrl.none : `${configured}${configured.includes('?') ? '&' : '?'}ticket=${newToken()}`;
    return template.replace(/\{(ticket|token|appId|login|loginUrl)\}/g, (_m, name: string) =>
      name === 'loginUrl' ? (configured ?? '') : encodeURIComponent(name === 'ticket' ? newToken() : name === 'token' ? token : name === 'appId' ? String(appId) : session.login));
  }

  /** Request[name] for the JSON operations, from the sources the profile lists, in order. */
  function inputOf(op: JsonOperationProfile, name: string, req: IncomingMessage, query: FormCollection, form: FormCollection): string | null {
    const wireName = op.inputs.names[name] ?? name;
    for (const source of op.inputs.sources) {
      let value: string | undefined;
      if (source === 'query') value = query.get(wireName);
      else if (source === 'form') value = form.get(wireName);
      else if (source === 'header') {
        const h = req.headers[wireName.toLowerCase()];
        value = Array.isArray(h) ? h.join(',') : h;
      } else if (source === 'cookie') value = cookieValue(req.headers.cookie, wireName);
      else if (source === 'basic' && (name === 'login' || name === 'password')) {
        const m = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '');
        const decoded = m?.[1] === undefined ? null : Buffer.from(m[1], 'base64').toString('utf8');
        const colon = decoded?.indexOf(':') ?? -1;
        if (decoded !== null && colon >= 0) value = name === 'login' ? decoded.slice(0, colon) : decoded.slice(colon + 1);
      } else if (source === 'bearer' && name === 'token') value = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
      if (value !== undefined) return value;
    }
    return null;
  }

  function run(op: CompiledOperation, args: readonly ParamValue[], req: IncomingMessage, query: FormCollection, form: FormCollection): ResultValue | 'broken-table' {
    const str = (i: number): string | null => (typeof args[i] === 'string' ? (args[i] as string) : null);
    const int = (i: number): number => (typeof args[i] === 'number' ? (args[i] as number) : 0);
    switch (op.name) {
      case 'ValidateUser':
        return login(str(0), str(1), int(2))?.token ?? profile.validateUser.failureValue;
      case 'ValidateUserToken':
        return validSession(str(0)) !== null;
      case 'WhatsNew':
        if (hostility.wrongValues === true) return 'broken-table';
        return whatsNew(int(1), str(3), int(4));
      case 'GetUserLoginURL':
        return loginUrl(str(0), int(1));
      case 'ValidateUserJSON': {
        if (hostility.wrongValues === true) return 'Success=yes; Token=?';
        const j = profile.json.validateUser;
        const appId = parseClrInt32(inputOf(j, 'appId', req, query, form) ?? '');
        const done = appId.ok ? login(inputOf(j, 'login', req, query, form), inputOf(j, 'password', req, query, form), appId.value) : null;
        return done === null ? writeJson(j, j.failure, {}) : writeJson(j, j.success, { token: done.token, expiresAt: done.session.expiresAt, login: done.session.login, appId: done.session.appId });
      }
      case 'ValidateUserTokenJSON': {
        if (hostility.wrongValues === true) return '<valid/>';
        const j = profile.json.validateUserToken;
        const token = inputOf(j, 'token', req, query, form);
        const session = validSession(token);
        return session === null || token === null ? writeJson(j, j.failure, {}) : writeJson(j, j.success, { token, expiresAt: session.expiresAt, login: session.login, appId: session.appId });
      }
    }
  }

  function answer(req: IncomingMessage, res: ServerResponse, response: WireResponse): void {
    // A client that hangs up half way (a tool over its size limit) is nobody's error here.
    res.on('error', () => undefined);
    const padding = hostility.hugeBytes ?? 0;
    const headers: Record<string, string | number> = { 'content-type': response.contentType, 'cache-control': response.cacheControl, ...IIS_HEADERS, ...response.headers };
    if (padding > 0) {
      res.writeHead(response.status, headers);
      res.write(response.body);
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      let left = padding;
      const pump = (): void => {
        while (left > 0) {
          const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
          left -= piece.length;
          if (!res.write(piece)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
      return;
    }
    headers['content-length'] = Buffer.byteLength(response.body);
    res.writeHead(response.status, headers);
    res.end(req.method === 'HEAD' ? undefined : response.body);
  }

  function soap(req: IncomingMessage, res: ServerResponse, body: Buffer, query: string): void {
    const soapAction = req.headers.soapaction;
    const decoded = decodeSoapRequest(contract, { body, contentType: req.headers['content-type'], soapAction: Array.isArray(soapAction) ? soapAction.join(',') : soapAction });
    if (!decoded.ok) return answer(req, res, soapErrorResponse(decoded.version, decoded.error));
    const q = decoded.operation.spec.requestReads ? parseUrlEncoded(query) : FormCollection.EMPTY;
    const value = run(decoded.operation, decoded.args, req, q, FormCollection.EMPTY);
    const frame = decoded.operation.soap[decoded.version];
    const text = value === 'broken-table' ? `${frame.open}<x>broken</x>${frame.close}` : writeSoapResult(contract, decoded.operation, decoded.version, value);
    answer(req, res, success(SOAP_CONTENT_TYPE[decoded.version], text));
  }

  function http(req: IncomingMessage, res: ServerResponse, methodName: string, body: Buffer, query: string): void {
    const lookup = lookupHttpMethod(contract, methodName);
    if (!lookup.ok) return answer(req, res, httpErrorResponse(lookup.error));
    const op = lookup.operation;
    let values: FormCollection;
    let q = FormCollection.EMPTY;
    let form = FormCollection.EMPTY;
    if (req.method === 'POST') {
      const read = readFormBody(body, req.headers['content-type']);
      if (!read.ok) return answer(req, res, httpErrorResponse(read.error));
      values = form = read.form;
      if (op.spec.requestReads) q = parseUrlEncoded(query);
    } else {
      values = q = parseUrlEncoded(query);
    }
    const bound = bindHttpArgs(op, values);
    if (!bound.ok) return answer(req, res, httpErrorResponse(bound.error));
    const value = run(op, bound.args, req, q, form);
    const text = value === 'broken-table' ? '<?xml version="1.0" encoding="utf-8"?>\r\n<DataTable xmlns="SVCAPI"><x /></DataTable>' : writeHttpResult(contract, op, value);
    answer(req, res, success(XML_CONTENT_TYPE, text));
  }

  function dispatch(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
    const target = req.url ?? '/';
    const q = target.indexOf('?');
    let path = q < 0 ? target : target.slice(0, q);
    const query = q < 0 ? '' : target.slice(q + 1);
    try {
      path = decodeURIComponent(path);
    } catch {
      return answer(req, res, pageResponse(400));
    }
    const lower = path.toLowerCase();
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    if (lower === SERVICE_PATH_LOWER) {
      if (method === 'POST') return soap(req, res, body, query);
      if (method !== 'GET') return answer(req, res, pageResponse(405));
      const url = `http://${req.headers.host ?? 'localhost'}${path}`;
      const flag = query.toLowerCase();
      if (flag === 'wsdl') return answer(req, res, success(XML_CONTENT_TYPE, wsdl(url)));
      if (flag === 'disco') return answer(req, res, success(XML_CONTENT_TYPE, disco(url)));
      const op = parseUrlEncoded(query).get('op');
      return answer(req, res, success('text/html; charset=utf-8', (op === undefined ? undefined : help.operation(url, op)) ?? help.index(url)));
    }
    if (lower.startsWith(`${SERVICE_PATH_LOWER}/`)) {
      if (method !== 'GET' && method !== 'POST') return answer(req, res, pageResponse(405));
      const name = path.slice(SERVICE_PATH.length + 1);
      if (name === '') return answer(req, res, pageResponse(500));
      return http(req, res, name, body, query);
    }
    return answer(req, res, pageResponse(404));
  }

  const timers = new Set<NodeJS.Timeout>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) over = true;
      else chunks.push(chunk);
    });
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      requests.push({ method: req.method ?? '', target: req.url ?? '', headers: req.headers, body: body.toString('utf8') });
      const go = (): void => {
        if (over) {
          const lower = (req.url ?? '').split('?')[0]?.toLowerCase() ?? '';
          const version = parseMediaType(req.headers['content-type']).type === 'application/soap+xml' ? '1.2' : '1.1';
          return answer(req, res, lower === SERVICE_PATH_LOWER ? soapErrorResponse(version, { code: 'REQUEST_TOO_LARGE' }) : httpErrorResponse({ code: 'REQUEST_TOO_LARGE' }));
        }
        try {
          dispatch(req, res, body);
        } catch {
          answer(req, res, pageResponse(500));
        }
      };
      const delay = hostility.delayMs ?? 0;
      if (delay <= 0) return go();
      const timer = setTimeout(() => {
        timers.delete(timer);
        go();
      }, delay);
      timers.add(timer);
    });
  });
  server.on('connection', (socket: Socket) => {
    if (hostility.down === true) socket.destroy();
    else if (hostility.garbage === true) socket.end(Buffer.concat([Buffer.from('\u0000\u0001\u0002 SSH-2.0-not-http\r\n'), randomBytes(64)]));
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${SERVICE_PATH}`,
    hostility,
    requests,
    close() {
      for (const t of timers) clearTimeout(t);
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
