/**
 * The access log: one line per answered request, at level info, in pino's own JSON layout (the
 * same line `logger.info({...}, 'request')` writes), so log shippers and pino-pretty read it like
 * every other line. Every operator keeps it on, so it is built for the hot path:
 *
 * - No redaction pass: its fields are fixed and none can carry a secret (the path without its
 *   query string, which is where HTTP GET carries passwords and tokens; never a header or body).
 *   The logger's redaction net (logger.ts) stays for every other line.
 * - No serialiser walk: the line is one template, the constant part (level, pid, hostname,
 *   service) rendered once; only the path and the source address pass through JSON.stringify.
 * - Written to the logger's own destination, which serve makes a buffered asynchronous one
 *   (log-destination.ts): no write system call per request.
 *
 * The path is the one field a client can make long (a request line may hold about 16 KiB): past
 * ACCESS_PATH_JSON_MAX_BYTES it is cut, so that every access line stays within PIPE_BUF, the
 * size `serve --workers` writes whole on the standard output its workers share.
 *
 * Measured on the ValidateUserToken hot path: bench/README.md. Off switch: SVCAPI_ACCESS_LOG_FAST=0
 * writes the line through logger.info as before (same fields, same bytes but for key order).
 * test/ops/access-log.test.ts checks the line is the one pino writes.
 */
import { pino, type Logger } from 'pino';

export interface AccessEntry {
  readonly reqId: string;
  readonly method: string | undefined;
  readonly path: string;
  /** A contract operation name (never user input), or null. */
  readonly operation: string | null;
  readonly binding: string;
  readonly status: number;
  readonly durationMs: number;
  readonly source: string;
}

export type AccessLog = (entry: AccessEntry) => void;

interface PinoInternals {
  readonly [key: symbol]: unknown;
}

/**
 * The logger's destination and bindings, when a line of pino's layout can be written to it from
 * a template (here, and the audit trail's line); else null.
 */
export function pinoTarget(logger: Logger): { write(line: string): void; chindings: string } | null {
  const internals = logger as unknown as PinoInternals;
  const stream = internals[pino.symbols.streamSym] as { write?: (line: string) => unknown } | undefined;
  const chindings = internals[pino.symbols.chindingsSym];
  // Pretty printing (a transform of its own), custom formatters or a message key other than
  // pino's default would make the template wrong: those take the ordinary path.
  if (stream === undefined || typeof stream.write !== 'function' || typeof chindings !== 'string') return null;
  if (internals[pino.symbols.messageKeySym] !== 'msg') return null;
  if ((stream as { [key: symbol]: unknown })[pino.symbols.needsMetadataGsym] === true) return null;
  return { write: (line) => void stream.write?.(line), chindings };
}

/**
 * The most UTF-8 bytes of JSON text an access line gives the path. The rest of the line is at
 * most about 700 bytes (a 255-byte host name, an IPv6 source), so a line stays within PIPE_BUF
 * (4,096): `serve --workers` writes each line whole only up to that size on the pipe or socket its
 * workers share (fd-writer.ts `wholeLines`), and a longer line could be cut by another worker's.
 * The service's own paths are under 60 bytes; a longer one is a client's garbage, kept as far as
 * it fits, with `…(+N)` telling how many code points were dropped (as audit.ts escapeAuditText).
 */
export const ACCESS_PATH_JSON_MAX_BYTES = 3072;

/** Room kept for the `…(+N)` mark: "…" is 3 bytes, "(+" and ")" 3, N up to 10 digits. */
const CUT_MARK_BYTES = 16;

/** The path as the access line gives it: itself, or cut to ACCESS_PATH_JSON_MAX_BYTES of JSON text. */
export function loggedPath(path: string): string {
  // JSON text takes at most 6 bytes per UTF-16 unit (\u00XX): a short path needs no count (every real request).
  if (path.length * 6 + 2 <= ACCESS_PATH_JSON_MAX_BYTES || Buffer.byteLength(JSON.stringify(path)) <= ACCESS_PATH_JSON_MAX_BYTES) return path;
  const points = Array.from(path);
  let bytes = 2 + CUT_MARK_BYTES;
  let kept = 0;
  for (const point of points) {
    // A code point's JSON escape: itself, \" or \\, or \u00XX for a control character.
    const size = Buffer.byteLength(JSON.stringify(point)) - 2;
    if (bytes + size > ACCESS_PATH_JSON_MAX_BYTES) break;
    bytes += size;
    kept += 1;
  }
  return `${points.slice(0, kept).join('')}…(+${points.length - kept})`;
}

/** How many tenths of a millisecond, as the ordinary line rounds it. */
function tenths(ms: number): number {
  return Math.round(ms * 10) / 10;
}

export function createAccessLog(logger: Logger, options: { readonly fast?: boolean } = {}): AccessLog | null {
  if (!logger.isLevelEnabled('info')) return null;
  const target = options.fast === false ? null : pinoTarget(logger);
  if (target === null) {
    return (e) => logger.info({ reqId: e.reqId, method: e.method, path: loggedPath(e.path), operation: e.operation, binding: e.binding, status: e.status, durationMs: tenths(e.durationMs), source: e.source }, 'request');
  }
  const level = logger.levels.values['info'] ?? 30;
  const head = `{"level":${level},"time":`;
  const bindings = `${target.chindings},"reqId":"`;
  return (e) => {
    // reqId is a UUID we generated, method a token Node's parser checked, operation a contract
    // name, binding one of our own words, status and duration numbers: only path and source
    // come from the client and are escaped.
    target.write(`${head}${Date.now()}${bindings}${e.reqId}"${e.method === undefined ? '' : `,"method":${JSON.stringify(e.method)}`},"path":${JSON.stringify(loggedPath(e.path))},"operation":${e.operation === null ? 'null' : `"${e.operation}"`},"binding":"${e.binding}","status":${e.status},"durationMs":${tenths(e.durationMs)},"source":${JSON.stringify(e.source)},"msg":"request"}\n`);
  };
}
