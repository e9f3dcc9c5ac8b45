/**
 * Sockets left to an old service that accepts connections and never answers (a hung IIS worker
 * process): every client of the old service gives up at its deadline, and then its connection
 * must be gone, not left for the old service to close. A connection with a request still
 * unanswered on it cannot be used again (HTTP/1.1 answers come in order), and nothing else
 * closes it: the hung side never will.
 *
 * The stand-in reads everything sent to it (so it sees a client's close at once) and counts, on
 * its side, the connections open, the most open at once, and those that never carried a byte (a
 * connection made after the client had given up, for nothing). Checked for shadow mode's
 * pipelined client (pipelined-forwarder.ts), front mode's node:http one (legacy-forwarder.ts)
 * and the calls of lazy migration, passthrough and adoption (soap-transport.ts).
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLegacyForwarder, type ForwardRequest, type LegacyForwarder } from '../../src/legacy/legacy-forwarder.js';
import { createPipelinedForwarder } from '../../src/legacy/pipelined-forwarder.js';
import { createLegacySoapTransport } from '../../src/legacy/soap-transport.js';

interface Silent {
  readonly url: string;
  /** Connections open now, on the stand-in's side. */
  open(): number;
  /** The most open at once. */
  readonly most: number;
  /** Connections accepted, and those of them that never carried a byte. */
  readonly accepted: number;
  idle(): number;
  /** Resolves once no connection is open (false if some still are after `limitMs`). */
  allClosed(limitMs: number): Promise<boolean>;
  close(): Promise<void>;
}

async function silentLegacy(): Promise<Silent> {
  const sockets = new Set<Socket>();
  const carried = new WeakSet<Socket>();
  const accepted: Socket[] = [];
  let most = 0;
  let onClose: (() => void) | null = null;
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    accepted.push(socket);
    most = Math.max(most, sockets.size);
    socket.on('error', () => undefined);
    // Read (and drop) the requests: a client's FIN is seen as soon as it comes. A request for
    // /too-large is answered with the start of an answer too large to read, and nothing more.
    socket.on('data', (chunk: Buffer) => {
      carried.add(socket);
      if (chunk.includes('/too-large')) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n<start');
    });
    socket.on('close', () => {
      sockets.delete(socket);
      onClose?.();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/Authentication.asmx`,
    open: () => sockets.size,
    get most() {
      return most;
    },
    get accepted() {
      return accepted.length;
    },
    idle: () => accepted.filter((s) => !carried.has(s)).length,
    allClosed(limitMs) {
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          onClose = null;
          resolve(false);
        }, limitMs);
        onClose = () => {
          if (sockets.size > 0) return;
          clearTimeout(timer);
          onClose = null;
          resolve(true);
        };
        onClose();
      });
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const TIMEOUT_MS = 150;
const CONCURRENCY = 2;
/** Time for a client's FIN to reach the stand-in: far less than undici's keep-alive (4 s) or node:http's (65 s). */
const CLOSE_LIMIT_MS = 1500;
/**
 * After the last close, the stand-in waits this long for a connection made for nothing (one a
 * client opens after giving up, as undici did for an aborted request still in its queue). Only
 * a client that makes one can fail for it; a loaded machine can only make such a client pass.
 */
const QUIET_MS = 300;
const ROUNDS = 3;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const request = (id: number, idempotent: boolean): ForwardRequest => ({
  method: 'POST', target: '/Authentication.asmx', idempotent,
  headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"SVCAPI/ValidateUserToken"', 'x-id': String(id) }, body: Buffer.from('<e/>'),
});

describe('clients of an old service that never answers leave no connection open past their deadline', () => {
  let legacy: Silent;
  beforeEach(async () => {
    legacy = await silentLegacy();
  });
  afterEach(() => legacy.close());

  /**
   * After a round: every connection closes, and stays closed. Unless `perRound` is null, none
   * was made for nothing, and at most `perRound` in each round.
   */
  async function quiet(round: number, perRound: number | null = CONCURRENCY): Promise<void> {
    expect(await legacy.allClosed(CLOSE_LIMIT_MS)).toBe(true);
    await sleep(QUIET_MS);
    expect(legacy.open()).toBe(0);
    if (perRound === null) return;
    expect(legacy.idle()).toBe(0);
    expect(legacy.accepted).toBeLessThanOrEqual((round + 1) * perRound);
  }

  /** Rounds of twice the concurrency at once: each exchange times out (or is busy); then the connections must close. */
  async function exercise(forwarder: LegacyForwarder, idempotent: boolean): Promise<void> {
    for (let round = 0; round < ROUNDS; round++) {
      const results = await Promise.all(Array.from({ length: 2 * CONCURRENCY }, (_, i) => forwarder.forward(request(round * 10 + i, idempotent))));
      expect(results.map((r) => (r.kind === 'failed' ? r.reason : r.kind)).sort()).toEqual([...Array(CONCURRENCY).fill('busy'), ...Array(CONCURRENCY).fill('timeout')]);
      // Every deadline has passed and nothing is in flight: nothing of ours is left on the old service.
      expect(forwarder.inFlight()).toBe(0);
      await quiet(round);
    }
    // Bounded by the concurrency all along, and no connection made for nothing after a timeout.
    expect(legacy.most).toBeLessThanOrEqual(CONCURRENCY);
    expect(legacy.accepted).toBe(ROUNDS * CONCURRENCY);
    expect(legacy.idle()).toBe(0);
    forwarder.close();
    expect(await legacy.allClosed(CLOSE_LIMIT_MS)).toBe(true);
  }

  for (const idempotent of [true, false]) {
    it(`shadow mode's pipelined client (${idempotent ? 'read-only operations, pipelined' : 'one request per connection at a time'})`, async () => {
      await exercise(createPipelinedForwarder({ url: legacy.url, timeoutMs: TIMEOUT_MS, maxInFlight: CONCURRENCY, connections: 4 }), idempotent);
    });
  }

  it('shadow mode\'s pipelined client, exchanges pipelined two to a connection', async () => {
    const forwarder = createPipelinedForwarder({ url: legacy.url, timeoutMs: TIMEOUT_MS, maxInFlight: 2 * CONCURRENCY, connections: CONCURRENCY });
    for (let round = 0; round < ROUNDS; round++) {
      const results = await Promise.all(Array.from({ length: 2 * CONCURRENCY }, (_, i) => forwarder.forward(request(round * 10 + i, true))));
      expect(results.map((r) => (r.kind === 'failed' ? r.reason : r.kind))).toEqual(Array(2 * CONCURRENCY).fill('timeout'));
      // An exchange behind one that expired, with time left, is sent again on a new connection.
      await quiet(round, 2 * CONCURRENCY);
    }
    expect(legacy.most).toBeLessThanOrEqual(2 * CONCURRENCY);
    forwarder.close();
  });

  it('shadow mode\'s pipelined client, after an answer too large to read', async () => {
    const forwarder = createPipelinedForwarder({ url: legacy.url, timeoutMs: 5000, maxResponseBytes: 1000, maxInFlight: CONCURRENCY, connections: CONCURRENCY });
    for (let round = 0; round < ROUNDS; round++) {
      const results = await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => forwarder.forward({ ...request(round * 10 + i, true), target: '/too-large' })));
      expect(results).toEqual(Array(CONCURRENCY).fill({ kind: 'failed', reason: 'too-large' }));
      expect(forwarder.inFlight()).toBe(0);
      await quiet(round);
    }
    forwarder.close();
  });

  it('front mode\'s node:http client', async () => {
    await exercise(createLegacyForwarder({ url: legacy.url, timeoutMs: TIMEOUT_MS, maxInFlight: CONCURRENCY }), false);
  });

  it('the SOAP transport (lazy migration, token passthrough and adoption)', async () => {
    // Calls past maxSockets wait for a socket (in Node's agent) within their own deadline: no
    // `busy` here. One that gets a socket as its deadline passes may open a connection and close
    // it at once (so may one destroyed while waiting: the agent connects for it as a socket
    // closes, Node 20); none is left open.
    const transport = createLegacySoapTransport({ url: legacy.url, timeoutMs: TIMEOUT_MS, maxSockets: CONCURRENCY });
    for (let round = 0; round < ROUNDS; round++) {
      const results = await Promise.all(Array.from({ length: 2 * CONCURRENCY }, () => transport.post('ValidateUserToken', '<e/>')));
      expect(results.every((r) => r.kind === 'unavailable' && /no answer within/.test(r.reason))).toBe(true);
      await quiet(round, null);
    }
    expect(legacy.most).toBeLessThanOrEqual(CONCURRENCY);
    expect(legacy.accepted).toBeLessThanOrEqual(ROUNDS * 2 * CONCURRENCY);
    transport.close();
    expect(await legacy.allClosed(CLOSE_LIMIT_MS)).toBe(true);
  });
});
