import type { LoginUrlProfile } from '../contract/compat-profile.js';

/**
 * Appends `ticket=<ticket>` to an application's login URL without otherwise touching it (no
 * re-serialisation through `URL`, which would normalise what the operator configured):
 * `?` or `&` as needed, value URL-encoded, any `#fragment` kept at the end.
 */
export function appendTicket(loginUrl: string, ticket: string): string {
  const hashAt = loginUrl.indexOf('#');
  const base = hashAt === -1 ? loginUrl : loginUrl.slice(0, hashAt);
  const fragment = hashAt === -1 ? '' : loginUrl.slice(hashAt);
  const separator = !base.includes('?') ? '?' : base.endsWith('?') || base.endsWith('&') ? '' : '&';
  return `${base}${separator}ticket=${encodeURIComponent(ticket)}${fragment}`;
}

/** Whether an operator-supplied login URL is usable: absolute http(s), no ticket parameter of its own. */
export function checkLoginUrl(text: string): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must use http or https';
  if (url.searchParams.has('ticket')) return 'must not already contain a ticket parameter';
  if (/\s/.test(text)) return 'must not contain whitespace';
  return null;
}

/** What a login URL template may be filled with. */
export interface LoginUrlFacts {
  /** The one-time ticket issued for this answer (only when the URL needs one). */
  readonly ticket: string | null;
  /** The caller's token, as the caller sent it. */
  readonly token: string;
  readonly appId: number;
  /** The login as the user record has it. */
  readonly login: string;
  /** The application's configured login URL (only when the URL needs it). */
  readonly loginUrl: string | null;
}

/** One application's login URL, compiled from the profile. */
export interface CompiledLoginUrl {
  /** Whether a ticket must be issued for it ({ticket}, or the default form). */
  readonly needsTicket: boolean;
  /** Whether it is built on the application's configured login URL (none without one). */
  readonly needsAppUrl: boolean;
  fill(facts: LoginUrlFacts): string;
}

export interface LoginUrls {
  forApp(appId: number): CompiledLoginUrl;
  /** What is answered when there is no URL. */
  readonly none: string;
}

const PLACEHOLDER = /\{(ticket|token|appId|login|loginUrl)\}/g;

/** svcapi-auth's own form: the configured login URL with `ticket=` appended. */
const APPEND_TICKET: CompiledLoginUrl = Object.freeze({
  needsTicket: true,
  needsAppUrl: true,
  fill: (facts: LoginUrlFacts): string => appendTicket(facts.loginUrl ?? '', facts.ticket ?? ''),
});

/**
 * A template of the compatibility profile: {ticket}, {token}, {appId} and {login} URL-encoded
 * (encodeURIComponent), {loginUrl} as configured. The placeholders were checked when the profile
 * was read; any other brace text is kept as written.
 */
export function compileLoginUrlTemplate(template: string | null): CompiledLoginUrl {
  if (template === null) return APPEND_TICKET;
  type Part = { readonly text: string } | { readonly fact: keyof LoginUrlFacts };
  const parts: Part[] = [];
  let at = 0;
  for (const match of template.matchAll(PLACEHOLDER)) {
    parts.push({ text: template.slice(at, match.index) }, { fact: match[1] as keyof LoginUrlFacts });
    at = match.index + match[0].length;
  }
  parts.push({ text: template.slice(at) });
  const facts = new Set(parts.flatMap((p) => ('fact' in p ? [p.fact] : [])));
  return Object.freeze({
    needsTicket: facts.has('ticket'),
    needsAppUrl: facts.has('loginUrl'),
    fill(values: LoginUrlFacts): string {
      let out = '';
      for (const part of parts) {
        if ('text' in part) out += part.text;
        else if (part.fact === 'loginUrl') out += values.loginUrl ?? '';
        else out += encodeURIComponent(String(values[part.fact] ?? ''));
      }
      return out;
    },
  });
}

/** The profile's login URLs: per application (by AppID), else the default. */
export function compileLoginUrls(profile: LoginUrlProfile): LoginUrls {
  const fallback = compileLoginUrlTemplate(profile.default);
  const apps = new Map<number, CompiledLoginUrl>();
  for (const [appId, template] of Object.entries(profile.apps)) apps.set(Number(appId), compileLoginUrlTemplate(template));
  return Object.freeze({ forApp: (appId: number) => apps.get(appId) ?? fallback, none: profile.none });
}
