/**
 * Token passthrough's tallies end to end, shared by the SQLite file (passthrough-tally.test.ts)
 * and PostgreSQL (postgres-passthrough-tally.test.ts): two instances wired as serve wires them
 * (startTokenPassthrough: metrics and tallies fed by the same calls) on one database, one asking
 * a stand-in old service, the other an old service that is down; checks of old tokens through
 * the HTTP app; an explicit flush of each (no timer, no sleep); then `users migration-report`
 * from the CLI shows the sum of both instances, equal to the sum of their metrics, and the
 * table holds no token, hash, fingerprint or login.
 */
import { expect } from 'vitest';
import { startTokenPassthrough, type TokenPassthroughWiring } from '../../src/cli/legacy-passthrough.js';
import { loadConfig } from '../../src/config/load-config.js';
import { LEGACY_TOKEN_CHECK_RESULTS } from '../../src/domain/legacy-token-passthrough.js';
import { hashToken, canonicalToken } from '../../src/domain/tokens.js';
import { createLogger } from '../../src/ops/logger.js';
import { createMetrics, type ServiceMetrics } from '../../src/ops/metrics.js';
import type { Store } from '../../src/store/store.js';
import { call } from '../support/asmx-client.js';
import { sink, type Sink } from '../support/run-cli.js';
import { createTestStack, seedReference, type TestStack } from '../support/start-app.js';
import type { LegacyStandIn } from './legacy-stand-in.js';
import { run } from './support.js';

export interface TallyInstance {
  readonly stack: TestStack;
  readonly wiring: TokenPassthroughWiring;
  readonly metrics: ServiceMetrics;
  readonly log: Sink;
  validate(token: string): Promise<boolean>;
  /** This instance's svcapi_auth_legacy_token_checks_total by result. */
  checkMetrics(): Promise<Record<string, number>>;
  /** The wiring closed (its last flush), then the stack. */
  close(): Promise<void>;
}

/**
 * An instance on `db` whose token passthrough asks `legacyUrl`, wired as serve wires it;
 * `wrapStore` stands between the wiring and the store (a test's failing database).
 */
export async function tallyInstance(db: string, legacyUrl: string, wrapStore: (store: Store) => Store = (s) => s): Promise<TallyInstance> {
  const config = loadConfig({
    env: {
      SVCAPI_LEGACY_URL: legacyUrl, SVCAPI_LEGACY_TOKEN_PASSTHROUGH: new Date(Date.now() + 3_600_000).toISOString(),
      SVCAPI_LEGACY_CIRCUIT_FAILURES: '2', SVCAPI_LEGACY_TOKEN_TIMEOUT_MS: '1000',
    },
  });
  const log = sink();
  const made: { wiring?: TokenPassthroughWiring; metrics?: ServiceMetrics } = {};
  const stack = await createTestStack({
    databaseUrl: db, throttle: false,
    legacyTokens: (store) => {
      const metrics = createMetrics({ store, processMetrics: false });
      const wiring = startTokenPassthrough({ config, logger: createLogger({ level: 'info', stream: log.stream }), metrics, store: wrapStore(store) });
      if (wiring === null) throw new Error('token passthrough is off');
      made.wiring = wiring;
      made.metrics = metrics;
      return wiring.passthrough;
    },
  });
  const { wiring, metrics } = made;
  if (wiring === undefined || metrics === undefined) throw new Error('not wired');
  return {
    stack, wiring, metrics, log,
    validate: async (token) => (await call(stack.app, 'soap11', 'ValidateUserToken', { token })) as boolean,
    async checkMetrics() {
      const text = await metrics.registry.metrics();
      return Object.fromEntries(LEGACY_TOKEN_CHECK_RESULTS.map((r) => [r, Number(new RegExp(`svcapi_auth_legacy_token_checks_total\\{result="${r}"\\} (\\d+)`).exec(text)?.[1] ?? NaN)]));
    },
    async close() {
      await wiring.close();
      await stack.close();
    },
  };
}

interface ReportJson {
  passthrough: {
    today: string;
    checks: Array<{ result: string; last7Days: number; last30Days: number }>;
    relays: Array<{ result: string; last7Days: number; last30Days: number }>;
    lastVouchedAt: string | null;
    lastVouchedDaysAgo: number | null;
  };
}

/** `users migration-report --json` from the CLI: the passthrough section's checks by result (7 days). */
export async function reportedChecks(db: string): Promise<{ checks: Record<string, number>; report: ReportJson }> {
  const result = await run(['users', 'migration-report', '--json', '--db', db]);
  expect(result.code, result.err).toBe(0);
  const report = JSON.parse(result.out) as ReportJson;
  return { checks: Object.fromEntries(report.passthrough.checks.map((c) => [c.result, c.last7Days])), report };
}

/**
 * The scenario: instance A asks `legacy`, instance B an old service that refuses connections;
 * both on `db`. `rawRows` reads the tallies table beside the store.
 */
export async function twoInstancesSum(db: string, legacy: LegacyStandIn, downUrl: string, rawRows: () => Promise<Array<Record<string, unknown>>>): Promise<void> {
  const a = await tallyInstance(db, legacy.url);
  const b = await tallyInstance(db, downUrl);
  try {
    await seedReference(a.stack.admin);
    const tokens = [legacy.issue(), legacy.issue(), legacy.issue()];
    const forged = '0DDBA11C-0FFE-4EE1-8BAD-F00DDEADBEEF';
    for (const token of tokens) {
      expect(await a.validate(token)).toBe(true);
      expect(await a.validate(token)).toBe(true);
    }
    expect(await a.validate(forged)).toBe(false);
    expect(await a.validate(forged)).toBe(false);
    // GetUserLoginURL of an old token: relayed to the old service.
    expect(await call(a.stack.app, 'soap11', 'GetUserLoginURL', { token: tokens[0] ?? '', AppID: 2 })).toMatch(/^https:\/\/old\.example\//);
    // The old service down, as B sees it: two errors open the circuit.
    for (let i = 0; i < 3; i++) expect(await b.validate(tokens[1] ?? '')).toBe(false);
    // Our own token is no check of an old one.
    const ours = String(await call(a.stack.app, 'soap11', 'ValidateUser', { login: 'demo', password: 'demo-pass', AppId: 2, IPAddress: '' }));
    expect(await b.validate(ours)).toBe(true);

    // Nothing is written before a flush.
    expect((await reportedChecks(db)).report.passthrough.lastVouchedAt).toBeNull();
    const [fa, fb] = await Promise.all([a.wiring.tally.flush(), b.wiring.tally.flush()]);
    expect(fa.ok && fb.ok).toBe(true);

    const ma = await a.checkMetrics();
    const mb = await b.checkMetrics();
    expect(ma).toMatchObject({ valid: 3, invalid: 1, cached_invalid: 1 });
    expect(ma.cached_valid).toBeGreaterThanOrEqual(3);
    expect(mb).toMatchObject({ error: 2, circuit_open: 1 });
    const { checks, report } = await reportedChecks(db);
    // Every result: the report is the sum of the two instances' metrics.
    expect(checks).toEqual(Object.fromEntries(LEGACY_TOKEN_CHECK_RESULTS.map((r) => [r, (ma[r] ?? 0) + (mb[r] ?? 0)])));
    expect(report.passthrough.relays.find((r) => r.result === 'relayed')?.last7Days).toBe(1);
    expect(report.passthrough.lastVouchedAt).not.toBeNull();
    expect(report.passthrough.lastVouchedDaysAgo).toBe(0);

    const text = await run(['users', 'migration-report', '--db', db]);
    expect(text.out).toMatch(/^ {2}check\s+valid\s+3\s+3$/m);
    expect(text.out).toMatch(/^ {2}check\s+circuit_open\s+1\s+1$/m);
    expect(text.out).toMatch(/^ {2}relay\s+relayed\s+1\s+1$/m);
    expect(text.out).toMatch(/^Last vouched-for legacy token: \d{4}-\d{2}-\d{2}T[\d:.]+Z \(0 days ago\)$/m);

    // Another flush adds only what came since.
    expect(await a.validate(forged)).toBe(false);
    await a.wiring.tally.flush();
    const again = (await reportedChecks(db)).checks;
    expect(again.cached_invalid).toBe(checks.cached_invalid === undefined ? NaN : checks.cached_invalid + 1);
    expect(again.valid).toBe(checks.valid);

    // The table: counts and times only.
    const rows = await rawRows();
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(Object.keys(row).sort()).toEqual(['count', 'day', 'kind', 'last_at', 'result']);
    const dump = JSON.stringify(rows).toLowerCase();
    for (const token of [...tokens, forged, ours]) {
      const canonical = canonicalToken(token) ?? token.toLowerCase();
      for (const secret of [canonical, canonical.replace(/-/g, ''), hashToken(canonical), hashToken(canonical).slice(0, 12)]) expect(dump).not.toContain(secret);
    }
    expect(dump).not.toContain('demo');
    expect(a.log.text() + b.log.text()).not.toContain(tokens[0] ?? '-');
  } finally {
    await a.close();
    await b.close();
  }
}
