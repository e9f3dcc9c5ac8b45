/**
 * Token passthrough's tallies end to end on a SQLite file: two instances sum in the migration
 * report, as their metrics do (passthrough-tally-world.ts); and the real `serve` process, stopped
 * by SIGTERM, writes what it counted before it closes the store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { LEGACY_TOKEN_CHECK_RESULTS } from '../../src/domain/legacy-token-passthrough.js';
import { killAll, requireDist, soapResult, startServer } from '../support/server-process.js';
import { refusedUrl, startLegacyStandIn, type LegacyStandIn } from './legacy-stand-in.js';
import { reportedChecks, tallyInstance, twoInstancesSum } from './passthrough-tally-world.js';

let legacy: LegacyStandIn;
const dir = mkdtempSync(join(tmpdir(), 'svcapi-passthrough-tally-'));
beforeAll(async () => {
  legacy = await startLegacyStandIn();
});
afterEach(() => {
  killAll();
  vi.useRealTimers();
});
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

  it('a write that fails is logged as a warning, without secrets, and its counts are written by the next; at shutdown an error line', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] }); // serve's minute, advanced by hand
    const file = join(dir, 'failing.db');
    let failing = true;
    const instance = await tallyInstance(`sqlite:${file}`, legacy.url, (store) => new Proxy(store, {
      get(target, property, receiver) {
        if (property === 'addLegacyTallies' && failing) return () => Promise.reject(new Error('SQLITE_READONLY: attempt to write a readonly database'));
        return Reflect.get(target, property, receiver) as unknown;
      },
    }));
    let closed = false;
    try {
      const token = legacy.issue();
      expect(await instance.validate(token)).toBe(true);
      expect(await instance.validate(token)).toBe(true);
      vi.advanceTimersByTime(60_000);
      await instance.wiring.tally.flush(); // after the minute's write, which failed (so does this one)
      expect(instance.log.text()).toMatch(/"level":40.*"tallies":"periodic","pending":2,"reason":"SQLITE_READONLY: attempt to write a readonly database".*kept for the next write/);
      expect((await reportedChecks(`sqlite:${file}`)).checks).toMatchObject({ valid: 0, cached_valid: 0 });
      failing = false;
      vi.advanceTimersByTime(60_000);
      expect(await instance.wiring.tally.flush()).toEqual({ ok: true, rows: 0 }); // the minute's write took them
      expect((await reportedChecks(`sqlite:${file}`)).checks).toMatchObject({ valid: 1, cached_valid: 1 });
      expect(await instance.validate(token)).toBe(true);
      failing = true;
      await instance.close();
      closed = true;
      expect(instance.log.text()).toMatch(/"level":50.*"tallies":"shutdown","pending":1.*1 counted checks, relays and adoptions could not be written/);
      expect(instance.log.text()).not.toContain(token);
      expect(instance.log.text().toLowerCase()).not.toContain(token.toLowerCase());
    } finally {
      if (!closed) await instance.close();
    }
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
