import type { AuthService, CallerContext, NewsItem, TokenCheck, ValidateUserInput, ValidateUserOutcome, WhatsNewInput } from './auth-service.js';
import type { Store, TokenRecord } from '../store/store.js';
import type { PasswordHasher } from './password-hasher.js';
import { systemClock, type Clock } from './clock.js';
import { cryptoRandomSource, type RandomSource } from './random-source.js';
import { canonicalToken, evaluateToken, hashToken, initialExpiry, newTokenString } from './tokens.js';
import { loginKey } from './logins.js';
import { isValidIpAddress } from './ip-address.js';
import { languageCandidates } from './languages.js';
import { newsLimit, selectNews, toNewsItem } from './news-selection.js';
import { appendTicket } from './login-url.js';

export interface AuthServiceDeps {
  readonly store: Store;
  readonly hasher: PasswordHasher;
  readonly clock?: Clock;
  readonly random?: RandomSource;
  /** Lifetime of a GetUserLoginURL ticket (config `tickets.ttlSeconds`); default 120. */
  readonly ticketTtlSeconds?: number;
}

const FAILED: ValidateUserOutcome = Object.freeze({ ok: false });
const INVALID: TokenCheck = Object.freeze({ valid: false });

type SessionCheck = { readonly valid: true; readonly record: TokenRecord; readonly expiresAt: Date } | { readonly valid: false };

export function createAuthService(deps: AuthServiceDeps): AuthService {
  const { store, hasher } = deps;
  const clock = deps.clock ?? systemClock;
  const random = deps.random ?? cryptoRandomSource;
  const ticketTtlMs = (deps.ticketTtlSeconds ?? 120) * 1000;

  // An unknown login must cost one real verification too, or response time would tell which
  // logins exist. The dummy hash is computed once, from a password nobody knows.
  const dummyHash = hasher.hash(newTokenString(cryptoRandomSource));
  dummyHash.catch(() => undefined); // surfaced when awaited, not as an unhandled rejection

  /** A live session token (never a ticket), with its use recorded for sliding expiry. */
  async function checkSession(token: string | null): Promise<SessionCheck> {
    const canonical = canonicalToken(token);
    if (canonical === null) return { valid: false };
    const tokenHash = hashToken(canonical);
    const record = await store.findToken(tokenHash);
    if (record === null || record.kind !== 'session') return { valid: false };
    const now = clock.now();
    const verdict = evaluateToken(record, now);
    if (!verdict.valid) return { valid: false };
    if (record.idleTimeoutSeconds !== null) await store.touchToken(tokenHash, now);
    return { valid: true, record, expiresAt: verdict.expiresAt };
  }

  return {
    async validateUser(input: ValidateUserInput, ctx: CallerContext): Promise<ValidateUserOutcome> {
      // Every path below does the same work (two lookups, one hash verification) and every
      // failure is the same value, so neither the answer nor its timing says why it failed.
      const app = Number.isSafeInteger(input.appId) ? await store.getApplication(input.appId) : null;
      const login = input.login ?? '';
      const user = login === '' ? null : await store.findUserByLoginKey(loginKey(login));
      const hashToCheck = user?.passwordHash ?? await dummyHash;
      const passwordMatches = await hasher.verify(hashToCheck, input.password ?? '');

      if (user === null || app === null || input.password === null || !passwordMatches) return FAILED;
      if (!app.enabled || !user.enabled || !user.appIds.includes(app.appId)) return FAILED;
      if (app.requireIp && !isValidIpAddress(input.ipAddress)) return FAILED;

      const token = newTokenString(random);
      const issuedAt = clock.now();
      const expiry = initialExpiry(issuedAt, app.tokenLifetimeSeconds, app.idleTimeoutSeconds);
      const stored = await store.insertSession({
        tokenHash: hashToken(token),
        userId: user.userId,
        appId: app.appId,
        clientIp: isValidIpAddress(input.ipAddress) ? input.ipAddress : null,
        sourceIp: ctx.sourceIp === '' ? null : ctx.sourceIp,
        issuedAt,
        expiresAt: expiry.absolute,
      }, { passwordHash: user.passwordHash });
      // Refused when the user was disabled or the password changed while we were verifying.
      if (!stored) return FAILED;

      if (hasher.needsRehash(user.passwordHash)) {
        await store.upgradePasswordHash(user.userId, user.passwordHash, await hasher.hash(input.password));
      }
      return { ok: true, token, expiresAt: expiry.effective };
    },

    async validateUserToken(token: string | null, _ctx: CallerContext): Promise<TokenCheck> {
      const canonical = canonicalToken(token);
      if (canonical === null) return INVALID;
      const tokenHash = hashToken(canonical);
      const record = await store.findToken(tokenHash);
      if (record === null) return INVALID;
      const now = clock.now();
      const verdict = evaluateToken(record, now);
      if (!verdict.valid) return INVALID;
      if (record.kind === 'ticket') {
        // Single use: only the caller whose conditional update wins gets true.
        return (await store.consumeTicket(tokenHash, now)) ? verdict : INVALID;
      }
      if (record.idleTimeoutSeconds !== null) await store.touchToken(tokenHash, now);
      return verdict;
    },

    async whatsNew(input: WhatsNewInput, _ctx: CallerContext): Promise<readonly NewsItem[]> {
      const limit = newsLimit(input.qtyNews);
      if (limit === 0 || !Number.isSafeInteger(input.appId)) return [];
      const app = await store.getApplication(input.appId);
      if (app === null || !app.enabled) return [];
      let member = false;
      if (input.appToken !== null && input.appToken !== '') {
        const session = await checkSession(input.appToken);
        member = session.valid && session.record.appId === app.appId;
      }
      const candidates = languageCandidates(input.language, app.defaultLanguage);
      const rows = await store.findPublishedNews({ appId: app.appId, languages: candidates, now: clock.now(), includeMembersOnly: member });
      return selectNews(rows, { candidates, appVersion: input.appVersion, limit }).map(toNewsItem);
    },

    async getUserLoginUrl(token: string | null, appId: number, ctx: CallerContext): Promise<string> {
      const session = await checkSession(token);
      if (!session.valid || !Number.isSafeInteger(appId)) return '';
      const app = await store.getApplication(appId);
      if (app === null || !app.enabled || app.loginUrl === null) return '';
      const user = await store.getUser(session.record.userId);
      if (user === null || !user.enabled || !user.appIds.includes(app.appId)) return '';

      const ticket = newTokenString(random);
      const issuedAt = clock.now();
      const stored = await store.insertTicket({
        tokenHash: hashToken(ticket),
        userId: user.userId,
        appId: app.appId,
        clientIp: session.record.clientIp,
        sourceIp: ctx.sourceIp === '' ? null : ctx.sourceIp,
        issuedAt,
        expiresAt: new Date(issuedAt.getTime() + ticketTtlMs),
      });
      return stored ? appendTicket(app.loginUrl, ticket) : '';
    },
  };
}
