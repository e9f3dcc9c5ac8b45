/**
 * A token handed to a client survives a crash of the server right after: the token row is
 * committed (WAL, synchronous=FULL) before the response carrying it is written. Real processes,
 * real kill -9.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, inject, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = join(root, 'dist', 'cli', 'main.js');
const children: ChildProcess[] = [];

interface Server {
  readonly child: ChildProcess;
  readonly url: string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function startServer(dbUrl: string): Promise<Server> {
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--db', dbUrl, '--log-level', 'warn'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /^Service: (http:\/\/\S+)$/m.exec(out);
      if (m?.[1]) resolve({ child, url: m[1], exited });
    });
    void exited.then(({ code }) => reject(new Error(`server exited (${code}) before listening:\n${out}\n${err}`)));
  });
}

function cli(args: string[], input = ''): { status: number | null; output: string } {
  const r = spawnSync(process.execPath, [bin, ...args], { cwd: root, input, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

describe('crash safety', () => {
  it('a token returned by ValidateUser is still valid after kill -9 and restart', async () => {
    const build = inject('distBuild');
    if (!build.ok) throw new Error(`building dist/ failed, cannot start a server:\n${build.output}`);

    const dir = mkdtempSync(join(tmpdir(), 'svcapi-crash-'));
    try {
      const db = `sqlite:${join(dir, 'data', 'auth.db')}`;
      const first = await startServer(db);

      // The operator adds a user from another process while the server runs.
      const added = cli(['user', 'add', 'alice', '--app', '2', '--password-stdin', '--db', db], 'pw\n');
      expect(added.status, added.output).toBe(0);

      const tokens: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${first.url}/ValidateUser`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'login=alice&password=pw&AppId=2&IPAddress=',
        });
        const body = await res.text();
        const m = /<string xmlns="SVCAPI">([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})<\/string>/.exec(body);
        expect(m, body).not.toBeNull();
        tokens.push(m?.[1] ?? '');
      }
      // No graceful anything: the process dies the moment the last response has been read.
      first.child.kill('SIGKILL');
      expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });

      const second = await startServer(db);
      const check = async (token: string): Promise<string> =>
        (await fetch(`${second.url}/ValidateUserToken?token=${encodeURIComponent(token)}`)).text();
      for (const token of tokens) expect(await check(token)).toContain('<boolean xmlns="SVCAPI">true</boolean>');
      expect(await check('00000000-0000-0000-0000-000000000000')).toContain('<boolean xmlns="SVCAPI">false</boolean>');

      second.child.kill('SIGTERM');
      expect(await second.exited).toEqual({ code: 0, signal: null });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
