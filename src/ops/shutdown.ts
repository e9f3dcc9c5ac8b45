/**
 * Graceful shutdown of the public listener, in this order:
 * 1. readiness turns 503 at once, and every response from now on carries `Connection: close`
 *    (buildApp `draining`), so a load balancer stops sending and clients reconnect elsewhere;
 * 2. the drain delay: still serving normally while the load balancer notices (SIGTERM only; a
 *    Ctrl-C in a terminal skips it);
 * 3. the listener closes: no new connections, idle keep-alive connections closed, requests in flight
 *    finish (a request arriving on a kept-alive connection is still answered, with Connection: close);
 * 4. past `timeoutMs`, the remaining connections are cut.
 * A second SIGINT/SIGTERM during 2-3 skips the rest of the delay and cuts connections at once.
 * Then the caller closes the management listener, writes what is counted in memory for the
 * store (token passthrough's tallies: src/cli/legacy-passthrough.ts close(), awaited), closes the
 * store, and exits 0.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { AsmxApp } from '../http/app.js';
import type { Logger } from 'pino';
import type { Readiness } from './readiness.js';

export interface ShutdownOptions {
  readonly app: AsmxApp;
  readonly readiness: Readiness;
  readonly drainDelayMs: number;
  readonly timeoutMs: number;
  readonly logger?: Logger;
}

export interface ShutdownResult {
  /** Connections had to be cut because requests were still running at the timeout (or a second signal). */
  readonly forced: boolean;
}

/** Resolves on the next SIGINT / SIGTERM (the operator insists); dispose() removes the listeners. */
function nextSignal(): { promise: Promise<string>; dispose: () => void } {
  let dispose = (): void => undefined;
  const promise = new Promise<string>((resolve) => {
    const onInt = (): void => resolve('SIGINT');
    const onTerm = (): void => resolve('SIGTERM');
    process.once('SIGINT', onInt);
    process.once('SIGTERM', onTerm);
    dispose = () => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
    };
  });
  return { promise, dispose: () => dispose() };
}

export async function gracefulShutdown(options: ShutdownOptions): Promise<ShutdownResult> {
  const { app, readiness, logger } = options;
  const hurry = nextSignal();
  const abort = new AbortController();
  try {
    readiness.startDraining();
    logger?.info({ drainDelayMs: options.drainDelayMs, timeoutMs: options.timeoutMs }, 'shutdown: readiness is now 503; draining');

    const insisted = hurry.promise.then((signal) => {
      logger?.warn({ signal }, 'shutdown: second signal, not waiting any longer');
      return 'insisted' as const;
    });
    if (options.drainDelayMs > 0) {
      await Promise.race([sleep(options.drainDelayMs, undefined, { signal: abort.signal }).catch(() => undefined), insisted]);
    }

    let closed = false;
    const closing = app.close().then(() => {
      closed = true;
    });
    // Connections that finish their last request become idle; close them as they do.
    const sweeper = setInterval(() => app.server.closeIdleConnections(), 50);
    try {
      const outcome = await Promise.race([
        closing.then(() => 'closed' as const),
        sleep(options.timeoutMs, undefined, { signal: abort.signal }).then(() => 'timeout' as const, () => 'closed' as const),
        insisted,
      ]);
      if (outcome !== 'closed' && !closed) {
        logger?.warn({ outcome }, 'shutdown: cutting the connections still open');
        app.server.closeAllConnections();
        await closing;
        return { forced: true };
      }
      logger?.info('shutdown: all requests finished');
      return { forced: false };
    } finally {
      clearInterval(sweeper);
    }
  } finally {
    abort.abort();
    hurry.dispose();
  }
}
