/**
 * PostgreSQL's accounts: applications, users, their grants and password hashes, and the
 * migration of legacy users (AccountStore). Disabling, a password change or a withdrawn grant
 * revokes the tokens concerned in the same transaction.
 */
import type pg from 'pg';
import type {
  AccountStore, ApplicationPatch, InsertApplicationResult, InsertUserResult, LegacyMigrationInput, NewUser, PasswordHashRow, User, UserCredentials,
} from '../store.js';
import type { Row } from '../row-mapping.js';
import { APP_COLUMNS, SQL } from '../shared-sql.js';
import { one, type PostgresContext, type Queryable } from './postgres-context.js';
import { dateOrNull, num, str, toApplication, toUser } from './postgres-row-mapping.js';

export function postgresAccounts(ctx: PostgresContext): AccountStore {
  const { pool, onPool, q, run, runOn, tx } = ctx;

  async function getUserOn(db: Queryable, userId: number): Promise<User | null> {
    const row = (await runOn(db, SQL.userById, { userId }, 'user_by_id')).rows[0];
    return row === undefined ? null : toUser(row);
  }

  async function insertUserOn(c: pg.PoolClient, user: NewUser): Promise<InsertUserResult> {
    const inserted = (await runOn(c, SQL.insertUser, {
      login: user.login, loginKey: user.loginKey, passwordHash: user.passwordHash, enabled: user.enabled, createdAt: user.createdAt,
      passwordChangedAt: user.passwordChangedAt ?? user.createdAt, lastLoginAt: user.lastLoginAt ?? null,
    })).rows[0];
    if (inserted === undefined) return { ok: false, reason: 'login-taken' };
    const userId = num(inserted.user_id);
    if (user.appIds.length > 0) {
      await c.query(`INSERT INTO user_applications (user_id, app_id, granted_at) SELECT $1, unnest($2::integer[]), $3
        ON CONFLICT (user_id, app_id) DO NOTHING`, [userId, [...user.appIds], user.createdAt]);
    }
    const created = await getUserOn(c, userId);
    if (created === null) throw new Error('user vanished inside its own transaction');
    return { ok: true, user: created };
  }

  const PATCH_COLUMNS: { readonly [K in keyof ApplicationPatch]-?: string } = {
    name: 'name', enabled: 'enabled', requireIp: 'require_ip', loginUrl: 'login_url', tokenLifetimeSeconds: 'token_lifetime_seconds',
    idleTimeoutSeconds: 'idle_timeout_seconds', defaultLanguage: 'default_language', trustedCallers: 'trusted_callers',
  };

  return {
    async getApplication(appId) {
      const row = one(await run('get_app', SQL.getApp, { appId }, true));
      return row === undefined ? null : toApplication(row);
    },
    async listApplications() {
      return (await run('list_apps', SQL.listApps, {}, true)).rows.map(toApplication);
    },
    async insertApplication(app): Promise<InsertApplicationResult> {
      const row = one(await run('insert_app', SQL.insertApp, {
        appId: app.appId, name: app.name, enabled: app.enabled, requireIp: app.requireIp, loginUrl: app.loginUrl, tokenLifetimeSeconds: app.tokenLifetimeSeconds,
        idleTimeoutSeconds: app.idleTimeoutSeconds, defaultLanguage: app.defaultLanguage, createdAt: app.createdAt, trustedCallers: [...app.trustedCallers],
      }));
      return row === undefined ? { ok: false, reason: 'app-exists' } : { ok: true, application: toApplication(row) };
    },
    async updateApplication(appId, patch, now) {
      const sets: string[] = [];
      const values: unknown[] = [appId];
      for (const [key, column] of Object.entries(PATCH_COLUMNS) as [keyof ApplicationPatch, string][]) {
        if (patch[key] === undefined) continue;
        values.push(patch[key]);
        sets.push(`${column} = $${values.length}`);
      }
      if (sets.length === 0) sets.push('app_id = app_id');
      return tx(async (c) => {
        const row = (await c.query<Row>(`UPDATE applications SET ${sets.join(', ')} WHERE app_id = $1 RETURNING ${APP_COLUMNS}`, values)).rows[0];
        if (row === undefined) return null;
        if (patch.enabled === false) {
          await runOn(c, SQL.revokeAppTokens, { appId, now });
          await runOn(c, SQL.revokeAppTickets, { appId, now });
        }
        return toApplication(row);
      });
    },

    async findUserByLoginKey(loginKey): Promise<UserCredentials | null> {
      const row = one(await run('user_by_key', SQL.userByKey, { loginKey }, true));
      return row === undefined ? null : { ...toUser(row), passwordHash: str(row.password_hash) };
    },
    async getUser(userId) {
      return onPool(true, () => getUserOn(pool, userId));
    },
    async listUsers(filter) {
      return (await run('list_users', SQL.listUsers, { appId: filter?.appId ?? null }, true)).rows.map(toUser);
    },
    async insertUser(user: NewUser): Promise<InsertUserResult> {
      return tx((c) => insertUserOn(c, user));
    },
    async setPasswordHash(userId, passwordHash, now) {
      // Two statements: the second sees any token committed by a login that held the row lock.
      await tx(async (c) => {
        await runOn(c, SQL.setPassword, { userId, passwordHash, now });
        await runOn(c, SQL.revokeUserTokens, { userId, now });
        await runOn(c, SQL.revokeUserTickets, { userId, now });
      });
    },
    async upgradePasswordHash(userId, expectedHash, newHash) {
      const result = await run('upgrade_password', SQL.upgradePassword, { userId, expectedHash, newHash });
      return result.rowCount === 1;
    },
    async setUserEnabled(userId, enabled, now) {
      await tx(async (c) => {
        await runOn(c, SQL.setUserEnabled, { userId, enabled });
        if (!enabled) {
          await runOn(c, SQL.revokeUserTokens, { userId, now });
          await runOn(c, SQL.revokeUserTickets, { userId, now });
        }
      });
    },
    async grantApplication(userId, appId, now) {
      const result = await run(null, SQL.insertGrant, { userId, appId, now });
      return result.rowCount === 1;
    },
    async revokeApplication(userId, appId, now) {
      return tx(async (c) => {
        const deleted = await runOn(c, SQL.deleteGrant, { userId, appId });
        if (deleted.rowCount !== 1) return false;
        await runOn(c, SQL.revokeUserAppTokens, { userId, appId, now });
        await runOn(c, SQL.revokeUserAppTickets, { userId, appId, now });
        return true;
      });
    },

    async migrateLegacyUser(input: LegacyMigrationInput): Promise<UserCredentials | null> {
      return tx(async (c) => {
        let userId: number;
        if (input.expectedHash === null) {
          const created = await insertUserOn(c, {
            login: input.login, loginKey: input.loginKey, passwordHash: input.passwordHash, enabled: true, appIds: [input.appId], createdAt: input.now,
          });
          if (!created.ok) return null;
          userId = created.user.userId;
        } else {
          const upgraded = (await runOn(c, SQL.upgradeLegacyPassword, { loginKey: input.loginKey, expectedHash: input.expectedHash, newHash: input.passwordHash })).rows[0];
          if (upgraded === undefined) return null;
          userId = num(upgraded.user_id);
          await runOn(c, SQL.insertGrant, { userId, appId: input.appId, now: input.now });
        }
        await runOn(c, SQL.markLegacyMigrated, { userId, now: input.now });
        const row = (await runOn(c, SQL.userById, { userId })).rows[0];
        if (row === undefined) throw new Error('user vanished inside its own transaction');
        return { ...toUser(row), passwordHash: str(row.password_hash) };
      });
    },
    async listPasswordHashes(page): Promise<readonly PasswordHashRow[]> {
      return (await run(null, SQL.passwordHashes, { afterUserId: page.afterUserId, limit: Math.max(0, Math.trunc(page.limit)) }, true)).rows.map((r) => ({
        userId: num(r.user_id), passwordHash: str(r.password_hash), legacyMigratedAt: dateOrNull(r.migrated_at),
      }));
    },
    async countPasswordHashSchemes() {
      return (await q(null, `SELECT CASE WHEN left(password_hash, 1) = '$' THEN split_part(substr(password_hash, 2), '$', 1) ELSE '' END AS scheme,
          COUNT(*) AS n FROM users GROUP BY 1 ORDER BY 1`, [], true)).rows.map((r) => ({ scheme: str(r.scheme), count: num(r.n) }));
    },
  };
}
