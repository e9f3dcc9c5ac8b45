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
