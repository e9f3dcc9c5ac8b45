import type { NewToken, SessionExpectation } from '../store.js';
import { createTurnBatch, type TurnBatch, type WriteOutcome } from '../turn-batch.js';

/**
 * Group commit of new tokens and login tickets on PostgreSQL: those of one event-loop turn go
 * in ONE statement (one round trip, one transaction, one WAL flush) instead of BEGIN, a locking
 * SELECT, the INSERT (and the last-login UPDATE) and COMMIT each. node-postgres does not
 * pipeline the statements of a connection, so a batch is one statement over arrays (unnest).
 *
 * The statement keeps what the single-row transaction guarantees (see Store.insertSession): the
 * conditions are read with the same row locks (the user FOR NO KEY UPDATE for a session, which
 * also sets last_login_at, FOR SHARE for a ticket; the application and grant FOR SHARE), so a
 * concurrent password change, disable or grant withdrawal either commits first (the locking
 * read waits for it, re-checks the new row version and drops the token) or waits for this
 * commit and then revokes the token. A token whose conditions fail is simply not inserted:
 * false for its caller alone. A statement that fails because of one row (a duplicate hash: a
 * constraint; a deadlock with another instance's batch) is retried row by row through the
 * single-row transaction, so each caller gets its own outcome.
 */
/** What a batch inserts: session tokens, tickets into tokens, or tickets into the tickets table (migration 17). */
export type TokenKind = 'session' | 'ticket' | 'ordered-ticket';

export interface TokenInsert {
  readonly token: NewToken;
  /** Sessions: the hash the password was verified against. Tickets: null. */
  readonly expectedHash: string | null;
}

/** At most this many tokens per statement; a bigger turn is split (arrays of parameters, no limit of 65535 to mind). */
const MAX_PER_STATEMENT = 500;

function insertTokensSql(kind: TokenKind): string {
  const userLock = kind === 'session' ? 'NO KEY UPDATE' : 'SHARE';
  const lastLogin = kind === 'session'
    // Each user's last login is that of its last session in the batch, as if they had been
    // inserted one after another (every row of allowed is inserted, or the statement fails).
    ? `, login AS (
    UPDATE users u SET last_login_at = l.issued_at
    FROM (SELECT DISTINCT ON (user_id) user_id, issued_at FROM allowed ORDER BY user_id, n DESC) l
    WHERE u.user_id = l.user_id)`
    : '';
  return `WITH input AS (
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::integer[], $4::text[], $5::text[], $6::timestamptz[], $7::timestamptz[], $8::text[])
      WITH ORDINALITY AS i(token_hash, user_id, app_id, client_ip, source_ip, issued_at, expires_at, expected_hash, n)
  ), allowed AS (
    SELECT i.* FROM input i
      JOIN users u ON u.user_id = i.user_id AND u.enabled AND (i.expected_hash IS NULL OR u.password_hash = i.expected_hash)
      JOIN applications a ON a.app_id = i.app_id AND a.enabled
      JOIN user_applications g ON g.user_id = u.user_id AND g.app_id = a.app_id
    FOR ${userLock} OF u FOR SHARE OF a, g
  ), inserted AS (${kind === 'ordered-ticket' ? `
    INSERT INTO tickets (issued_at, token_hash, user_id, app_id, client_ip, source_ip, expires_at)
    SELECT issued_at, token_hash, user_id, app_id, client_ip, source_ip, expires_at FROM allowed` : `
    INSERT INTO tokens (token_hash, kind, user_id, app_id, client_ip, source_ip, issued_at, expires_at, last_used_at)
    SELECT token_hash, '${kind}', user_id, app_id, client_ip, source_ip, issued_at, expires_at, issued_at FROM allowed`}
    RETURNING token_hash
  )${lastLogin}
  SELECT token_hash FROM inserted`;
}

export interface TokenBatchDeps {
  /** One statement on a pooled connection (autocommit). */
  readonly query: (name: string, text: string, values: readonly unknown[]) => Promise<{ readonly rows: readonly Record<string, unknown>[] }>;
  /** The single-row transaction, for the rows of a batch whose statement failed. */
  readonly insertOne: (insert: TokenInsert, kind: TokenKind) => Promise<boolean>;
  readonly onCommit?: (writes: number) => void;
}

/** One batch per kind (their user row locks differ). */
export function createTokenBatch(kind: TokenKind, deps: TokenBatchDeps): TurnBatch<TokenInsert, boolean> {
  const sql = insertTokensSql(kind);
  const name = `insert_${kind.replace('-', '_')}_batch`;

  async function statement(items: readonly TokenInsert[]): Promise<WriteOutcome<boolean>[]> {
    const t = items.map((i) => i.token);
    const result = await deps.query(name, sql, [
      t.map((x) => x.tokenHash), t.map((x) => x.userId), t.map((x) => x.appId), t.map((x) => x.clientIp), t.map((x) => x.sourceIp),
      t.map((x) => x.issuedAt), t.map((x) => x.expiresAt), items.map((i) => i.expectedHash),
    ]);
    deps.onCommit?.(items.length);
    const inserted = new Set(result.rows.map((r) => String(r.token_hash)));
    return t.map((x) => ({ ok: true, value: inserted.has(x.tokenHash) }));
  }

  async function alone(items: readonly TokenInsert[]): Promise<WriteOutcome<boolean>[]> {
    return Promise.all(items.map((i) => deps.insertOne(i, kind).then(
      (value): WriteOutcome<boolean> => ({ ok: true, value }),
      (error: unknown): WriteOutcome<boolean> => ({ ok: false, error }),
    )));
  }

  return createTurnBatch<TokenInsert, boolean>(async (items) => {
    const chunks: TokenInsert[][] = [];
    for (let i = 0; i < items.length; i += MAX_PER_STATEMENT) chunks.push(items.slice(i, i + MAX_PER_STATEMENT));
    const outcomes = await Promise.all(chunks.map(async (chunk) => {
      try {
        return await statement(chunk);
      } catch (error) {
        // A constraint (class 23) or a deadlock / serialization failure (class 40) may be one
        // row's doing: each row again on its own. Anything else (the database unreachable, a
        // timeout) would fail them all again, so it fails them at once.
        const code = (error as { code?: unknown }).code;
        if (chunk.length === 1 || typeof code !== 'string' || !/^(23|40)/.test(code)) return chunk.map(() => ({ ok: false, error }) as const);
        return alone(chunk);
      }
    }));
    return outcomes.flat();
  });
}

/** The expectation a batched session carries; a session that also upgrades the hash goes alone. */
export function batchableSession(expect: SessionExpectation): boolean {
  return expect.newPasswordHash === undefined;
}
