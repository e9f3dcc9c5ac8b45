import type { StoreMigration } from './store-migrations.js';

/**
 * Login tickets in a table of their own, keyed in issue order (GetUserLoginURL's write).
 *
 * Until now a ticket was a row of `tokens`, whose key is the token's SHA-256: each new ticket
 * landed on a random leaf page of that table (a wide row, three secondary indexes), so every
 * ticket wrote one more 4 KiB page to the WAL, synced and later checkpointed; half of a
 * GetUserLoginURL's CPU (docs/benchmarks.md, "what a ticket store of its own would buy").
 *
 * A ticket issued now carries its issue time in its first 48 bits (src/domain/ordered-ticket.ts)
 * and is stored here under (issued_at, token_hash): new tickets are appended at the end of the
 * key, so the tickets of one commit share the same few pages. Redemption reads the issue time
 * off the text and looks the row up by the whole key; the SHA-256 of the whole text is still
 * all that is stored of it. No other index: the operator's lookups of tickets (by fingerprint,
 * by user, export) scan this table, which holds only tickets not yet purged (a ticket lives
 * tickets.ttlSeconds, 2 minutes by default). Deleting a user scans it for the cascade. No
 * access-revision trigger either: a ticket is never kept in memory (access-cache.ts), its
 * redemption reads this row every time.
 *
 * Tickets issued before this migration, tickets imported from an export, and tickets issued
 * with `performance.orderedTickets` off stay in `tokens` (kind 'ticket') and are redeemed there
 * as before.
 *
 * The ticket key (installation_secrets 'ticket-key', src/domain/ordered-ticket.ts) is made here,
 * with the table, from the database's own CSPRNG (SQLite's randomblob, seeded from the operating
 * system; PostgreSQL's gen_random_uuid, pg_strong_random: two of them, 244 random bits), so that
 * every instance finds the same one and a database that has turned read-only since its migration
 * still starts (Store.installationSecret then only reads). The AES key is derived from it.
 */
export const orderedTickets: StoreMigration = {
  version: 17,
  name: 'ordered tickets',
  sql: (d) => `
CREATE TABLE tickets (
  issued_at  ${d.time} NOT NULL,
  token_hash ${d.key} NOT NULL CHECK (length(token_hash) = 64),
  user_id    ${d.bigint} NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
  app_id     ${d.int} NOT NULL REFERENCES applications (app_id),
  client_ip  ${d.text},
  source_ip  ${d.text},
  expires_at ${d.time} NOT NULL,
  used_at    ${d.time},
  revoked_at ${d.time},
  PRIMARY KEY (issued_at, token_hash)
)${d.withoutRowid};
INSERT INTO installation_secrets (name, secret, created_at)
  VALUES ('ticket-key', ${d.name === 'sqlite' ? 'lower(hex(randomblob(32)))' : "replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')"}, ${d.nowSeconds})
  ON CONFLICT (name) DO NOTHING;
`,
};
