/**
 * The HTTP application: the only place that joins the wire layer and the domain.
 *
 * It sits directly on `node:http`. ASMX's rules do not fit a router: the service path is matched
 * case-insensitively (IIS) while the operation name after it is case-sensitive (ASMX), the same
 * URL serves SOAP 1.1, SOAP 1.2 and the documentation, and every failure must come back in the
 * failing binding's own shape. So there is one dispatch function, and nothing a framework would
 * add per request (routing tables, hooks, a reply object, a child logger) sits in front of it:
 * ValidateUserToken is on the path of every request a client application serves, and on this
 * machine a framework's request pipeline cost more CPU than the whole operation (bench/README.md,
 * "What limits token validation": fastify 84–86 + 29–32 µs a request, this dispatch 17 + 7–8).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse, Server as HttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { performance } from 'node:perf_hooks';
import type { TLSSocket } from 'node:tls';
import proxyAddr from '@fastify/proxy-addr';
import { pino, type Logger } from 'pino';
import { DEFAULT_COMPAT_PROFILE, type CompatProfile } from '../contract/compat-profile.js';
import { OPERATIONS, SERVICE_PATH } from '../contract/operations.js';
import type { AuthService, CallerContext } from '../domain/auth-service.js';
import { ServerBusyError } from '../domain/server-busy-error.js';
import type { RawAnswer } from '../compat/answer-compare.js';
import type { LegacyMirror } from '../compat/shadow.js';
import { relayedHeaders } from '../compat/relayed-headers.js';
import { compileContract, type CompiledContract, type CompiledOperation } from '../wire/compiled-contract.js';
import { compileDisco } from '../wire/disco.js';
import { compileHelpPage } from '../wire/help-page.js';
import { bindHttpArgs, FormCollection, lookupHttpMethod, parseUrlEncoded, readFormBody } from '../wire/http-form.js';
import { offersHttpGet, type HttpGetOption } from '../wire/http-get-option.js';
import { writeHttpResultBody } from '../wire/http-result.js';
import { parseMediaType } from '../wire/media-type.js';
import { SOAP_CONTENT_TYPE, type SoapVersion } from '../wire/soap-envelope.js';
import { soapTransport } from '../wire/soap-request.js';
import { writeSoapResultBody } from '../wire/soap-result.js';
import { createSoapRequestDecoder } from '../wire/soap-shape-memo.js';
import type { WireError } from '../wire/wire-errors.js';
import { createAccessLog } from '../ops/access-log.js';
import { httpErrorResponse, pageResponse, soapErrorResponse, success, XML_CONTENT_TYPE, type WireResponse } from '../wire/wire-response.js';
import { compileWsdl } from '../wire/wsdl.js';
import { createAsmxServer } from './asmx-server.js';
import { createOperationHandlers, type OperationHandler, type RequestFacts } from './operation-handlers.js';

/** The part of the configuration the HTTP layer reads (src/config/config.ts `Config` satisfies it). */
export interface HttpAppConfig {
  readonly http: {
    readonly maxRequestBytes: number;
    readonly bodyTimeoutMs: number;
    /** Operations offered over HTTP GET: all (default), none, or a list (GET puts passwords in URLs). */
    readonly httpGet?: HttpGetOption;
  };
  readonly timeZone: string;
  /** Speed-ups with an off switch (docs/architecture.md); all on when absent. */
  readonly performance?: { readonly shapeMemo: boolean; readonly tableMemo?: boolean };
  /** Reverse proxies whose X-Forwarded-For / -Proto are believed (proxy-addr names); none when empty. */
  readonly trustedProxies?: readonly string[];
  /**
   * The compatibility profile (docs/compat-profile.md; config `compat.profile`): ValidateUser's
   * failure value, the JSON operations' layouts and inputs. svcapi-auth's own choices when absent.
   */
  readonly compat?: { readonly profile: CompatProfile };
}

/** What the access log says about a finished request, for metrics (src/ops/metrics.ts). */
export interface RequestDone {
  /** A contract operation name (never user input), or null. */
  readonly operation: string | null;
  readonly binding: Binding;
  readonly statusCode: number;
  readonly durationMs: number;
}

export interface AppOptions {
  readonly service: AuthService;
  readonly config: HttpAppConfig;
  /** A pino logger; true for a default one, false or absent for none. */
  readonly logger?: Logger | boolean;
  /** The access line from its template (default), or through logger.info (false: the off switch). */
  readonly fastAccessLog?: boolean;
  /** Called once per answered request, after the access line is written. */
  readonly onRequestDone?: (done: RequestDone) => void;
  /** True once shutdown has begun: responses then carry `Connection: close` so clients reconnect elsewhere. */
  readonly draining?: () => boolean;
  /** Serve HTTPS (--tls-cert / --tls-key): PEM certificate chain and key; TLS 1.2 or newer only. */
  readonly https?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  /**
   * Shadow and front modes (src/compat/shadow.ts; docs/cutover.md): requests compared with the
   * old service's answers, or answered by it. Absent: neither.
   */
  readonly mirror?: LegacyMirror;
  /**
   * Front mode: the service our own (unsent) answers are computed on, built over a
   * side-effect-free view of the store (src/store/dry-run-store.ts). Default: `service`.
   */
  readonly frontService?: AuthService;
}

/** The service's public listener. */
export interface AsmxApp {
  /** The underlying server (not listening until `listen`). */
  readonly server: HttpServer | HttpsServer;
  /** Listens and resolves with the origin, e.g. `http://127.0.0.1:8080`. */
  listen(options: { readonly host: string; readonly port: number }): Promise<string>;
  /** Stops accepting connections, closes idle ones, and resolves once the rest have finished. */
  close(): Promise<void>;
}

export type Binding = 'soap11' | 'soap12' | 'http-get' | 'http-post' | 'doc' | 'none';

const SERVICE_PATH_LOWER = SERVICE_PATH.toLowerCase();
const SERVICE_PREFIX_LOWER = SERVICE_PATH_LOWER + '/';
const HTML_UTF8 = 'text/html; charset=utf-8';
/** The help page needs nothing but its own inline styles and a form posting back here. */
const HELP_PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
/** The verbs that reach ASMX's dispatch; any other is answered 404 before it (as the framework did). */
const DISPATCHED_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE']);
const NO_BODY = Buffer.alloc(0);

/** One request in flight: what the access log and metrics will say about it. */
interface Call {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly id: string;
  readonly started: number;
  /** The path, percent-decoded as IIS does (null: the target could not be decoded). */
  path: string | null;
  query: string;
  operation: string | null;
  binding: Binding;
  /** The request has a body this server did not read: the connection cannot be reused. */
  unreadBody: boolean;
  /** The body as read (POST), for the shadow and front modes. */
  body: Uint8Array;
  /** Front mode: the old service answers this request; our own answer goes to `ours`. */
  front: { readonly ours: (answer: RawAnswer) => void } | null;
}

/** Path and query of the raw request target, the path percent-decoded as IIS does; null path if undecodable. */
function splitTarget(rawUrl: string): { path: string | null; query: string } {
  const q = rawUrl.indexOf('?');
  const rawPath = q < 0 ? rawUrl : rawUrl.slice(0, q);
  let path: string | null = rawPath;
  if (rawPath.includes('%')) {
    try {
      path = decodeURIComponent(rawPath);
    } catch {
      path = null;
    }
  }
  return { path, query: q < 0 ? '' : rawUrl.slice(q + 1) };
}

function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

export async function buildApp(options: AppOptions): Promise<AsmxApp> {
  const { service, config } = options;
  const logger: Logger = typeof options.logger === 'object' ? options.logger : options.logger === true ? pino() : silentLogger();
  const draining = options.draining;
  const onRequestDone = options.onRequestDone;
  // WhatsNew's table (names, column types, DateTime form) from the profile's whatsNew.
  const contract: CompiledContract = compileContract({ timeZone: config.timeZone, newsTable: (config.compat?.profile ?? DEFAULT_COMPAT_PROFILE).whatsNew }, OPERATIONS);
  // decodeSoapRequest behind the request shape memo (src/wire/soap-shape-memo.ts).
  const decodeSoap = createSoapRequestDecoder(contract, undefined, { enabled: config.performance?.shapeMemo ?? true });
  const handlerOptions = { tableMemo: config.performance?.tableMemo ?? true };
  const handlers = createOperationHandlers(service, config.compat?.profile ?? DEFAULT_COMPAT_PROFILE, handlerOptions);
  const mirror = options.mirror;
  // Front mode's own answers, computed and compared but never sent.
  const frontHandlers = options.frontService === undefined ? handlers : createOperationHandlers(options.frontService, config.compat?.profile ?? DEFAULT_COMPAT_PROFILE, handlerOptions);
  const httpGet = config.http.httpGet;
  const wsdl = compileWsdl(OPERATIONS, { httpGet });
  const disco = compileDisco();
  const help = compileHelpPage(OPERATIONS, { httpGet });
  const maxRequestBytes = config.http.maxRequestBytes;
  // X-Forwarded-For / -Proto count only when the peer is one of these proxies.
  const trusted = config.trustedProxies !== undefined && config.trustedProxies.length > 0 ? proxyAddr.compile([...config.trustedProxies]) : null;
  // One access line per request, built from a template without a redaction pass (ops/access-log.ts);
  // null when the level leaves it out. SVCAPI_ACCESS_LOG_FAST=0 takes logger.info's path instead.
  const accessLog = createAccessLog(logger, { fast: options.fastAccessLog ?? true });
  let closing = false;

  function sourceIp(req: IncomingMessage): string {
    return trusted === null ? (req.socket.remoteAddress ?? '') : proxyAddr(req, trusted);
  }

  function protocol(req: IncomingMessage): 'http' | 'https' {
    const encrypted = (req.socket as Partial<TLSSocket>).encrypted === true;
    if (trusted !== null && trusted(req.socket.remoteAddress ?? '', 0)) {
      const forwarded = req.headers['x-forwarded-proto'];
      const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim().toLowerCase();
      if (first === 'https' || first === 'http') return first;
    }
    return encrypted ? 'https' : 'http';
  }

  /** While draining or closing, and after a body left unread, every answer asks the client to reconnect. */
  function mustClose(call: Call): boolean {
    return call.unreadBody || closing || (draining?.() ?? false) || (call.req.method !== 'POST' && hasBody(call.req));
  }

  /**
   * The one place a response of ours is answered: written to the client (status, ASMX's headers,
   * nosniff, the body), or in front mode handed over as our own answer to compare.
   */
  function respond(call: Call, response: WireResponse): void {
    // Front mode, requests no operation was resolved for (documentation, errors): passed on here.
    if (call.front === null && mirror !== undefined && call.binding !== 'none' && !call.unreadBody && mirror.fronts(call.operation)) {
      startFront(call, mirror.sample(call.operation, call.binding, false));
    }
    const { headers, body } = wireParts(response);
    if (call.front !== null) return call.front.ours(rawAnswer(call, response.status, headers, body));
    if (!write(call, response.status, headers, body)) return;
    // Shadow: the same request to the old service, queued after the answer is on its way.
    if (mirror !== undefined && !call.unreadBody && call.path !== null && mirror.sample(call.operation, call.binding, true)) {
      mirror.submit({
        mode: 'shadow', operation: call.operation, binding: call.binding, ...ourService(call),
        request: mirror.requestOf(call.req.method ?? 'GET', call.path, call.query, call.req.headers, call.body),
        ours: rawAnswer(call, response.status, headers, body),
      });
    }
  }

  /** ASMX's headers, nosniff, and the body as bytes. */
  function wireParts(response: WireResponse): { headers: Record<string, string | number>; body: Buffer } {
    const body = typeof response.body === 'string' ? Buffer.from(response.body) : response.body;
    const headers: Record<string, string | number> = {
      'content-type': response.contentType,
      'cache-control': response.cacheControl,
      // Browsers must not guess a type: a reflected value in a text/plain error stays text.
      'x-content-type-options': 'nosniff',
      'content-length': body.byteLength,
    };
    if (response.headers !== undefined) Object.assign(headers, response.headers);
    return { headers, body };
  }

  /** Writes an answer to the client (false: it is gone, or already answered). */
  function write(call: Call, status: number, headers: Record<string, string | string[] | number>, body: Buffer): boolean {
    const { res } = call;
    if (res.headersSent || res.destroyed) return false;
    if (mustClose(call)) headers.connection = 'close';
    res.writeHead(status, headers);
    res.end(body);
    finished(call, status);
    return true;
  }

  /** An answer of ours as the comparison sees it (a HEAD answer has no body on the wire). */
  function rawAnswer(call: Call, status: number, headers: Record<string, string | number>, body: Buffer): RawAnswer {
    return { status, headers: Object.entries(headers).map(([n, v]) => [n, String(v)] as const), body: call.req.method === 'HEAD' ? NO_BODY : body };
  }

  /** Our origin and service path as the client reached them (WSDL and help pages carry them). */
  function ourService(call: Call): { oursOrigin: string; oursPath: string } {
    return { oursOrigin: serviceUrl(call, ''), oursPath: (call.path ?? SERVICE_PATH).slice(0, SERVICE_PATH.length) };
  }

  /**
   * Front mode: the request goes to the old service now, and its answer (or, if it cannot be
   * had, http.sys's 503 page) is the client's as soon as it arrives, whatever our own handling
   * is doing. With `compare`, our own answer (computed without side effects, not sent) is
   * compared with it in the background.
   */
  function startFront(call: Call, compare: boolean): void {
    if (mirror === undefined || call.path === null) return;
    const request = mirror.requestOf(call.req.method ?? 'GET', call.path, call.query, call.req.headers, call.body);
    let deliver: (answer: RawAnswer) => void = () => undefined;
    const ours = new Promise<RawAnswer>((resolve) => {
      deliver = resolve;
    });
    call.front = { ours: (answer) => deliver(answer) };
    const operation = call.operation;
    const binding = call.binding;
    void mirror.forward(request, operation, binding).then((result) => {
      if (result.kind === 'answer') {
        relay(call, result.answer);
      } else {
        const unavailable = wireParts(pageResponse(503));
        write(call, 503, unavailable.headers, unavailable.body);
      }
      if (compare) mirror.submit({ mode: 'front', operation, binding, request, ...ourService(call), ours, legacy: result });
    });
  }

  /** The old service's answer, byte for byte: status, body, its content headers (relayedHeaders). */
  function relay(call: Call, answer: RawAnswer): void {
    const headers: Record<string, string | string[] | number> = { ...relayedHeaders(answer), 'x-content-type-options': 'nosniff' };
    const declared = answer.headers.find(([n]) => n === 'content-length')?.[1];
    // A HEAD answer has no body: its Content-Length is the old service's, for the GET it stands for.
    headers['content-length'] = call.req.method === 'HEAD' && declared !== undefined && /^\d+$/.test(declared) ? Number(declared) : answer.body.byteLength;
    write(call, answer.status, headers, answer.body);
  }

  function finished(call: Call, status: number): void {
    const durationMs = performance.now() - call.started;
    accessLog?.({
      reqId: call.id,
      method: call.req.method,
      path: call.path ?? (call.req.url ?? '').split('?', 1)[0] ?? '',
      operation: call.operation,
      binding: call.binding,
      status,
      durationMs,
      source: sourceIp(call.req),
    });
    onRequestDone?.({ operation: call.operation, binding: call.binding, statusCode: status, durationMs });
  }

  /** An exception from the domain: overload is expected under attack, anything else is logged as a failure. */
  function operationFailure(call: Call, operation: string, err: unknown): WireError {
    if (err instanceof ServerBusyError) {
      logger.warn({ reqId: call.id, operation }, 'password hashing at capacity: server too busy');
      return { code: 'SERVER_TOO_BUSY' };
    }
    logger.error({ reqId: call.id, err, operation }, 'operation failed');
    return { code: 'SERVER_ERROR' };
  }

  function callerContext(call: Call): CallerContext {
    return { sourceIp: sourceIp(call.req), requestId: call.id };
  }

  /**
   * Once the operation is known: in front mode for this operation, the request goes to the old
   * service at once (its answer need not wait for ours), and our own answer is worth computing
   * only if this request is sampled for comparison.
   */
  function ownAnswerWanted(call: Call): boolean {
    if (mirror === undefined || !mirror.fronts(call.operation)) return true;
    const compare = mirror.sample(call.operation, call.binding, false);
    startFront(call, compare);
    return compare;
  }

  function invoke(
    call: Call,
    operation: CompiledOperation,
    args: Parameters<OperationHandler>[0],
    query: FormCollection,
    form: FormCollection,
  ): ReturnType<OperationHandler> {
    const facts: RequestFacts = { ctx: callerContext(call), query, form, headers: call.req.headers };
    return (call.front === null ? handlers : frontHandlers)[operation.name](args, facts);
  }

  function serviceUrl(call: Call, path: string): string {
    const req = call.req;
    const host = req.headers.host ?? `${req.socket.localAddress ?? '127.0.0.1'}:${req.socket.localPort ?? ''}`;
    return `${protocol(req)}://${host}${path}`;
  }

  async function handleSoap(call: Call, body: Uint8Array): Promise<void> {
    const headers = call.req.headers;
    const media = decodeSoap.mediaType(headers['content-type']);
    call.binding = soapTransport(media.type) === '1.2' ? 'soap12' : 'soap11';
    if (media.type === 'application/json') return respond(call, soapErrorResponse('1.1', { code: 'SCRIPT_SERVICE_REQUIRED' }));
    const soapAction = headers.soapaction;
    const decoded = decodeSoap({
      body,
      contentType: headers['content-type'],
      media,
      soapAction: Array.isArray(soapAction) ? soapAction.join(',') : soapAction,
    });
    if (!decoded.ok) return respond(call, soapErrorResponse(decoded.version, decoded.error));
    const version: SoapVersion = decoded.version;
    const operation = decoded.operation;
    call.binding = version === '1.1' ? 'soap11' : 'soap12';
    call.operation = operation.name;
    if (!ownAnswerWanted(call)) return;
    try {
      // Only the JSON operations read the query string of a SOAP call (Request["login"]).
      const query = operation.spec.requestReads ? parseUrlEncoded(call.query) : FormCollection.EMPTY;
      const value = await invoke(call, operation, decoded.args, query, FormCollection.EMPTY);
      respond(call, success(SOAP_CONTENT_TYPE[version], writeSoapResultBody(contract, operation, version, value), operation.spec.resultCarriesSecret));
    } catch (err) {
      respond(call, soapErrorResponse(version, operationFailure(call, operation.name, err)));
    }
  }

  async function handleHttpOperation(call: Call, methodName: string, body: Uint8Array): Promise<void> {
    const isPost = call.req.method === 'POST';
    call.binding = isPost ? 'http-post' : 'http-get';
    const lookup = lookupHttpMethod(contract, methodName);
    if (!lookup.ok) return respond(call, httpErrorResponse(lookup.error));
    const operation = lookup.operation;
    if (!isPost && !offersHttpGet(httpGet, operation.name)) return respond(call, httpErrorResponse({ code: 'REQUEST_FORMAT_UNRECOGNIZED', urlEnding: `/${methodName}` }));
    call.operation = operation.name;
    if (!ownAnswerWanted(call)) return;
    let values: FormCollection;
    let query = FormCollection.EMPTY;
    let form = FormCollection.EMPTY;
    if (isPost) {
      const read = readFormBody(body, call.req.headers['content-type']);
      if (!read.ok) return respond(call, httpErrorResponse(read.error));
      values = form = read.form;
      // Request[name] in the JSON operations still sees the query string first.
      if (operation.spec.requestReads) query = parseUrlEncoded(call.query);
    } else {
      values = query = parseUrlEncoded(call.query);
    }
    const bound = bindHttpArgs(operation, values);
    if (!bound.ok) return respond(call, httpErrorResponse(bound.error));
    try {
      const value = await invoke(call, operation, bound.args, query, form);
      respond(call, success(XML_CONTENT_TYPE, writeHttpResultBody(contract, operation, value), operation.spec.resultCarriesSecret));
    } catch (err) {
      respond(call, httpErrorResponse(operationFailure(call, operation.name, err)));
    }
  }

  function handleDocumentation(call: Call, path: string): void {
    call.binding = 'doc';
    const url = serviceUrl(call, path);
    const flag = call.query.toLowerCase();
    if (flag === 'wsdl') return respond(call, success(XML_CONTENT_TYPE, wsdl(url)));
    if (flag === 'disco') return respond(call, success(XML_CONTENT_TYPE, disco(url)));
    const op = parseUrlEncoded(call.query).get('op');
    const page = (op !== undefined ? help.operation(url, op) : undefined) ?? help.index(url);
    respond(call, { ...success(HTML_UTF8, page), headers: { 'content-security-policy': HELP_PAGE_CSP } });
  }

  /** ASMX's own dispatch: documentation, SOAP, HTTP GET/POST, or the pipeline's HTML pages. */
  function dispatch(call: Call, path: string, body: Uint8Array): Promise<void> | void {
    const lower = path.toLowerCase();
    const method = call.req.method === 'HEAD' ? 'GET' : call.req.method;
    if (lower === SERVICE_PATH_LOWER) {
      if (method === 'GET') return handleDocumentation(call, path);
      if (method === 'POST') return handleSoap(call, body);
      return respond(call, pageResponse(405));
    }
    if (lower.startsWith(SERVICE_PREFIX_LOWER)) {
      if (method !== 'GET' && method !== 'POST') return respond(call, pageResponse(405));
      const methodName = path.slice(SERVICE_PATH.length + 1);
      // "/Authentication.asmx/" names no method: ASP.NET fails before ASMX runs.
      if (methodName === '') return respond(call, pageResponse(500));
      return handleHttpOperation(call, methodName, body);
    }
    return respond(call, pageResponse(404));
  }

  /** An error raised before or outside an operation, in the shape of the binding the URL names. */
  function failInBindingShape(call: Call, error: WireError): void {
    const lower = call.path?.toLowerCase() ?? '';
    if (lower === SERVICE_PATH_LOWER && call.req.method === 'POST') {
      const version = soapTransport(parseMediaType(call.req.headers['content-type']).type) ?? '1.1';
      return respond(call, soapErrorResponse(version, error));
    }
    if (lower.startsWith(SERVICE_PREFIX_LOWER)) return respond(call, httpErrorResponse(error));
    respond(call, pageResponse(500));
  }

  /** A bug, not an expected failure: logged, and answered in the binding's shape. */
  function internalError(call: Call, err: unknown): void {
    logger.error({ reqId: call.id, err }, 'request failed');
    failInBindingShape(call, { code: 'SERVER_ERROR' });
  }

  /** More than maxRequestBytes (only POST bodies are read): ASMX's "Maximum request length exceeded.". */
  function tooLarge(call: Call): void {
    call.unreadBody = true;
    failInBindingShape(call, { code: 'REQUEST_TOO_LARGE' });
  }

  function run(call: Call, path: string, body: Uint8Array): void {
    call.body = body;
    try {
      const pending = dispatch(call, path, body);
      if (pending !== undefined) pending.catch((err: unknown) => internalError(call, err));
    } catch (err) {
      internalError(call, err);
    }
  }

  /** Reads a POST body up to the limit (ASP.NET's maxRequestLength), then dispatches. */
  function readBodyThenRun(call: Call, path: string): void {
    const req = call.req;
    const declared = req.headers['content-length'];
    // Announced over the limit: answered from the headers alone, the body never read.
    if (declared !== undefined && Number(declared) > maxRequestBytes) return tooLarge(call);
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxRequestBytes) {
        req.off('data', onData);
        req.off('end', onEnd);
        tooLarge(call);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      run(call, path, chunks.length === 1 ? (chunks[0] as Buffer) : chunks.length === 0 ? NO_BODY : Buffer.concat(chunks, size));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    // A client that goes away half way gets no answer; there is nobody to send it to.
    req.on('error', () => undefined);
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const { path, query } = splitTarget(req.url ?? '/');
    const call: Call = { req, res, id: randomUUID(), started: performance.now(), path, query, operation: null, binding: 'none', unreadBody: false, body: NO_BODY, front: null };
    const method = req.method ?? '';
    if (!DISPATCHED_METHODS.has(method)) return respond(call, pageResponse(404));
    // A path with an undecodable %-escape: http.sys's "Invalid URL" page.
    if (path === null) return respond(call, pageResponse(400));
    if (method === 'POST') return readBodyThenRun(call, path);
    run(call, path, NO_BODY);
  }

  const listener = createAsmxServer(handle, { bodyTimeoutMs: config.http.bodyTimeoutMs, ...(options.https !== undefined && { https: options.https }) });
  return {
    server: listener.server,
    listen: (address) => listener.listen(address),
    close() {
      // From here on every answer asks its client to reconnect elsewhere (mustClose).
      closing = true;
      return listener.close();
    },
  };
}
