/**
 * What the HTTP layer asks of the domain: one method per operation of the contract, values in,
 * values out. Expected failures (bad password, unknown token...) are values, never exceptions;
 * an exception means a bug or a broken store and becomes a `soap:Server` fault.
 *
 * Implemented by `createAuthService()` (src/domain/create-auth-service.ts) on top of a `Store`.
 */

/** Who is calling: facts the HTTP layer knows about the request, for audit and address checks. */
export interface CallerContext {
  /** The address the request came from (socket peer, or X-Forwarded-For from a trusted proxy). */
  readonly sourceIp: string;
  /** Request id, as written in logs. */
  readonly requestId: string;
}

export interface ValidateUserInput {
  /** null when the SOAP element was missing or xsi:nil. */
  readonly login: string | null;
  readonly password: string | null;
  readonly appId: number;
  readonly ipAddress: string | null;
}

export type ValidateUserOutcome =
  | {
    readonly ok: true;
    readonly token: string;
    readonly expiresAt: Date;
    /** The login as the user record has it (a profile's JSON answer may carry it). */
    readonly login: string;
  }
  | { readonly ok: false };

/** Whose a token is, as ValidateUserTokenJSON may tell it (a compatibility profile's `login`, `appId`). */
export interface TokenOwner {
  /** The login as the user record has it. */
  readonly login: string;
  readonly appId: number;
}

export type TokenCheck =
  | {
    readonly valid: true;
    readonly expiresAt: Date;
    /**
     * Asked for with `{ owner: true }`: the owner of a token the store holds. Absent for a token
     * only vouched for by the old service (token passthrough knows no owner).
     */
    readonly owner?: TokenOwner;
  }
  | { readonly valid: false };

export interface TokenCheckOptions {
  /** Also read whose the token is (one more store read; only a JSON layout that shows it asks). */
  readonly owner?: boolean;
}

export interface WhatsNewInput {
  readonly appToken: string | null;
  readonly appId: number;
  readonly appVersion: string | null;
  readonly language: string | null;
  readonly qtyNews: number;
}

/**
 * One row of WhatsNew's DataTable: every fact of a news item its columns may show (which ones, and
 * under which names, is the compatibility profile's `whatsNew`, src/contract/compat-profile.ts).
 */
export interface NewsItem {
  readonly newsId: number;
  readonly appId: number;
  readonly title: string;
  readonly body: string;
  /** Canonical BCP 47 tag. */
  readonly language: string;
  /** '' when the item has none. */
  readonly url: string;
  readonly publishedAt: Date;
  readonly expiresAt: Date | null;
  readonly minVersion: string | null;
  readonly maxVersion: string | null;
  readonly membersOnly: boolean;
  /** Extra per-item values (NewsRecord.attributes), frozen. */
  readonly attributes: Readonly<Record<string, string>>;
}

export interface AuthService {
  /** A new token, or `{ ok: false }` for every kind of failure alike. */
  validateUser(input: ValidateUserInput, ctx: CallerContext): Promise<ValidateUserOutcome>;
  /** Valid for a live token or a login ticket (a ticket is consumed by this check). */
  validateUserToken(token: string | null, ctx: CallerContext, options?: TokenCheckOptions): Promise<TokenCheck>;
  /**
   * Frozen (array and items). While the news are unchanged, the same answer is the same array
   * object (news-cache.ts), so callers may remember what they derive from it by identity.
   */
  whatsNew(input: WhatsNewInput, ctx: CallerContext): Promise<readonly NewsItem[]>;
  /**
   * The application's login URL as the compatibility profile forms it (by default the configured
   * login URL with `ticket=` appended), or the profile's `none` ('' by default) when it cannot be given.
   */
  getUserLoginUrl(token: string | null, appId: number, ctx: CallerContext): Promise<string>;
}
