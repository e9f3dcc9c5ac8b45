/**
 * How the benchmark's own servers (the ceiling, the bare login) start and stop: listen, print the
 * `Service:` line bench/lib/servers.mjs waits for, keep connections as long as the service does,
 * and close on SIGTERM or SIGINT.
 */
import process from 'node:process';

/** Listens on host:port (0: any free port), says where, and closes the server on a signal. */
export function listenAsService(server, host, port) {
  server.keepAliveTimeout = 72_000;
  server.listen(port, host, () => {
    const address = server.address();
    process.stdout.write(`Service: http://${host}:${address.port}/Authentication.asmx\n`);
  });
  const stop = () => server.close(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
