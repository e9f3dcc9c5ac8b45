import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { createAuthService } from '../../src/domain/create-auth-service.js';
import { createArgon2Hasher } from '../../src/domain/password-hasher.js';
import { openStore } from '../../src/store/open-store.js';
import { DEFAULT_THROTTLE_POLICY, loginThrottleKey, throttleLimits } from '../../src/domain/login-throttle.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations/sqlite-migrations.js';
import { ctx } from '../support/domain-fakes.js';
import { runCliCaptured, sink } from '../support/run-cli.js';

const root = mkdtempSync(join(tmpdir(), 'svcapi-cli-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let counter = 0;

const run = runCliCaptured;

/** Does the password work, as ValidateUser sees it? */
async function canLogin(dbUrl: string, login: string, password: string, appId = 2): Promise<boolean> {
  const store = await openStore(dbUrl);
  try {
    const service = createAuthService({ store, hasher: createArgon2Hasher() });
    return (await service.validateUser({ login, password, appId, ipAddress: '198.51.100.1' }, ctx)).ok;
  } finally {
    await store.close();
  }
}

async function tokenFor(dbUrl: string, login: string, password: string, appId = 2): Promise<{ valid: () => Promise<boolean> }> {
  const store = await openStore(dbUrl);
  const service = createAuthService({ store, hasher: createArgon2Hasher() });
  const outcome = await service.validateUser({ login, password, appId, ipAddress: '198.51.100.1' }, ctx);
  await store.close();
  if (!outcome.ok) throw new Error('login failed');
  return {
    valid: async () => {
      const s = await openStore(dbUrl);
      try {
        return (await createAuthService({ store: s, hasher: createArgon2Hasher() }).validateUserToken(outcome.token, ctx)).valid;
      } finally {
        await s.close();
      }
    },
  };
}

describe('svcapi-auth CLI', () => {
  let db: string;
  let dbArgs: string[];
  beforeEach(async () => {
    counter += 1;
    db = `sqlite:${join(root, `case-${counter}`, 'auth.db')}`;
    dbArgs = ['--db', db];
    // Only migrate and serve create a database (test/cli/database-safety.test.ts).
    expect((await run(['migrate', ...dbArgs])).code).toBe(0);
  });

  describe('help', () => {
    it('lists the commands and exits 0', async () => {
      const r = await run(['--help']);
      expect(r.code).toBe(0);
      for (const command of ['serve', 'migrate', 'app', 'user', 'news', 'token']) expect(r.out).toContain(command);
    });

    it('documents --password-stdin on user add, and every command takes --db', async () => {
      const r = await run(['user', 'add', '--help']);
      expect(r.code).toBe(0);
      expect(r.out).toContain('--password-stdin');
      for (const command of [['serve'], ['migrate'], ['app', 'add'], ['app', 'list'], ['app', 'set'], ['user', 'add'], ['user', 'passwd'], ['user', 'disable'],
        ['user', 'enable'], ['user', 'grant'], ['user', 'revoke-app'], ['user', 'list'], ['news', 'add'], ['news', 'list'], ['news', 'remove'], ['token', 'revoke']]) {
        const help = await run([...command, '--help']);
        expect(help.code, command.join(' ')).toBe(0);
        expect(help.out, command.join(' ')).toContain('--db <url>');
      }
    });

    it('serve goes through the serve-only program (main.ts) with the whole CLI\'s help, errors and exit codes', async () => {
      const whole = await import('../../src/cli/program.js');
      const captured = async (runner: typeof runCli, argv: string[]): Promise<{ code: number; out: string; err: string }> => {
        const out = sink();
        const err = sink();
        const code = await runner(argv, { stdin: Readable.from([]), stdout: out.stream, stderr: err.stream, env: {} });
        return { code, out: out.text(), err: err.text() };
      };
      for (const argv of [['serve', '--help'], ['serve', '--bogus'], ['serve', '--port', 'eighty'], ['serve', 'extra'], ['serve', '--workers', 'lots'], ['serve', '--password=x']]) {
        const viaMain = await captured(runCli, argv);
        expect(viaMain, argv.join(' ')).toEqual(await captured(whole.runCli, argv));
        expect(viaMain.code, argv.join(' ')).toBe(argv[1] === '--help' ? 0 : 2);
      }
    });

    it('rejects an unknown command or option as a usage error', async () => {
      expect(await run(['frobnicate'])).toMatchObject({ code: 2, err: expect.stringContaining("unknown command 'frobnicate'") });
      expect(await run(['app', 'list', '--colour'])).toMatchObject({ code: 2, err: expect.stringContaining("unknown option '--colour'") });
    });
  });

  describe('migrate and app', () => {
    it('creates and migrates a database; a fresh one holds only GPS (AppID 2)', async () => {
      db = `sqlite:${join(root, `case-${counter}`, 'new', 'auth.db')}`;
      dbArgs = ['--db', db];
      expect(await run(['migrate', ...dbArgs])).toMatchObject({ code: 0, out: `Database ${db} is at schema version ${Math.max(...SQLITE_MIGRATIONS.map((m) => m.version))}\n` });
      const r = await run(['app', 'list', '--json', ...dbArgs]);
      expect(r.code).toBe(0);
      const apps = r.out.trim().split('\n').map((l) => JSON.parse(l) as { appId: number; name: string; requireIp: boolean });
      expect(apps).toEqual([expect.objectContaining({ appId: 2, name: 'GPS', requireIp: false })]);
      expect(await run(['user', 'list', ...dbArgs])).toMatchObject({ code: 0, out: 'LOGIN  ENABLED  APPS  CREATED  LAST-LOGIN\n' });
    });

    it('takes the database from DATABASE_URL when --db is absent', async () => {
      const r = await run(['app', 'add', '7', 'Portal'], { env: { DATABASE_URL: db } });
      expect(r.code).toBe(0);
      expect((await run(['app', 'list', ...dbArgs])).out).toContain('Portal');
    });

    it('adds and changes applications', async () => {
      const add = await run(['app', 'add', '7', 'Portal', '--login-url', 'https://portal.example/login', '--token-lifetime', '8h', '--idle-timeout', '30m', '--default-language', 'pt-br', ...dbArgs]);
      expect(add).toMatchObject({ code: 0, out: expect.stringContaining('Added AppID 7 "Portal"') });
      expect(add.out).toContain('token lifetime 8h, idle timeout 30m, default language pt-BR');
      const set = await run(['app', 'set', '7', '--no-require-ip', '--no-idle-timeout', '--no-login-url', '--name', 'Portal 2', ...dbArgs]);
      expect(set).toMatchObject({ code: 0, out: expect.stringContaining('AppID 7 "Portal 2" (enabled, requireIp no') });
      expect(set.out).toContain('idle timeout none');
      expect(set.out).toContain('login URL none');
      const list = await run(['app', 'list', ...dbArgs]);
      expect(list.out).toMatch(/^7\s+Portal 2\s+yes\s+no\s+8h\s+-\s+pt-BR\s+-\s+-$/m);
    });

    it('sets, replaces and clears the trusted callers of an application', async () => {
      const add = await run(['app', 'add', '7', 'Portal', '--trusted-caller', '10.0.0.5', ...dbArgs]);
      expect(add.out).toContain('trusted callers 10.0.0.5)');
      const set = await run(['app', 'set', '7', '--trusted-caller', '10.1.0.0/16', '--trusted-caller', '2001:DB8::/48', '--trusted-caller', '10.1.0.0/16', ...dbArgs]);
      expect(set).toMatchObject({ code: 0, out: expect.stringContaining('trusted callers 10.1.0.0/16 2001:db8::/48)') });
      expect((await run(['app', 'list', ...dbArgs])).out).toMatch(/^7\s+Portal .*\s10\.1\.0\.0\/16,2001:db8::\/48$/m);
      const json = await run(['app', 'list', '--json', ...dbArgs]);
      expect(json.out).toContain('"trustedCallers":["10.1.0.0/16","2001:db8::/48"]');
      const bad = await run(['app', 'set', '7', '--trusted-caller', '10.0.0.0/33', ...dbArgs]);
      expect(bad).toMatchObject({ code: 1, err: expect.stringContaining('a trusted caller must be an IP address or CIDR range') });
      expect((await run(['app', 'set', '7', '--trusted-caller', '0.0.0.0/0', ...dbArgs])).err).toContain('must not cover every address');
      const both = await run(['app', 'set', '7', '--trusted-caller', '10.0.0.5', '--no-trusted-callers', ...dbArgs]);
      expect(both).toMatchObject({ code: 2, err: expect.stringContaining('contradict') });
      const cleared = await run(['app', 'set', '7', '--no-trusted-callers', ...dbArgs]);
      expect(cleared).toMatchObject({ code: 0, out: expect.stringContaining('trusted callers none)') });
    });

    it('refuses bad application input with a message and a non-zero exit', async () => {
      const cases: [string[], number, RegExp][] = [
        [['app', 'add', '2', 'Again'], 1, /an application with AppID 2 already exists/],
        [['app', 'add', '0', 'Zero'], 1, /AppID must be an integer from 1/],
        [['app', 'add', 'seven', 'X'], 2, /value 'seven' is invalid for argument 'appId'/],
        [['app', 'add', '7', 'X', '--login-url', 'portal/login'], 1, /login URL must be an absolute URL/],
        [['app', 'add', '7', 'X', '--token-lifetime', 'forever'], 2, /expected a duration/],
        [['app', 'set', '404', '--name', 'x'], 1, /no application with AppID 404/],
        [['app', 'set', '2'], 2, /nothing to change/],
        [['app', 'set', '2', '--enable', '--disable'], 2, /contradict/],
      ];
      for (const [args, code, message] of cases) {
        const r = await run([...args, ...dbArgs]);
        expect(r.code, args.join(' ')).toBe(code);
        expect(r.err, args.join(' ')).toMatch(message);
      }
    });
  });

  describe('users and passwords', () => {
    it('adds a user with --password-stdin, removing exactly one trailing newline', async () => {
      const r = await run(['user', 'add', 'alice', '--app', '2', '--password-stdin', ...dbArgs], { stdin: 'pw\n' });
      expect(r).toMatchObject({ code: 0, out: 'Added user "alice" (enabled, applications 2)\n', err: '' });
      expect(await canLogin(db, 'ALICE', 'pw')).toBe(true);
      await run(['user', 'add', 'bob', '--app', '2', '--password-stdin', ...dbArgs], { stdin: ' two words \n' });
      expect(await canLogin(db, 'bob', ' two words ')).toBe(true);
      expect(await canLogin(db, 'bob', 'two words')).toBe(false);
      // Only one newline goes: a second one stays in the password, where RFC 8265 OpaqueString refuses it (a control character).
      const twoNewlines = await run(['user', 'add', 'carol', '--app', '2', '--password-stdin', ...dbArgs], { stdin: 'pw\n\n' });
      expect(twoNewlines.code).toBe(1);
      expect(twoNewlines.err).toContain('the password must not contain invisible or control characters (U+000A)');
    });

    it('never accepts a password as an argument, and creates nothing', async () => {
      for (const args of [['--password', 'pw'], ['--password=pw'], ['--passwd', 'pw']]) {
        const r = await run(['user', 'add', 'mallory', '--app', '2', ...args, ...dbArgs]);
        expect(r.code).toBe(2);
        expect(r.err).toContain('passwords are never accepted as arguments');
      }
      expect((await run(['user', 'list', ...dbArgs])).out).not.toContain('mallory');
    });

    it('refuses to prompt when stdin is not a terminal and --password-stdin is missing', async () => {
      const r = await run(['user', 'add', 'carol', '--app', '2', ...dbArgs], { stdin: 'pw\n' });
      expect(r).toMatchObject({ code: 2, err: expect.stringContaining('stdin is not a terminal') });
    });

    it('prompts on a terminal without echoing, twice for a new password', async () => {
      const tty = Object.assign(new PassThrough(), { isTTY: true });
      tty.end('s3cret\ns3cret\n');
      const r = await run(['user', 'add', 'dave', '--app', '2', ...dbArgs], { stdin: tty });
      expect(r.code).toBe(0);
      expect(r.err).toContain('Password: ');
      expect(r.err).toContain('Repeat password: ');
      expect(r.out + r.err).not.toContain('s3cret');
      expect(await canLogin(db, 'dave', 's3cret')).toBe(true);

      const mismatch = Object.assign(new PassThrough(), { isTTY: true });
      mismatch.end('one\ntwo\n');
      expect(await run(['user', 'add', 'erin', '--app', '2', ...dbArgs], { stdin: mismatch })).toMatchObject({ code: 1, err: expect.stringContaining('do not match') });
    });

    it('refuses bad user input with a message and a non-zero exit', async () => {
      await run(['user', 'add', 'alice', '--app', '2', '--password-stdin', ...dbArgs], { stdin: 'pw' });
      const cases: [string[], string, number, RegExp][] = [
        [['user', 'add', 'ALICE', '--app', '2', '--password-stdin'], 'pw', 1, /already exists \(logins are case-insensitive\)/],
        [['user', 'add', 'bob', '--app', '9', '--password-stdin'], 'pw', 1, /no application with AppID 9/],
        [['user', 'add', 'bob', '--password-stdin'], 'pw', 2, /required option '--app <appId>' not specified/],
        [['user', 'add', 'bob', '--app', '2', '--password-stdin'], '', 1, /password must not be empty/],
        [['user', 'add', 'bob', '--app', '2', '--password-stdin'], '\n', 1, /password must not be empty/],
        [['user', 'passwd', 'nobody', '--password-stdin'], 'pw', 1, /no user with login "nobody"/],
        [['user', 'disable', 'nobody'], '', 1, /no user with login "nobody"/],
        [['user', 'grant', 'alice', '--app', '404'], '', 1, /no application with AppID 404/],
        [['user', 'revoke-app', 'alice', '--app', '404'], '', 1, /no grant for AppID 404/],
        [['user', 'list', '--app', '404'], '', 1, /no application with AppID 404/],
      ];
      for (const [args, stdin, code, message] of cases) {
        const r = await run([...args, ...dbArgs], { stdin });
        expect(r.code, args.join(' ')).toBe(code);
        expect(r.err, args.join(' ')).toMatch(message);
      }
    });

    it('changes passwords, disables, enables, grants and withdraws — revoking tokens where it says so', async () => {
      await run(['app', 'add', '7', 'Portal', '--no-require-ip', ...dbArgs]);
      await run(['user', 'add', 'alice', '--app', '2', '--password-stdin', ...dbArgs], { stdin: 'pw' });

      const first = await tokenFor(db, 'alice', 'pw');
      expect(await run(['user', 'passwd', 'alice', '--password-stdin', ...dbArgs], { stdin: 'pw2\n' })).toMatchObject({ code: 0, out: expect.stringContaining('existing tokens revoked') });
      expect(await first.valid()).toBe(false);
      expect(await canLogin(db, 'alice', 'pw')).toBe(false);
      expect(await canLogin(db, 'alice', 'pw2')).toBe(true);

      const second = await tokenFor(db, 'alice', 'pw2');
      expect((await run(['user', 'disable', 'alice', ...dbArgs])).code).toBe(0);
      expect(await second.valid()).toBe(false);
      expect(await canLogin(db, 'alice', 'pw2')).toBe(false);
      expect((await run(['user', 'enable', 'alice', ...dbArgs])).code).toBe(0);
      expect(await canLogin(db, 'alice', 'pw2')).toBe(true);

      expect(await canLogin(db, 'alice', 'pw2', 7)).toBe(false);
      expect(await run(['user', 'grant', 'alice', '--app', '7', ...dbArgs])).toMatchObject({ code: 0, out: expect.stringContaining('applications 2, 7') });
      const onPortal = await tokenFor(db, 'alice', 'pw2', 7);
      expect(await run(['user', 'revoke-app', 'alice', '--app', '7', ...dbArgs])).toMatchObject({ code: 0, out: expect.stringContaining('applications 2)') });
      expect(await onPortal.valid()).toBe(false);

      const list = await run(['user', 'list', '--json', ...dbArgs]);
      expect(JSON.parse(list.out.trim())).toMatchObject({ login: 'alice', enabled: true, appIds: [2] });
      expect(list.out).not.toContain('argon2');
    });
  });

  describe('news', () => {
    it('adds, lists and removes news items', async () => {
      const add = await run(['news', 'add', '--app', '2', '--title', 'Hello', '--body', 'World', '--language', 'pt-br', '--min-version', '1.2', '--members-only', '--published-at', '2025-01-01T00:00:00Z', ...dbArgs]);
      expect(add).toMatchObject({ code: 0, out: expect.stringMatching(/^Added news (\d+) for AppID 2 \(pt-BR\): Hello\n$/) });
      const bodyFile = join(root, `body-${counter}.txt`);
      writeFileSync(bodyFile, 'From a file');
      expect((await run(['news', 'add', '--app', '2', '--title', 'Second', '--body-file', bodyFile, ...dbArgs])).code).toBe(0);
      const list = await run(['news', 'list', '--json', ...dbArgs]);
      const items = list.out.trim().split('\n').map((l) => JSON.parse(l) as { newsId: number; title: string; body: string; membersOnly: boolean; minVersion: string | null; language: string });
      expect(items.map((n) => n.title)).toEqual(['Second', 'Hello']);
      expect(items[0]).toMatchObject({ body: 'From a file', language: 'en', membersOnly: false });
      expect(items[1]).toMatchObject({ minVersion: '1.2', membersOnly: true });
      const id = items[1]?.newsId ?? 0;
      expect(await run(['news', 'remove', String(id), ...dbArgs])).toMatchObject({ code: 0, out: `Removed news ${id}: Hello\n` });
      expect(await run(['news', 'remove', String(id), ...dbArgs])).toMatchObject({ code: 1, err: expect.stringContaining(`no news item with id ${id}`) });
    });

    it('adds news attributes with --attr KEY=VALUE (repeatable) and lists them', async () => {
      const add = await run(['news', 'add', '--app', '2', '--title', 'Promo', '--body', 'b', '--attr', 'Destaque=true', '--attr', 'Categoria=a=b c', ...dbArgs]);
      expect(add.code, add.err).toBe(0);
      const items = (await run(['news', 'list', '--json', ...dbArgs])).out.trim().split('\n').map((l) => JSON.parse(l) as { title: string; attributes: Record<string, string> });
      expect(items.find((n) => n.title === 'Promo')?.attributes).toEqual({ Categoria: 'a=b c', Destaque: 'true' });
      const table = (await run(['news', 'list', ...dbArgs])).out;
      expect(table.split('\n')[0]).toMatch(/MEMBERS\s+ATTRIBUTES\s+TITLE/);
      expect(table).toMatch(/Categoria=a=b c;Destaque=true\s+Promo/);
      for (const [args, message] of [
        [['--attr', 'novalue'], /expected KEY=VALUE/],
        [['--attr', 'a=1', '--attr', 'a=2'], /attribute a is given twice/],
        [['--attr', 'bad name=1'], /bad attribute name "bad name"/],
        [['--attr', 'bell=\u0007'], /character XML cannot carry/],
      ] as const) {
        const r = await run(['news', 'add', '--app', '2', '--title', 'T', '--body', 'b', ...args, ...dbArgs]);
        expect(r.code, args.join(' ')).not.toBe(0);
        expect(r.err, args.join(' ')).toMatch(message);
      }
    });

    it('refuses bad news input with a message and a non-zero exit', async () => {
      const base = ['news', 'add', '--app', '2', '--title', 'T'];
      const cases: [string[], number, RegExp][] = [
        [[...base, '--body', 'b', '--min-version', '1.x'], 1, /bad minimum version "1.x"/],
        [[...base, '--body', 'b', '--min-version', '3', '--max-version', '2'], 1, /above the maximum/],
        [[...base, '--body', 'b', '--published-at', 'yesterday'], 2, /expected an ISO 8601 date/],
        [[...base, '--body', 'b', '--language', '!!'], 1, /not a language tag/],
        [[...base], 2, /exactly one of --body and --body-file/],
        [[...base, '--body', 'b', '--body-file', 'x'], 2, /exactly one of --body and --body-file/],
        [[...base, '--body-file', join(root, 'missing.txt')], 1, /cannot read --body-file/],
        [['news', 'add', '--app', '404', '--title', 'T', '--body', 'b'], 1, /no application with AppID 404/],
      ];
      for (const [args, code, message] of cases) {
        const r = await run([...args, ...dbArgs]);
        expect(r.code, args.join(' ')).toBe(code);
        expect(r.err, args.join(' ')).toMatch(message);
      }
    });
  });

  describe('tokens', () => {
    it('revokes one user\'s tokens or all of them', async () => {
      await run(['user', 'add', 'alice', '--app', '2', '--password-stdin', ...dbArgs], { stdin: 'pw' });
      await run(['user', 'add', 'bob', '--app', '2', '--password-stdin', ...dbArgs], { stdin: 'pw' });
      const a = await tokenFor(db, 'alice', 'pw');
      const b = await tokenFor(db, 'bob', 'pw');
      expect(await run(['token', 'revoke', '--user', 'ALICE', ...dbArgs])).toMatchObject({ code: 0, out: 'Revoked 1 token(s)\n' });
      expect([await a.valid(), await b.valid()]).toEqual([false, true]);
      expect(await run(['token', 'revoke', '--all', ...dbArgs])).toMatchObject({ code: 0, out: 'Revoked 1 token(s)\n' });
      expect(await b.valid()).toBe(false);
    });

    it('needs exactly one of --user and --all', async () => {
      expect(await run(['token', 'revoke', ...dbArgs])).toMatchObject({ code: 2, err: expect.stringContaining('exactly one of --user <login> and --all') });
      expect((await run(['token', 'revoke', '--all', '--user', 'x', ...dbArgs])).code).toBe(2);
      expect(await run(['token', 'revoke', '--user', 'nobody', ...dbArgs])).toMatchObject({ code: 1, err: expect.stringContaining('no user') });
    });
  });

  describe('brute-force counters of a login (user throttle)', () => {
    const limits = throttleLimits(DEFAULT_THROTTLE_POLICY);
    /** Counts attempts as ValidateUser would, straight into the database: `ok` for a success. */
    async function attempts(list: readonly { readonly source: string; readonly ok?: boolean }[]): Promise<void> {
      const store = await openStore(db);
      try {
        for (const a of list) {
          const attempt = { loginHash: loginThrottleKey('alice'), source: a.source, now: new Date() };
          expect((await store.reserveLoginAttempt(attempt, limits)).granted).toBe(true);
          await (a.ok === true ? store.recordLoginSuccess(attempt) : store.recordLoginFailure(attempt, limits));
        }
      } finally {
        await store.close();
      }
    }
    async function newSourceGranted(): Promise<boolean> {
      const store = await openStore(db);
      try {
        const attempt = { loginHash: loginThrottleKey('alice'), source: '203.0.113.250', now: new Date() };
        const r = await store.reserveLoginAttempt(attempt, limits);
        if (r.granted) await store.releaseLoginAttempt(attempt);
        return r.granted;
      } finally {
        await store.close();
      }
    }

    it('shows the login ceiling, known sources and blocked sources, and resets them (audited)', async () => {
      expect((await run(['user', 'add', 'alice', '--app', '2', '--password-stdin', ...dbArgs], { stdin: 'alice-pw' })).code).toBe(0);
      const fresh = await run(['user', 'throttle', 'alice', ...dbArgs]);
      expect(fresh).toMatchObject({ code: 0, err: '' });
      expect(fresh.out).toContain('Login "alice": a user\n');
      expect(fresh.out).toContain('Login ceiling: 0 of 100 failures in the window; not tripped\n');
      expect(fresh.out).toContain('Known sources (a success within 30 days): 0\n');

      // Her usual place, a source that guessed 5 times (blocked), 95 more guessers: the ceiling trips.
      await attempts([
        { source: '192.0.2.44', ok: true },
        ...Array.from({ length: 5 }, () => ({ source: '198.51.100.200' })),
        ...Array.from({ length: 95 }, (_, i) => ({ source: `10.0.${i}.1` })),
      ]);
      expect(await newSourceGranted()).toBe(false);
      const tripped = await run(['user', 'throttle', 'ALICE', ...dbArgs]);
      expect(tripped.code).toBe(0);
      expect(tripped.out).toMatch(/^Login ceiling: 100 of 100 failures in the window; TRIPPED until \d{4}-\d\d-\d\dT[\d:.]+Z: new sources are refused, known sources are still verified$/m);
      expect(tripped.out).toContain('Known sources (a success within 30 days): 1\n  192.0.2.44  last success ');
      expect(tripped.out).toContain('Sources with failures or verifications under way for this login: 96; the 20 with most failures, 1 of them blocked:\n');
      expect(tripped.out).toMatch(/^ {2}198\.51\.100\.200 +5 +0 +\d{4}-/m);
      expect(tripped.out).not.toContain('alice-pw');
      const json = JSON.parse((await run(['user', 'throttle', 'alice', '--json', ...dbArgs])).out) as Record<string, unknown>;
      expect(json).toMatchObject({ login: 'alice', enabled: true, userExists: true, failures: 100, limit: 100, tripped: true, pairCount: 96, knownSourceCount: 1, knownSourceDays: 30 });
      expect(json.pairs).toHaveLength(20);
      // The limits are the configured ones.
      const configured = await run(['user', 'throttle', 'alice', ...dbArgs], { env: { SVCAPI_BRUTE_FORCE_LOGIN_MAX_ATTEMPTS: '150', SVCAPI_BRUTE_FORCE_KNOWN_SOURCE_DAYS: '0' } });
      expect(configured.out).toContain('Login ceiling: 100 of 150 failures in the window; not tripped (window ends ');
      expect(configured.out).toContain('Known sources (a success within 0 days): 0\n');

      const reset = await run(['user', 'throttle', 'Alice', '--reset', ...dbArgs]);
      expect(reset).toMatchObject({ code: 0, out: 'Reset the brute-force counters of login "Alice": 97 counter(s) cleared; known sources kept\n', err: '' });
      expect(await newSourceGranted()).toBe(true);
      const after = await run(['user', 'throttle', 'alice', ...dbArgs]);
      expect(after.out).toContain('Login ceiling: 0 of 100 failures in the window; not tripped (window ends ');
      expect(after.out).toContain('Known sources (a success within 30 days): 1\n');
      expect(after.out).toContain('Sources with failures or verifications under way for this login: 0\n'); // the probe's was given back
      const audit = await run(['audit', '--type', 'admin.user.throttle-reset', '--json', ...dbArgs]);
      expect(audit.out).toContain('"login":"Alice"');
      expect(audit.out).toContain('"counters":97');
    });

    it('answers for a login no user has, and refuses bad usage', async () => {
      const nobody = await run(['user', 'throttle', 'nobody', ...dbArgs]);
      expect(nobody).toMatchObject({ code: 0 });
      expect(nobody.out).toContain('Login "nobody": no such user (its attempts are counted all the same)\n');
      expect(await run(['user', 'throttle', '', ...dbArgs])).toMatchObject({ code: 1, err: 'error: the login must not be empty\n' });
      expect((await run(['user', 'throttle', ...dbArgs])).code).toBe(2);
      expect(await run(['user', 'throttle', 'alice', '--reset', '--json', ...dbArgs])).toMatchObject({ code: 2, err: expect.stringContaining('--reset and --json') });
      const off = await run(['user', 'throttle', 'nobody', ...dbArgs], { env: { SVCAPI_BRUTE_FORCE_ENABLED: 'false' } });
      expect(off.out).toContain('Brute-force protection is off in this configuration');
    });
  });

  describe('database URL', () => {
    it('explains an unsupported or not-yet-supported database', async () => {
      expect(await run(['app', 'list', '--db', 'mysql://localhost/auth'])).toMatchObject({ code: 2, err: expect.stringContaining('--db: unsupported database URL scheme "mysql:"') });
      // Nothing listens on port 1: refused at once; the password never appears in the message.
      const unreachable = await run(['app', 'list', '--db', 'postgres://u:secret@127.0.0.1:1/auth']);
      expect(unreachable).toMatchObject({ code: 1, err: expect.stringContaining('cannot open the database postgres://u:***@127.0.0.1:1/auth') });
      expect(unreachable.err).not.toContain('secret');
      expect(await run(['app', 'list'], { env: { DATABASE_URL: 'mysql://x' } })).toMatchObject({ code: 2, err: expect.stringContaining('DATABASE_URL') });
    });
  });

  describe('serve', () => {
    it('prints the service, WSDL and help page URLs with the real port, serves, and stops on request', async () => {
      const controller = new AbortController();
      const out = sink();
      const err = sink();
      const done = runCli(['serve', '--port', '0', '--log-level', 'silent', ...dbArgs], { stdin: Readable.from([]), stdout: out.stream, stderr: err.stream, env: {}, signal: controller.signal });
      const failed = err.waitFor(/./).then(() => Promise.reject(new Error(err.text())));
      failed.catch(() => undefined);
      const service = (await Promise.race([out.waitFor(/^Service: (http:\/\/127\.0\.0\.1:(\d+)\/Authentication\.asmx)$/m), failed]))[1] ?? '';
      expect(out.text()).toContain(`WSDL: ${service}?WSDL\n`);
      expect(out.text()).toContain(`Help page: ${service}\n`);
      expect(service).not.toMatch(/:0\//);
      const wsdl = await fetch(`${service}?WSDL`);
      expect(wsdl.status).toBe(200);
      expect(await wsdl.text()).toContain('wsdl:definitions');
      controller.abort();
      expect(await done).toBe(0);
    });

    it('rejects a bad port with the name of the setting', async () => {
      expect(await run(['serve', '--port', 'eighty', ...dbArgs])).toMatchObject({ code: 2, err: expect.stringContaining('--port: expected a whole number') });
      expect(await run(['serve', ...dbArgs], { env: { SVCAPI_PORT: '99999' } })).toMatchObject({ code: 2, err: expect.stringContaining('SVCAPI_PORT') });
    });
  });
});

describe('serve --time-zone', () => {
  it('refuses a zone that is not an IANA name, naming the flag', async () => {
    const r = await run(['serve', '--time-zone', 'Mars/Base', '--port', '0', '--db', 'sqlite::memory:']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('--time-zone: not an IANA time zone: "Mars/Base"');
  });
});
