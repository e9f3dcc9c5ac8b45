/**
 * Real server processes for tests: `node dist/cli/main.js serve --port 0 ...` (dist/ is built by
 * test/global-setup.ts), the printed URL, SOAP 1.1 calls over fetch, and the CLI as a child
 * process. Every child started here is killed by `killAll()` (call it in afterEach/afterAll).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { createAdminService } from '../../src/domain/admin-service.js';
import { createArgon2Hasher } from '../../src/domain/password-hasher.js';
import { openStore } from '../../src/store/open-store.js';
import { buildRequest, parseResult, type Args } from './asmx-client.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = join(ROOT, 'dist', 'cli', 'main.js');
/** The `svcapi-auth` executable (package.json bin): main.js behind the entry that sizes libuv's pool (src/cli/svcapi-auth.cts). */
export const EXECUTABLE = join(ROOT, 'dist', 'cli', 'svcapi-auth.cjs');

/** Settings every spawned server gets: no fixed management port to collide on, no drain wait on SIGTERM. */
export const TEST_SERVER_ENV: Readonly<Record<string, string>> = {
  SVCAPI_MANAGEMENT_PORT: '0',
  SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0',
  SVCAPI_LOG_LEVEL: 'warn',
};

const children = new Set<ChildProcess>();

export interface ServerProcess {
  readonly child: ChildProcess;
  /** e.g. http://127.0.0.1:40123/Authentication.asmx */
  readonly url: string;
  readonly origin: string;
  /** Everything printed so far (stdout + stderr). */
  output(): string;
  /**
   * Resolves with the output once it matches `pattern` (at once if it already does); rejects if
   * the process exits first, or after `timeoutMs` (a hang made a failure, not a wait for a time).
   */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<string>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function requireDist(): void {
  const build = inject('distBuild');
  if (!build.ok) throw new Error(`building dist/ failed, cannot start a server:\n${build.output}`);
}

/**
 * Resolves with `text()` once it matches `pattern`, checked as `child` writes (at once if it
 * already does); rejects if the child exits first, or after `timeoutMs`. `text()` must be fed by
 * 'data' listeners added before this is called, so that it holds each chunk when it is checked.
 */
export async function waitForChildOutput(child: ChildProcess, text: () => string, pattern: RegExp, timeoutMs = 20_000): Promise<string> {
  await waitForChildren([child], () => pattern.test(text()), `output matching ${String(pattern)}`, timeoutMs).catch((error: Error) => {
    throw new Error(`${error.message}:\n${text()}`);
  });
  return text();
}

/**
 * Resolves once `condition()` holds, checked whenever one of `children` writes (and at once);
 * rejects if one of them exits first, or after `timeoutMs`, naming `what` was awaited. The
 * condition reads what the children wrote through 'data' listeners added before this call.
 */
export function waitForChildren(children: readonly ChildProcess[], condition: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (!condition()) return;
      stop();
      resolve();
    };
    const onExit = (): void => {
      if (condition()) return check();
      stop();
      reject(new Error(`a process exited before ${what}`));
    };
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`no ${what} within ${timeoutMs} ms`));
    }, timeoutMs);
    timer.unref();
    const stop = (): void => {
      clearTimeout(timer);
      for (const child of children) {
        child.stdout?.off('data', check);
        child.stderr?.off('data', check);
        child.off('exit', onExit);
      }
    };
    for (const child of children) {
      child.stdout?.on('data', check);
      child.stderr?.on('data', check);
      child.once('exit', onExit);
    }
    if (children.some((child) => child.exitCode !== null || child.signalCode !== null)) onExit();
    else check();
  });
}

/** Starts `svcapi-auth serve --port 0 <args>` (through `script`, main.js by default) and resolves once it printed its URL. */
export function startServer(args: readonly string[], env: Record<string, string> = {}, script = BIN): Promise<ServerProcess> {
  const child = spawn(process.execPath, [script, 'serve', '--port', '0', ...args], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...TEST_SERVER_ENV, ...env },
  });
  children.add(child);
  let out = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    });
  });
  const waitForOutput = (pattern: RegExp, timeoutMs?: number): Promise<string> => waitForChildOutput(child, () => out, pattern, timeoutMs);
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      out += chunk.toString();
      const m = /^Service: (http:\/\/\S+)$/m.exec(out);
      if (m?.[1]) resolve({ child, url: m[1], origin: new URL(m[1]).origin, output: () => out, waitForOutput, exited });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then(({ code, signal }) => reject(new Error(`server exited (${code ?? signal}) before listening:\n${out}`)));
  });
}

/** Runs the CLI in a child process. */
export function runCliProcess(args: readonly string[], input = '', env: Record<string, string> = {}): Promise<{ status: number | null; output: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  children.add(child);
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  child.stdin.end(input);
  return new Promise((resolve) => {
    child.once('exit', (status) => {
      children.delete(child);
      resolve({ status, output });
    });
  });
}

export function killAll(): void {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  children.clear();
}

export interface SoapAnswer {
  readonly status: number;
  readonly body: string;
  readonly ms: number;
}

/** One SOAP 1.1 call, as a WSDL-generated client sends it; never throws for an HTTP status. */
export async function soap(origin: string, operation: string, args: Args, timeoutMs = 10_000): Promise<SoapAnswer> {
  const req = buildRequest('soap11', operation, args);
  const started = performance.now();
  const res = await fetch(`${origin}${req.url}`, { method: req.method, headers: req.headers, body: req.payload ?? null, signal: AbortSignal.timeout(timeoutMs) });
  const body = await res.text();
  return { status: res.status, body, ms: performance.now() - started };
}

/** The result value of a successful SOAP 1.1 call; throws on anything but 200. */
export async function soapResult(origin: string, operation: string, args: Args): Promise<string | boolean> {
  const answer = await soap(origin, operation, args);
  if (answer.status !== 200) throw new Error(`${operation}: HTTP ${answer.status}: ${answer.body}`);
  const value = parseResult('soap11', operation, answer.body);
  if (typeof value !== 'string' && typeof value !== 'boolean') throw new Error(`${operation}: unexpected table result`);
  return value;
}

export const isSoapServerFault = (answer: SoapAnswer): boolean =>
  answer.status === 500 && /<faultcode>soap:Server<\/faultcode>/.test(answer.body);

/**
 * Migrates the database at `db` and gives it what a login ticket needs: user alice (password "pw",
 * application 2) and a login URL for application 2 (http://gps.example/login).
 */
export async function seedTicketWorld(db: string): Promise<void> {
  const store = await openStore(db);
  try {
    const admin = createAdminService({ store, hasher: createArgon2Hasher() });
    if (!(await admin.addUser({ login: 'alice', password: 'pw', appIds: [2] })).ok) throw new Error('cannot add alice');
    if (!(await admin.updateApplication(2, { loginUrl: 'http://gps.example/login' })).ok) throw new Error('cannot set the login URL');
  } finally {
    await store.close();
  }
}
