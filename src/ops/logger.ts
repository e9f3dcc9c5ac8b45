/**
 * The service's logger: pino JSON lines on standard output (or colourised lines for a terminal
 * with --log-pretty), with credentials kept out.
 *
 * What keeps secrets out of the logs, in layers:
 * 1. The HTTP app writes its own access line (src/http/app.ts) with the path only, never the
 *    query string (HTTP GET carries passwords and tokens there), nor any body; nothing else logs requests.
 * 2. The serializers below write a request's path without its query string and no headers, so
 *    a `{ req }` logged by any code cannot carry them either.
 * 3. `redact` censors credential-bearing fields wherever they appear one level deep
 *    (Authorization and Cookie headers, password/token/ticket fields), as a last net.
 * test/ops/log-redaction.test.ts drives real requests carrying unique secrets through every
 * binding, error paths included, and greps everything logged.
 */
import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { Writable } from 'node:stream';
import { pino, stdSerializers, type DestinationStream, type Logger } from 'pino';
import type pretty from 'pino-pretty';
import type { LogLevel } from '../config/config.js';

export const REDACTED = '[redacted]';

/** Paths pino censors (fast-redact syntax). */
export const REDACT_PATHS: readonly string[] = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["proxy-authorization"]',
  'headers.authorization',
  'headers.cookie',
  'headers["proxy-authorization"]',
  'authorization',
  'password',
  '*.password',
  'token',
  '*.token',
  'appToken',
  '*.appToken',
  'ticket',
  '*.ticket',
  'query',
  '*.query',
];

/** The path of a request target without its query string. */
function pathOnly(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined;
  const q = url.indexOf('?');
  return q < 0 ? url : `${url.slice(0, q)}?[redacted]`;
}

type RequestLike = Partial<Pick<IncomingMessage, 'method' | 'url'>> & { raw?: IncomingMessage; id?: unknown; ip?: string };

/** A request as a log field: method, path (query string censored), id, source; no headers, no body. */
function requestSerializer(req: RequestLike): Record<string, unknown> {
  const raw = req.raw ?? req;
  return { method: raw.method, url: pathOnly(raw.url), reqId: req.id, source: req.ip ?? req.raw?.socket?.remoteAddress };
}

function responseSerializer(res: { statusCode?: number }): Record<string, unknown> {
  return { statusCode: res.statusCode };
}

export interface LoggerOptions {
  readonly level: LogLevel;
  readonly pretty?: boolean;
  /** Where lines go (serve's buffered destination, log-destination.ts; a capture stream in tests). */
  readonly stream: NodeJS.WritableStream | DestinationStream;
  /** Colour in pretty mode (default: when the stream is a terminal). */
  readonly colorize?: boolean;
}

/** pino-pretty, loaded only for --log-pretty: ~65 ms of CPU at every start otherwise (2026-11-26). */
function loadPretty(): typeof pretty {
  return createRequire(import.meta.url)('pino-pretty') as typeof pretty;
}

/**
 * pino-pretty writes to a Node stream (it listens on it); serve's buffered destination
 * (log-destination.ts) is pino's bare `{ write }`, so it is wrapped in one for --log-pretty.
 */
function asNodeStream(stream: NodeJS.WritableStream | DestinationStream): NodeJS.WritableStream {
  if (typeof (stream as Partial<NodeJS.WritableStream>).on === 'function') return stream as NodeJS.WritableStream;
  const target = stream as DestinationStream;
  return new Writable({
    decodeStrings: false,
    write(chunk: string | Buffer, _encoding, done): void {
      target.write(typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
      done();
    },
  });
}

export function createLogger(options: LoggerOptions): Logger {
  const destination: DestinationStream = options.pretty === true
    ? loadPretty()({
      destination: asNodeStream(options.stream),
      colorize: options.colorize ?? (options.stream as { isTTY?: boolean }).isTTY === true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname,service',
      sync: true,
    })
    : (options.stream as DestinationStream);
  return pino({
    level: options.level,
    base: { service: 'svcapi-auth' },
    redact: { paths: [...REDACT_PATHS], censor: REDACTED },
    serializers: { req: requestSerializer, request: requestSerializer, res: responseSerializer, reply: responseSerializer, err: stdSerializers.err, error: stdSerializers.err },
  }, destination);
}
