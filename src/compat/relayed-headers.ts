/**
 * The old service's answer headers a client of front mode receives (http/app.ts relays them).
 * Apart from shadow.ts so that the HTTP layer does not load shadow mode's client and comparison
 * when neither mode is on.
 */
import type { RawAnswer } from './answer-compare.js';

/**
 * The old service's headers relayed to the client in front mode: what describes the content
 * (and the 405 page's Allow). Not Server, X-Powered-By, X-AspNet-Version, nor the connection's.
 */
const RELAYED_HEADERS: ReadonlySet<string> = new Set([
  'content-type', 'cache-control', 'expires', 'pragma', 'vary', 'content-language', 'content-disposition',
  'location', 'set-cookie', 'www-authenticate', 'allow',
]);

/** The old service's answer headers a client of front mode receives. */
export function relayedHeaders(answer: RawAnswer): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of answer.headers) {
    if (!RELAYED_HEADERS.has(name)) continue;
    const had = out[name];
    out[name] = had === undefined ? value : [...(Array.isArray(had) ? had : [had]), value];
  }
  return out;
}
