/**
 * The management listener: health and metrics on their own address (default 127.0.0.1:9464),
 * never on the public port, so they are not exposed to clients and a proxy in front never needs
 * to hide them.
 *
 *   GET /health/live   200 while the process runs its event loop
 *   GET /health/ready  200 when serving and the store is reachable, with its schema applied, and takes writes, else 503
 *   GET /metrics       Prometheus text format
 *   /admin/...         the admin console, when one is mounted (src/console; it answers every
 *                      path under /admin/ itself, with its own session and CSRF checks)
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Readiness } from './readiness.js';

/** Something answering a whole path prefix of its own (the admin console). */
export interface ManagementMount {
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

export interface ManagementServerOptions {
  readonly host: string;
  /** 0: any free port (tests). */
  readonly port: number;
  readonly readiness: Readiness;
  readonly registry: Registry;
  readonly logger?: Logger;
  /** Answers /admin and everything under /admin/ (none: those are 404 like any unknown path). */
  readonly console?: ManagementMount;
}

export interface ManagementServer {
  /** `http://host:port`, with the port actually bound. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

function reply(res: ServerResponse, status: number, contentType: string, body: string, head: boolean): void {
  res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'content-length': Buffer.byteLength(body) });
  res.end(head ? undefined : body);
}

const JSON_TYPE = 'application/json; charset=utf-8';

export async function startManagementServer(options: ManagementServerOptions): Promise<ManagementServer> {
  const { readiness, registry, logger } = options;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const head = req.method === 'HEAD';
    if (options.console !== undefined && (path === '/admin' || path.startsWith('/admin/'))) return options.console.handle(req, res);
    const known = path === '/health/live' || path === '/health/ready' || path === '/metrics';
    if (!known) return reply(res, 404, JSON_TYPE, '{"error":"not found","endpoints":["/health/live","/health/ready","/metrics"]}\n', head);
    if (req.method !== 'GET' && !head) {
      res.setHeader('allow', 'GET, HEAD');
      return reply(res, 405, JSON_TYPE, '{"error":"method not allowed"}\n', head);
    }
    if (path === '/health/live') return reply(res, 200, JSON_TYPE, '{"status":"live"}\n', head);
    if (path === '/health/ready') {
      const report = await readiness.check();
      return reply(res, report.ready ? 200 : 503, JSON_TYPE, `${JSON.stringify(report)}\n`, head);
    }
    return reply(res, 200, registry.contentType, await registry.metrics(), head);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      logger?.error({ err: error, path: (req.url ?? '').split('?')[0] }, 'management request failed');
      // The path only: a console URL's query may hold a login, never anything the log should keep more of.
      if (!res.headersSent) reply(res, 500, JSON_TYPE, '{"error":"internal error"}\n', req.method === 'HEAD');
      else res.destroy();
    });
  });
  // Scrapers and probes open short connections; nothing here needs long keep-alive.
  server.keepAliveTimeout = 5000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: options.host, port: options.port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
