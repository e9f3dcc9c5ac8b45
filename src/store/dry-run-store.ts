/**
 * The store as front mode's own handling sees it (src/compat/shadow.ts, docs/cutover.md "Front
 * and shadow"): every read goes to the real store, and the writes the six operations make are
 * answered as if they had succeeded without touching it.
 *
 * In front mode the old service answers the client and svcapi-auth only computes what it would
 * have answered. Those answers are never sent, so nothing they would write may remain: a session
 * token or ticket nobody holds, a sliding expiry moved by a request we did not serve, a ticket
 * consumed here that the old service is the one to honour. So:
 *
 * - insertSession and insertTicket (insertOrderedTicket) succeed without a row (the token in our answer exists nowhere);
 * - touchToken does nothing; consumeTicket (consumeOrderedTicket) says the ticket would have been ours to consume;
 * - every other write (throttle counters, migration of a legacy user, audit...) is refused with
 *   an exception: the evaluating service is built without the features that make them, so one
 *   happening is a bug, and it shows as an error in the comparison rather than as a change.
 */
import type { Store } from './store.js';

/** The reads the operations make (and the service's caches), passed through. */
const READS: ReadonlySet<string> = new Set<keyof Store>([
  'getApplication', 'listApplications', 'findUserByLoginKey', 'getUser', 'listUsers', 'findToken', 'findOrderedTicket', 'countActiveTokens',
  'listNews', 'findPublishedNews', 'publishedNewsSnapshot', 'revisions', 'revisionsWithTokens', 'getNews', 'schemaVersion', 'ping',
]);

const SIMULATED: Partial<Store> = {
  insertSession: () => Promise.resolve(true),
  insertTicket: () => Promise.resolve(true),
  insertOrderedTicket: () => Promise.resolve(true),
  touchToken: () => Promise.resolve(),
  consumeTicket: () => Promise.resolve(true),
  consumeOrderedTicket: () => Promise.resolve(true),
  close: () => Promise.resolve(),
};

export class DryRunWriteError extends Error {
  constructor(method: string) {
    super(`the side-effect-free store refused ${method}: front mode's own handling must not write`);
    this.name = 'DryRunWriteError';
  }
}

export function dryRunStore(store: Store): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (typeof property !== 'string') return Reflect.get(target, property, receiver) as unknown;
      const simulated = SIMULATED[property as keyof Store];
      if (simulated !== undefined) return simulated;
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (READS.has(property)) return (value as (...args: unknown[]) => unknown).bind(target);
      return () => Promise.reject(new DryRunWriteError(property));
    },
  });
}
