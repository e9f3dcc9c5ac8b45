/**
 * HTTP/1.1 over a bare node:net socket, for what a well-behaved client library will not do:
 * announce a body and never send it, stall half way, send oversized or broken heads. Every
 * wait is bounded; only 127.0.0.1 is ever contacted.
 */
import { connect, type Socket } from 'node:net';
import type { ObservedResponse } from './shape.js';

export interface RawResponse extends ObservedResponse {
  /** Interim 1xx status lines seen before the final response (e.g. 100 Continue). */
  readonly interim: readonly number[];
}

export interface Exchange {
  /** The final response, if a complete one arrived. */
  readonly response: RawResponse | null;
  /** All bytes received. */
  readonly raw: Buffer;
  /** Milliseconds from connect until the server closed the connection; null if it stayed open. */
  readonly closedAfterMs: number | null;
  /** Milliseconds from connect until the final response was complete; null if none. */
  readonly answeredAfterMs: number | null;
}

/** Splits `raw` into interim responses and the final one; null while incomplete. */
export function parseResponse(raw: Buffer): RawResponse | null {
  const interim: number[] = [];
  let offset = 0;
  for (;;) {
    const end = raw.indexOf('\r\n\r\n', offset);
    if (end < 0) return null;
    const lines = raw.subarray(offset, end).toString('latin1').split('\r\n');
    const status = Number((lines[0] ?? '').split(' ')[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    if (status >= 100 && status < 200) {
      interim.push(status);
      offset = end + 4;
      continue;
    }
    const length = Number(headers['content-length'] ?? 0);
    const body = raw.subarray(end + 4, end + 4 + length);
    if (body.length < length) return null;
    return { status, headers, body: Buffer.from(body), interim };
  }
}

export function portOf(url: string): number {
  return Number(new URL(url).port);
}

export interface ExchangeOptions {
  /** Give up (and destroy the socket) after this long. */
  readonly waitMs: number;
  /** Stop waiting as soon as a complete response arrived, without waiting for the close. */
  readonly untilResponse?: boolean;
}

/**
 * Connects, writes `chunks` (each written as soon as the previous one was accepted), then
 * waits: for the close, the response, or `waitMs`, whichever first. Write errors (the server
 * closing while we still send) are expected and ignored: the answer is what matters.
 */
export function exchange(port: number, chunks: readonly (string | Buffer)[], options: ExchangeOptions): Promise<Exchange> {
  return new Promise((resolve) => {
    const started = Date.now();
    const received: Buffer[] = [];
    let answeredAfterMs: number | null = null;
    let settled = false;
    const socket = connect(port, '127.0.0.1');
    const finish = (closed: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const raw = Buffer.concat(received);
      if (!closed) socket.destroy();
      resolve({ response: parseResponse(raw), raw, closedAfterMs: closed ? Date.now() - started : null, answeredAfterMs });
    };
    const timer = setTimeout(() => finish(false), options.waitMs);
    socket.on('error', () => undefined);
    socket.on('data', (data) => {
      received.push(data);
      if (answeredAfterMs === null && parseResponse(Buffer.concat(received)) !== null) {
        answeredAfterMs = Date.now() - started;
        if (options.untilResponse) finish(false);
      }
    });
    socket.on('close', () => finish(true));
    socket.on('connect', () => {
      const writeNext = (i: number): void => {
        const chunk = chunks[i];
        if (chunk === undefined || socket.destroyed) return;
        socket.write(chunk, (err) => {
          if (!err) writeNext(i + 1);
        });
      };
      writeNext(0);
    });
  });
}

/** Opens a connection, writes `head` and leaves it hanging; resolves once the bytes were sent. */
export function openStalled(port: number, head: string | Buffer): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('error', reject);
    socket.on('connect', () => {
      socket.write(head, (err) => {
        if (err) reject(err);
        else {
          socket.off('error', reject);
          // Errors after this point (the server giving up on us) are the point of the exercise.
          socket.on('error', () => undefined);
          resolve(socket);
        }
      });
    });
  });
}

export function requestHead(method: string, path: string, headers: Readonly<Record<string, string | number>>): string {
  return `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
}
