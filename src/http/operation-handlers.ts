/**
 * The join between the contract and the domain: one entry per operation, taking the decoded
 * arguments (in the contract's parameter order) and returning the wire-level result value.
 * Adding an operation is one entry here plus its domain method.
 */
import { DEFAULT_COMPAT_PROFILE, type CompatProfile } from '../contract/compat-profile.js';
import type { OperationName, ParamValue } from '../contract/operations.js';
import type { AuthService, CallerContext, NewsItem } from '../domain/auth-service.js';
import type { ResultValue } from '../wire/compiled-contract.js';
import type { Row } from '../wire/datatable.js';
import { parseClrInt32 } from '../wire/dotnet-int.js';
import { compileInputReader, type RequestInputs } from '../wire/json-inputs.js';
import { compileJsonResult } from '../wire/json-result.js';
import { compileNewsRow } from './news-rows.js';

/**
 * What an operation may read from the request besides its parameters (the JSON operations read
 * their inputs from the sources the compatibility profile lists: query, form, headers, cookies).
 */
export interface RequestFacts extends RequestInputs {
  readonly ctx: CallerContext;
}

export type OperationHandler = (args: readonly ParamValue[], facts: RequestFacts) => Promise<ResultValue>;

function str(args: readonly ParamValue[], i: number): string | null {
  const v = args[i];
  return typeof v === 'string' ? v : null;
}

function int(args: readonly ParamValue[], i: number): number {
  const v = args[i];
  return typeof v === 'number' ? v : 0;
}

export interface OperationHandlerOptions {
  /**
   * WhatsNew tables mapped and rendered once per answer (config `performance.tableMemo`, default
   * true); false maps every answer anew, unfrozen, so the wire layer renders it every time.
   */
  readonly tableMemo?: boolean;
}

/**
 * The handlers, with what the compatibility profile decides compiled once: ValidateUser's
 * failure value, the JSON operations' layouts and where they read their inputs, WhatsNew's
 * columns (news-rows.ts) and row cap.
 */
export function createOperationHandlers(
  service: AuthService, profile: CompatProfile = DEFAULT_COMPAT_PROFILE, options: OperationHandlerOptions = {},
): Readonly<Record<OperationName, OperationHandler>> {
  const failureValue = profile.validateUser.failureValue;
  const userJson = compileJsonResult(profile.json.validateUser);
  const tokenJson = compileJsonResult(profile.json.validateUserToken);
  // The owner (read with the token) is added to the answer only when the token layout shows it.
  const tokenOwner = profile.json.validateUserToken.success.some((m) => 'field' in m.value && (m.value.field === 'login' || m.value.field === 'appId'));
  const readUserInputs = compileInputReader(profile.json.validateUser.inputs, ['login', 'password', 'appId', 'ipAddress']);
  const readTokenInputs = compileInputReader(profile.json.validateUserToken.inputs, ['token']);
  // WhatsNew answers are frozen and the same array while the news are unchanged (news-cache.ts):
  // each is mapped once, frozen, so the wire layer renders it once (src/wire/table-memo.ts).
  const newsTables = new WeakMap<readonly NewsItem[], readonly Row[]>();
  const tableMemo = options.tableMemo ?? true;
  const newsTable = profile.whatsNew;
  const rowOf = compileNewsRow(newsTable);
  const maxRows = newsTable.maxRows;
  return Object.freeze({
    async ValidateUser(args, { ctx }) {
      const outcome = await service.validateUser({ login: str(args, 0), password: str(args, 1), appId: int(args, 2), ipAddress: str(args, 3) }, ctx);
      // One failure value for every reason, the same bytes each time (docs/security.md).
      return outcome.ok ? outcome.token : failureValue;
    },
    async ValidateUserToken(args, { ctx }) {
      return (await service.validateUserToken(str(args, 0), ctx)).valid;
    },
    async WhatsNew(args, { ctx }) {
      const items = await service.whatsNew(
        // The profile's maxRows caps what qtyNews asks (the domain also caps, at its own limit).
        { appToken: str(args, 0), appId: int(args, 1), appVersion: str(args, 2), language: str(args, 3), qtyNews: maxRows === null ? int(args, 4) : Math.min(int(args, 4), maxRows) },
        ctx,
      );
      if (!tableMemo) return items.map(rowOf);
      let rows = newsTables.get(items);
      if (rows === undefined) {
        rows = Object.freeze(items.map(rowOf));
        if (Object.isFrozen(items)) newsTables.set(items, rows);
      }
      return rows;
    },
    async ValidateUserJSON(_args, facts) {
      const { login, password, appId: appIdText, ipAddress } = readUserInputs(facts);
      const appId = parseClrInt32(appIdText ?? '');
      if (!appId.ok) return userJson.failure;
      const outcome = await service.validateUser({ login, password, appId: appId.value, ipAddress }, facts.ctx);
      return outcome.ok ? userJson.success({ token: outcome.token, expiresAt: outcome.expiresAt, login: outcome.login, appId: appId.value }) : userJson.failure;
    },
    async ValidateUserTokenJSON(_args, facts) {
      const check = await service.validateUserToken(readTokenInputs(facts).token, facts.ctx, tokenOwner ? { owner: true } : undefined);
      // Never the token (the caller sent it; the profile file refuses that field). A token only
      // vouched for by the old service has no owner here: null (docs/cutover.md#passthrough).
      return check.valid ? tokenJson.success({ token: null, expiresAt: check.expiresAt, login: check.owner?.login ?? null, appId: check.owner?.appId ?? null }) : tokenJson.failure;
    },
    async GetUserLoginURL(args, { ctx }) {
      return service.getUserLoginUrl(str(args, 0), int(args, 1), ctx);
    },
  } satisfies Record<OperationName, OperationHandler>);
}
