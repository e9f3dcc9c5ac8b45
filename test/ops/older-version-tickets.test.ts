/**
 * A rolling upgrade from a version before schema 18, end to end: `serve` on a database where an
 * instance of an older version still probes (it looks for login tickets in the tokens table only)
 * keeps its tickets there, says so in its log and on /metrics, and keeps them in the tickets table
 * on a database no older version probes (migration 18; docs/operations.md "Migrations").
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { canonicalToken, hashToken } from '../../src/domain/tokens.js';
import { killAll, requireDist, seedTicketWorld, soapResult, startServer, type ServerProcess } from '../support/server-process.js';
import { OLD_PROBE } from '../store/older-version-probes-contract.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-older-tickets-'));
afterEach(() => killAll());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function database(name: string): Promise<string> {
  const file = join(dir, `${name}.db`);
  await seedTicketWorld(`sqlite:${file}`);
  return file;
}

/** Where a ticket is kept: the tokens table (every version looks there) or the tickets table (in issue order). */
function keptIn(file: string, ticket: string): string[] {
  const hash = hashToken(canonicalToken(ticket) ?? '');
  const db = new Database(file, { readonly: true });
  try {
    return ['tokens', 'tickets'].filter((table) => db.prepare(`SELECT 1 FROM ${table} WHERE token_hash = ?`).get(hash) !== undefined);
  } finally {
    db.close();
  }
}

async function ticketFrom(file: string): Promise<{ ticket: string; metrics: string; redeemed: unknown; server: ServerProcess }> {
  const server = await startServer(['--db', `sqlite:${file}`], { SVCAPI_LOG_LEVEL: 'info' });
  const management = /Management: (http:\/\/\S+?) /.exec(await server.waitForOutput(/Management: http:\/\/\S+ /))?.[1] ?? '';
  const token = String(await soapResult(server.origin, 'ValidateUser', { login: 'alice', password: 'pw', AppId: 2, IPAddress: '' }));
  const url = new URL(String(await soapResult(server.origin, 'GetUserLoginURL', { token, AppID: 2 })));
  const ticket = url.searchParams.get('ticket') ?? '';
  const metrics = await (await fetch(`${management}/metrics`)).text();
  const redeemed = await soapResult(server.origin, 'ValidateUserToken', { token: ticket });
  return { ticket, metrics, redeemed, server };
}

describe('serve during a rolling upgrade (SQLite)', () => {
  it('keeps its tickets where an older instance probing the same database looks for them, and says so; in issue order where none probes', async () => {
    requireDist();
    const upgrading = await database('upgrading');
    // An instance of an older version, still serving: its readiness probe, as it writes it every 5 s.
    const raw = new Database(upgrading);
    try {
      raw.prepare(OLD_PROBE).run(Date.now());
    } finally {
      raw.close();
    }
    const during = await ticketFrom(upgrading);
    expect(during.ticket).toMatch(/^[0-9a-f-]{36}$/);
    expect(keptIn(upgrading, during.ticket)).toEqual(['tokens']);
    expect(during.redeemed).toBe(true);
    expect(during.metrics).toMatch(/^svcapi_auth_older_version_serving 1$/m);
    await during.server.waitForOutput(/"lastProbeSecondsAgo":\d+,"msg":"an instance of an older svcapi-auth version is serving from this database/);

    const alone = await database('alone');
    const after = await ticketFrom(alone);
    expect(keptIn(alone, after.ticket)).toEqual(['tickets']);
    expect(after.redeemed).toBe(true);
    expect(after.metrics).toMatch(/^svcapi_auth_older_version_serving 0$/m);
  });
});
