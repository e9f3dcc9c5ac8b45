/**
 * The records PostgreSQL keeps for operators: the audit trail and the installation secrets
 * (AuditStore), the differences seen in shadow mode (ShadowStore) and the daily tallies of
 * legacy token traffic (LegacyTallyStore).
 */
import type pg from 'pg';
import type { AuditStore, LegacyTally, LegacyTallyKind, LegacyTallyStore, NewAuditEvent, ShadowDifferenceRecord, ShadowStore } from '../store.js';
import type { Row } from '../row-mapping.js';
import { auditQuerySql, legacyTallyRows, SQL } from '../shared-sql.js';
import type { PostgresContext, Queryable } from './postgres-context.js';
import { date, num, str, toAudit } from './postgres-row-mapping.js';

/** Events per INSERT statement (10 parameters each, far below PostgreSQL's 65535). */
const AUDIT_CHUNK = 500;

export function postgresAudit(ctx: PostgresContext): AuditStore & ShadowStore & LegacyTallyStore {
  const { pool, checkOpen, q, run, runOn, tx } = ctx;
  return {
    async appendAudit(events: readonly NewAuditEvent[]) {
      if (events.length === 0) return;
      const insertChunk = async (db: Queryable, chunk: readonly NewAuditEvent[]): Promise<void> => {
        const values: unknown[] = [];
        const rows = chunk.map((e) => {
          const first = values.length;
          values.push(e.at, e.type, e.reason, e.requestId, e.appId, e.login, e.sourceIp, e.claimedIp, e.tokenFp, e.detail === null ? null : JSON.stringify(e.detail));
          return `(${Array.from({ length: 10 }, (_, i) => `$${first + i + 1}${i === 9 ? '::jsonb' : ''}`).join(', ')})`;
        });
        await db.query(`INSERT INTO audit_events (at, type, reason, request_id, app_id, login, source_ip, claimed_ip, token_fp, detail)
          VALUES ${rows.join(', ')}`, values);
      };
      if (events.length <= AUDIT_CHUNK) {
        checkOpen();
        await insertChunk(pool, events);
        return;
      }
      await tx(async (c) => {
        for (let i = 0; i < events.length; i += AUDIT_CHUNK) await insertChunk(c, events.slice(i, i + AUDIT_CHUNK));
      });
    },
    async installationSecret(name, candidate) {
      // The row inserted now, or the one another instance inserted first. When that instance
      // committed while this statement waited on the conflict, its row is not in this statement's
      // snapshot: a second statement (a new snapshot) reads it.
      const select = (): Promise<pg.QueryResult<Row>> => q('installation_secret_get', 'SELECT secret FROM installation_secrets WHERE name = $1', [name], true);
      // Read first: once the secret exists, starting needs no write, so a database that only
      // takes reads (a standby) still opens, and readiness says why it is not ready.
      const existing = (await select()).rows[0];
      if (existing !== undefined) return str(existing.secret);
      const row = (await q('installation_secret_add', `WITH added AS (
          INSERT INTO installation_secrets (name, secret, created_at) VALUES ($1, $2, now()) ON CONFLICT (name) DO NOTHING RETURNING secret)
        SELECT secret FROM added UNION ALL SELECT secret FROM installation_secrets WHERE name = $1`, [name, candidate])).rows[0] ?? (await select()).rows[0];
      if (row === undefined) throw new Error(`installation secret ${name} could not be stored`);
      return str(row.secret);
    },
    async queryAudit(query) {
      const { statement, params } = auditQuerySql(query, (d) => d);
      return (await run(null, statement, params, true)).rows.map(toAudit);
    },
    async purgeAudit(before, limit) {
      return (await run(null, SQL.purgeAudit, { before, limit: Math.max(0, Math.trunc(limit)) })).rowCount ?? 0;
    },
    async insertShadowDifference(d, keep) {
      // One statement, so one transaction: the row and the pruning commit together. The DELETE
      // does not see the row being inserted (one snapshot): it keeps the newest keep - 1 others.
      await q('shadow_difference_add', `WITH added AS (
          INSERT INTO shadow_differences (observed_at, mode, operation, binding, request_json, legacy_json, ours_json, diff)
          VALUES ($1, $2, $3, $4, $5, $6, $7, $8))
        DELETE FROM shadow_differences WHERE id <= (SELECT id FROM shadow_differences ORDER BY id DESC LIMIT 1 OFFSET $9)`,
      [d.at, d.mode, d.operation, d.binding, d.requestJson, d.legacyJson, d.oursJson, d.diff, Math.max(1, Math.trunc(keep)) - 1]);
    },
    async listShadowDifferences(limit) {
      const rows = (await run('shadow_difference_list', SQL.listShadowDifferences, { limit: Math.max(0, Math.trunc(limit)) }, true)).rows;
      return rows.map((row): ShadowDifferenceRecord => ({
        id: num(row.id), at: date(row.observed_at), mode: row.mode === 'front' ? 'front' : 'shadow', operation: row.operation === null ? null : str(row.operation),
        binding: str(row.binding), requestJson: str(row.request_json), legacyJson: str(row.legacy_json), oursJson: str(row.ours_json), diff: str(row.diff),
      }));
    },
    async addLegacyTallies(rows, keepFrom) {
      const ordered = legacyTallyRows(rows);
      if (ordered.length === 0) return;
      // A few rows a minute per instance. Every writer upserts in the same order (legacyTallyRows),
      // and only the prune touches old days, so concurrent instances never deadlock.
      await tx(async (c) => {
        for (const t of ordered) {
          await runOn(c, SQL.addLegacyTally, { day: t.day, kind: t.kind, result: t.result, count: t.count, lastAt: t.lastAt }, 'legacy_tally_add');
        }
        await runOn(c, SQL.pruneLegacyTallies, { keepFrom }, 'legacy_tally_prune');
      });
    },
    async listLegacyTallies() {
      const rows = (await run('legacy_tally_list', SQL.listLegacyTallies, {}, true)).rows;
      return rows.map((r): LegacyTally => ({
        day: str(r.day), kind: str(r.kind) as LegacyTallyKind, result: str(r.result), count: num(r.count), lastAt: date(r.last_at),
      }));
    },
  };
}
