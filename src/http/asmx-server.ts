/**
 * The listening side of the ASMX application: node:http(s) with IIS's framing (no Keep-Alive
 * header, idle connections closed after 72 s), time limits that cut a stalled body off on time,
 * and http.sys's answers to requests that cannot even be framed. Request handling is app.ts's.
 */
import { createServer, type RequestListener, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { httpSysErrorResponse } from '../wire/error-pages.js';

export interface AsmxServerOptions {
  readonly bodyTimeoutMs: number;
  /** PEM certificate chain and key: HTTPS on the public listener. */
  readonly https?: { readonly cert: string | Buffer; readonly key: string | Buffer };
}

export interface AsmxServer {
  readonly server: HttpServer | HttpsServer;
  /** Resolves to the URL it listens on. */
  listen(address: { host: string; port: number }): Promise<string>;
  /** Stops accepting, closes idle connections, and resolves when the last one ended. */
  close(): Promise<void>;
}

export function createAsmxServer(handle: RequestListener, options: AsmxServerOptions): AsmxServer {
  const bodyTimeoutMs = options.bodyTimeoutMs;
  const serverOptions = {
    // Node only enforces requestTimeout when headersTimeout is not longer, and checks every
    // connectionsCheckingInterval: both follow the body timeout so a stalled body is cut off on time.
    requestTimeout: bodyTimeoutMs,
    headersTimeout: Math.min(bodyTimeoutMs, 60_000),
    connectionsCheckingInterval: Math.max(100, Math.min(Math.floor(bodyTimeoutMs / 4), 30_000)),
    // IIS sends no Keep-Alive header (README "HTTP framing"); Node writes one whenever a
    // keep-alive timeout is set, so keep-alive idleness is bounded by the socket timeout instead.
    keepAliveTimeout: 0,
  };
  const server: HttpServer | HttpsServer = options.https !== undefined
    ? createHttpsServer({ ...serverOptions, cert: options.https.cert, key: options.https.key, minVersion: 'TLSv1.2' }, handle)
    : createServer(serverOptions, handle);
  server.keepAliveTimeout = 0;
  // Idle and stalled connections are closed after 72 s without traffic.
  server.setTimeout(72_000);
  // Requests that cannot even be framed get http.sys's answer.
  server.on('clientError', (error: Error & { code?: string }, socket: Socket) => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    if (socket.writable) {
      socket.write(
        error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? httpSysErrorResponse(408, 'The request took too long to arrive.')
          : error.code === 'HPE_HEADER_OVERFLOW'
            ? httpSysErrorResponse(400, 'The size of the request headers is too long.')
            : httpSysErrorResponse(400, 'The request is badly formed.'),
      );
    }
    socket.destroy();
  });

  return {
    server,
    listen({ host, port }) {
      return new Promise<string>((resolve, reject) => {
        const onError = (error: Error): void => reject(error);
        server.once('error', onError);
        server.listen({ host, port }, () => {
          server.off('error', onError);
          const address = server.address() as AddressInfo;
          const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
          resolve(`${options.https !== undefined ? 'https' : 'http'}://${shown}:${address.port}`);
        });
      });
    },
    close() {
      return new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        server.closeIdleConnections();
      });
    },
  };
}
