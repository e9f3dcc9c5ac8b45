import type { AuthService, CallerContext, NewsItem, TokenCheck, TokenCheckOptions, WhatsNewInput } from './auth-service.js';
import type { OrderedTicketKey, Store, TokenRecord } from '../store/store.js';
import type { PasswordHasher } from './password-hasher.js';
import { systemClock, type Clock } from './clock.js';
import { cryptoRandomSource, type RandomSource } from './random-source.js';
import { canonicalToken, evaluateToken, hashToken, newTokenString } from './tokens.js';
import { languageCandidates } from './languages.js';
import { MAX_NEWS, newsLimit } from './news-selection.js';
import { createNewsCache, NO_NEWS } from './news-cache.js';
import { createRevisionGate } from './revision-gate.js';
import { createAccessCache } from './access-cache.js';
import { compileLoginUrls } from './login-url.js';
import { newTicketKey, orderedTicketIssuedAt, orderedTicketText, ticketSeal } from './ordered-ticket.js';
import { DEFAULT_TOKEN_FORM, type TokenForm } from './token-form.js';
import { DEFAULT_COMPAT_PROFILE, type LoginUrlProfile } from '../contract/compat-profile.js';
import { createLegacyMigration } from './legacy-migration.js';
import type { LegacyGuard } from './legacy-guard.js';
import type { LegacyTokenPassthrough } from './legacy-token-passthrough.js';
import { combineAuthEvents, type AuthEvents } from './auth-events.js';
import { tokenFingerprint } from './audit.js';
import { createFailurePadding, type FailurePadding } from './failure-padding.js';
import { createLoginThrottle, type ThrottlePolicy } from './login-throttle.js';
import { createValidateUser } from './validate-user.js';

export interface AuthServiceDeps {
  readonly store: Store;
  readonly hasher: PasswordHasher;
  readonly clock?: Clock;
  readonly random?: RandomSource;
  /**
   * The form new tokens and login tickets are written in (the compatibility profile's
   * `tokens.form`); default a lower-case GUID in D form.
   */
  readonly tokenForm?: TokenForm;
  /** GetUserLoginURL's answers (the compatibility profile's `loginUrl`); default svcapi-auth's own. */
  readonly loginUrl?: LoginUrlProfile;
  /** Lifetime of a GetUserLoginURL ticket (config `tickets.ttlSeconds`); default 120. */
  readonly ticketTtlSeconds?: number;
  /**
   * Tickets carry their issue time and are kept in issue order (ordered-ticket.ts; config
   * `performance.orderedTickets`); default true. false: random tickets in the tokens table.
   * Either way both kinds are redeemed.
   */
  readonly orderedTickets?: boolean;
  /**
   * Asked at each ticket: true while an instance of an older version may be serving from the same
   * database (the readiness probe saw one lately, migration 18). Such an instance looks for
   * tickets in the tokens table only, so tickets are issued there, random, meanwhile: a rolling
   * upgrade needs no step of its own. Default: never.
   */
  readonly olderVersionServing?: () => boolean;
  /**
   * The installation's ticket key (Store.installationSecret TICKET_KEY_SECRET, made by migration
   * 17; ordered-ticket.ts): every service on one database must have the same to redeem the others'
   * tickets. Default: a new key for this service alone.
   */
  readonly ticketKey?: string;
  /**
   * The old service, for lazy migration (config `legacy.url`; legacy-migration.ts), behind the
   * guard that decides what counts as its yes (legacy-guard.ts); none by default.
   */
  readonly legacy?: LegacyGuard;
  /**
   * Token passthrough (config `legacy.tokenPassthrough`; legacy-token-passthrough.ts): tokens
   * unknown here are asked of the old service until an end date. Never asked about tokens the
   * store knows. None by default.
   */
  readonly legacyTokens?: LegacyTokenPassthrough;
  /** Observers of outcomes (metrics, later audit); they never change an answer. */
  readonly events?: AuthEvents;
  /** Equal timing of failures (failure-padding.ts); one per service by default. */
  readonly padding?: FailurePadding;
  /**
   * Brute-force protection (login-throttle.ts, config `bruteForce`): counters in the
   * store, a slot reserved before every password verification. Absent: no throttling (serve
   * always passes the configured policy).
   */
  readonly throttle?: ThrottlePolicy;
  /**
   * WhatsNew answers kept in memory (news-cache.ts), per kind of entry at most this many
   * (default 1000); 0 reads the store on every call.
   */
  readonly newsCacheEntries?: number;
  /**
   * The most rows one WhatsNew answer carries, whatever qtyNews asks (compat profile
   * `whatsNew.maxRows`); default MAX_NEWS (100).
   */
  readonly maxNews?: number;
  /**
   * session tokens kept in memory (access-cache.ts), at most this many (default 50,000);
   * 0 reads the store on every call.
   */
  readonly tokenCacheEntries?: number;
  /** Sessions remembered compactly for ValidateUserToken (session-memory.ts; default 1,500,000; 0: none). */
  readonly sessionMemoryEntries?: number;
  /** A token not in memory is read with the turn's revisions in one snapshot (default true; access-cache.ts). */
  readonly tokenReadWithRevisions?: boolean;
  /** At most one revisions read under way (revision-gate.ts; default false). */
  readonly revisionReadsOneAtATime?: boolean;
}

const INVALID: TokenCheck = Object.freeze({ valid: false });

/** `unknown`: the store has no such token (only such a token may be one of the old service's). */
type SessionCheck = { readonly valid: true; readonly record: TokenRecord; readonly expiresAt: Date } | { readonly valid: false; readonly unknown: boolean };

export function createAuthService(deps: AuthServiceDeps): AuthService {
  const { store, hasher } = deps;
  const clock = deps.clock ?? systemClock;
  const random = deps.random ?? cryptoRandomSource;
  const ticketTtlMs = (deps.ticketTtlSeconds ?? 120) * 1000;
  const orderedTickets = deps.orderedTickets ?? true;
  const olderVersionServing = deps.olderVersionServing ?? ((): boolean => false);
  const seal = ticketSeal(deps.ticketKey ?? newTicketKey());
  const tokenForm = deps.tokenForm ?? DEFAULT_TOKEN_FORM;
  const loginUrls = compileLoginUrls(deps.loginUrl ?? DEFAULT_COMPAT_PROFILE.loginUrl);
  /** A new token or ticket in the profile's form, and the hash the store keeps for it. */
  const issue = (): { text: string; hash: string } => {
    const text = newTokenString(random, tokenForm);
    const canonical = canonicalToken(text);
    // Every form we write must read back, or the client's token would never validate.
    if (canonical === null) throw new Error('a token of the configured form does not read back');
    return { text, hash: hashToken(canonical) };
  };
  // Every ticket we write must open to its issue time again, or the client's ticket would never
  // redeem. That depends only on the form and the key: checked once, here, not per ticket.
  const probeAt = clock.now().getTime();
  if (orderedTicketIssuedAt(canonicalToken(orderedTicketText(random, tokenForm, probeAt, seal)) ?? '', probeAt, seal) !== probeAt) {
    throw new Error('a ticket of the configured form does not read back');
  }
  /** A new ticket issued at `issuedAt`: in issue order (ordered-ticket.ts) or random, and its hash. */
  const issueTicket = (issuedAt: Date, ordered: boolean): { text: string; hash: string } => {
    if (!ordered) return issue();
    const text = orderedTicketText(random, tokenForm, issuedAt.getTime(), seal);
    const canonical = canonicalToken(text);
    if (canonical === null) throw new Error('a ticket of the configured form does not read back');
    return { text, hash: hashToken(canonical) };
  };
  /** Where an ordered ticket would be, when the text carries a plausible issue time (ordered-ticket.ts); else null. */
  const orderedTicketKey = (canonical: string, tokenHash: string): OrderedTicketKey | null => {
    const issuedAt = orderedTicketIssuedAt(canonical, clock.now().getTime(), seal);
    return issuedAt === null ? null : { issuedAt: new Date(issuedAt), tokenHash };
  };
  const maxNews = deps.maxNews ?? MAX_NEWS;
  const legacy = deps.legacy === undefined ? null : createLegacyMigration({ store, hasher, legacy: deps.legacy, clock });
  const legacyTokens = deps.legacyTokens ?? null;
  /** A token the store does not know: the old service's verdict while passthrough is on. */
  const askLegacy = (token: string | null, ctx: CallerContext): Promise<TokenCheck> => (legacyTokens === null || token === null ? Promise.resolve(INVALID) : legacyTokens.check(token, ctx));
  const events = combineAuthEvents(deps.events);
  const padding = deps.padding ?? createFailurePadding();
  const throttle = deps.throttle === undefined ? null : createLoginThrottle(store, deps.throttle, { now: () => clock.now() });
  // One read of the store's revisions per event-loop turn labels everything kept in memory.
  const revisions = createRevisionGate(store, { oneAtATime: deps.revisionReadsOneAtATime ?? false });
  const news = createNewsCache({ store, clock, revisions, ...(deps.newsCacheEntries !== undefined && { maxEntries: deps.newsCacheEntries }) });
  const access = createAccessCache({ store, revisions, now: () => clock.now().getTime(), ...(deps.tokenCacheEntries !== undefined && { maxTokens: deps.tokenCacheEntries }),
    ...(deps.sessionMemoryEntries !== undefined && { maxSessions: deps.sessionMemoryEntries }),
    ...(deps.tokenReadWithRevisions !== undefined && { readWithRevisions: deps.tokenReadWithRevisions }) });

  /** A live session token (never a ticket), with its use recorded for sliding expiry. */
  async function checkSession(token: string | null): Promise<SessionCheck> {
    const canonical = canonicalToken(token);
    if (canonical === null) return { valid: false, unknown: true };
    const tokenHash = hashToken(canonical);
    const record = await access.findToken(tokenHash);
    if (record === null) {
      // A ticket of the tickets table is known here, no session, and never the old service's to judge.
      const key = orderedTicketKey(canonical, tokenHash);
      return { valid: false, unknown: key === null || (await store.findOrderedTicket(key)) === null };
    }
    if (record.kind !== 'session') return { valid: false, unknown: false };
    const now = clock.now();
    const verdict = evaluateToken(record, now);
    if (!verdict.valid) return { valid: false, unknown: false };
    if (record.idleTimeoutSeconds !== null) await store.touchToken(tokenHash, now);
    return { valid: true, record, expiresAt: verdict.expiresAt };
  }

  /** A valid check with the token's owner (read with the token), for a JSON layout that shows it. */
  function withOwner(verdict: TokenCheck & { valid: true }, record: TokenRecord): TokenCheck {
    return { ...verdict, owner: { login: record.login, appId: record.appId } };
  }

  return {
    validateUser: createValidateUser({ store, hasher, clock, events, padding, throttle, legacy, issue }),

    async validateUserToken(token: string | null, ctx: CallerContext, options?: TokenCheckOptions): Promise<TokenCheck> {
      const canonical = canonicalToken(token);
      const invalid = (kind: 'session' | 'ticket' | 'unknown'): TokenCheck => {
        events.tokenValidated({ valid: false, kind, ctx });
        return INVALID;
      };
      const unknown = async (): Promise<TokenCheck> => {
        const check = await askLegacy(token, ctx);
        if (!check.valid) return invalid('unknown');
        events.tokenValidated({ valid: true, kind: 'legacy', ctx });
        return check;
      };
      if (canonical === null) return unknown();
      const tokenHash = hashToken(canonical);
      /** Redeems a ticket that `consume` marks used: true for exactly one caller. */
      const redeem = async (record: TokenRecord, consume: (now: Date) => Promise<boolean>): Promise<TokenCheck> => {
        const now = clock.now();
        const verdict = evaluateToken(record, now);
        if (!verdict.valid) return invalid('ticket');
        // Single use: only the caller whose conditional update wins gets true.
        if (!(await consume(now))) return invalid('ticket');
        events.ticketUsed({ userId: record.userId, appId: record.appId, ctx, login: record.login, tokenFp: tokenFingerprint(tokenHash) });
        events.tokenValidated({ valid: true, kind: 'ticket', ctx });
        return options?.owner === true ? withOwner(verdict, record) : verdict;
      };
      // The owner needs the row; a plain check may be answered by the session memory (access-cache.ts).
      const record = options?.owner === true ? await access.findToken(tokenHash) : await access.checkToken(tokenHash);
      if (typeof record === 'number') {
        events.tokenValidated({ valid: true, kind: 'session', ctx });
        return { valid: true, expiresAt: new Date(record) };
      }
      if (record === null) {
        // Not in the tokens table: a ticket in issue order is found by the key its text opens to
        // (ordered-ticket.ts). Asked only here, so a session's check never opens its text.
        const key = orderedTicketKey(canonical, tokenHash);
        const ticket = key === null ? null : await store.findOrderedTicket(key);
        return ticket === null || key === null ? unknown() : redeem(ticket, (now) => store.consumeOrderedTicket(key, now));
      }
      if (record.kind === 'ticket') return redeem(record, (now) => store.consumeTicket(tokenHash, now));
      const now = clock.now();
      const verdict = evaluateToken(record, now);
      if (!verdict.valid) return invalid('session');
      if (record.idleTimeoutSeconds !== null) await store.touchToken(tokenHash, now);
      events.tokenValidated({ valid: true, kind: 'session', ctx });
      return options?.owner === true ? withOwner(verdict, record) : verdict;
    },

    async whatsNew(input: WhatsNewInput, ctx: CallerContext): Promise<readonly NewsItem[]> {
      const limit = newsLimit(input.qtyNews, maxNews);
      if (limit === 0 || !Number.isSafeInteger(input.appId)) return NO_NEWS;
      // The application and the session come from memory only while the access revision says
      // they are unchanged (access-cache.ts): disabling the application or revoking the token
      // takes effect on the next request.
      const app = await access.getApplication(input.appId);
      if (app === null || !app.enabled) return NO_NEWS;
      let member = false;
      if (input.appToken !== null && input.appToken !== '') {
        const session = await checkSession(input.appToken);
        member = session.valid ? session.record.appId === app.appId : session.unknown && (await askLegacy(input.appToken, ctx)).valid;
      }
      const candidates = languageCandidates(input.language, app.defaultLanguage);
      // Frozen, and the same array object for the same answer while the news are unchanged.
      return news.select({ appId: app.appId, candidates, members: member, appVersion: input.appVersion, limit });
    },

    async getUserLoginUrl(token: string | null, appId: number, ctx: CallerContext): Promise<string> {
      const none = loginUrls.none;
      const session = await checkSession(token);
      // A token of the old service: its own GetUserLoginURL answers, so the old web applications accept the URL.
      if (!session.valid && session.unknown && legacyTokens !== null && token !== null) return (await legacyTokens.loginUrl(token, appId, ctx)) ?? none;
      if (!session.valid || !Number.isSafeInteger(appId)) return none;
      const app = await access.getApplication(appId);
      if (app === null || !app.enabled) return none;
      const url = loginUrls.forApp(app.appId);
      if (url.needsAppUrl && app.loginUrl === null) return none;
      // The session's user, enabled (checkSession judged it) and with its login read with the token.
      const { userId, login } = session.record;

      let ticket: string | null = null;
      // A ticket is a credential: issued only when the URL carries it.
      if (url.needsTicket) {
        const issuedAt = clock.now();
        // Where every instance serving now looks for it: random in the tokens table while an older one may be serving.
        const ordered = orderedTickets && !olderVersionServing();
        const issued = issueTicket(issuedAt, ordered);
        // The insert itself checks the user is enabled and granted this application (and the
        // application enabled), in the same statement: no separate read of the user.
        const ticketRow = {
          tokenHash: issued.hash,
          userId,
          appId: app.appId,
          clientIp: session.record.clientIp,
          sourceIp: ctx.sourceIp === '' ? null : ctx.sourceIp,
          issuedAt,
          expiresAt: new Date(issuedAt.getTime() + ticketTtlMs),
        };
        const stored = await (ordered ? store.insertOrderedTicket(ticketRow) : store.insertTicket(ticketRow));
        if (!stored) return none;
        events.ticketIssued({ userId, appId: app.appId, ctx, login, tokenFp: tokenFingerprint(issued.hash) });
        ticket = issued.text;
      } else {
        // No ticket, so no insert to check the grant: the user is read.
        const user = await store.getUser(userId);
        if (user === null || !user.enabled || !user.appIds.includes(app.appId)) return none;
      }
      return url.fill({ ticket, token: token ?? '', appId: app.appId, login, loginUrl: app.loginUrl });
    },
  };
}
