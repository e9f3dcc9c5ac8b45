/**
 * Shadow mode's client of the old Authentication.asmx: the exchanges of legacy-forwarder.ts (the
 * same requests, the same answers, the same kinds of failure), for a fraction of the CPU. Shadow
 * mode sends one request per request it answers, so its client's cost adds to every request:
 * node:http spends about 90 µs of CPU per exchange here (a ClientRequest, an IncomingMessage and
 * their streams, a timer), three times what svcapi-auth spends answering ValidateUserToken.
 *
 * The HTTP/1.1 client is undici's (one Client per connection, driven through its dispatch
 * interface: no streams, no per-request timer), with:
 *
 * - keep-alive and pipelining on a few connections: a connection takes up to its share of
 *   `maxInFlight` exchanges before the next is used (as undici's Pool would place them). Only
 *   requests marked idempotent are pipelined; the others wait for the connection to be free
 *   (undici's rule, RFC 9112 9.3.2).
 * - Bounded as legacy-forwarder.ts is: a deadline per exchange (`timeoutMs`, from forward() to
 *   the last byte, checked on one timer of a tenth of it); `maxResponseBytes` against
 *   Content-Length before reading and against the bytes while reading (chunked too);
 *   `maxInFlight` exchanges at most, one more is `busy` at once; no redirect is followed (no
 *   redirect interceptor: a 3xx is an answer like any other).
 * - An exchange past its deadline or its size is answered at once, and its connection is
 *   closed then and there, its Client replaced by a new one: a connection with an answer still
 *   owed on it cannot carry another (HTTP/1.1 answers come in order), and an old service that
 *   hangs never closes it. (Aborting the one request in undici closed the connection too, but
 *   left the request in its Client's queue, and the Client connected again for it, to find it
 *   aborted and keep the new connection idle until its keep-alive ran out: a connection to a
 *   hung old service per timeout, held 4 s.) The other exchanges on the closed connection are
 *   placed again: those never sent, and the idempotent ones sent and unanswered.
 * - Sent twice only as RFC 9112 9.3.1 allows: when a connection closes before an idempotent
 *   request's answer (after a `Connection: close` answer, a broken one ahead of it, or another
 *   exchange's deadline), it is sent again on another connection, within its deadline. A
 *   request not marked idempotent is never pipelined, so never sent again.
 * - https with `ca` (`legacy.caFile`): certificate and host name checked by node:tls.
 *
 * Where undici's answers differ from node:http's (test/legacy/pipelined-forwarder.test.ts lists
 * them): an unsolicited `100 Continue` fails the exchange (ASMX under IIS sends one only to a
 * request with `Expect: 100-continue`, which we never send).
 *
 * `onWork` is told the event-loop time this client spends: sending (forward()) and reading its
 * sockets (parsing, the answers' callbacks), for shadow mode's CPU budget
 * (src/compat/shadow-budget.ts).
 *
 * Trouble is reported by kind only, as in legacy-forwarder.ts.
 */
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { buildConnector as BuildConnector, Client as UndiciClient, Dispatcher } from 'undici';
import type { RawAnswer } from '../compat/answer-compare.js';
import { failureOf, type ForwardFailure, type ForwardRequest, type ForwardResult, type LegacyForwarder, type LegacyForwarderOptions } from './legacy-forwarder.js';

export interface PipelinedForwarderOptions extends LegacyForwarderOptions {
  /** Connections at most (default 4); `maxInFlight` exchanges are spread over them. */
  readonly connections?: number;
  /** Told the event-loop milliseconds spent sending and reading (shadow mode's CPU budget). */
  readonly onWork?: (ms: number) => void;
}

// The two modules of undici this forwarder uses, not its entry point: 'undici' loads all of undici
// (fetch, WebSocket, caches, cookies, proxies), 240 ms of a start's CPU here against 75 ms for
// these (2026-11-29, `node -e "import('undici')"`), and a shadowed server then took about 1 s to
// be ready against 0.6 s without shadowing (bench/startup.mjs). undici declares no "exports", so
// its files are reachable; the tests of this file load them, so an undici that moves them fails
// there, not in production. The types are the entry point's.
const requireUndici = createRequire(import.meta.url);
const Client = requireUndici('undici/lib/dispatcher/client.js') as typeof UndiciClient;
const buildConnector = requireUndici('undici/lib/core/connect.js') as typeof BuildConnector;

/** A failure of ours, given to undici's abort so that the exchange ends as this kind. */
class ExchangeFailure extends Error {
  constructor(readonly reason: ForwardFailure) {
    super(reason);
  }
}

/** Given to a Client closed for another exchange's sake: the exchanges still on it are placed again. */
class ConnectionRetired extends Error {
  constructor() {
    super('connection retired');
  }
}

/** undici's error codes, by the kind of failure they are (the rest, socket and parser errors, are `connection` or `tls`). */
const UNDICI_FAILURES: Readonly<Record<string, ForwardFailure>> = {
  UND_ERR_INVALID_ARG: 'unsendable',
  UND_ERR_CONNECT_TIMEOUT: 'timeout',
  UND_ERR_HEADERS_TIMEOUT: 'timeout',
  UND_ERR_BODY_TIMEOUT: 'timeout',
  UND_ERR_RES_EXCEEDED_MAX_SIZE: 'too-large',
};

function kindOf(error: Error): ForwardFailure {
  if (error instanceof ExchangeFailure) return error.reason;
  const code = (error as NodeJS.ErrnoException).code;
  return (typeof code === 'string' ? UNDICI_FAILURES[code] : undefined) ?? failureOf(error as NodeJS.ErrnoException);
}

/** The answer's header fields as node:http's rawHeaders give them (names lower-cased, values as sent, in order). */
function headerPairs(raw: unknown): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  if (!Array.isArray(raw)) return pairs;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const [name, value] = [raw[i] as Buffer | string, raw[i + 1] as Buffer | string];
    const text = typeof value === 'string' ? value : value.toString('latin1');
    // Without the whitespace around it (RFC 9110 5.5), as node:http gives it: undici keeps trailing spaces.
    const last = text.charCodeAt(text.length - 1);
    pairs.push([(typeof name === 'string' ? name : name.toString('latin1')).toLowerCase(), last === 0x20 || last === 0x09 ? text.replace(/[ \t]+$/, '') : text]);
  }
  return pairs;
}

export function createPipelinedForwarder(options: PipelinedForwarderOptions): LegacyForwarder {
  const url = new URL(options.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`not an http(s) URL: ${url.protocol}`);
  const timeoutMs = options.timeoutMs ?? 3000;
  const maxBytes = options.maxResponseBytes ?? 2 * 1024 * 1024;
  const maxInFlight = options.maxInFlight ?? 64;
  const connections = Math.max(1, Math.min(options.connections ?? 4, maxInFlight));
  const onWork = options.onWork;
  // node:tls checks the certificate against the host name (and sends it as SNI unless it is an address).
  const connector = buildConnector({ timeout: timeoutMs, ...(options.ca !== undefined && { ca: options.ca }) });
  // The exchanges in flight fit on the connections, each taking its share before the next is used.
  const depth = Math.ceil(maxInFlight / connections);
  const base = { origin: url.origin, blocking: false } as const;
  /** One undici Client per connection, its socket once connected, and the exchanges placed on it not yet done with by undici. */
  interface Connection {
    readonly client: UndiciClient;
    socket: Socket | null;
    placed: number;
  }
  function open(): Connection {
    const connect: BuildConnector.connector = (opts, callback) => {
      connector(opts, (...args) => {
        const socket = args[1];
        if (socket !== null) {
          connection.socket = socket;
          if (onWork !== undefined) meterReads(socket, onWork);
        }
        callback(...args);
      });
    };
    // Backstops: the deadline below ends an exchange first.
    const connection: Connection = { client: new Client(url.origin, { pipelining: depth, connect, headersTimeout: timeoutMs, bodyTimeout: timeoutMs }), socket: null, placed: 0 };
    return connection;
  }
  const pool: Connection[] = Array.from({ length: connections }, open);
  /** Exchanges not settled yet, in the order of their deadlines (all are now + timeoutMs). */
  const live = new Set<Exchange>();
  let inFlight = 0;
  let closed = false;
  let timer: NodeJS.Timeout | null = null;

  /** Closes a connection now (its Client replaced by a new one): the exchanges on it are placed again or end. */
  function retire(connection: Connection): void {
    const at = closed ? -1 : pool.indexOf(connection);
    if (at < 0) return;
    pool[at] = open();
    connection.client.destroy(new ConnectionRetired()).catch(() => undefined);
  }

  /** Sockets corked in this turn: the requests placed on one go out in one write. */
  const corked = new Set<Socket>();

  /** On the first connection with room (there is always one: `connections` × depth ≥ maxInFlight). */
  function place(exchange: Exchange): void {
    const connection = pool.find((c) => c.placed < depth) ?? pool[0];
    if (connection === undefined) throw new Error('unreachable: at least one connection');
    connection.placed += 1;
    exchange.placedOn(connection);
    // undici writes each request by itself (cork, write, uncork): inside our cork they wait for
    // the others placed in this turn (shadow mode starts a batch in one turn). On a connection
    // that was idle undici writes in a setImmediate of its own (it first lets the socket show
    // whether the server closed it meanwhile), scheduled by the first dispatch: the uncork is
    // scheduled after it.
    const socket = connection.socket;
    const cork = socket !== null && !socket.destroyed && !corked.has(socket);
    if (cork) socket.cork();
    connection.client.dispatch({ ...base, ...exchange.request }, exchange);
    if (cork) {
      corked.add(socket);
      setImmediate(() => {
        corked.delete(socket);
        socket.uncork();
      });
    }
  }

  class Exchange implements Dispatcher.DispatchHandler {
    private controller: Dispatcher.DispatchController | null = null;
    private connection: Connection | null = null;
    /** undici began sending it on its current connection. */
    private started = false;
    /** undici is done with it on its current connection (answered, failed or the connection retired). */
    private released = false;
    private status = 0;
    private headers: Array<[string, string]> = [];
    private parts: Buffer[] = [];
    private size = 0;
    private settled = false;

    constructor(
      readonly deadline: number,
      readonly request: Pick<Dispatcher.DispatchOptions, 'method' | 'path' | 'headers' | 'body' | 'idempotent'>,
      private readonly resolve: (result: ForwardResult) => void,
    ) {}

    placedOn(connection: Connection): void {
      this.connection = connection;
      this.controller = null;
      this.started = false;
      this.released = false;
    }

    settle(result: ForwardResult): void {
      if (this.settled) return;
      this.settled = true;
      live.delete(this);
      this.resolve(result);
    }

    /** Answered as this failure now, and its connection closed: nothing more can be read from it in order. */
    fail(reason: ForwardFailure): void {
      if (this.settled) return;
      this.settle({ kind: 'failed', reason });
      this.parts = [];
      // Its place is free now: its connection goes with it.
      this.release();
      if (this.connection !== null) retire(this.connection);
    }

    /** undici is done with it on this connection; with `again`, it is placed on another. */
    private release(again = false): void {
      if (this.released) return;
      this.released = true;
      if (this.connection !== null) this.connection.placed -= 1;
      if (again) return place(this);
      inFlight -= 1;
    }

    onRequestStart(controller: Dispatcher.DispatchController): void {
      // Called again when undici sends the request again on the same Client's new connection: the answer starts over.
      this.controller = controller;
      this.started = true;
      this.parts = [];
      this.size = 0;
      // Settled meanwhile (the forwarder closed): not sent.
      if (this.settled) controller.abort(new ExchangeFailure('connection'));
    }

    onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
      if (this.settled) return;
      // An interim answer (103 Early Hints): the final one follows.
      if (statusCode < 200) return;
      const declared = Number(headers['content-length']);
      if (declared > maxBytes) return this.fail('too-large');
      this.status = statusCode;
      this.headers = headerPairs(this.controller?.rawHeaders);
    }

    onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
      if (this.settled) return;
      this.size += chunk.length;
      if (this.size > maxBytes) return this.fail('too-large');
      this.parts.push(chunk);
    }

    onResponseEnd(): void {
      this.release();
      if (this.settled) return;
      // A copy, not views that would keep the connection's read buffers.
      const answer: RawAnswer = { status: this.status, headers: this.headers, body: Buffer.concat(this.parts, this.size) };
      this.parts = [];
      this.settle({ kind: 'answer', answer });
    }

    onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
      this.parts = [];
      // Its connection was closed for another exchange: placed again if it was never sent, or may
      // be sent twice (idempotent); a request that may not be sent twice is never behind another.
      if (error instanceof ConnectionRetired && !this.settled && !closed) {
        if (!this.started || this.request.idempotent === true) return this.release(true);
        this.release();
        return this.settle({ kind: 'failed', reason: 'connection' });
      }
      this.release();
      this.settle({ kind: 'failed', reason: kindOf(error) });
    }
  }

  function checkDeadlines(): void {
    const now = performance.now();
    for (const exchange of live) {
      if (exchange.deadline > now) break;
      exchange.fail('timeout');
    }
    if (live.size === 0 && timer !== null) {
      clearInterval(timer);
      timer = null;
    }
  }

  function forward(req: ForwardRequest): Promise<ForwardResult> {
    if (closed) return Promise.resolve({ kind: 'failed', reason: 'connection' });
    if (inFlight >= maxInFlight) return Promise.resolve({ kind: 'failed', reason: 'busy' });
    const started = performance.now();
    inFlight += 1;
    // undici's own default is GET and HEAD only; the caller knows better (a read-only SOAP operation).
    const idempotent = req.idempotent ?? (req.method === 'GET' || req.method === 'HEAD');
    const request = { method: req.method as Dispatcher.HttpMethod, path: req.target, headers: req.headers, body: req.body, idempotent };
    let exchange: Exchange | undefined;
    const result = new Promise<ForwardResult>((resolve) => {
      exchange = new Exchange(started + timeoutMs, request, resolve);
    });
    if (exchange === undefined) throw new Error('unreachable: a promise executor runs at once');
    live.add(exchange);
    if (timer === null) {
      timer = setInterval(checkDeadlines, Math.max(5, Math.min(100, Math.floor(timeoutMs / 10))));
      timer.unref();
    }
    place(exchange);
    onWork?.(performance.now() - started);
    return result;
  }

  return {
    url,
    forward,
    inFlight: () => inFlight,
    close() {
      closed = true;
      if (timer !== null) clearInterval(timer);
      timer = null;
      for (const exchange of live) exchange.settle({ kind: 'failed', reason: 'connection' });
      for (const connection of pool) connection.client.destroy().catch(() => undefined);
    },
  };
}

/**
 * Tells `onWork` the time spent handling a socket's reads: undici parses in its 'readable'
 * listener and calls the exchanges' handlers from there, so timing the event times them all.
 */
function meterReads(socket: Socket, onWork: (ms: number) => void): void {
  const emit = socket.emit.bind(socket) as (event: string | symbol, ...args: unknown[]) => boolean;
  socket.emit = (event: string | symbol, ...args: unknown[]): boolean => {
    if (event !== 'readable') return emit(event, ...args);
    const started = performance.now();
    try {
      return emit(event, ...args);
    } finally {
      onWork(performance.now() - started);
    }
  };
}
