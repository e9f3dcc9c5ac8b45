/**
 * The HTTP application: the only place that joins the wire layer and the domain.
 *
 * One catch-all route does ASMX's own dispatch, because ASMX's rules do not fit a router: the
 * service path is matched case-insensitively (IIS) while the operation name after it is
 * case-sensitive (ASMX), the same URL serves SOAP 1.1, SOAP 1.2 and the documentation, and
 * every failure must come back in the failing binding's own shape.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { OPERATIONS, SERVICE_PATH } from '../contract/operations.js';
import type { AuthService, CallerContext } from '../domain/auth-service.js';
import { ServerBusyError } from '../domain/server-busy-error.js';
import { compileContract, type CompiledContract, type CompiledOperation } from '../wire/compiled-contract.js';
import { compileDisco } from '../wire/disco.js';
import { compileHelpPage } from '../wire/help-page.js';
import { bindHttpArgs, FormCollection, lookupHttpMethod, parseUrlEncoded, readFormBody } from '../wire/http-form.js';
import { offersHttpGet, type HttpGetOption } from '../wire/http-get-option.js';
import { writeHttpResult } from '../wire/http-result.js';
import { parseMediaType } from '../wire/media-type.js';
import { SOAP_CONTENT_TYPE, type SoapVersion } from '../wire/soap-envelope.js';
import { decodeSoapRequest, soapTransport } from '../wire/soap-request.js';
import { writeSoapResult } from '../wire/soap-result.js';
import type { WireError } from '../wire/wire-errors.js';
import { httpErrorResponse, pageResponse, soapErrorResponse, success, XML_CONTENT_TYPE, type WireResponse } from '../wire/wire-response.js';
import { compileWsdl } from '../wire/wsdl.js';
import { httpSysErrorResponse } from '../wire/error-pages.js';
import { createOperationHandlers, type OperationHandler, type RequestFacts } from './operation-handlers.js';

/** The part of the configuration the HTTP layer reads (src/config.ts `Config` satisfies it). */
export interface HttpAppConfig {
  readonly http: {
    readonly maxRequestBytes: number;
    readonly bodyTimeoutMs: number;
    /** Operations offered over HTTP GET: all (default), none, or a list (issue 6: GET puts passwords in URLs). */
    readonly httpGet?: HttpGetOption;
  };
  readonly timeZone: string;
  /** Reverse proxies whose X-Forwarded-For / -Proto are believed (fastify trustProxy); none when empty. */
  readonly trustedProxies?: readonly string[];
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
  readonly logger?: Logger | boolean;
  /** Called once per finished request, after the access line is written. */
  readonly onRequestDone?: (done: RequestDone) => void;
  /** True once shutdown has begun: responses then carry `Connection: close` so clients reconnect elsewhere. */
  readonly draining?: () => boolean;
  /** Serve HTTPS (issue 6: --tls-cert / --tls-key): PEM certificate chain and key; TLS 1.2 or newer only. */
  readonly https?: { readonly cert: string | Buffer; readonly key: string | Buffer };
}

const SERVICE_PATH_LOWER = SERVICE_PATH.toLowerCase();
const HTML_UTF8 = 'text/html; charset=utf-8';

export type Binding = 'soap11' | 'soap12' | 'http-get' | 'http-post' | 'doc' | 'none';

declare module 'fastify' {
  interface FastifyRequest {
    /** What the access log says about the call; filled as the request is dispatched (null before). */
    asmx: { operation: string | null; binding: Binding } | null;
  }
}

/** Path and query of the raw request target, the path percent-decoded as IIS does. */
function splitTarget(rawUrl: string): { path: string; query: string } {
  const q = rawUrl.indexOf('?');
  const rawPath = q < 0 ? rawUrl : rawUrl.slice(0, q);
  let path = rawPath;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    // A malformed escape stays as sent; it simply will not match the service path.
  }
  return { path, query: q < 0 ? '' : rawUrl.slice(q + 1) };
}

function bodyBytes(request: FastifyRequest): Uint8Array {
  return Buffer.isBuffer(request.body) ? request.body : new Uint8Array(0);
}

/** The help page needs nothing but its own inline styles and a form posting back here. */
const HELP_PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** The access-log record of a dispatched request. */
function callOf(request: FastifyRequest): { operation: string | null; binding: Binding } {
  return (request.asmx ??= { operation: null, binding: 'none' });
}

function send(reply: FastifyReply, response: WireResponse, closeConnection = false): FastifyReply {
  if (closeConnection) reply.header('connection', 'close');
  reply
    .code(response.status)
    .header('content-type', response.contentType)
    .header('cache-control', response.cacheControl)
    // Browsers must not guess a type: a reflected value in a text/plain error stays text.
    .header('x-content-type-options', 'nosniff');
  if (response.headers) for (const [k, v] of Object.entries(response.headers)) reply.header(k, v);
  return reply.send(response.body);
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { service, config } = options;
  // While draining (shutdown), every answer asks the client to close its connection.
  const draining = options.draining;
  const respond = (reply: FastifyReply, response: WireResponse): FastifyReply => send(reply, response, draining?.() ?? false);
  const contract: CompiledContract = compileContract({ timeZone: config.timeZone }, OPERATIONS);
  const handlers = createOperationHandlers(service);
  const httpGet = config.http.httpGet;
  const wsdl = compileWsdl(OPERATIONS, { httpGet });
  const disco = compileDisco();
  const help = compileHelpPage(OPERATIONS, { httpGet });

  const bodyTimeoutMs = config.http.bodyTimeoutMs;
  const app = Fastify({
    loggerInstance: typeof options.logger === 'object' ? options.logger : undefined,
    logger: typeof options.logger === 'boolean' ? options.logger : undefined,
    bodyLimit: config.http.maxRequestBytes,
    requestTimeout: bodyTimeoutMs,
    // Node only enforces requestTimeout when headersTimeout is not longer, and checks every
    // connectionsCheckingInterval: both follow the body timeout so a stalled body is cut off on time.
    http: {
      requestTimeout: bodyTimeoutMs,
      headersTimeout: Math.min(bodyTimeoutMs, 60_000),
      connectionsCheckingInterval: Math.max(100, Math.min(Math.floor(bodyTimeoutMs / 4), 30_000)),
    },
    // With `https` fastify creates the server from these options alone (node's https server takes the http ones too).
    ...(options.https !== undefined && { https: { requestTimeout: bodyTimeoutMs, headersTimeout: Math.min(bodyTimeoutMs, 60_000), connectionsCheckingInterval: Math.max(100, Math.min(Math.floor(bodyTimeoutMs / 4), 30_000)), ...options.https, minVersion: 'TLSv1.2' as const } }),
    // Requests that cannot even be framed get http.sys's answer, never the framework's JSON.
    clientErrorHandler: (error: Error & { code?: string }, socket) => {
      if (error.code === 'ECONNRESET' || socket.destroyed) return;
      if (socket.writable) {
        socket.write(
          error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
            ? httpSysErrorResponse(408, 'The request took too long to arrive.')
            : error.code === 'HPE_HEADER_OVERFLOW'
              ? httpSysErrorResponse(400, 'The size of the request headers is too long.')
              : httpSysErrorResponse(400, 'The request is badly formed.'),
        );
      }
      socket.destroy();
    },
    // A path with an undecodable %-escape: http.sys's "Invalid URL" page.
    frameworkErrors: (_error, _request, reply) => {
      respond(reply, pageResponse(400));
    },
    // Fastify's own request log would write the URL, query string (and so GET passwords) and all.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => randomUUID(),
    return503OnClosing: true,
    // request.ip / request.protocol come from X-Forwarded-For / -Proto only when the peer is one of these.
    trustProxy: config.trustedProxies !== undefined && config.trustedProxies.length > 0 ? [...config.trustedProxies] : false,
    // Idle and stalled connections are closed by the socket inactivity timeout (see below).
    connectionTimeout: 72_000,
  });
  // IIS sends no Keep-Alive header (README "HTTP framing"); Node writes one whenever a
  // keep-alive timeout is set, so keep-alive idleness is bounded by connectionTimeout instead.
  app.server.keepAliveTimeout = 0;

  // Every body is read raw (bounded by bodyLimit) and decoded by the wire layer itself.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  app.decorateRequest('asmx', null as unknown as FastifyRequest['asmx']);
  // The access line costs a serialisation per request: decided once whether it is written at all.
  const accessLog = (app.log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled?.('info') ?? true;
  // Hooks in callback style: no promise per request on the hot path. `request.asmx` is set by
  // dispatch; requests refused before it (bad framing, unparsable URL) have none.
  const NO_CALL = Object.freeze({ operation: null, binding: 'none' as const });
  app.addHook('onResponse', (request, reply, done) => {
    const call = request.asmx ?? NO_CALL;
    if (accessLog) request.log.info(
      {
        method: request.method,
        path: splitTarget(request.url).path,
        operation: call.operation,
        binding: call.binding,
        status: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime * 10) / 10,
        source: request.ip,
      },
      'request',
    );
    options.onRequestDone?.({ operation: call.operation, binding: call.binding, statusCode: reply.statusCode, durationMs: reply.elapsedTime });
    done();
  });

  /** An exception from the domain: overload is expected under attack, anything else is logged as a failure. */
  function operationFailure(request: FastifyRequest, operation: string, err: unknown): WireError {
    if (err instanceof ServerBusyError) {
      request.log.warn({ operation }, 'password hashing at capacity: server too busy');
      return { code: 'SERVER_TOO_BUSY' };
    }
    request.log.error({ err, operation }, 'operation failed');
    return { code: 'SERVER_ERROR' };
  }

  function callerContext(request: FastifyRequest): CallerContext {
    return { sourceIp: request.ip, requestId: String(request.id) };
  }

  async function invoke(
    request: FastifyRequest,
    operation: CompiledOperation,
    args: Parameters<OperationHandler>[0],
    facts: Omit<RequestFacts, 'ctx' | 'authorization'>,
  ): Promise<ReturnType<OperationHandler>> {
    const handler = handlers[operation.name];
    return handler(args, { ...facts, ctx: callerContext(request), authorization: request.headers.authorization });
  }

  function serviceUrl(request: FastifyRequest, path: string): string {
    const host = request.headers.host ?? `${request.socket.localAddress ?? '127.0.0.1'}:${request.socket.localPort ?? ''}`;
    return `${request.protocol}://${host}${path}`;
  }

  async function handleSoap(request: FastifyRequest, reply: FastifyReply, query: string): Promise<FastifyReply> {
    const media = parseMediaType(request.headers['content-type']);
    callOf(request).binding = soapTransport(media.type) === '1.2' ? 'soap12' : 'soap11';
    if (media.type === 'application/json') {
      return respond(reply, soapErrorResponse('1.1', { code: 'SCRIPT_SERVICE_REQUIRED' }));
    }
    const soapAction = request.headers.soapaction;
    const decoded = decodeSoapRequest(contract, {
      body: bodyBytes(request),
      contentType: request.headers['content-type'],
      media,
      soapAction: Array.isArray(soapAction) ? soapAction.join(',') : soapAction,
    });
    if (!decoded.ok) return respond(reply, soapErrorResponse(decoded.version, decoded.error));
    callOf(request).binding = decoded.version === '1.1' ? 'soap11' : 'soap12';
    callOf(request).operation = decoded.operation.name;
    const version: SoapVersion = decoded.version;
    try {
      // Only the JSON operations read the query string of a SOAP call (Request["login"]).
      const queryValues = decoded.operation.spec.requestReads ? parseUrlEncoded(query) : FormCollection.EMPTY;
      const value = await invoke(request, decoded.operation, decoded.args, { query: queryValues, form: FormCollection.EMPTY });
      return respond(reply, success(SOAP_CONTENT_TYPE[version], writeSoapResult(contract, decoded.operation, version, value), decoded.operation.spec.resultCarriesSecret));
    } catch (err) {
      return respond(reply, soapErrorResponse(version, operationFailure(request, decoded.operation.name, err)));
    }
  }

  async function handleHttpOperation(request: FastifyRequest, reply: FastifyReply, methodName: string, query: string): Promise<FastifyReply> {
    const isPost = request.method === 'POST';
    callOf(request).binding = isPost ? 'http-post' : 'http-get';
    const httpError = (error: WireError): FastifyReply => respond(reply, httpErrorResponse(error));
    const lookup = lookupHttpMethod(contract, methodName);
    if (!lookup.ok) return httpError(lookup.error);
    const operation = lookup.operation;
    if (!isPost && !offersHttpGet(httpGet, operation.name)) return httpError({ code: 'REQUEST_FORMAT_UNRECOGNIZED', urlEnding: `/${methodName}` });
    callOf(request).operation = operation.name;
    let values: FormCollection;
    let queryValues = FormCollection.EMPTY;
    let form = FormCollection.EMPTY;
    if (isPost) {
      const read = readFormBody(bodyBytes(request), request.headers['content-type']);
      if (!read.ok) return httpError(read.error);
      values = form = read.form;
      // Request[name] in the JSON operations still sees the query string first.
      if (operation.spec.requestReads) queryValues = parseUrlEncoded(query);
    } else {
      values = queryValues = parseUrlEncoded(query);
    }
    const bound = bindHttpArgs(operation, values);
    if (!bound.ok) return httpError(bound.error);
    try {
      const value = await invoke(request, operation, bound.args, { query: queryValues, form });
      return respond(reply, success(XML_CONTENT_TYPE, writeHttpResult(contract, operation, value), operation.spec.resultCarriesSecret));
    } catch (err) {
      return respond(reply, httpErrorResponse(operationFailure(request, operation.name, err)));
    }
  }

  function handleDocumentation(request: FastifyRequest, reply: FastifyReply, path: string, query: string): FastifyReply {
    callOf(request).binding = 'doc';
    const url = serviceUrl(request, path);
    const flag = query.toLowerCase();
    if (flag === 'wsdl') return respond(reply, success(XML_CONTENT_TYPE, wsdl(url)));
    if (flag === 'disco') return respond(reply, success(XML_CONTENT_TYPE, disco(url)));
    const op = parseUrlEncoded(query).get('op');
    const page = (op !== undefined ? help.operation(url, op) : undefined) ?? help.index(url);
    return respond(reply, { ...success(HTML_UTF8, page), headers: { 'content-security-policy': HELP_PAGE_CSP } });
  }

  /** ASMX's own dispatch: documentation, SOAP, HTTP GET/POST, or the pipeline's HTML pages. */
  async function dispatch(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    request.asmx = { operation: null, binding: 'none' };
    const { path, query } = splitTarget(request.url);
    const lower = path.toLowerCase();
    const method = request.method === 'HEAD' ? 'GET' : request.method;
    if (lower === SERVICE_PATH_LOWER) {
      if (method === 'GET') return handleDocumentation(request, reply, path, query);
      if (method === 'POST') return handleSoap(request, reply, query);
      return respond(reply, pageResponse(405));
    }
    if (lower.startsWith(SERVICE_PATH_LOWER + '/')) {
      if (method !== 'GET' && method !== 'POST') return respond(reply, pageResponse(405));
      const methodName = path.slice(SERVICE_PATH.length + 1);
      // "/Authentication.asmx/" names no method: ASP.NET fails before ASMX runs.
      if (methodName === '') return respond(reply, pageResponse(500));
      return handleHttpOperation(request, reply, methodName, query);
    }
    return respond(reply, pageResponse(404));
  }

  app.route({
    method: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE'],
    url: '*',
    handler: dispatch,
  });

  app.setNotFoundHandler((_request, reply) => respond(reply, pageResponse(404)));

  // Errors raised before the handler ran (body too large, slow body, bad framing).
  app.setErrorHandler(async (error: { code?: string; statusCode?: number }, request, reply) => {
    // A Content-Type the framework cannot even parse is, to ASMX, just not a SOAP or form type:
    // dispatch as usual, with no body (415 on SOAP, "Request format is invalid" on POST, 405...).
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return dispatch(request, reply);
    const { path } = splitTarget(request.url);
    const lower = path.toLowerCase();
    const tooLarge = error.code === 'FST_ERR_CTP_BODY_TOO_LARGE';
    const wireError: WireError = tooLarge ? { code: 'REQUEST_TOO_LARGE' } : { code: 'SERVER_ERROR' };
    if (!tooLarge && (error.statusCode ?? 500) >= 500) request.log.error({ err: error, reqId: request.id }, 'request failed');
    if (lower === SERVICE_PATH_LOWER && request.method === 'POST') {
      const version = soapTransport(parseMediaType(request.headers['content-type']).type) ?? '1.1';
      if (!tooLarge && (error.statusCode ?? 500) < 500) return respond(reply, soapErrorResponse(version, { code: 'SOAP_UNREADABLE' }));
      return respond(reply, soapErrorResponse(version, wireError));
    }
    if (lower.startsWith(SERVICE_PATH_LOWER + '/') && tooLarge) return respond(reply, httpErrorResponse(wireError));
    return respond(reply, pageResponse(500));
  });

  await app.ready();
  // The pino logger type parameter differs from the default instance type; the surface is the same.
  return app as unknown as FastifyInstance;
}
