/**
 * The Authentication.asmx contract as data (spec: "Operations" table).
 *
 * Everything on the wire is derived from this one description at start-up: the WSDL, the help
 * page, request decoding for SOAP 1.1 / SOAP 1.2 / HTTP GET / HTTP POST and response encoding.
 * Adding an operation is one entry here plus its domain method and its handler, which the compiler
 * asks for (OperationName is read from the list). This module imports nothing.
 */

/** XML namespace of every message (`[WebService(Namespace = "SVCAPI")]`). */
export const SERVICE_NAMESPACE = 'SVCAPI';
/** The class name ASMX derives binding, port type and service names from. */
export const SERVICE_NAME = 'Authentication';
/** Path of the service, matched case-insensitively as IIS does. */
export const SERVICE_PATH = '/Authentication.asmx';

/** XSD simple types a parameter can have; ASMX binds them with XmlConvert / Convert.ChangeType. */
export type ParamType = 'string' | 'int';
/** Result types: a string, a boolean, or a .NET `System.Data.DataTable`. */
export type ResultType = 'string' | 'boolean' | 'DataTable';

export interface ParamSpec {
  /** Element name in SOAP, field name on HTTP GET/POST (matched case-insensitively there). */
  readonly name: string;
  readonly type: ParamType;
}

/** Values a decoded parameter can carry: SOAP binds a missing string to null and a missing int to 0. */
export type ParamValue = string | number | null;

export interface OperationSpec<Name extends string = string> {
  readonly name: Name;
  /**
   * Shown on the help page. Not written into the WSDL: the captured WSDL has no
   * `wsdl:documentation`, so the original declared no `[WebMethod(Description=...)]`.
   */
  readonly description: string;
  readonly params: readonly ParamSpec[];
  readonly result: ResultType;
  /**
   * Values the operation reads from the request itself rather than from its declared parameters,
   * like ASMX code reading `HttpContext.Current.Request["login"]` (query string, then form body),
   * plus the `Authorization` header. Only the two JSON operations have them.
   */
  readonly requestReads?: readonly string[];
  /**
   * The result can carry a secret (a token or a login ticket): its responses are sent with
   * `Cache-Control: no-store` instead of ASMX's `private, max-age=0`, success or not, so the
   * headers never tell a success from a failure.
   */
  readonly resultCarriesSecret?: boolean;
}

/**
 * The operations, in declaration order. `as const` keeps each name a literal, so OperationName is
 * read from this list: a seventh entry adds its name, and every `Record<OperationName, ...>` (the
 * handler table in http/operation-handlers.ts) stops compiling until it has one for it.
 */
const OPERATION_LIST = [
  {
    name: 'ValidateUser',
    description: 'Validates the user credentials and generates a token to be used on the following requests. For the GPS application send AppId = 2; IPAddress is then not required.',
    params: [
      { name: 'login', type: 'string' },
      { name: 'password', type: 'string' },
      { name: 'AppId', type: 'int' },
      { name: 'IPAddress', type: 'string' },
    ],
    result: 'string',
    resultCarriesSecret: true,
  },
  {
    name: 'ValidateUserToken',
    description: 'Tells whether the token is valid. Returns false if the token is invalid or expired.',
    params: [{ name: 'token', type: 'string' }],
    result: 'boolean',
  },
  {
    name: 'WhatsNew',
    description: 'Returns the latest news for an application.',
    params: [
      { name: 'AppToken', type: 'string' },
      { name: 'AppID', type: 'int' },
      { name: 'AppVersion', type: 'string' },
      { name: 'Language', type: 'string' },
      { name: 'qtyNews', type: 'int' },
    ],
    result: 'DataTable',
  },
  {
    name: 'ValidateUserJSON',
    description: 'Validates the user credentials and returns the result in JSON format. Reads login, password, AppId and IPAddress from the request.',
    params: [],
    result: 'string',
    requestReads: ['login', 'password', 'AppId', 'IPAddress'],
    resultCarriesSecret: true,
  },
  {
    name: 'ValidateUserTokenJSON',
    description: 'Tells whether the token is valid and returns the result in JSON format; false if the token is invalid or expired. Reads token from the request.',
    params: [],
    result: 'string',
    requestReads: ['token'],
  },
  {
    name: 'GetUserLoginURL',
    description: 'Validates the user token and generates a LOGIN URL. For the GPS application send AppID = 2.',
    params: [
      { name: 'token', type: 'string' },
      { name: 'AppID', type: 'int' },
    ],
    result: 'string',
    resultCarriesSecret: true,
  },
] as const satisfies readonly OperationSpec[];

/** Names of the operations, in declaration order. */
export type OperationName = (typeof OPERATION_LIST)[number]['name'];

/** The same list, each entry seen as an OperationSpec (optional fields readable on all). */
export const OPERATIONS: readonly OperationSpec<OperationName>[] = Object.freeze(OPERATION_LIST);
