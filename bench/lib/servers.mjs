/**
 * Starting the servers under test and timing their start: from spawn to the first successful
 * `GET /Authentication.asmx?WSDL` (the service is ready to serve when that answers).
 */
import { Buffer } from 'node:buffer';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { URL } from 'node:url';
import { spawnChild } from './proc.mjs';

/**
 * Spawns a server and resolves once it answers `?WSDL`:
 * { name, child, pid, origin, url, readyMs, output(), stop() }.
 */
export async function startServer({ name, file = process.execPath, args, env = process.env, cpu = null, cwd, readyTimeoutMs = 60_000 }) {
  const started = performance.now();
  const child = spawnChild(file, args, { env, cpu, cwd });
  // Until it is ready the output is read as text (the Service: line); then the service writes an
  // access line per request, as under systemd, where journald drains it: from then on the chunks
  // are drained without decoding, the last one kept for error messages. Decoding and
  // concatenating them here cost CPU on the load generator's core and lowered the figures of the
  // servers that log (the default configuration) only.
  let out = '';
  let tail = null;
  const keep = (c) => {
    out += c;
  };
  child.stdout.setEncoding('utf8').on('data', keep);
  child.stderr.setEncoding('utf8').on('data', keep);
  const drain = () => {
    for (const stream of [child.stdout, child.stderr]) {
      stream.removeListener('data', keep);
      stream.setEncoding(null);
      stream.on('data', (chunk) => (tail = chunk));
    }
  };
  let exited = null;
  child.once('exit', (code, signal) => (exited = { code, signal }));

  let url = null;
  let readyMs = null;
  while (performance.now() - started < readyTimeoutMs) {
    if (exited !== null) throw new Error(`${name} exited (${exited.code ?? exited.signal}) before it was ready:\n${out}`);
    url ??= /^Service: (https?:\/\/\S+)$/m.exec(out)?.[1] ?? null;
    if (url !== null) {
      try {
        const res = await globalThis.fetch(`${url}?WSDL`, { signal: globalThis.AbortSignal.timeout(2000) });
        await res.arrayBuffer();
        if (res.status === 200) {
          readyMs = performance.now() - started;
          break;
        }
      } catch {
        // not yet
      }
    }
    await sleep(url === null ? 5 : 10);
  }
  if (readyMs === null) {
    child.kill('SIGKILL');
    throw new Error(`${name} was not ready within ${readyTimeoutMs} ms:\n${out}`);
  }
  const origin = new URL(url).origin;
  drain();
  return {
    name, child, pid: child.pid, origin, url, readyMs,
    output: () => (tail === null ? out : `${out}\n...\n${Buffer.isBuffer(tail) ? tail.toString('utf8') : String(tail)}`),
    /** SIGTERM, then SIGKILL after `graceMs`; resolves once it is gone. */
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = globalThis.setTimeout(() => child.kill('SIGKILL'), graceMs);
      await gone;
      globalThis.clearTimeout(timer);
    },
  };
}
