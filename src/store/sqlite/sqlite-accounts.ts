/**
 * Users, applications and grants on SQLite: their reads, their writes (a disable, a password
 * change or a withdrawn grant revokes the tokens in the same transaction), password hashes and
 * the migration of a legacy user.
 */
import type {
  AccountStore, Application, ApplicationPatch, InsertApplicationResult, InsertUserResult, LegacyMigrationInput, NewUser,
  PasswordHashRow, User, UserCredentials,
} from '../store.js';
import type { Row } from '../row-mapping.js';
import { SQL } from '../shared-sql.js';
import type { SqliteContext } from './sqlite-context.js';
import { bool, dateOrNull, ms, str, toApplication, toUser } from './sqlite-row-mapping.js';

export function sqliteAccounts({ db }: SqliteContext): AccountStore {
  const s = {
    getApp: db.prepare(SQL.getApp.sqlite),
    listApps: db.prepare(SQL.listApps.sqlite),
    insertApp: db.prepare(SQL.insertApp.sqlite),
    updateApp: db.prepare(`UPDATE applications SET
        name                   = CASE WHEN @setName THEN @name ELSE name END,
        enabled                = CASE WHEN @setEnabled THEN @enabled ELSE enabled END,
        require_ip             = CASE WHEN @setRequireIp THEN @requireIp ELSE require_ip END,
        login_url              = CASE WHEN @setLoginUrl THEN @loginUrl ELSE login_url END,
        token_lifetime_seconds = CASE WHEN @setLifetime THEN @tokenLifetimeSeconds ELSE token_lifetime_seconds END,
        idle_timeout_seconds   = CASE WHEN @setIdle THEN @idleTimeoutSeconds ELSE idle_timeout_seconds END,
        default_language       = CASE WHEN @setLanguage THEN @defaultLanguage ELSE default_language END,
        trusted_callers        = CASE WHEN @setTrustedCallers THEN @trustedCallers ELSE trusted_callers END
      WHERE app_id = @appId`),
    revokeAppTokens: db.prepare(SQL.revokeAppTokens.sqlite),
    revokeAppTickets: db.prepare(SQL.revokeAppTickets.sqlite),

    userByKey: db.prepare(SQL.userByKey.sqlite),
    userById: db.prepare(SQL.userById.sqlite),
    listUsers: db.prepare(SQL.listUsers.sqlite),
    insertUser: db.prepare(SQL.insertUser.sqlite),
    insertGrant: db.prepare(SQL.insertGrant.sqlite),
    deleteGrant: db.prepare(SQL.deleteGrant.sqlite),
    setPassword: db.prepare(SQL.setPassword.sqlite),
    upgradePassword: db.prepare(SQL.upgradePassword.sqlite),
    setUserEnabled: db.prepare(SQL.setUserEnabled.sqlite),
    revokeUserTokens: db.prepare(SQL.revokeUserTokens.sqlite),
    revokeUserAppTokens: db.prepare(SQL.revokeUserAppTokens.sqlite),
    revokeUserTickets: db.prepare(SQL.revokeUserTickets.sqlite),
    revokeUserAppTickets: db.prepare(SQL.revokeUserAppTickets.sqlite),
    upgradeLegacyPassword: db.prepare(SQL.upgradeLegacyPassword.sqlite),
    markLegacyMigrated: db.prepare(SQL.markLegacyMigrated.sqlite),
    passwordHashes: db.prepare(SQL.passwordHashes.sqlite),
    hashSchemes: db.prepare(`SELECT CASE WHEN substr(password_hash, 1, 1) = '$'
        THEN substr(password_hash, 2, instr(substr(password_hash, 2) || '$', '$') - 1) ELSE '' END AS scheme, COUNT(*) AS n
      FROM users GROUP BY scheme ORDER BY scheme`),
  };

  const getUser = (userId: number): User | null => {
    const row = s.userById.get({ userId }) as Row | undefined;
    return row === undefined ? null : toUser(row);
  };

  const insertUserTx = db.transaction((user: NewUser): InsertUserResult => {
    const inserted = s.insertUser.get({
      login: user.login, loginKey: user.loginKey, passwordHash: user.passwordHash,
      enabled: bool(user.enabled), createdAt: ms(user.createdAt),
      passwordChangedAt: ms(user.passwordChangedAt ?? user.createdAt), lastLoginAt: user.lastLoginAt ? ms(user.lastLoginAt) : null,
    }) as Row | undefined;
    if (inserted === undefined) return { ok: false, reason: 'login-taken' };
    const userId = Number(inserted.user_id);
    for (const appId of user.appIds) s.insertGrant.run({ userId, appId, now: ms(user.createdAt) });
    const created = getUser(userId);
    if (created === null) throw new Error('user vanished inside its own transaction');
    return { ok: true, user: created };
  });

  const updateAppTx = db.transaction((appId: number, patch: ApplicationPatch, now: Date): Application | null => {
    const info = s.updateApp.run({
      appId,
      setName: bool(patch.name !== undefined), name: patch.name ?? null,
      setEnabled: bool(patch.enabled !== undefined), enabled: bool(patch.enabled ?? false),
      setRequireIp: bool(patch.requireIp !== undefined), requireIp: bool(patch.requireIp ?? false),
      setLoginUrl: bool(patch.loginUrl !== undefined), loginUrl: patch.loginUrl ?? null,
      setLifetime: bool(patch.tokenLifetimeSeconds !== undefined), tokenLifetimeSeconds: patch.tokenLifetimeSeconds ?? null,
      setIdle: bool(patch.idleTimeoutSeconds !== undefined), idleTimeoutSeconds: patch.idleTimeoutSeconds ?? null,
      setLanguage: bool(patch.defaultLanguage !== undefined), defaultLanguage: patch.defaultLanguage ?? null,
      setTrustedCallers: bool(patch.trustedCallers !== undefined), trustedCallers: JSON.stringify(patch.trustedCallers ?? []),
    });
    if (info.changes !== 1) return null;
    if (patch.enabled === false) {
      s.revokeAppTokens.run({ appId, now: ms(now) });
      s.revokeAppTickets.run({ appId, now: ms(now) });
    }
    const row = s.getApp.get({ appId }) as Row | undefined;
    return row === undefined ? null : toApplication(row);
  });

  const setPasswordTx = db.transaction((userId: number, passwordHash: string, now: Date): void => {
    s.setPassword.run({ userId, passwordHash, now: ms(now) });
    s.revokeUserTokens.run({ userId, now: ms(now) });
    s.revokeUserTickets.run({ userId, now: ms(now) });
  });

  const setEnabledTx = db.transaction((userId: number, enabled: boolean, now: Date): void => {
    s.setUserEnabled.run({ userId, enabled: bool(enabled) });
    if (!enabled) {
      s.revokeUserTokens.run({ userId, now: ms(now) });
      s.revokeUserTickets.run({ userId, now: ms(now) });
    }
  });

  const revokeGrantTx = db.transaction((userId: number, appId: number, now: Date): boolean => {
    if (s.deleteGrant.run({ userId, appId }).changes !== 1) return false;
    s.revokeUserAppTokens.run({ userId, appId, now: ms(now) });
    s.revokeUserAppTickets.run({ userId, appId, now: ms(now) });
    return true;
  });

  const migrateLegacyTx = db.transaction((input: LegacyMigrationInput): UserCredentials | null => {
    let userId: number;
    if (input.expectedHash === null) {
      const created = insertUserTx({
        login: input.login, loginKey: input.loginKey, passwordHash: input.passwordHash, enabled: true, appIds: [input.appId], createdAt: input.now,
      });
      if (!created.ok) return null;
      userId = created.user.userId;
    } else {
      const upgraded = s.upgradeLegacyPassword.get({ loginKey: input.loginKey, expectedHash: input.expectedHash, newHash: input.passwordHash }) as Row | undefined;
      if (upgraded === undefined) return null;
      userId = Number(upgraded.user_id);
      s.insertGrant.run({ userId, appId: input.appId, now: ms(input.now) });
    }
    s.markLegacyMigrated.run({ userId, now: ms(input.now) });
    const row = s.userById.get({ userId }) as Row;
    return { ...toUser(row), passwordHash: str(row.password_hash) };
  });

  return {
    async getApplication(appId) {
      const row = s.getApp.get({ appId }) as Row | undefined;
      return row === undefined ? null : toApplication(row);
    },
    async listApplications() {
      return (s.listApps.all() as Row[]).map(toApplication);
    },
    async insertApplication(app): Promise<InsertApplicationResult> {
      const row = s.insertApp.get({
        appId: app.appId, name: app.name, enabled: bool(app.enabled), requireIp: bool(app.requireIp),
        loginUrl: app.loginUrl, tokenLifetimeSeconds: app.tokenLifetimeSeconds, idleTimeoutSeconds: app.idleTimeoutSeconds,
        defaultLanguage: app.defaultLanguage, trustedCallers: JSON.stringify(app.trustedCallers), createdAt: ms(app.createdAt),
      }) as Row | undefined;
      return row === undefined ? { ok: false, reason: 'app-exists' } : { ok: true, application: toApplication(row) };
    },
    async updateApplication(appId, patch, now) {
      return updateAppTx.immediate(appId, patch, now);
    },

    async findUserByLoginKey(loginKey): Promise<UserCredentials | null> {
      const row = s.userByKey.get({ loginKey }) as Row | undefined;
      return row === undefined ? null : { ...toUser(row), passwordHash: str(row.password_hash) };
    },
    async getUser(userId) {
      return getUser(userId);
    },
    async listUsers(filter) {
      return (s.listUsers.all({ appId: filter?.appId ?? null }) as Row[]).map(toUser);
    },
    async insertUser(user) {
      return insertUserTx.immediate(user);
    },
    async setPasswordHash(userId, passwordHash, now) {
      setPasswordTx.immediate(userId, passwordHash, now);
    },
    async upgradePasswordHash(userId, expectedHash, newHash) {
      return s.upgradePassword.run({ userId, expectedHash, newHash }).changes === 1;
    },
    async setUserEnabled(userId, enabled, now) {
      setEnabledTx.immediate(userId, enabled, now);
    },
    async grantApplication(userId, appId, now) {
      return s.insertGrant.run({ userId, appId, now: ms(now) }).changes === 1;
    },
    async revokeApplication(userId, appId, now) {
      return revokeGrantTx.immediate(userId, appId, now);
    },
    async migrateLegacyUser(input) {
      return migrateLegacyTx.immediate(input);
    },
    async listPasswordHashes(page): Promise<readonly PasswordHashRow[]> {
      return (s.passwordHashes.all({ afterUserId: page.afterUserId, limit: Math.max(0, Math.trunc(page.limit)) }) as Row[]).map((r) => ({
        userId: Number(r.user_id), passwordHash: str(r.password_hash), legacyMigratedAt: dateOrNull(r.migrated_at),
      }));
    },
    async countPasswordHashSchemes() {
      return (s.hashSchemes.all() as Row[]).map((r) => ({ scheme: str(r.scheme), count: Number(r.n) }));
    },
  };
}
