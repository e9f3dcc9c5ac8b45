/**
 * Token passthrough's tallies end to end on a SQLite file: two instances sum in the migration
 * report, as their metrics do (passthrough-tally-world.ts); and the real `serve` process, stopped
 * by SIGTERM, writes what it counted before it closes the store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LEGACY_TOKEN_CHECK_RESULTS } from '../../src/domain/legacy-token-passthrough.js';
import { killAll, requireDist, soapResult, startServer } from '../support/server-process.js';
import { refusedUrl, startLegacyStandIn, type LegacyStandIn } from './legacy-stand-in.js';
import { reportedChecks, twoInstancesSum } from './passthrough-tally-world.js';

let legacy: LegacyStandIn;
const dir = mkdtempSync(join(tmpdir(), 'svcapi-passthrough-tally-'));
beforeAll(async () => {
  legacy = await startLegacyStandIn();
});
afterEach(() => killAll());
afterAll(async () => {
  await legacy.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('token passthrough tallies on a SQLite file', () => {
  it('two instances: the report shows the sum of their checks after an explicit flush, equal to their metrics; no secret in the table', async () => {
    const file = join(dir, 'two.db');
    await twoInstancesSum(`sqlite:${file}`, legacy, await refusedUrl(), async () => {
      const db = new Database(file, { readonly: true });
      try {
        return db.prepare('SELECT * FROM legacy_token_tallies').all() as Array<Record<string, unknown>>;
      } finally {
        db.close();
      }
    });
  });

  it('serve stopped by SIGTERM writes its tallies before closing the store: the report equals its metrics', async () => {
    requireDist();
    const db = `sqlite:${join(dir, 'serve.db')}`;
    const server = await startServer(['--db', db], {
      SVCAPI_LEGACY_URL: legacy.url, SVCAPI_LEGACY_TOKEN_PASSTHROUGH: new Date(Date.now() + 3_600_000).toISOString(),
    });
    const token = legacy.issue();
    expect(await soapResult(server.origin, 'ValidateUserToken', { token })).toBe(true);
    expect(await soapResult(server.origin, 'ValidateUserToken', { token })).toBe(true);
    expect(await soapResult(server.origin, 'ValidateUserToken', { token: '0DDBA11C-0FFE-4EE1-8BAD-F00DDEADBEEF' })).toBe(false);
    const management = /^Management: (http:\/\/\S+) /m.exec(server.output())?.[1] ?? '';
    const metrics = await (await fetch(`${management}/metrics`)).text();
    const counted = Object.fromEntries(LEGACY_TOKEN_CHECK_RESULTS.map((r) => [r, Number(new RegExp(`svcapi_auth_legacy_token_checks_total\\{result="${r}"\\} (\\d+)`).exec(metrics)?.[1] ?? NaN)]));
    expect(counted).toMatchObject({ valid: 1, cached_valid: 1, invalid: 1 });
    // Written only at shutdown (the minute has not passed): nothing yet.
    expect((await reportedChecks(db)).checks.valid).toBe(0);
    server.child.kill('SIGTERM');
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect((await reportedChecks(db)).checks).toEqual(counted);
  });
});
