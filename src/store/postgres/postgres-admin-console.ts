/**
 * PostgreSQL's admin console accounts and their sessions (AdminConsoleStore). A password change
 * ends the account's sessions in the same transaction; a removal, by the foreign key's cascade.
 */
import type { AdminAccountCredentials, AdminConsoleStore } from '../store.js';
import type { Row } from '../row-mapping.js';
import { SQL } from '../shared-sql.js';
import { one, type PostgresContext } from './postgres-context.js';
import { date, dateOrNull, str } from './postgres-row-mapping.js';

function toAdminCredentials(r: Row): AdminAccountCredentials {
  return {
    name: String(r.name), passwordHash: String(r.password_hash), role: r.role === 'admin' ? 'admin' : 'editor',
    createdAt: date(r.created_at), passwordChangedAt: date(r.password_changed_at), lastLoginAt: dateOrNull(r.last_login_at),
  };
}

export function postgresAdminConsole(ctx: PostgresContext): AdminConsoleStore {
  const { run, runOn, tx } = ctx;
  return {
    async insertAdminAccount(a) {
      return (await run(null, SQL.insertAdmin, {
        name: a.name, passwordHash: a.passwordHash, role: a.role, createdAt: a.createdAt, passwordChangedAt: a.passwordChangedAt, lastLoginAt: a.lastLoginAt,
      })).rowCount === 1;
    },
    async getAdminAccount(name) {
      const row = one(await run('get_admin', SQL.getAdmin, { name }, true));
      return row === undefined ? null : toAdminCredentials(row);
    },
    async listAdminAccounts() {
      return (await run(null, SQL.listAdmins, {}, true)).rows.map((r) => {
        const { passwordHash: _hash, ...account } = toAdminCredentials(r);
        return account;
      });
    },
    async setAdminPassword(name, passwordHash, now) {
      return tx(async (c) => {
        const updated = await runOn(c, SQL.setAdminPassword, { name, passwordHash, now });
        if (updated.rowCount !== 1) return false;
        await runOn(c, SQL.endAdminSessions, { name });
        return true;
      });
    },
    async removeAdminAccount(name) {
      return (await run(null, SQL.removeAdmin, { name })).rowCount === 1;
    },
    async insertAdminSession(session, passwordHash) {
      return tx(async (c) => {
        // The account row is locked, so a password change or removal waits for this or wins before it.
        const account = await c.query('SELECT 1 FROM admin_accounts WHERE name = $1 AND password_hash = $2 FOR UPDATE', [session.name, passwordHash]);
        if (account.rowCount !== 1) return false;
        await c.query(`INSERT INTO admin_sessions (session_hash, name, csrf_token, source_ip, created_at, last_used_at, expires_at)
          VALUES ($1, $2, $3, $4, $5, $5, $6)`, [session.sessionHash, session.name, session.csrfToken, session.sourceIp, session.createdAt, session.expiresAt]);
        await runOn(c, SQL.adminLastLogin, { name: session.name, createdAt: session.createdAt });
        return true;
      });
    },
    async findAdminSession(sessionHash) {
      const r = one(await run('find_admin_session', SQL.findAdminSession, { sessionHash }, true));
      if (r === undefined) return null;
      return {
        sessionHash: str(r.session_hash), name: str(r.name), role: r.role === 'admin' ? 'admin' : 'editor', csrfToken: str(r.csrf_token),
        sourceIp: r.source_ip === null ? null : str(r.source_ip), createdAt: date(r.created_at), lastUsedAt: date(r.last_used_at), expiresAt: date(r.expires_at),
      };
    },
    async touchAdminSession(sessionHash, now) {
      await run('touch_admin_session', SQL.touchAdminSession, { sessionHash, now });
    },
    async deleteAdminSession(sessionHash) {
      return (await run(null, SQL.deleteAdminSession, { sessionHash })).rowCount === 1;
    },
    async purgeAdminSessions(now, idleBefore) {
      return (await run(null, SQL.purgeAdminSessions, { now, idleBefore })).rowCount ?? 0;
    },
  };
}
