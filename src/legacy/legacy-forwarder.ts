/**
 * A client request passed on to the old Authentication.asmx as it came (method, path and query,
 * the headers that decide the answer, the body bytes), for the shadow and front modes
 * (src/compat/shadow.ts, src/http/app.ts). Bounded in every way a slow or hostile old service
 * could use against us:
 *
 * - a deadline for the whole exchange, connection to last byte (`legacy.timeoutMs`): a slow drip
 *   or a service that never answers is cut off there;
 * - a ceiling on the answer's size, checked against Content-Length before reading and while
 *   reading (the socket is destroyed at once, the bytes read so far dropped);
 * - at most `maxInFlight` exchanges at a time, on a socket pool of that size: one more is
 *   refused at once ('busy') rather than queued inside the HTTP agent without bound;
 * - no redirect is followed (a 3xx is an answer like any other).
 *
 * Trouble is reported by kind only: an error's message may carry the URL, and the request's
 * headers and body carry passwords and tokens.
 */
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { RawAnswer } from '../compat/answer-compare.js';
import { rawHeaderPairs } from '../compat/http-probe.js';

export interface ForwardRequest {
  readonly method: string;
  /** Path and query as they go to the old service, e.g. `/old/Authentication.asmx/ValidateUserToken?token=x`. */
  readonly target: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  /**
   * The request changes nothing in the old service (a read-only operation): it may be pipelined,
   * and sent again when the connection closes before its answer (RFC 9112 9.3.1). Default: GET
   * and HEAD only. The node:http client sends nothing twice either way.
   */
  readonly idempotent?: boolean;
}

export type ForwardFailure = 'timeout' | 'too-large' | 'connection' | 'tls' | 'busy' | 'unsendable';

export type ForwardResult =
  | { readonly kind: 'answer'; readonly answer: RawAnswer }
  | { readonly kind: 'failed'; readonly reason: ForwardFailure };

export interface LegacyForwarder {
  /** The old service's endpoint (its path replaces ours in every forwarded target). */
  readonly url: URL;
  /** Never rejects. */
  forward(request: ForwardRequest): Promise<ForwardResult>;
  /** Exchanges under way now. */
  inFlight(): number;
  /** Closes the socket pool (at shutdown). */
  close(): void;
}

export interface LegacyForwarderOptions {
  readonly url: string;
  /** Whole exchange, connection to last byte (default 3000 ms). */
  readonly timeoutMs?: number;
  /** Largest answer body read (default 2 MiB). */
  readonly maxResponseBytes?: number;
  /** Exchanges at a time, and sockets open to the old service, at most (default 64). */
  readonly maxInFlight?: number;
  /** PEM certificate(s) trusted for an https old service instead of Node's bundled roots. */
  readonly ca?: string | Buffer;
}

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED']);

/** The kind of a socket or request error, from its code only (its message may carry the URL). */
export function failureOf(error: NodeJS.ErrnoException): ForwardFailure {
  const code = typeof error.code === 'string' ? error.code : '';
  if (CONNECTION_CODES.has(code) || code.startsWith('HPE_')) return 'connection';
  if (/CERT|TLS|SSL|SIGNATURE|ISSUER/.test(code)) return 'tls';
  return 'connection';
}

export function createLegacyForwarder(options: LegacyForwarderOptions): LegacyForwarder {
  const url = new URL(options.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`not an http(s) URL: ${url.protocol}`);
  const secure = url.protocol === 'https:';
  const timeoutMs = options.timeoutMs ?? 3000;
  const maxBytes = options.maxResponseBytes ?? 2 * 1024 * 1024;
  const maxInFlight = options.maxInFlight ?? 64;
  // Keep-alive: shadowing every request must not cost a connection (or a TLS handshake) each.
  const agentOptions = { keepAlive: true, maxSockets: maxInFlight, maxFreeSockets: Math.min(maxInFlight, 16), timeout: 65_000 };
  const agent = secure ? new HttpsAgent({ ...agentOptions, ...(options.ca !== undefined && { ca: options.ca }) }) : new HttpAgent(agentOptions);
  const send = (secure ? httpsRequest : httpRequest) as (options: RequestOptions, callback: (res: IncomingMessage) => void) => ClientRequest;
  const base = {
    protocol: url.protocol,
    hostname: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port === '' ? undefined : Number(url.port),
    agent,
  };
  let inFlight = 0;

  function forward(req: ForwardRequest): Promise<ForwardResult> {
    if (inFlight >= maxInFlight) return Promise.resolve({ kind: 'failed', reason: 'busy' });
    inFlight += 1;
    return new Promise<ForwardResult>((resolve) => {
      let settled = false;
      let request: ClientRequest | undefined;
      const finish = (result: ForwardResult): void => {
        if (settled) return;
        settled = true;
        inFlight -= 1;
        clearTimeout(timer);
        // A socket that failed us (slow, too much, broken) is not given back to the pool.
        if (result.kind === 'failed') request?.destroy();
        resolve(result);
      };
      const fail = (reason: ForwardFailure): void => finish({ kind: 'failed', reason });
      const timer = setTimeout(() => fail('timeout'), timeoutMs);
      try {
        request = send({ ...base, method: req.method, path: req.target, headers: { ...req.headers, 'content-length': String(req.body.byteLength) } }, (res) => {
          const declared = Number(res.headers['content-length'] ?? NaN);
          if (Number.isFinite(declared) && declared > maxBytes) return fail('too-large');
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > maxBytes) return fail('too-large');
            if (!settled) chunks.push(chunk);
          });
          res.on('end', () => finish({ kind: 'answer', answer: { status: res.statusCode ?? 0, headers: rawHeaderPairs(res.rawHeaders), body: Buffer.concat(chunks, size) } }));
          res.on('aborted', () => fail('connection'));
          res.on('error', () => fail('connection'));
        });
      } catch {
        // node refuses a target or header it cannot send (a space, a control character).
        return fail('unsendable');
      }
      request.on('error', (error: NodeJS.ErrnoException) => fail(failureOf(error)));
      request.end(req.body);
    });
  }

  return {
    url,
    forward,
    inFlight: () => inFlight,
    close() {
      agent.destroy();
    },
  };
}
