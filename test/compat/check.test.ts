/**
 * `compat check`: the stand-in against itself is "0 different"; the stand-in against svcapi-auth
 * with the default profile shows each of the stand-in's choices as a difference and exits 1;
 * the password never appears in the output or the report.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normaliseBody, runCheck } from '../../src/compat/check.js';
import { runCliCaptured } from '../support/run-cli.js';
import { startLegacyStandin, STANDIN_USER, type LegacyStandin } from '../support/legacy-standin.js';
import { startApp, type StartedApp } from '../support/start-app.js';

const { login, password } = STANDIN_USER;

describe('compat check', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'svcapi-check-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('normalises tokens by their form, expiry times and each side\'s own host, nothing else', () => {
    const side = { url: new URL('http://10.0.0.1:81/Authentication.asmx'), path: '/Authentication.asmx' };
    expect(normaliseBody('<r>6F1C2A9E-3B4D-4E5F-8A7B-9C0D1E2F3A4B</r><r>6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b</r>', side)).toBe('<r>{token:GUID}</r><r>{token:guid}</r>');
    // Guid.Empty is a failure value, not a token: kept.
    expect(normaliseBody('<r>00000000-0000-0000-0000-000000000000</r>', side)).toBe('<r>00000000-0000-0000-0000-000000000000</r>');
    expect(normaliseBody('{"ExpiresAt":"\\/Date(1732450000000)\\/","e":"2026-11-22T05:55:51.045Z"}', side)).toBe('{"ExpiresAt":"\\/Date({time})\\/","e":"{iso-time:Z}"}');
    // News dates are element text: compared as they are.
    expect(normaliseBody('<DataPublicacao>2024-11-01T07:30:00-03:00</DataPublicacao>', side)).toBe('<DataPublicacao>2024-11-01T07:30:00-03:00</DataPublicacao>');
    expect(normaliseBody('<soap:address location="http://10.0.0.1:81/Authentication.asmx" /> Host: 10.0.0.1:81', side)).toBe('<soap:address location="{service-url}" /> Host: {host}');
  });

  it('the stand-in against another stand-in with the same choices: 0 different, exit 0', async () => {
    const a = await startLegacyStandin();
    const b = await startLegacyStandin();
    try {
      const report = join(dir, 'same.json');
      const r = await runCliCaptured(['compat', 'check', '--legacy', a.url, '--ours', b.url, '--login', login, '--password-stdin', '--app', '2', '--report', report], { stdin: password });
      expect(r.err).toBe('');
      expect(r.out.trimEnd().split('\n').at(-1)).toMatch(/^\d+ same, 0 different$/);
      expect(r.code).toBe(0);
      const json = JSON.parse(readFileSync(report, 'utf8')) as { summary: { same: number; different: number }; cases: unknown[] };
      expect(json.summary.different).toBe(0);
      expect(json.summary.same).toBeGreaterThan(100);
    } finally {
      await a.close();
      await b.close();
    }
  });

  describe('the stand-in against svcapi-auth with the default profile', () => {
    let standin: LegacyStandin;
    let ours: StartedApp;
    let run: { code: number; out: string; err: string };
    let markdown: string;
    beforeAll(async () => {
      standin = await startLegacyStandin();
      ours = await startApp({ timeZone: 'America/Sao_Paulo' });
      await ours.stack.admin.updateApplication(2, { loginUrl: 'https://gps.example/login', defaultLanguage: 'pt-BR' });
      await ours.seedUser(login, password, 2);
      for (let n = 1; n <= 3; n++) {
        await ours.stack.admin.addNews({ appId: 2, title: `Novidade ${n}`, body: `Texto da novidade ${n} & <mais>`, language: 'pt-BR', url: `https://gps.example/novidades/${n}`, publishedAt: new Date(Date.UTC(2024, 10, n, 10, 30, 0)) });
      }
      const report = join(dir, 'default.md');
      run = await runCliCaptured(['compat', 'check', '--legacy', standin.url, '--ours', `${ours.url}/Authentication.asmx`, '--login', login, '--password-stdin', '--app', '2', '--report', report], { stdin: `${password}\n` });
      markdown = readFileSync(report, 'utf8');
    });
    afterAll(async () => {
      await standin.close();
      await ours.close();
    });

    it('reports each choice as a difference and exits 1', () => {
      expect(run.err).toBe('');
      expect(run.code).toBe(1);
      const last = run.out.trimEnd().split('\n').at(-1) ?? '';
      expect(last).toMatch(/^\d+ same, \d+ different$/);
      const out = run.out;
      // The failure value.
      expect(out).toMatch(/DIFFERENT: ValidateUser wrong password soap11[\s\S]*?-.*00000000-0000-0000-0000-000000000000/);
      // The token case.
      expect(out).toMatch(/DIFFERENT: ValidateUser good credentials soap11[\s\S]*?-.*\{token:GUID\}[\s\S]*?\+.*\{token:guid\}/);
      // The JSON layouts.
      expect(out).toMatch(/DIFFERENT: ValidateUserJSON good credentials in the form post[\s\S]*?"Success":true/);
      expect(out).toMatch(/DIFFERENT: ValidateUserTokenJSON own token in a header post/);
      // The login URL.
      expect(out).toMatch(/DIFFERENT: GetUserLoginURL own token soap11[\s\S]*?-.*AutoLogin\.aspx\?app=2&amp;token=\{token:GUID\}[\s\S]*?\+.*login\?ticket=\{token:guid\}/);
      // The news table.
      expect(out).toMatch(/DIFFERENT: WhatsNew soap11[\s\S]*?-.*Noticias/);
      // What svcapi-auth does differently on purpose is accepted, not counted.
      expect(out).toMatch(/Accepted \(svcapi-auth's deliberate deviations\): .*X-Content-Type-Options: nosniff/);
      expect(out).not.toMatch(/DIFFERENT: (WSDL|disco|help page)/);
      expect(out).not.toMatch(/DIFFERENT: ValidateUserToken (unknown|empty|missing) token/);
      expect(out).not.toMatch(/DIFFERENT: (SOAP 1\.1 wrong SOAPAction|HTTP GET unknown operation|SOAP 1\.1 malformed XML)/);
    });

    it('writes a Markdown report with the request, both answers and a diff per difference', () => {
      expect(markdown).toMatch(/^# compat check/);
      expect(markdown).toMatch(/## ValidateUser wrong password soap11\n\nRequest[\s\S]*?```http\nPOST \/Authentication\.asmx/);
      expect(markdown).toContain('```diff');
      expect(markdown).toMatch(/\*\*\d+ same, \d+ different\*\*/);
    });

    it('never shows the password: not in the output, not in the report', () => {
      for (const text of [run.out, run.err, markdown]) {
        expect(text).not.toContain(password);
        expect(text).not.toContain(encodeURIComponent(password));
      }
      expect(markdown).toMatch(/<password>\*\*\*<\/password>/);
    });
  });

  it('an unknown user on one side is a clear error (exit 2), not a pile of differences', async () => {
    const a = await startLegacyStandin();
    const b = await startLegacyStandin({ users: [] });
    try {
      const r = await runCliCaptured(['compat', 'check', '--legacy', a.url, '--ours', b.url, '--login', login, '--password-stdin', '--app', '2'], { stdin: password });
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/svcapi-auth did not log "maria" in to AppID 2/);
      expect(r.err).not.toContain(password);
      await expect(runCheck({ legacyUrl: a.url, oursUrl: 'http://127.0.0.1:1/Authentication.asmx', login, password, appId: 2 })).rejects.toThrow(/svcapi-auth: http:\/\/127\.0\.0\.1:1: POST \/Authentication\.asmx: connection refused/);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
