/**
 * Bulk seeding for `npm run bench:scale`: 1M users and 10M session tokens in the store's exact
 * row format (tokens keyed by the SHA-256 hex of the token text), written directly, not through
 * the API, so a 10M-token store takes minutes. The schema comes from the service's own
 * migrations (`svcapi-auth migrate`, run by the caller through seedService).
 *
 * - SQLite: better-sqlite3, big transactions, journal off and synchronous off during the seeding
 *   only, the tokens' secondary indexes dropped and rebuilt from their own DDL (much quicker than
 *   maintaining them row by row); the file is put back in WAL mode afterwards.
 * - PostgreSQL: one INSERT ... SELECT from generate_series per table, the token text and its
 *   SHA-256 computed by the server (sha256(), PostgreSQL 11+), the same text as tokenText().
 *
 * Token number i of a seed is tokenText(prefix, i): GUID form, unique per seed, cheap to make.
 * Expired tokens (for the purge measurement) use their own prefix, so they never collide.
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { fmtInt } from './report.mjs';
import { APP_ID } from './seed.mjs';

export const DAY_MS = 86_400_000;

export function tokenText(prefix, i) {
  const hex = i.toString(16).padStart(24, '0');
  return `${prefix}-${hex.slice(0, 4)}-${hex.slice(4, 8)}-${hex.slice(8, 12)}-${hex.slice(12)}`;
}

/** tokenText in SQL (PostgreSQL), for the expression `i` (bigint). */
const tokenTextSql = (prefix, i) => `'${prefix}-' || substr(lpad(to_hex(${i}), 24, '0'), 1, 4) || '-' || substr(lpad(to_hex(${i}), 24, '0'), 5, 4)
  || '-' || substr(lpad(to_hex(${i}), 24, '0'), 9, 4) || '-' || substr(lpad(to_hex(${i}), 24, '0'), 13)`;

export const sha256 = (text) => createHash('sha256').update(text, 'utf8').digest('hex');

/** The columns of a table that must be given a value (NOT NULL without a default). */
function requiredColumns(db, table) {
  return db.prepare(`PRAGMA table_info(${table})`).all().filter((c) => c.notnull === 1 && c.dflt_value === null).map((c) => c.name);
}

function checkColumns(db, table, given) {
  const missing = requiredColumns(db, table).filter((c) => !given.includes(c));
  if (missing.length > 0) throw new Error(`the ${table} table now has required columns this seeder does not fill: ${missing.join(', ')} (update bench/lib/scale-seed.mjs)`);
}

const TOKEN_COLS = ['token_hash', 'kind', 'user_id', 'app_id', 'client_ip', 'source_ip', 'issued_at', 'expires_at', 'last_used_at'];
const elapsed = (started) => `${((performance.now() - started) / 1000).toFixed(0)} s`;

/**
 * Adds `users` users (granted AppID 2) and `tokens` live session tokens (30 days to go) to a
 * migrated SQLite file. Returns the first seeded user's id.
 */
export function seedSqlite(file, { users, tokens, passwordHash, prefix, log }) {
  const db = new Database(file);
  const started = performance.now();
  try {
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -1048576'); // 1 GiB
    db.pragma('temp_store = MEMORY');
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('foreign_keys = OFF');
    const userCols = ['user_id', 'login', 'login_key', 'password_hash', 'enabled', 'created_at', 'password_changed_at'];
    const grantCols = ['user_id', 'app_id', 'granted_at'];
    checkColumns(db, 'users', userCols);
    checkColumns(db, 'user_applications', grantCols);
    checkColumns(db, 'tokens', TOKEN_COLS);
    const now = Date.now();
    const firstUser = (db.prepare('SELECT COALESCE(MAX(user_id), 0) AS m FROM users').get().m) + 1;

    const insertUser = db.prepare(`INSERT INTO users (${userCols.join(', ')}) VALUES (?, ?, ?, ?, 1, ?, ?)`);
    const insertGrant = db.prepare(`INSERT INTO user_applications (${grantCols.join(', ')}) VALUES (?, ${APP_ID}, ?)`);
    const BATCH = 100_000;
    for (let from = 0; from < users; from += BATCH) {
      db.transaction(() => {
        for (let i = from; i < Math.min(users, from + BATCH); i++) {
          const id = firstUser + i;
          const login = `scale.user.${i}`;
          insertUser.run(id, login, login, passwordHash, now, now);
          insertGrant.run(id, now);
        }
      })();
    }
    log(`scale:   sqlite users ${fmtInt(users)} (${elapsed(started)})`);

    const indexes = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tokens' AND sql IS NOT NULL").all();
    for (const ix of indexes) db.exec(`DROP INDEX "${ix.name}"`);
    const insertToken = db.prepare(`INSERT INTO tokens (${TOKEN_COLS.join(', ')}) VALUES (?, 'session', ?, ${APP_ID}, NULL, '127.0.0.1', ?, ?, ?)`);
    const TBATCH = 1_000_000;
    for (let from = 0; from < tokens; from += TBATCH) {
      const rows = [];
      for (let i = from; i < Math.min(tokens, from + TBATCH); i++) rows.push([sha256(tokenText(prefix, i)), i]);
      rows.sort((a, b) => (a[0] < b[0] ? -1 : 1)); // key order: fewer page splits
      db.transaction(() => {
        for (const [hash, i] of rows) {
          const issued = now - (i % 3_600_000);
          insertToken.run(hash, firstUser + (i % users), issued, issued + 30 * DAY_MS, issued);
        }
      })();
      log(`scale:   sqlite tokens ${fmtInt(Math.min(tokens, from + TBATCH))}/${fmtInt(tokens)} (${elapsed(started)})`);
    }
    for (const ix of indexes) db.exec(ix.sql);
    db.exec('ANALYZE');
    db.pragma('locking_mode = NORMAL');
    db.pragma('journal_mode = WAL');
    db.prepare('SELECT 1').get(); // leave exclusive mode
    log(`scale:   sqlite indexes rebuilt (${elapsed(started)})`);
    return firstUser;
  } finally {
    db.close();
  }
}

/**
 * Adds `count` session tokens that expired 2-3 days ago (past the default 1-day retention, so
 * housekeeping deletes them), spread over the key space and the seeded users, through an
 * ordinary WAL connection with every index maintained (the store is live). Returns their number.
 */
export function seedSqliteExpired(file, { count, users, firstUser, prefix }) {
  const db = new Database(file);
  try {
    db.pragma('busy_timeout = 10000');
    db.pragma('synchronous = NORMAL');
    db.pragma('cache_size = -262144');
    const insert = db.prepare(`INSERT INTO tokens (${TOKEN_COLS.join(', ')}) VALUES (?, 'session', ?, ${APP_ID}, NULL, '127.0.0.1', ?, ?, ?)
      ON CONFLICT (token_hash) DO NOTHING`);
    const now = Date.now();
    const BATCH = 250_000;
    let added = 0;
    for (let from = 0; from < count; from += BATCH) {
      const rows = [];
      for (let i = from; i < Math.min(count, from + BATCH); i++) rows.push([sha256(tokenText(prefix, i)), i]);
      rows.sort((a, b) => (a[0] < b[0] ? -1 : 1));
      db.transaction(() => {
        for (const [hash, i] of rows) {
          const expires = now - 2 * DAY_MS - (i % DAY_MS);
          added += insert.run(hash, firstUser + (i % users), expires - 30 * DAY_MS, expires, expires - DAY_MS).changes;
        }
      })();
    }
    db.pragma('wal_checkpoint(TRUNCATE)');
    return added;
  } finally {
    db.close();
  }
}

/** Tokens past `before` (ms) still in the SQLite file. */
export function countSqliteExpired(db, before) {
  return db.prepare('SELECT COUNT(*) AS n FROM tokens WHERE expires_at < ?').get(before).n;
}

/** The same seed on PostgreSQL, through `client` (search_path set to the store's schema). */
export async function seedPostgres(client, { users, tokens, passwordHash, prefix, log }) {
  const started = performance.now();
  const firstUser = Number((await client.query('SELECT COALESCE(MAX(user_id), 0) + 1 AS m FROM users')).rows[0].m);
  await client.query('SET synchronous_commit = off');
  await client.query('SET maintenance_work_mem = \'512MB\'');
  await client.query(`INSERT INTO users (user_id, login, login_key, password_hash, enabled, created_at, password_changed_at)
    OVERRIDING SYSTEM VALUE
    SELECT $1::bigint + i, 'scale.user.' || i, 'scale.user.' || i, $2, true, now(), now() FROM generate_series(0, $3::bigint - 1) i`,
  [firstUser, passwordHash, users]);
  await client.query(`SELECT setval(pg_get_serial_sequence('users', 'user_id'), (SELECT MAX(user_id) FROM users))`);
  await client.query(`INSERT INTO user_applications (user_id, app_id, granted_at)
    SELECT $1::bigint + i, ${APP_ID}, now() FROM generate_series(0, $2::bigint - 1) i`, [firstUser, users]);
  log(`scale:   pg users ${fmtInt(users)} (${elapsed(started)})`);
  const indexes = (await client.query(`SELECT indexname, indexdef FROM pg_indexes
    WHERE schemaname = current_schema() AND tablename = 'tokens' AND indexname <> 'tokens_pkey'`)).rows;
  for (const ix of indexes) await client.query(`DROP INDEX "${ix.indexname}"`);
  const CHUNK = 1_000_000;
  for (let from = 0; from < tokens; from += CHUNK) {
    const to = Math.min(tokens, from + CHUNK);
    await client.query(`INSERT INTO tokens (${TOKEN_COLS.join(', ')})
      SELECT encode(sha256(convert_to(${tokenTextSql(prefix, 'i')}, 'UTF8')), 'hex'), 'session', $1::bigint + i % $2::bigint, ${APP_ID}, NULL, '127.0.0.1',
        now() - (i % 3600000) * interval '1 millisecond', now() - (i % 3600000) * interval '1 millisecond' + interval '30 days',
        now() - (i % 3600000) * interval '1 millisecond'
      FROM generate_series($3::bigint, $4::bigint - 1) i`, [firstUser, users, from, to]);
    log(`scale:   pg tokens ${fmtInt(to)}/${fmtInt(tokens)} (${elapsed(started)})`);
  }
  for (const ix of indexes) await client.query(ix.indexdef);
  await client.query('VACUUM (ANALYZE) tokens');
  await client.query('VACUUM (ANALYZE) users');
  await client.query('VACUUM (ANALYZE) user_applications');
  log(`scale:   pg indexes rebuilt, vacuumed (${elapsed(started)})`);
  return firstUser;
}

/** seedSqliteExpired on PostgreSQL. */
export async function seedPostgresExpired(client, { count, users, firstUser, prefix }) {
  const r = await client.query(`INSERT INTO tokens (${TOKEN_COLS.join(', ')})
    SELECT encode(sha256(convert_to(${tokenTextSql(prefix, 'i')}, 'UTF8')), 'hex'), 'session', $1::bigint + i % $2::bigint, ${APP_ID}, NULL, '127.0.0.1',
      e - interval '30 days', e, e - interval '1 day'
    FROM generate_series(0, $3::bigint - 1) i, LATERAL (SELECT now() - interval '2 days' - (i % ${DAY_MS}) * interval '1 millisecond' AS e) x
    ON CONFLICT (token_hash) DO NOTHING`, [firstUser, users, count]);
  await client.query('VACUUM (ANALYZE) tokens');
  return r.rowCount ?? 0;
}

export async function countPostgresExpired(client, before) {
  return Number((await client.query('SELECT COUNT(*) AS n FROM tokens WHERE expires_at < $1', [new Date(before)])).rows[0].n);
}
