/**
 * The join between the contract and the domain: one entry per operation, taking the decoded
 * arguments (in the contract's parameter order) and returning the wire-level result value.
 * Adding an operation is one entry here plus its domain method.
 */
import type { OperationName, ParamValue } from '../contract/operations.js';
import type { AuthService, CallerContext, NewsItem } from '../domain/auth-service.js';
import { validateUserJson, validateUserTokenJson, VALIDATE_USER_JSON_FAILURE } from '../domain/json-results.js';
import type { ResultValue } from '../wire/compiled-contract.js';
import type { Row } from '../wire/datatable.js';
import { parseClrInt32 } from '../wire/dotnet-int.js';
import type { FormCollection } from '../wire/http-form.js';

/** What an operation may read from the request besides its parameters (the JSON operations). */
export interface RequestFacts {
  readonly ctx: CallerContext;
  /** Query string values, then form values: ASP.NET's `Request[name]` order. */
  readonly query: FormCollection;
  readonly form: FormCollection;
  readonly authorization: string | undefined;
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

function requestValue(facts: RequestFacts, name: string): string | null {
  return facts.query.get(name) ?? facts.form.get(name) ?? null;
}

/** `Authorization: Basic base64(login:password)`; the password may itself contain ':'. */
export function basicCredentials(header: string | undefined): { login: string; password: string } | null {
  const m = header === undefined ? null : /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!m?.[1]) return null;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  return { login: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

export function bearerToken(header: string | undefined): string | null {
  const m = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1] ?? null;
}

export function createOperationHandlers(service: AuthService): Readonly<Record<OperationName, OperationHandler>> {
  // WhatsNew answers are frozen and the same array while the news are unchanged (news-cache.ts):
  // each is mapped once, frozen, so the wire layer renders it once (src/wire/table-memo.ts).
  const newsTables = new WeakMap<readonly NewsItem[], readonly Row[]>();
  return Object.freeze({
    async ValidateUser(args, { ctx }) {
      const outcome = await service.validateUser({ login: str(args, 0), password: str(args, 1), appId: int(args, 2), ipAddress: str(args, 3) }, ctx);
      return outcome.ok ? outcome.token : '';
    },
    async ValidateUserToken(args, { ctx }) {
      return (await service.validateUserToken(str(args, 0), ctx)).valid;
    },
    async WhatsNew(args, { ctx }) {
      const items = await service.whatsNew(
        { appToken: str(args, 0), appId: int(args, 1), appVersion: str(args, 2), language: str(args, 3), qtyNews: int(args, 4) },
        ctx,
      );
      let rows = newsTables.get(items);
      if (rows === undefined) {
        rows = Object.freeze(items.map((n): Row => Object.freeze([n.newsId, n.appId, n.title, n.body, n.language, n.url, n.publishedAt])));
        if (Object.isFrozen(items)) newsTables.set(items, rows);
      }
      return rows;
    },
    async ValidateUserJSON(_args, facts) {
      const basic = basicCredentials(facts.authorization);
      const login = requestValue(facts, 'login') ?? basic?.login ?? null;
      const password = requestValue(facts, 'password') ?? basic?.password ?? null;
      const appId = parseClrInt32(requestValue(facts, 'AppId') ?? '');
      if (!appId.ok) return VALIDATE_USER_JSON_FAILURE;
      const outcome = await service.validateUser({ login, password, appId: appId.value, ipAddress: requestValue(facts, 'IPAddress') }, facts.ctx);
      return validateUserJson(outcome);
    },
    async ValidateUserTokenJSON(_args, facts) {
      const token = requestValue(facts, 'token') ?? bearerToken(facts.authorization);
      return validateUserTokenJson(await service.validateUserToken(token, facts.ctx));
    },
    async GetUserLoginURL(args, { ctx }) {
      return service.getUserLoginUrl(str(args, 0), int(args, 1), ctx);
    },
  } satisfies Record<OperationName, OperationHandler>);
}
