/**
 * Where the JSON operations (ValidateUserJSON, ValidateUserTokenJSON) find their inputs: they
 * have no parameters in the contract and read the request itself, as the old service's
 * `Request["login"]` did. The compatibility profile names each input and the sources tried, in
 * order (docs/compat-profile.md): the query string, the form body, a header, a cookie,
 * `Authorization: Basic` (login and password) and `Authorization: Bearer` (the token).
 *
 * Compiled once from the profile; a request parses its Cookie and Authorization headers at most
 * once, and only when a source needs them.
 */
import { parse as parseCookieHeader } from 'cookie';
import type { JsonInputs, JsonInputSource } from '../contract/compat-profile.js';
import type { FormCollection } from './http-form.js';

/** The parts of a request the sources read. Header names are lower-case, as Node gives them. */
export interface RequestInputs {
  readonly query: FormCollection;
  readonly form: FormCollection;
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
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

/** `Authorization: Bearer <token>`. */
export function bearerToken(header: string | undefined): string | null {
  const m = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1] ?? null;
}

function header(inputs: RequestInputs, name: string): string | undefined {
  const value = inputs.headers[name];
  // Node joins most repeated headers itself; a list is what it keeps apart (set-cookie and the like).
  return typeof value === 'string' || value === undefined ? value : value.join(', ');
}

/** Per request: the lazily parsed Cookie and Authorization headers. */
class RequestView {
  private cookies: Readonly<Record<string, string | undefined>> | undefined;
  private basic: { login: string; password: string } | null | undefined;
  private bearer: string | null | undefined;

  constructor(readonly inputs: RequestInputs) {}

  cookie(name: string): string | undefined {
    const text = header(this.inputs, 'cookie');
    if (text === undefined) return undefined;
    // As ASP.NET's HttpCookie.Value: the text as sent, not URL-decoded; the first of a repeated name.
    this.cookies ??= parseCookieHeader(text, { decode: (value) => value });
    return this.cookies[name];
  }

  basicCredentials(): { login: string; password: string } | null {
    if (this.basic === undefined) this.basic = basicCredentials(header(this.inputs, 'authorization'));
    return this.basic;
  }

  bearerToken(): string | null {
    if (this.bearer === undefined) this.bearer = bearerToken(header(this.inputs, 'authorization'));
    return this.bearer;
  }
}

type Lookup = (view: RequestView) => string | null | undefined;

function lookup(source: JsonInputSource, input: string, name: string): Lookup | null {
  switch (source) {
    case 'query':
      return (view) => view.inputs.query.get(name);
    case 'form':
      return (view) => view.inputs.form.get(name);
    case 'header': {
      const key = name.toLowerCase();
      return (view) => header(view.inputs, key);
    }
    case 'cookie':
      return (view) => view.cookie(name);
    case 'basic':
      if (input === 'login') return (view) => view.basicCredentials()?.login;
      if (input === 'password') return (view) => view.basicCredentials()?.password;
      return null;
    case 'bearer':
      return input === 'token' ? (view) => view.bearerToken() : null;
  }
}

export type InputReader<K extends string> = (inputs: RequestInputs) => Readonly<Record<K, string | null>>;

/**
 * A reader of the given inputs: each is the first value found in the profile's sources, in
 * order (an empty value counts as found, as `Request[name]` has it), else null.
 */
export function compileInputReader<K extends string>(profile: JsonInputs, inputs: readonly K[]): InputReader<K> {
  const plan = inputs.map((input) => {
    const name = profile.names[input] ?? input;
    const lookups = profile.sources.map((source) => lookup(source, input, name)).filter((l): l is Lookup => l !== null);
    return [input, lookups] as const;
  });
  return (request) => {
    const view = new RequestView(request);
    const values = {} as Record<K, string | null>;
    for (const [input, lookups] of plan) {
      let value: string | null = null;
      for (const l of lookups) {
        const found = l(view);
        if (found !== undefined && found !== null) {
          value = found;
          break;
        }
      }
      values[input] = value;
    }
    return values;
  };
}
