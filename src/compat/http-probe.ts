/**
 * One HTTP exchange with a service under study (`compat learn`, `compat check`), bounded like
 * src/legacy/soap-legacy-authenticator.ts: a deadline for the whole exchange, a ceiling on the
 * answer's size, no redirects followed. It sits on node:http rather than fetch because check must
 * send requests exactly as written (a raw request target, any method, a body that is not what the
 * headers claim) and see the answer's headers as sent.
 *
 * Failures of the exchange itself (refused, reset, timed out, too large, not HTTP) are a
 * ProbeError whose message names the kind of trouble and the request line, never a header or a
 * body (those can carry the password).
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface ProbeLimits {
  /** Connection to last byte (default 10 s). */
  readonly timeoutMs: number;
  /** Largest answer body read (default 8 MiB: a WhatsNew of 100 rows is far smaller). */
  readonly maxBytes: number;
}

export const DEFAULT_PROBE_LIMITS: ProbeLimits = Object.freeze({ timeoutMs: 10_000, maxBytes: 8 * 1024 * 1024 });

export interface ProbeRequest {
  readonly method: string;
  /** Path and query exactly as sent, e.g. `/Authentication.asmx/ValidateUser?login=a`. */
  readonly target: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
}

export interface ProbeResponse {
  readonly status: number;
  /** Header names lower-cased, in the order received (a repeated header appears twice). */
  readonly headers: readonly (readonly [string, string])[];
  readonly body: Buffer;
}

export type ProbeFailure = 'timeout' | 'too-large' | 'refused' | 'reset' | 'not-http' | 'unreachable';

export class ProbeError extends Error {
  constructor(readonly kind: ProbeFailure, readonly origin: string, readonly requestLine: string, detail: string) {
    super(`${origin}: ${requestLine}: ${detail}`);
    this.name = 'ProbeError';
  }
}

export function rawHeaderPairs(raw: readonly string[]): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([(raw[i] ?? '').toLowerCase(), raw[i + 1] ?? '']);
  return pairs;
}

function failureOf(error: NodeJS.ErrnoException): ProbeFailure {
  switch (error.code) {
    case 'ECONNREFUSED':
      return 'refused';
    case 'ECONNRESET':
    case 'EPIPE':
    case 'ECONNABORTED':
      return 'reset';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'unreachable';
    default:
      return typeof error.code === 'string' && error.code.startsWith('HPE_') ? 'not-http' : 'reset';
  }
}

const DESCRIBE: Readonly<Record<ProbeFailure, string>> = {
  timeout: 'no complete answer',
  'too-large': 'the answer is too large',
  refused: 'connection refused',
  reset: 'the connection was closed without an answer',
  'not-http': 'the answer is not HTTP',
  unreachable: 'the host cannot be reached',
};

/** Sends one request to `origin` (scheme, host and port of a URL) and reads the whole answer. */
export function probe(origin: URL, req: ProbeRequest, limits: ProbeLimits = DEFAULT_PROBE_LIMITS): Promise<ProbeResponse> {
  const requestLine = `${req.method} ${req.target.length > 120 ? `${req.target.slice(0, 120)}...` : req.target}`;
  const fail = (kind: ProbeFailure, extra = ''): ProbeError => new ProbeError(kind, origin.origin, requestLine, `${DESCRIBE[kind]}${extra}`);
  return new Promise((resolve, reject) => {
    const body = req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body, 'utf8');
    const headers: Record<string, string | number> = { ...req.headers };
    if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-length')) headers['content-length'] = body.length;
    const send = origin.protocol === 'https:' ? httpsRequest : httpRequest;
    let settled = false;
    const finish = (error: ProbeError | null, response?: ProbeResponse): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error !== null) {
        clientRequest.destroy();
        reject(error);
      } else if (response !== undefined) {
        resolve(response);
      }
    };
    let clientRequest: ReturnType<typeof httpRequest>;
    try {
      clientRequest = send({
        protocol: origin.protocol,
        hostname: origin.hostname.replace(/^\[|\]$/g, ''),
        port: origin.port === '' ? undefined : Number(origin.port),
        method: req.method,
        path: req.target,
        headers,
        agent: false,
      });
    } catch (error) {
      // node refuses a target or header it cannot send (a space, a control character).
      reject(new ProbeError('not-http', origin.origin, requestLine, `cannot be sent (${(error as NodeJS.ErrnoException).code ?? 'invalid request'})`));
      return;
    }
    const timer = setTimeout(() => finish(fail('timeout', ` within ${limits.timeoutMs} ms`)), limits.timeoutMs);
    clientRequest.on('error', (error: NodeJS.ErrnoException) => finish(fail(failureOf(error))));
    clientRequest.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const declared = Number((res.headers as IncomingHttpHeaders)['content-length'] ?? NaN);
      if (Number.isFinite(declared) && declared > limits.maxBytes) {
        finish(fail('too-large', ` (${declared} bytes announced, at most ${limits.maxBytes} read)`));
        return;
      }
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > limits.maxBytes) {
          finish(fail('too-large', ` (over ${limits.maxBytes} bytes)`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('error', (error: NodeJS.ErrnoException) => finish(fail(failureOf(error))));
      res.on('aborted', () => finish(fail('reset')));
      res.on('end', () => finish(null, { status: res.statusCode ?? 0, headers: rawHeaderPairs(res.rawHeaders), body: Buffer.concat(chunks, size) }));
    });
    clientRequest.end(body);
  });
}

/** The first value of a header, or undefined. */
export function headerValue(response: ProbeResponse, name: string): string | undefined {
  const lower = name.toLowerCase();
  return response.headers.find(([n]) => n === lower)?.[1];
}
