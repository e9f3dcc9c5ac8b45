/**
 * The admin console's accounts and sessions on SQLite: a password change ends the account's
 * sessions, and a session is created only while the password it was opened with still holds.
 */
import type { AdminAccountCredentials, AdminConsoleStore, NewAdminSession } from '../store.js';
import type { Row } from '../row-mapping.js';
import { SQL } from '../shared-sql.js';
import type { SqliteContext } from './sqlite-context.js';
import { date, dateOrNull, ms, str } from './sqlite-row-mapping.js';

function toAdminCredentials(r: Row): AdminAccountCredentials {
  return {
    name: str(r.name), passwordHash: str(r.password_hash), role: r.role === 'admin' ? 'admin' : 'editor',
    createdAt: date(r.created_at), passwordChangedAt: date(r.password_changed_at), lastLoginAt: dateOrNull(r.last_login_at),
  };
}

export function sqliteAdminConsole({ db }: SqliteContext): AdminConsoleStore {
  const s = {
    insertAdmin: db.prepare(SQL.insertAdmin.sqlite),
    getAdmin: db.prepare(SQL.getAdmin.sqlite),
    listAdmins: db.prepare(SQL.listAdmins.sqlite),
    setAdminPassword: db.prepare(SQL.setAdminPassword.sqlite),
    endAdminSessions: db.prepare(SQL.endAdminSessions.sqlite),
    removeAdmin: db.prepare(SQL.removeAdmin.sqlite),
    insertAdminSession: db.prepare(`INSERT INTO admin_sessions (session_hash, name, csrf_token, source_ip, created_at, last_used_at, expires_at)
      SELECT @sessionHash, @name, @csrfToken, @sourceIp, @createdAt, @createdAt, @expiresAt
      WHERE EXISTS (SELECT 1 FROM admin_accounts WHERE name = @name AND password_hash = @passwordHash)`),
    adminLastLogin: db.prepare(SQL.adminLastLogin.sqlite),
    findAdminSession: db.prepare(SQL.findAdminSession.sqlite),
    touchAdminSession: db.prepare(SQL.touchAdminSession.sqlite),
    deleteAdminSession: db.prepare(SQL.deleteAdminSession.sqlite),
    purgeAdminSessions: db.prepare(SQL.purgeAdminSessions.sqlite),
  };

  const setAdminPasswordTx = db.transaction((name: string, passwordHash: string, now: Date): boolean => {
    if (s.setAdminPassword.run({ name, passwordHash, now: ms(now) }).changes !== 1) return false;
    s.endAdminSessions.run({ name });
    return true;
  });
  const insertAdminSessionTx = db.transaction((session: NewAdminSession, passwordHash: string): boolean => {
    const params = {
      sessionHash: session.sessionHash, name: session.name, csrfToken: session.csrfToken, sourceIp: session.sourceIp,
      createdAt: ms(session.createdAt), expiresAt: ms(session.expiresAt), passwordHash,
    };
    if (s.insertAdminSession.run(params).changes !== 1) return false;
    s.adminLastLogin.run({ name: session.name, createdAt: params.createdAt });
    return true;
  });

  return {
    async insertAdminAccount(a) {
      return s.insertAdmin.run({
        name: a.name, passwordHash: a.passwordHash, role: a.role, createdAt: ms(a.createdAt), passwordChangedAt: ms(a.passwordChangedAt),
        lastLoginAt: a.lastLoginAt === null ? null : ms(a.lastLoginAt),
      }).changes === 1;
    },
    async getAdminAccount(name) {
      const row = s.getAdmin.get({ name }) as Row | undefined;
      return row === undefined ? null : toAdminCredentials(row);
    },
    async listAdminAccounts() {
      return (s.listAdmins.all() as Row[]).map((r) => {
        const { passwordHash: _hash, ...account } = toAdminCredentials(r);
        return account;
      });
    },
    async setAdminPassword(name, passwordHash, now) {
      return setAdminPasswordTx.immediate(name, passwordHash, now);
    },
    async removeAdminAccount(name) {
      return s.removeAdmin.run({ name }).changes === 1;
    },
    async insertAdminSession(session, passwordHash) {
      return insertAdminSessionTx.immediate(session, passwordHash);
    },
    async findAdminSession(sessionHash) {
      const r = s.findAdminSession.get({ sessionHash }) as Row | undefined;
      if (r === undefined) return null;
      return {
        sessionHash: str(r.session_hash), name: str(r.name), role: r.role === 'admin' ? 'admin' : 'editor', csrfToken: str(r.csrf_token),
        sourceIp: r.source_ip === null ? null : str(r.source_ip), createdAt: date(r.created_at), lastUsedAt: date(r.last_used_at), expiresAt: date(r.expires_at),
      };
    },
    async touchAdminSession(sessionHash, now) {
      s.touchAdminSession.run({ sessionHash, now: ms(now) });
    },
    async deleteAdminSession(sessionHash) {
      return s.deleteAdminSession.run({ sessionHash }).changes === 1;
    },
    async purgeAdminSessions(now, idleBefore) {
      return s.purgeAdminSessions.run({ now: ms(now), idleBefore: ms(idleBefore) }).changes;
    },
  };
}
