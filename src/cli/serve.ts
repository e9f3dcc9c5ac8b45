import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import type { Config } from '../config.js';
import { buildApp } from '../http/app.js';
import { createAuthService } from '../domain/service.js';
import { createArgon2Hasher } from '../domain/password-hasher.js';
import { openStore } from '../store/open-store.js';
import { CliError, type CliIo } from './cli-io.js';

/** Expired tokens are kept a day for investigation, then deleted. */
const TOKEN_RETENTION_MS = 24 * 3600 * 1000;
const HOUSEKEEPING_INTERVAL_MS = 3600 * 1000;

/** How to write the listening host in a URL a person can open. */
function urlHost(host: string, address: AddressInfo): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  if (address.family === 'IPv6' && host.includes(':')) return `[${host}]`;
  return host;
}

/** Resolves on SIGINT / SIGTERM, or when the test's signal aborts. */
function stopRequested(io: CliIo): { promise: Promise<string>; dispose: () => void } {
  let dispose = (): void => undefined;
  const promise = new Promise<string>((resolve) => {
    const onSignal = (name: string) => (): void => resolve(name);
    const onInt = onSignal('SIGINT');
    const onTerm = onSignal('SIGTERM');
    const onAbort = (): void => resolve('abort');
    process.once('SIGINT', onInt);
    process.once('SIGTERM', onTerm);
    io.signal?.addEventListener('abort', onAbort, { once: true });
    if (io.signal?.aborted === true) resolve('abort');
    dispose = () => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      io.signal?.removeEventListener('abort', onAbort);
    };
  });
  return { promise, dispose: () => dispose() };
}

/**
 * Runs the service until asked to stop: opens (and migrates) the store, builds the HTTP app,
 * listens, prints where it is, and on SIGINT/SIGTERM stops accepting, lets requests in flight
 * finish, then closes the store.
 */
export async function serve(config: Config, io: CliIo): Promise<number> {
  const store = await openStore(config.databaseUrl);
  const stop = stopRequested(io);
  let housekeeping: NodeJS.Timeout | undefined;
  try {
    const logger = pino({ level: config.logLevel, base: { service: 'svcapi-auth' } }, io.stdout);
    const service = createAuthService({ store, hasher: createArgon2Hasher(), ticketTtlSeconds: config.tickets.ttlSeconds });
    const app = await buildApp({ service, config, logger });
    try {
      await app.listen({ host: config.host, port: config.port });
    } catch (error) {
      await app.close();
      throw new CliError(`cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`);
    }
    const address = app.server.address() as AddressInfo;
    const base = `http://${urlHost(config.host, address)}:${address.port}/Authentication.asmx`;
    io.stdout.write(`Service: ${base}\nWSDL: ${base}?WSDL\nHelp page: ${base}\n`);

    const purge = (): void => {
      store.deleteExpiredTokens(new Date(Date.now() - TOKEN_RETENTION_MS))
        .catch((error: unknown) => logger.error({ err: error }, 'deleting expired tokens failed'));
    };
    purge();
    housekeeping = setInterval(purge, HOUSEKEEPING_INTERVAL_MS);
    housekeeping.unref();

    const reason = await stop.promise;
    logger.info({ reason }, 'shutting down');
    await app.close();
    return 0;
  } finally {
    if (housekeeping !== undefined) clearInterval(housekeeping);
    stop.dispose();
    await store.close();
  }
}
