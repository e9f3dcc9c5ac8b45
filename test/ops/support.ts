/**
 * Helpers for the operations tests: run the CLI in-process with captured output, and
 * spawn the built binary (dist/, built by test/global-setup.ts) as a real server process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { runCliCaptured, type RunResult } from '../support/run-cli.js';
import { waitForChildOutput } from '../support/server-process.js';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const bin = join(root, 'dist', 'cli', 'main.js');

export { sink, type RunResult } from '../support/run-cli.js';

export async function run(args: string[], options: { env?: NodeJS.ProcessEnv; signal?: AbortSignal; stdout?: Writable } = {}): Promise<RunResult> {
  return runCliCaptured(args, options);
}

export interface ServerProcess {
  readonly child: ChildProcess;
  /** http://127.0.0.1:port/Authentication.asmx */
  readonly url: string;
  /** http://127.0.0.1:port of the management listener, if on. */
  readonly management: string | null;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything written to stdout so far (log lines and the start-up lines). */
  output(): string;
  /** Resolves once stdout matches `pattern` (test/support/server-process.ts waitForChildOutput). */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<string>;
}

/** Spawns `node dist/cli/main.js serve --port 0 ...args` and resolves once it prints where it listens. */
export function spawnServer(args: string[], env: NodeJS.ProcessEnv = {}, children?: ChildProcess[]): Promise<ServerProcess> {
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0', ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  children?.push(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let out = '';
  let err = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const service = /^Service: (http:\/\/\S+)$/m.exec(out);
      const management = /^Management: (http:\/\/\S+)/m.exec(out);
      const managementOff = args.includes('off') || env.SVCAPI_MANAGEMENT_PORT === 'off';
      if (service?.[1] && (management?.[1] || managementOff)) {
        resolve({
          child, url: service[1], management: management?.[1] ?? null, exited, output: () => out,
          waitForOutput: (pattern, timeoutMs) => waitForChildOutput(child, () => out, pattern, timeoutMs),
        });
      }
    });
    void exited.then(({ code }) => reject(new Error(`server exited (${code}) before listening:\n${out}\n${err}`)));
  });
}
