/**
 * Keeps `process.nextTick`'s tick objects on one hidden class for the life of the process.
 *
 * Node builds each tick as `{ [async_id_symbol]: id, [trigger_async_id_symbol]: id, callback,
 * args }` (lib/internal/process/task_queues.js). A literal that starts with a computed key is
 * built property by property from V8's shared empty-literal map, each step a transition whose
 * target map only the objects using it keep alive. A tick lives for one turn of the event loop,
 * so a full garbage collection at a moment when no tick is queued frees the whole chain, and the
 * next tick builds a new one. Each definition site in nextTick then meets maps it has not seen;
 * after a few collections (8 in test/ops/tick-shape.test.ts) three of its four sites are
 * megamorphic for good, and every tick from then on goes through V8's runtime
 * (Runtime_DefineKeyedOwnPropertyInLiteral, JSObject::MigrateToMap, TransitionsAccessor::
 * IsMatchingMap, Map::TransitionToDataProperty): 3.7% of the server's CPU under ValidateUserToken
 * load, 0.1% with one tick kept (`perf`, 2026-11-29). A process that serves has had enough full
 * collections by then (start, the database check, housekeeping); a bare node:http server rarely
 * has.
 *
 * One tick object, taken from inside a tick (`executionAsyncResource()`: the resource of the
 * callback running, which for a tick is the tick itself), is kept here: its map keeps the chain
 * alive, so the sites stay monomorphic. It is taken again every `refreshMs`, so that a chain V8
 * replaces (an async id past the small-integer range, after about 2^31 of them, changes a field's
 * representation) is kept alive too. It holds a closure of this module and nothing else.
 */
import { executionAsyncResource } from 'node:async_hooks';

export interface TickShapeKeeper {
  /** The tick object held now (null until the first tick has run); for tests. */
  held(): object | null;
  /** Resolves once a tick object is held. */
  readonly ready: Promise<void>;
  /** Stops taking new ones (the one held is kept until the keeper itself is dropped). */
  stop(): void;
}

/** Starts keeping a tick object; `refreshMs`: how often it is taken again (default one minute). */
export function keepTickShape(refreshMs = 60_000): TickShapeKeeper {
  let tick: object | null = null;
  const take = (): Promise<void> => new Promise((resolve) => {
    process.nextTick(() => {
      tick = executionAsyncResource();
      resolve();
    });
  });
  const ready = take();
  const timer = setInterval(() => void take(), refreshMs);
  timer.unref();
  return {
    held: () => tick,
    ready,
    stop: () => clearInterval(timer),
  };
}
