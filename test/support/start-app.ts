/**
 * Test harness: the real stack (SQLite store, argon2id hasher, domain services, HTTP app) on a
 * temporary database, either for `app.inject()` (no socket) or listening on 127.0.0.1. The
 * hasher has small argon2id parameters unless the test gives its own (fast-hasher.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../../src/http/app.js';
import { fastHasher } from './fast-hasher.js';
import { injectable, type InjectableApp } from './inject.js';
import { createAdminService, type AdminService } from '../../src/domain/admin-service.js';
import type { AuthEvents } from '../../src/domain/auth-events.js';
import type { AuthService } from '../../src/domain/auth-service.js';
import type { Clock } from '../../src/domain/clock.js';
import { createLegacyGuard, legacyAnswerRules, type LegacyAnswerRules, type LegacyAuthenticator, type LegacyGuard } from '../../src/domain/legacy-guard.js';
import { systemClock } from '../../src/domain/clock.js';
import { cryptoRandomSource } from '../../src/domain/random-source.js';
import { DEFAULT_THROTTLE_POLICY, type ThrottlePolicy } from '../../src/domain/login-throttle.js';
import type { PasswordHasher } from '../../src/domain/password-hasher.js';
import type { LegacyTokenPassthrough } from '../../src/domain/legacy-token-passthrough.js';
import { createAuthService } from '../../src/domain/create-auth-service.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import type { HttpGetOption } from '../../src/wire/http-get-option.js';
import type { CompatProfile } from '../../src/contract/compat-profile.js';
import type { LegacyMirror } from '../../src/compat/shadow.js';
import { dryRunStore } from '../../src/store/dry-run-store.js';
import type { Logger } from 'pino';

export interface TestStack {
  readonly app: InjectableApp;
  readonly store: Store;
  readonly service: AuthService;
  readonly admin: AdminService;
  /** The SQLite file; '' on another database (`databaseUrl`). */
  readonly dbPath: string;
  close(): Promise<void>;
}

export interface StackOptions {
  readonly timeZone?: string;
  readonly maxRequestBytes?: number;
  /** How long a request may take to arrive in full; tests of slow bodies shorten it. */
  readonly bodyTimeoutMs?: number;
  readonly clock?: Clock;
  readonly httpGet?: HttpGetOption;
  /**
   * Lazy migration: the old service to ask about logins unknown here, behind a guard with
   * `legacyRules` (default: GUID tokens, failure value ''), or a guard of the test's own.
   */
  readonly legacy?: LegacyAuthenticator | LegacyGuard;
  readonly legacyRules?: LegacyAnswerRules;
  /** Brute-force protection: the defaults (as `serve` has them) unless given; false turns it off. */
  readonly throttle?: ThrottlePolicy | false;
  /**
   * The hasher (default: the real composite one with small argon2id parameters, fast-hasher.ts),
   * e.g. wrapped by a test to count verifications, or `createPasswordHasher()` for production's.
   */
  readonly hasher?: PasswordHasher;
  /**
   * A compatibility profile, as `serve --compat FILE` applies it (compatProfileFromJson reads
   * one): token form, failure value, JSON layouts, login URLs, and the legacy guard's rules
   * (unless `legacyRules` says otherwise). None: svcapi-auth's own choices.
   */
  readonly profile?: CompatProfile;
  /** Shadow or front mode (src/compat/shadow.ts): the mirror, built on the stack's store; front mode's own answers on a side-effect-free view of it. */
  readonly mirror?: (store: Store) => LegacyMirror;
  /** A logger for the app (default none). */
  readonly logger?: Logger;
  /** Token passthrough: tokens unknown here asked of the old service (built on the stack's store when adoption needs it). */
  readonly legacyTokens?: LegacyTokenPassthrough | ((store: Store) => LegacyTokenPassthrough);
  /** Observers of the service's outcomes (e.g. an audit trail's events). */
  readonly events?: AuthEvents;
  /**
   * The database (a `postgres://...?schema=` URL of test/support/postgres.ts: the caller drops
   * the schema); default a fresh SQLite file.
   */
  readonly databaseUrl?: string;
}

export async function createTestStack(options: StackOptions = {}): Promise<TestStack> {
  const dir = mkdtempSync(join(tmpdir(), 'svcapi-auth-test-'));
  const dbPath = options.databaseUrl === undefined ? join(dir, 'test.db') : '';
  const store = await openStore(options.databaseUrl ?? `sqlite:${dbPath}`);
  const hasher = options.hasher ?? fastHasher();
  const throttle = options.throttle ?? DEFAULT_THROTTLE_POLICY;
  const legacy = options.legacy === undefined || 'vouch' in options.legacy
    ? options.legacy
    : createLegacyGuard({ authenticator: options.legacy, clock: options.clock ?? systemClock, random: cryptoRandomSource, rules: options.legacyRules ?? legacyAnswerRules(options.profile ?? null) });
  const profile = options.profile;
  const service = createAuthService({
    store, hasher, ...(options.clock ? { clock: options.clock } : {}), ...(legacy ? { legacy } : {}), ...(throttle !== false && { throttle }),
    ...(options.events !== undefined && { events: options.events }),
    ...(profile !== undefined && { tokenForm: profile.tokens.form, loginUrl: profile.loginUrl }),
    ...(options.legacyTokens !== undefined && { legacyTokens: typeof options.legacyTokens === 'function' ? options.legacyTokens(store) : options.legacyTokens }),
    ...(profile !== undefined && profile.whatsNew.maxRows !== null && { maxNews: profile.whatsNew.maxRows }),
  });
  const admin = createAdminService({ store, hasher, ...(options.clock ? { clock: options.clock } : {}) });
  const mirror = options.mirror?.(store);
  const frontService = mirror?.mode === 'front'
    ? createAuthService({ store: dryRunStore(store), hasher, ...(profile !== undefined && { tokenForm: profile.tokens.form, loginUrl: profile.loginUrl }) })
    : undefined;
  const app = injectable(await buildApp({
    ...(mirror !== undefined && { mirror }),
    ...(frontService !== undefined && { frontService }),
    service,
    config: { http: { maxRequestBytes: options.maxRequestBytes ?? 1024 * 1024, bodyTimeoutMs: options.bodyTimeoutMs ?? 10_000, ...(options.httpGet !== undefined ? { httpGet: options.httpGet } : {}) }, timeZone: options.timeZone ?? 'UTC', ...(profile !== undefined && { compat: { profile } }) },
    logger: options.logger ?? false,
  }));
  return {
    app,
    store,
    service,
    admin,
    dbPath,
    async close() {
      await app.close();
      await mirror?.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function must<T>(result: { ok: true; value: T } | { ok: false; message: string }): T {
  if (!result.ok) throw new Error(result.message);
  return result.value;
}

/**
 * The reference's sample data (shared/reference/asmx/README.md): user demo / demo-pass on the
 * GPS application (AppID 2), whose login URL is http://gps.example/login, and five English news
 * rows "News item N" published 2020-01-0N 10:30 UTC with a body that needs escaping.
 */
export async function seedReference(admin: AdminService): Promise<void> {
  must(await admin.updateApplication(2, { loginUrl: 'http://gps.example/login' }));
  must(await admin.addUser({ login: 'demo', password: 'demo-pass', appIds: [2] }));
  for (let n = 1; n <= 5; n++) {
    must(
      await admin.addNews({
        appId: 2,
        title: `News item ${n}`,
        body: `Body of news item ${n} & <more>`,
        language: 'en',
        url: `http://gps.example/news/${n}`,
        publishedAt: new Date(Date.UTC(2020, 0, n, 10, 30, 0)),
      }),
    );
  }
}

export interface StartedApp {
  readonly url: string;
  readonly service: AuthService;
  readonly stack: TestStack;
  close(): Promise<void>;
  seedUser(login: string, password: string, appId: number): Promise<void>;
}

/** The stack listening on an ephemeral loopback port, for clients that need a real socket. */
export async function startApp(options: StackOptions = {}): Promise<StartedApp> {
  const stack = await createTestStack(options);
  const address = await stack.app.listen({ host: '127.0.0.1', port: 0 });
  return {
    url: address,
    service: stack.service,
    stack,
    close: () => stack.close(),
    async seedUser(login, password, appId) {
      must(await stack.admin.addUser({ login, password, appIds: [appId] }));
    },
  };
}
