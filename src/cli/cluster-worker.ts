/**
 * Entry point of a `serve --workers N` worker process (forked by cluster.ts, never run by hand).
 * Waits for its configuration from the primary, then runs the ordinary `serve` path; stops
 * gracefully when the primary asks, or when the primary is gone.
 */
import type { Config } from '../config/config.js';
import type { ClusterMessage } from './cluster.js';
import { serve } from './serve.js';

if (process.send === undefined) {
  process.stderr.write('cluster-worker.js is started by "svcapi-auth serve --workers N", not by hand\n');
  process.exit(2);
}

const stop = new AbortController();
let configured = false;
const config = await new Promise<Config>((resolve) => {
  process.on('message', (message: ClusterMessage) => {
    if (message.type === 'svcapi-auth:config') {
      configured = true;
      resolve(message.config);
    } else if (message.type === 'svcapi-auth:shutdown') {
      if (!configured) process.exit(0);
      stop.abort();
    }
  });
  process.send?.({ type: 'svcapi-auth:ready' } satisfies ClusterMessage);
});
// The primary died (killed without a chance to tell us): do not serve on unsupervised.
process.on('disconnect', () => stop.abort());

let code = 1;
try {
  code = await serve(config, { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env, signal: stop.signal }, {
    announce: (text) => process.send?.({ type: 'svcapi-auth:listening', text } satisfies ClusterMessage),
    integrityChecked: true,
    // The primary's standard output, written by every worker (and the primary).
    sharedStdout: true,
  });
} catch (error) {
  process.stderr.write(`error: ${(error as Error).message}\n`);
}
process.exitCode = code;
if (process.connected) process.disconnect();
// Nothing should keep the process alive now; if something does, do not linger.
setTimeout(() => process.exit(code), 5000).unref();
