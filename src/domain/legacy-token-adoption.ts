/**
 * Token adoption (config `legacy.adoptTokens`; docs/cutover.md#adoption): a token the old service
 * vouched for through token passthrough is stored here, SHA-256 hashed and marked `legacy`, with
 * its owner and expiry as the old service's ValidateUserTokenJSON tells them. From then on it is
 * one of ours: found in the store first (so the old service is never asked about it again),
 * expired, slid and revoked here, and it keeps working once the old service is gone.
 *
 * The old ValidateUserToken says only true or false; its ValidateUserTokenJSON says what the
 * operator's compatibility profile lays out (`json.validateUserToken.success`). Adoption is on
 * only when that layout has a `login` and an `expiresAt` member (config/legacy-settings.ts refuses otherwise),
 * and an answer is believed only when it is that layout exactly, read here by a pure function:
 * the same keys in the same order (no more, none twice), every constant equal, `valid` / `success`
 * true, `login` a non-empty string, `expiresAt` a date in the profile's `dates` form, `appId` (when
 * the layout has one) an Int32. Anything else is `unrecognised` and nothing is stored: the token
 * stays what passthrough makes it, valid for `cacheSeconds` at a time.
 *
 * What is stored is bounded by what a login here would give the same user:
 * - the login must name a user here (imported, or migrated lazily), enabled;
 * - the application is the answer's `appId` when the layout has one, else the user's only
 *   granted application: with none or several the token's application cannot be known, and
 *   nothing is stored (`unknown_app`). Either way the user must hold the grant and the
 *   application be enabled, so the stored token validates here at once (it never turns a token
 *   passthrough honours into one refused);
 * - the expiry is the old service's, capped at the application's token lifetime from now (what
 *   a ValidateUser here would issue); one already past is `expired`. The application's idle
 *   timeout applies from the adoption on, as to an imported token.
 *
 * The same token adopted twice (two instances, or adopted and then revoked here) is stored once:
 * the store refuses a second row with the same hash (`already_stored`), and a revoked row stays
 * revoked. Failures are values; nothing here calls the old service (legacy-token-passthrough.ts
 * does, within its bounds).
 *
 * Every answer judged ends in a `tokenAdoption` event (auth-events.ts) with the token's
 * fingerprint, never the token: the audit trail records the adoptions (`token.adopted`: login,
 * application, the old and the stored expiry) and the refusals that matter for security
 * (`token.adoption-refused`: an answer not in the layout, a login naming no enabled user here, no
 * application the user may hold; audit.ts).
 */
import type { JsonOperationProfile } from '../contract/compat-profile.js';
import type { Store } from '../store/store.js';
import { tokenFingerprint } from './audit.js';
import { combineAuthEvents, type AuthEvents, type TokenAdoptionEvent } from './auth-events.js';
import type { CallerContext } from './auth-service.js';
import type { Clock } from './clock.js';
import { findUserByLogin } from './logins.js';
import { canonicalToken, hashToken } from './tokens.js';

/** How one adoption ended (the `result` label of svcapi_auth_legacy_token_adoptions_total). */
export const TOKEN_ADOPTION_RESULTS = ['adopted', 'already_stored', 'unrecognised', 'unknown_user', 'unknown_app', 'expired', 'error'] as const;
export type TokenAdoptionResult = (typeof TOKEN_ADOPTION_RESULTS)[number];

/** What a recognised ValidateUserTokenJSON answer says about a token. */
export interface LegacyTokenFacts {
  readonly login: string;
  readonly expiresAt: Date;
  /** null when the layout has no `appId` member. */
  readonly appId: number | null;
}

/** The longest answer read (a few members; the transport's own cap is larger). */
export const MAX_TOKEN_JSON_CHARS = 4096;
/** The longest login believed (logins here are at most 256 characters: logins.ts checkLogin). */
const MAX_LOGIN_CHARS = 256;

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,7}))?(Z|[+-]\d{2}:\d{2})$/;
const MS_AJAX_DATE = /^\/Date\((-?\d{1,16})\)\/$/;
const WCF_DATE = /^\/Date\((-?\d{1,16})[+-]\d{4}\)\/$/;

/**
 * A date as the profile's `dates` writes it (json-result.ts jsonDate), after JSON decoding
 * (`"\/Date(1)\/"` reads as `/Date(1)/`). ISO needs its offset: a local time without one would
 * be a guess of the zone. The milliseconds of the .NET forms are UTC whatever the offset says.
 */
export function parseLegacyJsonDate(text: string, dates: JsonOperationProfile['dates']): Date | null {
  let ms: number;
  if (dates === 'iso') {
    const m = ISO_DATE.exec(text);
    if (m === null) return null;
    const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
    const fraction = Math.floor(Number(`0.${m[7] ?? '0'}`) * 1000);
    const zone = m[8] ?? 'Z';
    const offsetMinutes = zone === 'Z' ? 0 : (zone.startsWith('-') ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6)));
    const local = Date.UTC(year, month - 1, day, hour, minute, second);
    const check = new Date(local);
    // Date.UTC rolls 02-30 over into March: the fields must survive the round trip.
    if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day || check.getUTCHours() !== hour || check.getUTCMinutes() !== minute || check.getUTCSeconds() !== second) return null;
    ms = local + fraction - offsetMinutes * 60_000;
  } else {
    const m = (dates === 'ms-ajax' ? MS_AJAX_DATE : WCF_DATE).exec(text);
    if (m === null) return null;
    ms = Number(m[1]);
  }
  const date = new Date(ms);
  return Number.isFinite(date.getTime()) ? date : null;
}

/**
 * The member names of a flat JSON object in the order the text has them, duplicates included.
 * Only for a text JSON.parse read as an object of plain values: there every string is a key or
 * a value, and a key is the one followed by `:`.
 */
function keysInOrder(text: string): string[] {
  const keys: string[] = [];
  for (const match of text.matchAll(/"(?:[^"\\]|\\.)*"/g)) {
    const after = text.slice(match.index + match[0].length).trimStart();
    if (after.startsWith(':')) keys.push(JSON.parse(match[0]) as string);
  }
  return keys;
}

/**
 * The facts of a ValidateUserTokenJSON answer that is exactly the profile's success layout, or
 * null (the rules in the module comment). Pure.
 */
export function readLegacyTokenJson(text: string, layout: JsonOperationProfile): LegacyTokenFacts | null {
  if (text.length > MAX_TOKEN_JSON_CHARS) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return null;
  const object = parsed as Record<string, unknown>;
  if (Object.values(object).some((v) => v !== null && typeof v === 'object')) return null;
  const keys = keysInOrder(text);
  if (keys.length !== layout.success.length || keys.some((k, i) => k !== layout.success[i]?.key)) return null;
  let login: string | null = null;
  let expiresAt: Date | null = null;
  let appId: number | null = null;
  for (const member of layout.success) {
    const value = object[member.key];
    const source = member.value;
    if ('const' in source) {
      if (value !== source.const) return null;
      continue;
    }
    switch (source.field) {
      case 'success':
      case 'valid':
        if (value !== true) return null;
        break;
      case 'login':
        if (typeof value !== 'string' || value.trim() === '' || value.length > MAX_LOGIN_CHARS) return null;
        login = value;
        break;
      case 'expiresAt':
        expiresAt = typeof value === 'string' ? parseLegacyJsonDate(value, layout.dates) : null;
        if (expiresAt === null) return null;
        break;
      case 'appId':
        if (typeof value !== 'number' || !Number.isInteger(value) || value < -2147483648 || value > 2147483647) return null;
        appId = value;
        break;
      default:
        // A token answer never carries the token (the profile file refuses the field).
        return null;
    }
  }
  return login === null || expiresAt === null ? null : { login, expiresAt, appId };
}

export interface TokenAdopterDeps {
  readonly store: Store;
  readonly clock: Clock;
  /** The profile's `json.validateUserToken`: the layout the old service's answers are read by. */
  readonly layout: JsonOperationProfile;
  /**
   * Observers of every answer judged (`tokenAdoption`: the audit trail records adoptions and the
   * refusals that matter for security, audit.ts). They never change a result.
   */
  readonly events?: AuthEvents;
}

export interface TokenAdopter {
  /**
   * Stores `token` as the answer describes it, or says why not. Never rejects. `ctx` is the
   * request whose check got the old service's yes (for the events).
   */
  adopt(token: string, answer: string, ctx?: CallerContext): Promise<TokenAdoptionResult>;
}

/** Why a user's token cannot be given an application here (TokenAdoptionEvent.appProblem). */
type AppProblem = NonNullable<TokenAdoptionEvent['appProblem']>;

export function createTokenAdopter(deps: TokenAdopterDeps): TokenAdopter {
  const { store, clock, layout } = deps;
  const events = combineAuthEvents(deps.events);
  async function adopt(token: string, answer: string, ctx: CallerContext | undefined): Promise<TokenAdoptionResult> {
    const facts = readLegacyTokenJson(answer, layout);
    const canonical = canonicalToken(token);
    // Passthrough asks only about texts in the token form, which all read back: no event for a non-token.
    if (canonical === null) return 'unrecognised';
    const tokenHash = hashToken(canonical);
    const ended = (event: Omit<TokenAdoptionEvent, 'tokenFp' | 'ctx'>): TokenAdoptionEvent['result'] => {
      events.tokenAdoption({ ...event, tokenFp: tokenFingerprint(tokenHash), ...(ctx !== undefined && { ctx }) });
      return event.result;
    };
    if (facts === null) return ended({ result: 'unrecognised', userId: null, appId: null, legacyExpiresAt: null });
    const told = { appId: facts.appId, legacyExpiresAt: facts.expiresAt };
    const now = clock.now();
    if (facts.expiresAt.getTime() <= now.getTime()) return ended({ result: 'expired', userId: null, ...told });
    const user = await findUserByLogin(store, facts.login);
    if (user === null) return ended({ result: 'unknown_user', userId: null, unknownLogin: facts.login, ...told });
    const who = { userId: user.userId, login: user.login };
    if (!user.enabled) return ended({ result: 'unknown_user', ...who, userDisabled: true, ...told });
    const appId = facts.appId ?? (user.appIds.length === 1 ? user.appIds[0] ?? null : null);
    const noApp = (appProblem: AppProblem): TokenAdoptionEvent['result'] => ended({ result: 'unknown_app', ...who, ...told, appProblem });
    if (appId === null) return noApp(user.appIds.length === 0 ? 'not-granted' : 'ambiguous');
    if (!user.appIds.includes(appId)) return noApp('not-granted');
    const app = await store.getApplication(appId);
    if (app === null) return noApp('unknown-app');
    if (!app.enabled) return noApp('app-disabled');
    const expiresAt = new Date(Math.min(facts.expiresAt.getTime(), now.getTime() + app.tokenLifetimeSeconds * 1000));
    // As import tokens stores them (legacy-token-import.ts): last used now, so an idle timeout
    // counts from the adoption, not from a use the old service saw.
    const stored = await store.importToken({
      tokenHash, kind: 'session', userId: user.userId, appId, clientIp: null, sourceIp: null,
      issuedAt: now, expiresAt, lastUsedAt: now, usedAt: null, revokedAt: null, origin: 'legacy',
    });
    return stored ? ended({ result: 'adopted', ...who, appId, legacyExpiresAt: facts.expiresAt, expiresAt }) : ended({ result: 'already_stored', ...who, appId, legacyExpiresAt: facts.expiresAt });
  }
  return {
    adopt: (token, answer, ctx) => adopt(token, answer, ctx).catch((): TokenAdoptionResult => 'error'),
  };
}
