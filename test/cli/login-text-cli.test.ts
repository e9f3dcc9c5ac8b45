/**
 * The CLI and text from users: passwords on stdin must be UTF-8, user-provided text is printed
 * with invisible and bidi characters escaped, `migrate` lists logins that predate RFC 8265, and
 * `audit --login` finds an unknown login by its text or its fingerprint.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { legacyLoginKey } from '../../src/domain/logins.js';
import { createAuthService } from '../../src/domain/create-auth-service.js';
import { createAuditTrail, loadLoginFingerprintKey } from '../../src/ops/audit-trail.js';
import { openStore } from '../../src/store/open-store.js';
import { counterRandom, ctx, fakeHasher } from '../support/domain-fakes.js';

const root = mkdtempSync(join(tmpdir(), 'svcapi-login-text-cli-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
/** A new, migrated database (only migrate and serve create one). */
async function freshDb(): Promise<string> {
  const db = `sqlite:${join(root, `auth-${++n}.db`)}`;
  expect((await run(['migrate', '--db', db])).code).toBe(0);
  return db;
}

async function run(args: string[], stdin: Buffer | string = ''): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const writer = (append: (t: string) => void): Writable => new Writable({
    write(chunk: Buffer | string, _e, callback) {
      append(chunk.toString());
      callback();
    },
  });
  const code = await runCli(args, {
    stdin: Readable.from([typeof stdin === 'string' ? Buffer.from(stdin) : stdin]), stdout: writer((t) => (out += t)), stderr: writer((t) => (err += t)), env: {},
  });
  return { code, out, err };
}

describe('passwords on stdin', () => {
  it('refuses bytes that are not UTF-8 with a clear message and exit 2, and changes nothing', async () => {
    const db = await freshDb();
    for (const bytes of [Buffer.from([0x70, 0x77, 0xff, 0x0a]), Buffer.from([0x70, 0xc3]), Buffer.from([0xed, 0xa0, 0x80])]) {
      const r = await run(['user', 'add', 'alice', '--app', '2', '--password-stdin', '--db', db], bytes);
      expect(r.code).toBe(2);
      expect(r.err).toBe('error: the password on stdin is not valid UTF-8; nothing was changed\n');
    }
    expect((await run(['user', 'list', '--json', '--db', db])).out).toBe('');
    expect((await run(['user', 'add', 'alice', '--app', '2', '--password-stdin', '--db', db], Buffer.from('caf\u00e9\n'))).code).toBe(0);
  });

  it('refuses a password the RFC 8265 OpaqueString profile refuses', async () => {
    const r = await run(['user', 'add', 'bob', '--app', '2', '--password-stdin', '--db', await freshDb()], 'pass\u200bword\n');
    expect(r.code).toBe(1);
    expect(r.err).toContain('the password must not contain invisible or control characters (U+200B)');
  });
});

describe('user-provided text in CLI output', () => {
  it('shows invisible and bidi characters escaped in user list, news list and messages', async () => {
    const db = await freshDb();
    const store = await openStore(db);
    const login = 'eve\u202egnp.exe';
    await store.insertUser({ login, loginKey: legacyLoginKey(login), passwordHash: 'x', enabled: true, appIds: [2], createdAt: new Date(0) });
    await store.close();
    const list = await run(['user', 'list', '--db', db]);
    expect(list.out).toContain('eve\\u202egnp.exe');
    expect(list.out).not.toContain('\u202e');
    const json = await run(['user', 'list', '--json', '--db', db]);
    expect(json.out).not.toContain('\u202e');
    expect((JSON.parse(json.out) as { login: string }).login).toBe(login); // same value for a JSON reader
    const disabled = await run(['user', 'disable', login, '--db', db]);
    expect(disabled.out).toBe('Disabled user "eve\\u202egnp.exe" (DISABLED, applications 2); existing tokens revoked\n');

    const added = await run(['news', 'add', '--app', '2', '--title', 'Hello\u200b\u2066world', '--body', 'b', '--db', db]);
    expect(added.out).toContain('Hello\\u200b\\u2066world');
    const news = await run(['news', 'list', '--db', db]);
    expect(news.out).toContain('Hello\\u200b\\u2066world');
    expect(news.out).not.toMatch(/[\u200b\u2066]/);
  });

  it('refuses to create a login with invisible characters', async () => {
    const r = await run(['user', 'add', 'ali\u200bce', '--app', '2', '--password-stdin', '--db', await freshDb()], 'pw\n');
    expect(r.code).toBe(1);
    expect(r.err).toContain('must not contain invisible or control characters (U+200B)');
  });
});

describe('migrate', () => {
  it('lists the logins created before RFC 8265 that it would refuse today (they still log in)', async () => {
    const db = await freshDb();
    expect((await run(['migrate', '--db', db])).out).toMatch(/^Database \S+ is at schema version \d+\n$/);
    const store = await openStore(db);
    for (const login of ['Bob Smith', 'fine', '\uff41\uff4c\uff49']) {
      await store.insertUser({ login, loginKey: legacyLoginKey(login), passwordHash: 'x', enabled: true, appIds: [2], createdAt: new Date(0) });
    }
    await store.close();
    const out = (await run(['migrate', '--db', db])).out.split('\n');
    expect(out[1]).toBe('2 login(s) predate the RFC 8265 login rules (docs/security.md#logins-and-passwords):');
    expect(out.slice(2, 4).join('\n')).toMatch(/^ {2}"Bob Smith": not valid under RFC 8265 \(must not contain spaces\).*\n {2}"\uff41\uff4c\uff49": has fullwidth/);
  });
});

describe('audit --login and unknown logins', () => {
  it('finds the events of an unknown login by its text or by its fingerprint, and a known user\'s by login', async () => {
    const db = await freshDb();
    const store = await openStore(db);
    const hasher = fakeHasher();
    await store.insertUser({ login: 'Carol', loginKey: 'carol', passwordHash: 'fake$pw', enabled: true, appIds: [2], createdAt: new Date(0) });
    const audit = createAuditTrail({ store, loginFingerprintKey: await loadLoginFingerprintKey(store) });
    const service = createAuthService({ store, hasher, random: counterRandom(), events: audit.events });
    for (const login of ['hunter2-typed-here', 'HUNTER2-typed-here', 'carol', 'someone-else']) {
      await service.validateUser({ login, password: 'wrong', appId: 2, ipAddress: null }, ctx);
    }
    await audit.close();
    await store.close();

    const logins = async (login: string): Promise<(string | null)[]> =>
      (await run(['audit', '--json', '--login', login, '--db', db])).out.trim().split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l) as { login: string | null }).login);
    const byText = await logins('Hunter2-Typed-Here');
    expect(byText).toHaveLength(2);
    const fingerprint = byText[0] ?? '';
    expect(fingerprint).toMatch(/^unknown:[0-9a-f]{16}$/);
    expect(byText[1]).toBe(fingerprint); // stable, whatever the case typed
    expect(await logins(fingerprint)).toEqual([fingerprint, fingerprint]);
    expect(await logins(fingerprint.toUpperCase())).toEqual([fingerprint, fingerprint]);
    expect(await logins('CAROL')).toEqual(['Carol']);
    const all = await run(['audit', '--db', db]);
    expect(all.out).not.toContain('hunter2');
    expect(all.out).not.toContain('someone-else');
  });
});
