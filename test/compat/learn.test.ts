/**
 * `compat learn` against the legacy stand-in (test/support/legacy-standin.ts): the profile it
 * writes is the stand-in's own choices, item by item; the password never appears anywhere.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compatProfileFromJson } from '../../src/compat-profile-file.js';
import { learnProfile } from '../../src/compat/learn.js';
import type { CompatProfile } from '../../src/contract/compat-profile.js';
import { runCliCaptured } from '../support/run-cli.js';
import { startLegacyStandin, STANDIN_PROFILE, STANDIN_USER, type LegacyStandin } from '../support/legacy-standin.js';

const { login, password } = STANDIN_USER;

describe('compat learn', () => {
  let standin: LegacyStandin;
  let dir: string;
  beforeAll(async () => {
    standin = await startLegacyStandin();
    dir = mkdtempSync(join(tmpdir(), 'svcapi-learn-'));
  });
  afterAll(async () => {
    await standin.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('learns every choice of the stand-in: failure value, token form, JSON layouts and inputs, login URL, news table', async () => {
    const result = await learnProfile({ legacyUrl: standin.url, login, password, appId: 2 });
    const profile = compatProfileFromJson(result.profile);
    expect(profile.validateUser.failureValue).toBe('00000000-0000-0000-0000-000000000000');
    expect(profile.tokens.form).toStrictEqual({ kind: 'guid', case: 'upper', dashes: true, braces: false });
    expect(profile.json.validateUser).toStrictEqual(STANDIN_PROFILE.json.validateUser);
    expect(profile.json.validateUserToken).toStrictEqual(STANDIN_PROFILE.json.validateUserToken);
    expect(profile.loginUrl).toStrictEqual({ default: null, apps: { 2: 'https://gps.example/AutoLogin.aspx?app={appId}&token={token}' }, none: '' });
    expect(profile.whatsNew).toStrictEqual(STANDIN_PROFILE.whatsNew);
    // Item by item above; and nothing else differs.
    expect(profile).toStrictEqual(STANDIN_PROFILE as CompatProfile);
    expect(result.wsdl?.patch).toBe('');
    expect(result.learned.join('\n')).toContain('offset -03:00 seen');
    // What it could not see is said, not guessed silently.
    expect(result.undecided.join('\n')).toMatch(/string escaping/);
    expect(result.undecided.join('\n')).toMatch(/maxRows/);
  });

  it('tells a different token form, a wcf date, a {ticket}, a UTC table and fields it cannot place', async () => {
    const other = await startLegacyStandin({
      profile: {
        ...STANDIN_PROFILE,
        validateUser: { failureValue: 'LOGIN_FAILED' },
        tokens: { form: { kind: 'hex', length: 40, case: 'lower' } },
        json: {
          validateUser: { ...STANDIN_PROFILE.json.validateUser, inputs: { ...STANDIN_PROFILE.json.validateUser.inputs, sources: ['form'] }, dates: 'wcf', escaping: 'data-contract' },
          validateUserToken: {
            ...STANDIN_PROFILE.json.validateUserToken, inputs: { sources: ['header', 'query'], names: { token: 'token' } },
            // The owner, as token adoption needs it (docs/cutover.md#adoption).
            success: [...STANDIN_PROFILE.json.validateUserToken.success, { key: 'Login', value: { field: 'login' } }, { key: 'AppID', value: { field: 'appId' } }],
          },
        },
        loginUrl: { default: null, apps: { 2: 'https://gps.example/sso/{login}?t={ticket}' }, none: 'about:blank' },
        whatsNew: { ...STANDIN_PROFILE.whatsNew, tableName: 'Items', dateTimes: 'utc', columns: [...STANDIN_PROFILE.whatsNew.columns, { name: 'Prioridade', type: 'long', from: { const: 7 } }] },
      },
    });
    try {
      const result = await learnProfile({ legacyUrl: other.url, login, password, appId: 2 });
      const p = result.profile as { validateUser: unknown; tokens: unknown; json: { validateUser: Record<string, unknown>; validateUserToken: Record<string, unknown> }; loginUrl: unknown; whatsNew: Record<string, unknown> };
      expect(p.validateUser).toStrictEqual({ failureValue: 'LOGIN_FAILED' });
      expect(p.tokens).toStrictEqual({ form: 'hex40' });
      expect(p.json.validateUser.inputs).toStrictEqual({ sources: ['form'] });
      expect(p.json.validateUser.dates).toBe('wcf');
      expect(p.json.validateUserToken.inputs).toStrictEqual({ sources: ['header', 'query'] });
      expect(p.json.validateUserToken.success).toStrictEqual([
        { key: 'Valid', value: { field: 'valid' } }, { key: 'ExpiresAt', value: { field: 'expiresAt' } },
        { key: 'Login', value: { field: 'login' } }, { key: 'AppID', value: { field: 'appId' } },
      ]);
      // "about:blank" is not http(s): GetUserLoginURL's "no URL" value is kept as the text it is.
      expect(p.loginUrl).toStrictEqual({ none: 'about:blank', apps: { 2: 'https://gps.example/sso/{login}?t={ticket}' } });
      expect(p.whatsNew.tableName).toBe('Items');
      expect(p.whatsNew.dateTimes).toBe('utc');
      expect(p.whatsNew.columns).toContainEqual({ name: 'Prioridade', type: 'long', from: { attribute: 'Prioridade' } });
      expect(() => compatProfileFromJson(result.profile)).not.toThrow();
    } finally {
      await other.close();
    }
  });

  it('svcapi-auth compat learn writes a valid profile and prints what it learned, never the password', async () => {
    const out = join(dir, 'learned.json');
    const before = standin.requests.length;
    const r = await runCliCaptured(['compat', 'learn', '--legacy', standin.url, '--login', login, '--password-stdin', '--app', '2', '--out', out], { stdin: `${password}\n` });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const text = readFileSync(out, 'utf8');
    expect(compatProfileFromJson(JSON.parse(text))).toStrictEqual(STANDIN_PROFILE as CompatProfile);
    expect(r.out).toContain('token form: GUID');
    expect(r.out).toMatch(/Could not decide/);
    for (const shown of [r.out, r.err, text]) {
      expect(shown).not.toContain(password);
      expect(shown).not.toContain(encodeURIComponent(password));
    }
    // The real password was sent only in the logins that needed it, and every wrong one was random.
    const sent = standin.requests.slice(before);
    const wrong = sent.filter((q) => /password/i.test(q.body + q.target + JSON.stringify(q.headers)) && !(q.body + q.target + JSON.stringify(q.headers)).includes(encodeURIComponent(password)) && !(q.body + JSON.stringify(q.headers)).includes(password));
    expect(wrong.length).toBeGreaterThanOrEqual(2);
    const wrongPasswords = wrong.map((q) => /<password>([^<]*)<\/password>|password=([^&]*)/.exec(q.body + q.target)?.slice(1).find((v) => v !== undefined)).filter((v) => v !== undefined && v !== '');
    expect(new Set(wrongPasswords).size).toBe(wrongPasswords.length);
  });

  it('prints the profile alone on stdout without --out, and refuses a bad URL or a password on the command line', async () => {
    const r = await runCliCaptured(['compat', 'learn', '--legacy', standin.url, '--login', login, '--password-stdin', '--app', '2'], { stdin: password });
    expect(r.code).toBe(0);
    // Only the profile on stdout (so `> profile.json` works); the report on stderr.
    expect(compatProfileFromJson(JSON.parse(r.out))).toStrictEqual(STANDIN_PROFILE as CompatProfile);
    expect(r.err).toContain('Learned from');
    expect(r.out + r.err).not.toContain(password);
    expect((await runCliCaptured(['compat', 'learn', '--legacy', 'ftp://x/a.asmx', '--login', login, '--password-stdin', '--app', '2'], { stdin: password })).code).toBe(2);
    expect((await runCliCaptured(['compat', 'learn', '--legacy', standin.url, '--login', login, '--password', password, '--app', '2'])).code).toBe(2);
  });

  it('a wrong password for the real login is a clear refusal (exit 1), not a profile', async () => {
    const out = join(dir, 'never.json');
    const r = await runCliCaptured(['compat', 'learn', '--legacy', standin.url, '--login', login, '--password-stdin', '--app', '2', '--out', out], { stdin: 'not-the-password' });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/did not log "maria" in to AppID 2/);
    expect(() => readFileSync(out)).toThrow();
  });
});
