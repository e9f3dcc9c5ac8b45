/**
 * A token handed to a client survives a crash of the server right after: the token row is
 * committed (WAL, synchronous=FULL) before the response carrying it is written. Real processes,
 * real kill -9. With group commit (performance.groupCommit, on by default) the rows of many
 * requests share one commit: every answer sent before the kill still names a stored row.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { killAll, requireDist, runCliProcess, startServer } from './support/server-process.js';

// The shared helper's servers (test/support/server-process.ts) have no drain delay on SIGTERM:
// the graceful stop at the end of each test exits at once instead of serving 5 s more.
afterEach(killAll);

describe('crash safety', () => {
  it('a token returned by ValidateUser is still valid after kill -9 and restart', async () => {
    requireDist();

    const dir = mkdtempSync(join(tmpdir(), 'svcapi-crash-'));
    try {
      const db = `sqlite:${join(dir, 'data', 'auth.db')}`;
      const first = await startServer(['--db', db]);

      // The operator adds a user from another process while the server runs.
      const added = await runCliProcess(['user', 'add', 'alice', '--app', '2', '--password-stdin', '--db', db], 'pw\n');
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

      const second = await startServer(['--db', db]);
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

  it('every ticket and token answered before kill -9 is there after restart, with 32 clients asking at once (group commit)', async () => {
    requireDist();

    const dir = mkdtempSync(join(tmpdir(), 'svcapi-crash-'));
    try {
      const db = `sqlite:${join(dir, 'data', 'auth.db')}`;
      // Brute-force counters off: every login of this test comes from one address.
      const env = { SVCAPI_BRUTE_FORCE_ENABLED: 'false', SVCAPI_GROUP_COMMIT: 'true' };
      const first = await startServer(['--db', db], env);
      for (const args of [['user', 'add', 'alice', '--app', '2', '--password-stdin'], ['app', 'set', '2', '--login-url', 'https://gps.example/login']]) {
        const r = await runCliProcess([...args, '--db', db], 'pw\n');
        expect(r.status, r.output).toBe(0);
      }
      const login = async (): Promise<string | null> => {
        const body = await (await fetch(`${first.url}/ValidateUser`, {
          method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'login=alice&password=pw&AppId=2&IPAddress=',
        })).text();
        return /<string xmlns="SVCAPI">([0-9a-f-]{36})<\/string>/.exec(body)?.[1] ?? null;
      };
      const session = await login();
      expect(session).not.toBeNull();

      // 32 clients ask for tickets (and a few for tokens) without pause; the process is killed
      // the moment the 300th ticket has been read, with requests of every client under way.
      const tickets: string[] = [];
      const tokens: string[] = [];
      let killed = false;
      const client = async (): Promise<void> => {
        while (!killed) {
          try {
            const body = await (await fetch(`${first.url}/GetUserLoginURL?token=${session ?? ''}&AppID=2`)).text();
            const ticket = /ticket=([0-9a-f-]{36})/.exec(body)?.[1];
            if (ticket === undefined || killed) return;
            tickets.push(ticket);
            if (tickets.length >= 300) {
              killed = true;
              first.child.kill('SIGKILL');
            }
          } catch {
            return; // the server is gone
          }
        }
      };
      const logins = async (): Promise<void> => {
        while (!killed) {
          const token = await login().catch(() => null);
          if (token === null || killed) return;
          tokens.push(token);
        }
      };
      await Promise.all([...Array.from({ length: 32 }, client), logins(), logins()]);
      if (!killed) first.child.kill('SIGKILL'); // the clients stopped early: a failed answer
      expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
      expect(tickets).toHaveLength(300);

      const second = await startServer(['--db', db], env);
      const check = async (token: string): Promise<string> =>
        (await fetch(`${second.url}/ValidateUserToken?token=${encodeURIComponent(token)}`)).text();
      // A ticket answers true once (single use): each answered one was stored and never used.
      for (const ticket of tickets) expect(await check(ticket), ticket).toContain('<boolean xmlns="SVCAPI">true</boolean>');
      for (const token of [session ?? '', ...tokens]) expect(await check(token), token).toContain('<boolean xmlns="SVCAPI">true</boolean>');
      expect(await check(tickets[0] ?? '')).toContain('<boolean xmlns="SVCAPI">false</boolean>');

      second.child.kill('SIGTERM');
      expect(await second.exited).toEqual({ code: 0, signal: null });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
