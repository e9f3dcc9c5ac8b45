/**
 * The whole migration path the compat tools are for: `compat learn` against a legacy service
 * (the stand-in), its users and news brought over, `serve --compat <learned profile>`, and
 * `compat check` finding no difference at all.
 *
 * It passes because svcapi-auth applies a profile (failure value, token form, JSON layouts and
 * inputs, login URL templates, the WhatsNew table and its per-item attributes); a failure lists
 * the differences left. The news are brought over with `news import --from-legacy`, which keeps
 * the legacy's IdNoticia and its per-item attributes (Destaque).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { runCliCaptured, sink } from '../support/run-cli.js';
import { startLegacyStandin, STANDIN_USER, type LegacyStandin, type StandinNews } from '../support/legacy-standin.js';

const { login, password } = STANDIN_USER;

/** Legacy news numbered from 1, as a fresh database numbers what it is given. */
const NEWS: readonly StandinNews[] = [1, 2, 3].map((n) => ({
  newsId: n,
  appId: 2,
  title: `Novidade ${n}`,
  body: `Texto da novidade ${n} & <mais>`,
  language: 'pt-BR',
  url: `https://gps.example/novidades/${n}`,
  publishedAt: new Date(Date.UTC(2024, 10, n, 10, 30, 0)),
  attributes: { Destaque: n === 3 },
}));

describe('learn, bring users and news over, check: 0 different', () => {
  let dir: string;
  let standin: LegacyStandin;
  let serving: Promise<number> | undefined;
  const controller = new AbortController();
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svcapi-lic-'));
    standin = await startLegacyStandin({ news: NEWS });
  });
  afterAll(async () => {
    controller.abort();
    await serving;
    await standin.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('svcapi-auth serving the learned profile answers as the legacy service does', async () => {
    const profile = join(dir, 'legacy-profile.json');
    const db = ['--db', `sqlite:${join(dir, 'auth.db')}`];
    const learned = await runCliCaptured(['compat', 'learn', '--legacy', standin.url, '--login', login, '--password-stdin', '--app', '2', '--out', profile], { stdin: password });
    expect(learned.code, learned.err).toBe(0);

    // Users and news as an operator brings them over (news in the order the legacy numbered them).
    const step = async (args: string[], stdin?: string): Promise<void> => {
      const r = await runCliCaptured([...args, ...db], stdin === undefined ? {} : { stdin });
      expect(r.code, `${args.join(' ')}: ${r.err}`).toBe(0);
    };
    await step(['migrate']);
    await step(['app', 'set', '2', '--login-url', 'https://gps.example/login', '--default-language', 'pt-BR']);
    await step(['user', 'add', login, '--app', '2', '--password-stdin'], password);
    // The news as the legacy's WhatsNew shows them, read through the learned profile: its
    // IdNoticia and the per-item Destaque come along.
    await step(['news', 'import', '--from-legacy', standin.url, '--app', '2', '--compat', profile, '--time-zone', 'America/Sao_Paulo']);

    // The learned WhatsNew dates carried -03:00: the legacy server's zone.
    const stdout = sink();
    const errors = new Writable({ write: (_c, _e, callback) => callback() });
    serving = runCli(['serve', '--port', '0', '--log-level', 'silent', '--compat', profile, '--time-zone', 'America/Sao_Paulo', ...db], {
      stdin: Readable.from([]), stdout: stdout.stream, stderr: errors, env: { SVCAPI_MANAGEMENT_PORT: 'off', SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '0' }, signal: controller.signal,
    });
    const ours = (await stdout.waitFor(/^Service: (http:\/\/\S+)$/m))[1];
    expect(ours, stdout.text()).toBeDefined();

    const check = await runCliCaptured(['compat', 'check', '--legacy', standin.url, '--ours', ours ?? '', '--login', login, '--password-stdin', '--app', '2'], { stdin: password });
    const different = check.out.split('\n').filter((l) => l.startsWith('DIFFERENT: ')).map((l) => l.slice('DIFFERENT: '.length));
    expect(different, check.out).toStrictEqual([]);
    expect(check.out.trimEnd().split('\n').at(-1)).toMatch(/^\d+ same, 0 different$/);
    expect(check.code).toBe(0);
  });
});
