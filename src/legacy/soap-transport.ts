/**
 * One POST to the old Authentication.asmx, and nothing more: the bytes of an HTTP 200 answer,
 * bounded in size and time, or 'unavailable' with the kind of trouble. Every call to the old
 * service (ValidateUser for lazy migration, ValidateUserToken, GetUserLoginURL and
 * ValidateUserTokenJSON for token passthrough and adoption, WhatsNew for `news import`) goes
 * through one of these: SOAP 1.1 with `post`, anything else (the HTTP POST binding, a token in a
 * header or the query) with `send`.
 *
 * node:http / node:https rather than fetch: the old service is often https with a company CA
 * (`legacy.caFile`), and giving fetch a CA needs an undici Agent from the `undici` package, whose
 * versions must match the undici bundled in each Node.js release (20, 22 and 24 bundle different
 * majors). node:https takes `ca` directly, never follows a redirect, and lets the call own its
 * socket pool (`maxSockets`): a hostile or hung old service holds at most that many sockets.
 *
 * Trouble is reported by kind only (a status, a size, a timeout, "connection failed", a TLS
 * error code): an error's message may carry the URL, and nothing here ever carries the body sent
 * (passwords, tokens).
 */
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

export type SoapPostResult =
  | { readonly kind: 'response'; readonly text: string; readonly status: number }
  | { readonly kind: 'unavailable'; readonly reason: string };

/** One POST as `send` makes it. */
export interface LegacyPost {
  /** Appended to the URL's path: none for the endpoint itself (SOAP), `/Operation` for HTTP POST. */
  readonly pathSuffix?: string;
  /** Appended to the URL's query (already encoded, without `?`). */
  readonly query?: string;
  /** Content-Type, SOAPAction and whatever else the call needs; Content-Length is added. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** Statuses whose body is read (default 200 only): 500 for a SOAP fault's text. */
  readonly statuses?: readonly number[];
}

export interface LegacySoapTransport {
  /** POSTs a SOAP 1.1 envelope with `SOAPAction: "SVCAPI/<operation>"`. Never rejects. */
  post(operation: string, envelope: string): Promise<SoapPostResult>;
  /** Any POST to the old service, bounded the same way. Never rejects. */
  send(request: LegacyPost): Promise<SoapPostResult>;
  /** Closes idle keep-alive sockets (serve calls it at shutdown). */
  close(): void;
}

export interface LegacySoapTransportOptions {
  /** The old service's endpoint, e.g. https://old.example/Authentication.asmx */
  readonly url: string;
  /** Whole call, connection to last byte (default 3000 ms): a slow drip is cut off here. */
  readonly timeoutMs?: number;
  /** Largest answer read (default 64 KiB); a longer one is cut off and is no answer. */
  readonly maxResponseBytes?: number;
  /** PEM certificate(s) trusted for an https URL instead of Node's bundled roots (`legacy.caFile`). */
  readonly ca?: string | Buffer;
  /** Sockets open to the old service at most (default 64); more calls wait, within their timeout. */
  readonly maxSockets?: number;
}

const unavailable = (reason: string): SoapPostResult => ({ kind: 'unavailable', reason });

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ETIMEDOUT']);

/** The kind of a request error, for logs and status: its code, never its message. */
function troubleOf(error: NodeJS.ErrnoException): string {
  const code = typeof error.code === 'string' ? error.code : '';
  if (CONNECTION_CODES.has(code)) return 'connection failed';
  // Certificate and handshake errors (DEPTH_ZERO_SELF_SIGNED_CERT, ERR_TLS_CERT_ALTNAME_INVALID,
  // UNABLE_TO_VERIFY_LEAF_SIGNATURE, ERR_SSL_...): the code tells the operator what to fix.
  if (/^[A-Z0-9_]+$/.test(code) && /CERT|TLS|SSL|SIGNATURE|ISSUER/.test(code)) return `TLS failed (${code})`;
  return 'request failed';
}

export function createLegacySoapTransport(options: LegacySoapTransportOptions): LegacySoapTransport {
  const url = new URL(options.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`not an http(s) URL: ${url.protocol}`);
  const secure = url.protocol === 'https:';
  const timeoutMs = options.timeoutMs ?? 3000;
  const maxBytes = options.maxResponseBytes ?? 64 * 1024;
  const maxSockets = options.maxSockets ?? 64;
  // Keep-alive: a burst of token checks should not pay a TLS handshake each. The idle socket
  // timeout is longer than any call's own timeout (config allows up to 60 s).
  const agentOptions = { keepAlive: true, maxSockets, maxFreeSockets: Math.min(maxSockets, 8), timeout: 65_000 };
  const agent = secure
    ? new HttpsAgent({ ...agentOptions, ...(options.ca !== undefined && { ca: options.ca }) })
    : new HttpAgent(agentOptions);
  const requestOf = (secure ? httpsRequest : httpRequest) as (url: URL, options: RequestOptions, callback: (res: IncomingMessage) => void) => ClientRequest;

  function send(call: LegacyPost): Promise<SoapPostResult> {
    return new Promise<SoapPostResult>((resolve) => {
      let settled = false;
      let request: ClientRequest | null = null;
      const finish = (result: SoapPostResult): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        // Whatever is still open of this call goes: a socket that delivered too much, too
        // slowly or a status we do not read is not given back to the pool.
        if (result.kind === 'unavailable') request?.destroy();
        resolve(result);
      };
      const timer = setTimeout(() => finish(unavailable(`no answer within ${timeoutMs} ms`)), timeoutMs);
      const body = Buffer.from(call.body, 'utf8');
      const target = new URL(url);
      if (call.pathSuffix !== undefined) target.pathname = `${target.pathname.replace(/\/+$/, '')}${call.pathSuffix}`;
      if (call.query !== undefined && call.query !== '') target.search = target.search === '' ? `?${call.query}` : `${target.search}&${call.query}`;
      const statuses = call.statuses ?? [200];
      try {
        request = requestOf(target, {
          method: 'POST',
          agent,
          headers: { ...call.headers, 'content-length': String(body.length) },
        }, (response) => {
          const status = response.statusCode ?? 0;
          if (!statuses.includes(status)) return finish(unavailable(`HTTP ${status}`));
          const declared = Number(response.headers['content-length'] ?? '0');
          if (declared > maxBytes) return finish(unavailable(`an answer over ${maxBytes} bytes`));
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > maxBytes) return finish(unavailable(`an answer over ${maxBytes} bytes`));
            chunks.push(chunk);
          });
          response.on('end', () => finish({ kind: 'response', text: Buffer.concat(chunks).toString('utf8'), status }));
          // 'close' without 'end' first: the old service hung up mid-answer ('end' settles first otherwise).
          response.on('close', () => finish(unavailable('connection failed')));
          response.on('error', () => finish(unavailable('connection failed')));
        });
      } catch {
        // A header value Node refuses (a profile's header name, say): no call was made.
        return finish(unavailable('request refused before sending'));
      }
      request.on('error', (error: NodeJS.ErrnoException) => finish(unavailable(troubleOf(error))));
      request.end(body);
    });
  }

  return {
    post: (operation, envelope) => send({ headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"SVCAPI/${operation}"` }, body: envelope }),
    send,
    close() {
      agent.destroy();
    },
  };
}
