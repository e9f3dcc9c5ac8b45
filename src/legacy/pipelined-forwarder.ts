/**
 * Shadow mode's client of the old Authentication.asmx: the exchanges of legacy-forwarder.ts (the
 * same requests, the same answers, the same kinds of failure), for a fraction of the CPU. Shadow
 * mode sends one request per request it answers, so its client's cost adds to every request:
 * node:http spends about 90 µs of CPU per exchange here (a ClientRequest, an IncomingMessage and
 * their streams, a timer), three times what svcapi-auth spends answering ValidateUserToken.
 *
 * - HTTP/1.1 pipelining on a few keep-alive connections: the exchanges in flight are queued on
 *   a connection in order (a connection takes up to its share of `maxInFlight` before the next
 *   one is opened), and everything queued in one turn of the event loop goes out in one write;
 *   the answers are read in order, several per read.
 * - The answer is parsed here, strictly: anything node:http would refuse (a malformed status
 *   line or header, obs-fold, a header block over 16 KiB, Content-Length twice or beside
 *   Transfer-Encoding, a transfer coding other than chunked last) fails the connection. Headers
 *   come out as rawHeaderPairs gives them (names lower-cased, values as sent, in order), 1xx
 *   answers are skipped, HEAD, 204 and 304 answers have no body, an answer without a length
 *   ends with the connection.
 * - Bounded as legacy-forwarder.ts is: a deadline per exchange (`timeoutMs`, checked on a timer
 *   of a tenth of it: an exchange not answered in time fails the connection, and with it the
 *   exchanges queued behind it, as `timeout`); `maxResponseBytes` against Content-Length before
 *   reading and against the bytes while reading (chunked too); `maxInFlight` exchanges at most,
 *   one more is `busy` at once; no redirect is followed.
 * - An answer saying `Connection: close` (or an HTTP/1.0 one without keep-alive) means the
 *   service did not run the requests queued behind it on that connection (RFC 9112 9.6): those
 *   are sent again, on another connection, within their deadline. Nothing else is ever sent twice.
 * - https with `ca` as node:https would (`legacy.caFile`): certificate and host name checked.
 *
 * Trouble is reported by kind only, as in legacy-forwarder.ts.
 */
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { RawAnswer } from '../compat/answer-compare.js';
import { failureOf, type ForwardFailure, type ForwardRequest, type ForwardResult, type LegacyForwarder, type LegacyForwarderOptions } from './legacy-forwarder.js';

export interface PipelinedForwarderOptions extends LegacyForwarderOptions {
  /** Connections at most (default 4); `maxInFlight` exchanges are spread over them. */
  readonly connections?: number;
}

/** node:http's default limit on an answer's header block (--max-http-header-size). */
const MAX_HEAD_BYTES = 16 * 1024;
/** A chunk-size line (hex digits and extensions) longer than this is not an answer. */
const MAX_CHUNK_LINE = 1024;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** node:http's own rules for what it sends: a path without spaces or controls, header values without controls. */
const INVALID_TARGET = /[^\u0021-\u00ff]/;
const INVALID_VALUE = /[^\t\u0020-\u007e\u0080-\u00ff]/;
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: [^\r\n]*)?$/;
const CRLF = Buffer.from('\r\n');
const HEAD_END = Buffer.from('\r\n\r\n');

interface Exchange {
  readonly method: string;
  readonly request: Buffer;
  readonly deadline: number;
  readonly resolve: (result: ForwardResult) => void;
}

type State = 'head' | 'length' | 'chunk-size' | 'chunk-data' | 'chunk-end' | 'trailers' | 'until-close';

interface Connection {
  readonly socket: Socket;
  /** Exchanges queued on it, in the order sent: the first is the one being answered. */
  readonly queue: Exchange[];
  /** Requests queued this turn, not written yet. */
  outgoing: Buffer[];
  /** The bytes read and not consumed yet. */
  buffer: Buffer | null;
  state: State;
  /** The answer being read. */
  status: number;
  headers: Array<[string, string]>;
  parts: Buffer[];
  size: number;
  /** Bytes of the body (or of the current chunk) still to read. */
  remaining: number;
  /** The answer being read ends the connection (Connection: close, HTTP/1.0, no length). */
  closeAfter: boolean;
  /** No new exchange goes on it: it failed, or its last answer closes it. */
  closing: boolean;
  /** When its queue last became empty, and how long the service keeps idle connections (Keep-Alive: timeout). */
  idleSince: number;
  keepAliveMs: number;
}

export function createPipelinedForwarder(options: PipelinedForwarderOptions): LegacyForwarder {
  const url = new URL(options.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`not an http(s) URL: ${url.protocol}`);
  const secure = url.protocol === 'https:';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = url.port === '' ? (secure ? 443 : 80) : Number(url.port);
  const timeoutMs = options.timeoutMs ?? 3000;
  const maxBytes = options.maxResponseBytes ?? 2 * 1024 * 1024;
  const maxInFlight = options.maxInFlight ?? 64;
  const maxConnections = Math.max(1, Math.min(options.connections ?? 4, maxInFlight));
  // A connection takes its share of the exchanges before another is opened: the more share one
  // write, the less each costs.
  const depth = Math.ceil(maxInFlight / maxConnections);
  // Host as node:http writes it (the port only when it is not the scheme's own).
  const hostHeader = `host: ${url.host}\r\n`;
  const connections: Connection[] = [];
  let inFlight = 0;
  let flushScheduled = false;
  let closed = false;
  let timer: NodeJS.Timeout | null = null;

  function settle(exchange: Exchange, result: ForwardResult): void {
    inFlight -= 1;
    exchange.resolve(result);
  }

  /** The connection is done: its exchanges fail as `reason`, except those `resend` keeps for another. */
  function drop(conn: Connection, reason: ForwardFailure, resend: Exchange[] = []): void {
    conn.closing = true;
    const i = connections.indexOf(conn);
    if (i >= 0) connections.splice(i, 1);
    const failed = conn.queue.splice(0);
    conn.outgoing = [];
    conn.buffer = null;
    conn.socket.destroy();
    const now = Date.now();
    for (const exchange of failed) {
      // Sent again only while its deadline holds: each round answers at least one exchange, so this ends.
      if (resend.includes(exchange) && !closed && now < exchange.deadline) {
        enqueue(exchange);
      } else {
        settle(exchange, { kind: 'failed', reason });
      }
    }
  }

  function open(): Connection {
    const socket: Socket = secure
      ? tlsConnect({ host, port, ALPNProtocols: ['http/1.1'], ...(isIP(host) === 0 && { servername: host }), ...(options.ca !== undefined && { ca: options.ca }) })
      : netConnect({ host, port });
    socket.setNoDelay(true);
    const conn: Connection = {
      socket, queue: [], outgoing: [], buffer: null, state: 'head', status: 0, headers: [], parts: [], size: 0, remaining: 0,
      closeAfter: false, closing: false, idleSince: Date.now(), keepAliveMs: Infinity,
    };
    socket.on('data', (chunk: Buffer) => read(conn, chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => drop(conn, failureOf(error)));
    socket.on('end', () => {
      // An answer that runs until the connection ends is complete now.
      if (conn.state === 'until-close' && conn.queue.length > 0) complete(conn);
      drop(conn, 'connection');
    });
    socket.on('close', () => drop(conn, 'connection'));
    connections.push(conn);
    return conn;
  }

  /** The connection an exchange goes on: the first with room, else a new one, else the least loaded. */
  function pick(): Connection {
    const now = Date.now();
    let least: Connection | undefined;
    for (const conn of [...connections]) {
      // An idle connection the service has likely closed by now is not written to.
      if (conn.queue.length === 0 && now - conn.idleSince > conn.keepAliveMs - 1000) {
        drop(conn, 'connection');
        continue;
      }
      if (conn.queue.length < depth) return conn;
      if (least === undefined || conn.queue.length < least.queue.length) least = conn;
    }
    return connections.length < maxConnections || least === undefined ? open() : least;
  }

  function enqueue(exchange: Exchange): void {
    const conn = pick();
    conn.queue.push(exchange);
    conn.outgoing.push(exchange.request);
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
    if (timer === null) {
      timer = setInterval(checkDeadlines, Math.max(5, Math.min(100, Math.floor(timeoutMs / 10))));
      timer.unref();
    }
  }

  function flush(): void {
    flushScheduled = false;
    for (const conn of connections) {
      if (conn.outgoing.length === 0) continue;
      const bytes = conn.outgoing.length === 1 ? conn.outgoing[0] : Buffer.concat(conn.outgoing);
      conn.outgoing = [];
      if (bytes !== undefined) conn.socket.write(bytes);
    }
  }

  function checkDeadlines(): void {
    const now = Date.now();
    for (const conn of [...connections]) {
      const first = conn.queue[0];
      if (first !== undefined && now >= first.deadline) drop(conn, 'timeout');
    }
    if (inFlight === 0 && timer !== null) {
      clearInterval(timer);
      timer = null;
    }
  }

  /** The answer read is complete: it goes to the first exchange; the connection reads the next. */
  function complete(conn: Connection): void {
    const exchange = conn.queue.shift();
    const body = conn.parts.length === 1 ? (conn.parts[0] ?? Buffer.alloc(0)) : Buffer.concat(conn.parts, conn.size);
    const answer: RawAnswer = { status: conn.status, headers: conn.headers, body };
    conn.state = 'head';
    conn.headers = [];
    conn.parts = [];
    conn.size = 0;
    if (exchange !== undefined) settle(exchange, { kind: 'answer', answer });
    if (conn.queue.length === 0) conn.idleSince = Date.now();
    // The service ran nothing queued behind this answer: those go again, on another connection.
    if (conn.closeAfter) drop(conn, 'connection', [...conn.queue]);
  }

  /** A body's bytes: kept (a copy, not a view that would hold the whole read buffer) within the size limit. */
  function take(conn: Connection, bytes: Buffer): boolean {
    conn.size += bytes.length;
    if (conn.size > maxBytes) {
      failFirst(conn, 'too-large');
      return false;
    }
    conn.parts.push(Buffer.from(bytes));
    return true;
  }

  /** The answer being read fails the connection: its exchange as `reason`, the others behind it as `connection`. */
  function failFirst(conn: Connection, reason: ForwardFailure): void {
    const first = conn.queue.shift();
    if (first !== undefined) settle(first, { kind: 'failed', reason });
    drop(conn, 'connection');
  }

  function read(conn: Connection, chunk: Buffer): void {
    if (conn.closing) return;
    const buf = conn.buffer === null ? chunk : Buffer.concat([conn.buffer, chunk]);
    conn.buffer = null;
    let pos = 0;
    while (pos < buf.length && !conn.closing) {
      if (conn.queue.length === 0) return drop(conn, 'connection');
      switch (conn.state) {
        case 'head': {
          const end = buf.indexOf(HEAD_END, pos);
          if (end < 0) {
            if (buf.length - pos > MAX_HEAD_BYTES) return failFirst(conn, 'connection');
            conn.buffer = buf.subarray(pos);
            return;
          }
          if (end - pos > MAX_HEAD_BYTES || !head(conn, buf.toString('latin1', pos, end))) return failFirst(conn, 'connection');
          pos = end + 4;
          if (conn.closing) return;
          // An answer without a body is complete with its head (an interim one is skipped).
          if (conn.state === 'head' && conn.status !== 0) complete(conn);
          break;
        }
        case 'length': {
          const n = Math.min(conn.remaining, buf.length - pos);
          if (!take(conn, buf.subarray(pos, pos + n))) return;
          pos += n;
          conn.remaining -= n;
          if (conn.remaining === 0) complete(conn);
          break;
        }
        case 'until-close': {
          if (!take(conn, buf.subarray(pos))) return;
          pos = buf.length;
          break;
        }
        case 'chunk-size': {
          const end = buf.indexOf(CRLF, pos);
          if (end < 0) {
            if (buf.length - pos > MAX_CHUNK_LINE) return failFirst(conn, 'connection');
            conn.buffer = buf.subarray(pos);
            return;
          }
          const m = /^0*([0-9a-fA-F]{1,8})(?:;[^\r\n]*)?$/.exec(buf.toString('latin1', pos, end));
          if (end - pos > MAX_CHUNK_LINE || m === null) return failFirst(conn, 'connection');
          pos = end + 2;
          conn.remaining = parseInt(m[1] ?? '0', 16);
          if (conn.size + conn.remaining > maxBytes) return failFirst(conn, 'too-large');
          conn.state = conn.remaining === 0 ? 'trailers' : 'chunk-data';
          break;
        }
        case 'chunk-data': {
          const n = Math.min(conn.remaining, buf.length - pos);
          if (!take(conn, buf.subarray(pos, pos + n))) return;
          pos += n;
          conn.remaining -= n;
          if (conn.remaining === 0) conn.state = 'chunk-end';
          break;
        }
        case 'chunk-end': {
          if (buf.length - pos < 2) {
            conn.buffer = buf.subarray(pos);
            return;
          }
          if (buf[pos] !== 0x0d || buf[pos + 1] !== 0x0a) return failFirst(conn, 'connection');
          pos += 2;
          conn.state = 'chunk-size';
          break;
        }
        case 'trailers': {
          // Trailer fields are read past (node:http keeps them apart from the headers); an empty line ends the answer.
          const end = buf.indexOf(CRLF, pos);
          if (end < 0) {
            if (buf.length - pos > MAX_HEAD_BYTES) return failFirst(conn, 'connection');
            conn.buffer = buf.subarray(pos);
            return;
          }
          const empty = end === pos;
          pos = end + 2;
          if (empty) complete(conn);
          break;
        }
      }
    }
  }

  /**
   * Parses an answer's head (status line and fields, without the blank line). false: not an
   * answer node:http would take. A 1xx other than 101 leaves the state at 'head' with status 0.
   */
  function head(conn: Connection, text: string): boolean {
    const lines = text.split('\r\n');
    const m = STATUS_LINE.exec(lines[0] ?? '');
    if (m === null) return false;
    const status = Number(m[2]);
    const headers: Array<[string, string]> = [];
    let length: number | null = null;
    let chunked = false;
    let close = m[1] === '0';
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i] ?? '';
      const colon = line.indexOf(':');
      if (colon <= 0) return false;
      const name = line.slice(0, colon);
      const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '');
      if (!TOKEN.test(name) || INVALID_VALUE.test(value)) return false;
      const lower = name.toLowerCase();
      headers.push([lower, value]);
      if (lower === 'content-length') {
        if (length !== null || !/^\d{1,15}$/.test(value)) return false;
        length = Number(value);
      } else if (lower === 'transfer-encoding') {
        if (chunked || !/(?:^|,)[ \t]*chunked$/i.test(value)) return false;
        chunked = true;
      } else if (lower === 'connection') {
        const tokens = value.toLowerCase().split(',').map((t) => t.trim());
        if (tokens.includes('close')) close = true;
        else if (m[1] === '0' && tokens.includes('keep-alive')) close = false;
      } else if (lower === 'keep-alive') {
        const seconds = /(?:^|,)\s*timeout=(\d+)/i.exec(value)?.[1];
        if (seconds !== undefined) conn.keepAliveMs = Number(seconds) * 1000;
      }
    }
    if (chunked && length !== null) return false;
    if (status === 101) return false;
    if (status < 200) {
      // An interim answer (100 Continue, 103 Early Hints): the final one follows.
      conn.status = 0;
      conn.state = 'head';
      return true;
    }
    conn.status = status;
    conn.headers = headers;
    conn.closeAfter = close;
    const method = conn.queue[0]?.method;
    if (method === 'HEAD' || status === 204 || status === 304) {
      conn.state = 'head';
    } else if (chunked) {
      conn.state = 'chunk-size';
    } else if (length !== null) {
      if (length > maxBytes) return failFirstLater(conn);
      conn.remaining = length;
      conn.state = length === 0 ? 'head' : 'length';
    } else {
      conn.closeAfter = true;
      conn.state = 'until-close';
    }
    return true;
  }

  /** A declared length over the limit: the exchange fails as too large before anything is read. */
  function failFirstLater(conn: Connection): true {
    failFirst(conn, 'too-large');
    return true;
  }

  function forward(req: ForwardRequest): Promise<ForwardResult> {
    if (closed) return Promise.resolve({ kind: 'failed', reason: 'connection' });
    if (inFlight >= maxInFlight) return Promise.resolve({ kind: 'failed', reason: 'busy' });
    let text = `${req.method} ${req.target} HTTP/1.1\r\n${hostHeader}`;
    if (!TOKEN.test(req.method) || INVALID_TARGET.test(req.target)) return Promise.resolve({ kind: 'failed', reason: 'unsendable' });
    for (const name in req.headers) {
      const value = req.headers[name] ?? '';
      if (!TOKEN.test(name) || INVALID_VALUE.test(value)) return Promise.resolve({ kind: 'failed', reason: 'unsendable' });
      text += `${name}: ${value}\r\n`;
    }
    text += `content-length: ${req.body.byteLength}\r\nconnection: keep-alive\r\n\r\n`;
    const request = req.body.byteLength === 0 ? Buffer.from(text, 'latin1') : Buffer.concat([Buffer.from(text, 'latin1'), req.body]);
    inFlight += 1;
    return new Promise<ForwardResult>((resolve) => {
      enqueue({ method: req.method, request, deadline: Date.now() + timeoutMs, resolve });
    });
  }

  return {
    url,
    forward,
    inFlight: () => inFlight,
    close() {
      closed = true;
      for (const conn of [...connections]) drop(conn, 'connection');
      if (timer !== null) clearInterval(timer);
      timer = null;
    },
  };
}
