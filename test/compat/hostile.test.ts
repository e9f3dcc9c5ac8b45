/**
 * A legacy service that is slow, answers too much, answers garbage, answers wrong values or is
 * down: `compat learn` and `compat check` end with a clear message (exit 2), never a crash or a
 * stack trace, and wrong values become "could not decide", never a profile that lies.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { compatProfileFromJson } from '../../src/compat-profile-file.js';
import { learnProfile } from '../../src/compat/learn.js';
import { runCliCaptured } from '../support/run-cli.js';
import { startLegacyStandin, STANDIN_USER, type Hostility, type LegacyStandin } from '../support/legacy-standin.js';

const { login, password } = STANDIN_USER;
const started: LegacyStandin[] = [];

async function hostile(hostility: Hostility): Promise<LegacyStandin> {
  const s = await startLegacyStandin({ hostility });
  started.push(s);
  return s;
}

afterEach(async () => {
  for (const s of started.splice(0)) await s.close();
});

const learn = (url: string, extra: string[] = []): ReturnType<typeof runCliCaptured> =>
  runCliCaptured(['compat', 'learn', '--legacy', url, '--login', login, '--password-stdin', '--app', '2', ...extra], { stdin: password });

describe('compat tools against a hostile legacy service', () => {
  it('slow: stops at the timeout with the request named (learn and check)', async () => {
    const s = await hostile({ delayMs: 5000 });
    // The answer would come after 5 s: the message says the 1 s timeout ended it.
    const r = await learn(s.url, ['--timeout', '1s']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^error: cannot talk to the legacy service: http:\/\/127\.0\.0\.1:\d+: GET \/Authentication\.asmx\?WSDL: no complete answer within 1000 ms\n$/);
    const other = await startLegacyStandin();
    started.push(other);
    const c = await runCliCaptured(['compat', 'check', '--legacy', other.url, '--ours', s.url, '--login', login, '--password-stdin', '--app', '2', '--timeout', '1s'], { stdin: password });
    expect(c.code).toBe(2);
    expect(c.err).toMatch(/^error: svcapi-auth: .*no complete answer within 1000 ms\n$/);
  });

  it('huge: refuses an answer over the size limit', async () => {
    const s = await hostile({ hugeBytes: 3 * 1024 * 1024 });
    await expect(learnProfile({ legacyUrl: s.url, login, password, appId: 2, limits: { timeoutMs: 10_000, maxBytes: 512 * 1024 } }))
      .rejects.toThrow(/GET \/Authentication\.asmx\?WSDL: the answer is too large \(over 524288 bytes\)/);
  });

  it('garbage and down: not HTTP, or the connection closed, said plainly', async () => {
    const g = await hostile({ garbage: true });
    const r = await learn(g.url);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/the answer is not HTTP|the connection was closed without an answer/);
    const d = await hostile({ down: true });
    const r2 = await learn(d.url);
    expect(r2.code).toBe(2);
    expect(r2.err).toMatch(/the connection was closed without an answer/);
    const refused = await learn('http://127.0.0.1:1/Authentication.asmx');
    expect(refused).toMatchObject({ code: 2, err: expect.stringMatching(/connection refused/) });
    for (const x of [r, r2, refused]) expect(x.err).not.toMatch(/\n\s+at /);
  });

  it('wrong values: what cannot be trusted is not written, the rest is, and the file is valid', async () => {
    const s = await hostile({ wrongValues: true });
    const result = await learnProfile({ legacyUrl: s.url, login, password, appId: 2 });
    const undecided = result.undecided.join('\n');
    // A token-like answer to a wrong password must never become the failure value.
    expect(undecided).toMatch(/ValidateUser failure value: a wrong password got a token-like answer/);
    expect(result.profile).not.toHaveProperty('validateUser');
    expect(undecided).toMatch(/ValidateUserJSON: the answer with inputs in the query is not JSON/);
    expect(undecided).toMatch(/WhatsNew: no inline xs:schema/);
    expect(result.profile).not.toHaveProperty('whatsNew');
    expect(result.profile).toHaveProperty('tokens', { form: 'GUID' });
    expect(() => compatProfileFromJson(result.profile)).not.toThrow();
  });
});
