/**
 * Shadow mode's pipelined client of the old service (src/legacy/pipelined-forwarder.ts) against
 * the node:http one (legacy-forwarder.ts), differentially: a scripted server answers each case
 * with exact bytes, and both clients must return the same result (status, header pairs, body,
 * or the kind of failure), one at a time and all pipelined at once, with the answers written in
 * one piece or a few bytes at a time. Then what only pipelining has: requests sent again after
 * a `Connection: close` (and never otherwise), the socket bound, a timeout failing what waits
 * behind it, https with a CA.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLegacyForwarder, type ForwardRequest, type ForwardResult, type LegacyForwarder } from '../../src/legacy/legacy-forwarder.js';
import { createPipelinedForwarder } from '../../src/legacy/pipelined-forwarder.js';

const big = 'x'.repeat(3000);
/** Each case: the exact answer bytes (and whether the server closes after them). */
const CASES: Record<string, { answer: string | Buffer; close?: boolean; method?: string }> = {
  soap: { answer: 'HTTP/1.1 200 OK\r\nContent-Type: text/xml; charset=utf-8\r\nCache-Control: private, max-age=0\r\nContent-Length: 21\r\n\r\n<r>true</r>\r\n<x/>\r\n\r\n' },
  chunked: { answer: 'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n00A\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n' },
  'chunk-size-space': { answer: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA \r\n0123456789\r\n0\r\n\r\n' },
  'chunked-upper': { answer: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\nB\r\nhello world\r\n0\r\n\r\n' },
  fault: { answer: 'HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/xml; charset=utf-8\r\nContent-Length: 7\r\n\r\n<fault>' },
  'no-reason': { answer: 'HTTP/1.1 404\r\nContent-Length: 2\r\n\r\nno' },
  'no-content': { answer: 'HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n' },
  'not-modified': { answer: 'HTTP/1.1 304 Not Modified\r\nETag: "1"\r\nContent-Length: 10\r\n\r\n' },
  continue: { answer: 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc' },
  'repeated-headers': { answer: 'HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nVary: X\r\nSet-Cookie: b=2\r\nContent-Length: 0\r\n\r\n' },
  'header-spaces': { answer: 'HTTP/1.1 200 OK\r\nX-Spaced:   v  w \t\r\nX-Empty:\r\nContent-Length: 1\r\n\r\n.' },
  redirect: { answer: 'HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/elsewhere\r\nContent-Length: 0\r\n\r\n' },
  'not-utf8': { answer: Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n'), Buffer.from([0xff, 0xfe, 0x00, 0x80])]) },
  'large-ok': { answer: `HTTP/1.1 200 OK\r\nContent-Length: ${big.length}\r\n\r\n${big}` },
  head: { answer: 'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 10\r\n\r\n', method: 'HEAD' },
  'until-close': { answer: 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end', close: true },
  'connection-close': { answer: 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 3\r\n\r\nbad', close: true },
  'http10': { answer: 'HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok', close: true },
  'too-large-declared': { answer: 'HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n' },
  'too-large-chunked': { answer: `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nBB8\r\n${big}\r\nBB8\r\n${big}\r\n0\r\n\r\n` },
  'too-large-close': { answer: `HTTP/1.1 200 OK\r\n\r\n${big}${big}`, close: true },
  'bad-status': { answer: 'HTTP/1.1 abc OK\r\nContent-Length: 0\r\n\r\n' },
  'bad-header': { answer: 'HTTP/1.1 200 OK\r\nBad Header: x\r\nContent-Length: 0\r\n\r\n' },
  'length-and-chunked': { answer: 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n' },
  'two-lengths': { answer: 'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab' },
  'bad-chunk': { answer: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n' },
  'cut-short': { answer: 'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this', close: true },
};
/** Cases after which the connection is gone: not pipelined behind others in the mixed batch. */
const ENDS_CONNECTION = new Set(Object.entries(CASES).filter(([name, c]) => c.close === true || /^(too-large|bad|length-and|two-|chunk-size)/.test(name)).map(([name]) => name));

interface Scripted {
  readonly url: string;
  /** Requests the server read and answered, by their x-id. */
  readonly answered: string[];
  /** Sockets accepted so far. */
  readonly sockets: Set<Socket>;
  fragment: boolean;
  close(): Promise<void>;
}

/** A server that reads pipelined requests and answers each with its case's bytes (in order). */
async function scriptedServer(): Promise<Scripted> {
  const answered: string[] = [];
  const sockets = new Set<Socket>();
  const state = { fragment: false };
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    let buffer = Buffer.alloc(0);
    let chain = Promise.resolve();
    let done = false;
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffer.subarray(0, end).toString('latin1');
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffer.length < end + 4 + length) return;
        buffer = buffer.subarray(end + 4 + length);
        const name = /^\w+ \/case\/([\w-]+)/.exec(head)?.[1] ?? '';
        const id = /\r\nx-id: (\S+)/i.exec(head)?.[1] ?? '';
        const c = CASES[name];
        chain = chain.then(async () => {
          // After a closing answer the server runs nothing more from this connection (RFC 9112 9.6).
          if (done) return;
          if (name === 'hang') return new Promise<void>(() => undefined);
          if (c === undefined) return;
          answered.push(id);
          const bytes = typeof c.answer === 'string' ? Buffer.from(c.answer, 'latin1') : c.answer;
          if (state.fragment) {
            for (let i = 0; i < bytes.length; i += 7) {
              socket.write(bytes.subarray(i, i + 7));
              await new Promise((resolve) => setImmediate(resolve));
            }
          } else {
            socket.write(bytes);
          }
          if (c.close === true) {
            done = true;
            socket.end();
          }
        });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/Authentication.asmx`, answered, sockets,
    get fragment() {
      return state.fragment;
    },
    set fragment(v: boolean) {
      state.fragment = v;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const request = (name: string, id = name): ForwardRequest => ({
  method: CASES[name]?.method ?? 'POST', target: `/case/${name}`,
  headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"SVCAPI/ValidateUserToken"', 'x-id': id }, body: Buffer.from('<e/>'),
});

const OPTIONS = { timeoutMs: 1500, maxResponseBytes: 4000 };

/** A result as compared: the answer's bytes as text (latin1, every byte shown). */
function shown(r: ForwardResult): unknown {
  return r.kind === 'failed' ? r : { status: r.answer.status, headers: r.answer.headers, body: r.answer.body.toString('latin1') };
}

describe('the pipelined client of the old service, against node:http', () => {
  let server: Scripted;
  beforeAll(async () => {
    server = await scriptedServer();
  });
  afterAll(() => server.close());

  async function reference(names: readonly string[]): Promise<unknown[]> {
    const out: unknown[] = [];
    for (const name of names) {
      const http = createLegacyForwarder({ url: server.url, ...OPTIONS });
      out.push(shown(await http.forward(request(name))));
      http.close();
    }
    return out;
  }

  for (const fragment of [false, true]) {
    it(`every case alone gives what node:http gives${fragment ? ' (answers written a few bytes at a time)' : ''}`, async () => {
      server.fragment = fragment;
      const names = Object.keys(CASES);
      const expected = await reference(names);
      const actual: unknown[] = [];
      for (const name of names) {
        const pipelined = createPipelinedForwarder({ url: server.url, ...OPTIONS });
        actual.push(shown(await pipelined.forward(request(name))));
        pipelined.close();
      }
      expect(Object.fromEntries(names.map((n, i) => [n, actual[i]]))).toEqual(Object.fromEntries(names.map((n, i) => [n, expected[i]])));
      // The corpus has answers of both kinds.
      expect(expected.filter((r) => (r as { kind?: string }).kind === 'failed').length).toBeGreaterThan(5);
      expect(expected.filter((r) => (r as { kind?: string }).kind !== 'failed').length).toBeGreaterThan(10);
    });
  }

  it('pipelined: a batch of every case that keeps the connection, many times over, in one turn, on one socket', async () => {
    server.fragment = false;
    const names = Object.keys(CASES).filter((n) => !ENDS_CONNECTION.has(n));
    const expected = await reference(names);
    const before = server.sockets.size;
    const pipelined = createPipelinedForwarder({ url: server.url, ...OPTIONS, maxInFlight: 256, connections: 1 });
    const rounds = 5;
    const results = await Promise.all(Array.from({ length: rounds }, (_, r) => names.map((n) => pipelined.forward(request(n, `${n}#${r}`)))).flat());
    pipelined.close();
    expect(results.map(shown)).toEqual(Array.from({ length: rounds }, () => expected).flat());
    expect(server.sockets.size - before).toBe(1);
  });

  it('after an answer that closes the connection, the requests behind it are sent again, and each is run once', async () => {
    server.fragment = false;
    server.answered.length = 0;
    const names = ['soap', 'connection-close', 'soap', 'chunked', 'http10', 'fault', 'until-close', 'soap'];
    const expected = await reference(names);
    server.answered.length = 0;
    const pipelined = createPipelinedForwarder({ url: server.url, ...OPTIONS, maxInFlight: 64, connections: 1 });
    const results = await Promise.all(names.map((n, i) => pipelined.forward(request(n, `${n}#${i}`))));
    pipelined.close();
    expect(results.map(shown)).toEqual(expected);
    // Every request was run by the server exactly once.
    expect([...server.answered].sort()).toEqual(names.map((n, i) => `${n}#${i}`).sort());
  });

  it('an answer that does not come in time fails its exchange and those behind it as timeouts; the others go on', async () => {
    // Three exchanges a connection: a, hang and b on the first, c and d on the second.
    const pipelined = createPipelinedForwarder({ url: server.url, timeoutMs: 300, maxResponseBytes: 4000, maxInFlight: 6, connections: 2 });
    const hang: ForwardRequest = { ...request('soap'), target: '/case/hang' };
    const results = await Promise.all([request('soap', 'a'), hang, request('soap', 'b'), request('fault', 'c'), request('soap', 'd')].map((r) => pipelined.forward(r)));
    pipelined.close();
    expect(results.map((r) => (r.kind === 'answer' ? r.answer.status : r.reason))).toEqual([200, 'timeout', 'timeout', 500, 200]);
  });

  it('at most maxInFlight exchanges (one more is busy at once), on at most `connections` sockets', async () => {
    const before = server.sockets.size;
    const pipelined = createPipelinedForwarder({ url: server.url, ...OPTIONS, maxInFlight: 6, connections: 3 });
    const pending = Array.from({ length: 7 }, (_, i) => pipelined.forward(request('soap', `s${i}`)));
    const results = await Promise.all(pending);
    pipelined.close();
    expect(results.map((r) => (r.kind === 'answer' ? r.answer.status : r.reason))).toEqual([200, 200, 200, 200, 200, 200, 'busy']);
    expect(server.sockets.size - before).toBe(3);
  });

  it('refuses what node:http refuses to send', async () => {
    const pipelined = createPipelinedForwarder({ url: server.url, ...OPTIONS });
    const http: LegacyForwarder = createLegacyForwarder({ url: server.url, ...OPTIONS });
    for (const bad of [{ ...request('soap'), target: '/case/soap x' }, { ...request('soap'), headers: { 'x-a': 'line\r\nbreak' } }]) {
      expect(await pipelined.forward(bad)).toEqual({ kind: 'failed', reason: 'unsendable' });
      expect(await http.forward(bad)).toEqual({ kind: 'failed', reason: 'unsendable' });
    }
    pipelined.close();
    http.close();
  });

  it('a refused connection is a connection failure', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const pipelined = createPipelinedForwarder({ url: `http://127.0.0.1:${port}/Authentication.asmx`, ...OPTIONS });
    expect(await Promise.all([pipelined.forward(request('soap')), pipelined.forward(request('soap'))])).toEqual([{ kind: 'failed', reason: 'connection' }, { kind: 'failed', reason: 'connection' }]);
    pipelined.close();
  });
});

describe('the pipelined client over https (legacy.caFile)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcapi-pipelined-tls-'));
  let ca: Buffer;
  let url: string;
  let server: ReturnType<typeof createHttpsServer>;
  beforeAll(async () => {
    const [cert, key] = [join(dir, 'cert.pem'), join(dir, 'key.pem')];
    const openssl = spawnSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-days', '1',
      '-addext', 'subjectAltName=DNS:localhost', '-keyout', key, '-out', cert,
    ], { encoding: 'utf8' });
    if (openssl.status !== 0) throw new Error(`openssl failed: ${openssl.stderr}`);
    ca = readFileSync(cert);
    server = createHttpsServer({ cert: ca, key: readFileSync(key) }, (req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`${req.method ?? ''} ${req.url ?? ''}`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://localhost:${(server.address() as AddressInfo).port}/Authentication.asmx`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers with the CA, several pipelined; TLS fails without it, and for another host name', async () => {
    const trusted = createPipelinedForwarder({ url, ...OPTIONS, ca });
    const results = await Promise.all([1, 2, 3].map((i) => trusted.forward({ method: 'GET', target: `/x/${i}`, headers: {}, body: Buffer.alloc(0) })));
    trusted.close();
    expect(results.map((r) => (r.kind === 'answer' ? r.answer.body.toString() : r.reason))).toEqual(['GET /x/1', 'GET /x/2', 'GET /x/3']);
    const untrusted = createPipelinedForwarder({ url, ...OPTIONS });
    expect(await untrusted.forward({ method: 'GET', target: '/x', headers: {}, body: Buffer.alloc(0) })).toEqual({ kind: 'failed', reason: 'tls' });
    untrusted.close();
    // The certificate names localhost, not 127.0.0.1.
    const wrongName = createPipelinedForwarder({ url: url.replace('localhost', '127.0.0.1'), ...OPTIONS, ca });
    expect(await wrongName.forward({ method: 'GET', target: '/x', headers: {}, body: Buffer.alloc(0) })).toEqual({ kind: 'failed', reason: 'tls' });
    wrongName.close();
  });
});
