/**
 * The compatibility profile: the choices the spec leaves open ("not shown") and every legacy
 * deployment made its own way — what ValidateUser answers for failed credentials, the text of a
 * token, the JSON layouts of the two JSON operations and where they read their inputs, the form
 * of the login URL, and the columns of the WhatsNew DataTable. Data of the same kind as
 * operations.ts: the encoders and handlers read it; no operation grows special cases for it.
 *
 * DEFAULT_COMPAT_PROFILE is svcapi-auth's own choice (byte-identical to the golden captures and to
 * every earlier release). An operator's profile is a JSON file of the same shape (docs/compat-profile.md),
 * validated at start; `svcapi-auth compat learn` writes one from a live legacy service.
 *
 * This module imports nothing.
 */

export type LetterCase = 'lower' | 'upper';

/**
 * How a token is written: 128+ random bits as text. 'any' case and optional braces are for
 * recognising another service's tokens only; a token this service writes uses one exact form.
 */
export type TokenForm =
  | {
    readonly kind: 'guid';
    readonly case: LetterCase | 'any';
    /** 8-4-4-4-12 (.NET "D") when true, 32 digits (.NET "N") when false. */
    readonly dashes: boolean;
    /** `{...}` (.NET "B"). */
    readonly braces: boolean | 'optional';
  }
  | {
    readonly kind: 'hex';
    /** Hex digits, 32 (128 bits) to 128. */
    readonly length: number;
    readonly case: LetterCase | 'any';
  };

/** Where a JSON operation looks for an input, tried in the order listed. */
export type JsonInputSource =
  | 'query' // the query string
  | 'form' // an application/x-www-form-urlencoded body
  | 'header' // a request header of that name
  | 'cookie' // a cookie of that name
  | 'basic' // Authorization: Basic (login and password only)
  | 'bearer'; // Authorization: Bearer (token only)

export interface JsonInputs {
  readonly sources: readonly JsonInputSource[];
  /**
   * The request's name for each input. ValidateUserJSON: login, password, appId, ipAddress;
   * ValidateUserTokenJSON: token.
   */
  readonly names: Readonly<Record<string, string>>;
}

/**
 * What one JSON member holds: a fact of the answer, or a fixed value. `login` and `appId` are the
 * owner of the token (ValidateUserJSON: the user who logged in and the AppID asked for).
 */
export type JsonValueSource =
  | { readonly field: 'success' | 'valid' | 'token' | 'expiresAt' | 'login' | 'appId' }
  | { readonly const: string | number | boolean | null };

export interface JsonMember {
  readonly key: string;
  readonly value: JsonValueSource;
}

export interface JsonOperationProfile {
  readonly inputs: JsonInputs;
  /**
   * Members in order, for a success and for a failure. A failure is one text for every reason:
   * its members are constants only (the profile file refuses a field there).
   */
  readonly success: readonly JsonMember[];
  readonly failure: readonly JsonMember[];
  /**
   * Dates: 'iso' (2026-11-22T05:55:51.045Z), 'ms-ajax' (`"\/Date(1732450000000)\/"`, .NET's
   * JavaScriptSerializer) or 'wcf' (`"\/Date(1732450000000+0000)\/"`, DataContractJsonSerializer).
   */
  readonly dates: 'iso' | 'ms-ajax' | 'wcf';
  /**
   * String escaping: 'standard' (JSON.stringify), 'javascript-serializer' (also `<`, `>`, `&`,
   * `'` as \u003c ...), 'data-contract' (also `/` as `\/`).
   */
  readonly escaping: 'standard' | 'javascript-serializer' | 'data-contract';
}

export interface LoginUrlProfile {
  /**
   * The URL GetUserLoginURL returns, per application (key: AppID as text), else `default`.
   * null: the application's configured login URL with `ticket=<ticket>` appended (svcapi-auth's
   * own form). A template: placeholders {ticket} (a one-time ticket, issued only when present),
   * {token} (the caller's token), {appId}, {login}, each URL-encoded, and {loginUrl} (the
   * application's configured login URL, as is).
   */
  readonly default: string | null;
  readonly apps: Readonly<Record<string, string | null>>;
  /** What is returned when there is no URL (invalid token, no login URL, not granted). */
  readonly none: string;
}

/** XSD types a WhatsNew column can have, as a DataTable's schema writes them. */
export type NewsColumnType = 'int' | 'long' | 'string' | 'dateTime' | 'boolean' | 'decimal' | 'double';

/** Where a WhatsNew cell comes from: a news field, a fixed value, or an extra per-item attribute. */
export type NewsValueSource =
  | { readonly field: 'newsId' | 'appId' | 'title' | 'body' | 'language' | 'url' | 'publishedAt' | 'expiresAt' | 'minVersion' | 'maxVersion' | 'membersOnly' }
  | { readonly const: string | number | boolean }
  | { readonly attribute: string };

export interface NewsColumn {
  readonly name: string;
  readonly type: NewsColumnType;
  readonly from: NewsValueSource;
}

export interface NewsTableProfile {
  readonly dataSetName: string;
  readonly tableName: string;
  readonly columns: readonly NewsColumn[];
  /**
   * DateTime values: 'zone' (local time of config `timeZone` with its offset, as a .NET server's
   * DateTimeKind.Local), 'unspecified' (local time of `timeZone`, no offset), 'utc' (with Z).
   */
  readonly dateTimes: 'zone' | 'unspecified' | 'utc';
  /** The most rows one answer carries, whatever qtyNews asks (null: svcapi-auth's own limit). */
  readonly maxRows: number | null;
}

/**
 * What one legacy WhatsNew row says, per news field (absent: no column for it, or DBNull), decoded
 * from its text through the profile's columns: written by wire/news-row-reader.ts, read by
 * domain/news-import.ts. It lives here because both may import the contract and not each other.
 */
export interface NewsFacts {
  readonly newsId?: number;
  readonly appId?: number;
  readonly title?: string;
  readonly body?: string;
  readonly language?: string;
  readonly url?: string;
  readonly publishedAt?: Date;
  readonly expiresAt?: Date;
  readonly minVersion?: string;
  readonly maxVersion?: string;
  readonly membersOnly?: boolean;
  readonly attributes: Readonly<Record<string, string>>;
  /** Cells whose text the column's type cannot read ("DataPublicacao: not a DateTime"): the row is skipped. */
  readonly unreadable: readonly string[];
  /** Columns with a constant in the profile whose text differed from it (imported anyway: the constant is ours to write). */
  readonly constantsDiffering: readonly string[];
}

export interface CompatProfile {
  readonly validateUser: {
    /** ValidateUser's result for every failed login (ValidateUserJSON's failure is its own layout). */
    readonly failureValue: string;
  };
  readonly tokens: {
    /** The form new tokens (and tickets) are written in. */
    readonly form: TokenForm;
  };
  readonly json: {
    readonly validateUser: JsonOperationProfile;
    readonly validateUserToken: JsonOperationProfile;
  };
  readonly loginUrl: LoginUrlProfile;
  readonly whatsNew: NewsTableProfile;
}

/** svcapi-auth's own choices: what every release before profiles answered, byte for byte. */
export const DEFAULT_COMPAT_PROFILE: CompatProfile = deepFreeze<CompatProfile>({
  validateUser: { failureValue: '' },
  tokens: { form: { kind: 'guid', case: 'lower', dashes: true, braces: false } },
  json: {
    validateUser: {
      inputs: {
        sources: ['query', 'form', 'basic'],
        names: { login: 'login', password: 'password', appId: 'AppId', ipAddress: 'IPAddress' },
      },
      success: [
        { key: 'success', value: { field: 'success' } },
        { key: 'token', value: { field: 'token' } },
        { key: 'expires', value: { field: 'expiresAt' } },
      ],
      failure: [
        { key: 'success', value: { const: false } },
        { key: 'token', value: { const: '' } },
      ],
      dates: 'iso',
      escaping: 'standard',
    },
    validateUserToken: {
      inputs: {
        sources: ['query', 'form', 'bearer'],
        names: { token: 'token' },
      },
      success: [
        { key: 'valid', value: { field: 'valid' } },
        { key: 'expires', value: { field: 'expiresAt' } },
      ],
      failure: [{ key: 'valid', value: { const: false } }],
      dates: 'iso',
      escaping: 'standard',
    },
  },
  loginUrl: { default: null, apps: {}, none: '' },
  whatsNew: {
    dataSetName: 'NewDataSet',
    tableName: 'News',
    columns: [
      { name: 'NewsID', type: 'int', from: { field: 'newsId' } },
      { name: 'AppID', type: 'int', from: { field: 'appId' } },
      { name: 'Title', type: 'string', from: { field: 'title' } },
      { name: 'Body', type: 'string', from: { field: 'body' } },
      { name: 'Language', type: 'string', from: { field: 'language' } },
      { name: 'Url', type: 'string', from: { field: 'url' } },
      { name: 'PublishedAt', type: 'dateTime', from: { field: 'publishedAt' } },
    ],
    dateTimes: 'zone',
    maxRows: null,
  },
});

/** Freezes a profile from later change, all the way down (it is shared by every request). */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
