/**
 * Token passthrough's tallies (docs/cutover.md, "Watching it"): how the checks of the old
 * service's tokens, their GetUserLoginURL relays and their adoptions ended, per UTC day and
 * result, kept in the database (LegacyTallyStore, migration 16), so that `users
 * migration-report` and the console, in another process, see the sum of every `serve` on the
 * database: several workers, several instances on PostgreSQL, restarts.
 *
 * Counting is on the path of every token unknown here, so it is plain numbers in memory, no
 * store write per check: `flush()` adds what was counted since the last flush to the stored counts
 * (serve: every minute and at shutdown, src/cli/legacy-passthrough.ts). Flushes run one at a
 * time; what is counted during one goes to the next; a flush that failed keeps its numbers for
 * the next one. Only results and times are kept, never a token, a fingerprint or a login.
 * A flush whose commit the database made but whose answer was lost (the connection dropped at
 * COMMIT) is counted again by the next: the numbers are for an operator's decision, not billing.
 */
import type { LegacyTally, LegacyTallyKind, LegacyTallyStore } from '../store/store.js';
import type { Clock } from './clock.js';
import type { TokenAdoptionResult } from './legacy-token-adoption.js';
import type { LegacyTokenCheckResult, LoginUrlRelayResult } from './legacy-token-passthrough.js';

/** Days of tallies kept (each kind and result's newest day is kept longer: LegacyTallyStore). */
export const LEGACY_TALLY_RETENTION_DAYS = 90;
export const DAY_MS = 86_400_000;

/** The UTC day of an instant, `YYYY-MM-DD`. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export type LegacyTallyFlush = { readonly ok: true; readonly rows: number } | { readonly ok: false; readonly error: unknown };

export interface LegacyTokenTally {
  check(result: LegacyTokenCheckResult): void;
  relay(result: LoginUrlRelayResult): void;
  adoption(result: TokenAdoptionResult): void;
  /** Adds what was counted since the last flush to the store; a failed flush keeps it for the next. */
  flush(): Promise<LegacyTallyFlush>;
  /** How many were counted and not written yet. */
  pending(): number;
}

export interface LegacyTokenTallyOptions {
  readonly store: LegacyTallyStore;
  readonly clock: Clock;
}

interface Cell {
  count: number;
  lastAt: number;
}
/** One UTC day's cells: kind → result → count. */
type DayCells = Record<LegacyTallyKind, Map<string, Cell>>;

export function createLegacyTokenTally(options: LegacyTokenTallyOptions): LegacyTokenTally {
  const { store, clock } = options;
  /** By UTC day number (days since the epoch): a count computes no day text; take() does. */
  let days = new Map<number, DayCells>();
  let pending = 0;
  let queue: Promise<unknown> = Promise.resolve();

  function cellsOf(day: number): DayCells {
    let cells = days.get(day);
    if (cells === undefined) {
      cells = { check: new Map(), relay: new Map(), adoption: new Map() };
      days.set(day, cells);
    }
    return cells;
  }

  function add(kind: LegacyTallyKind, result: string, count: number, at: number): void {
    const cells = cellsOf(Math.floor(at / DAY_MS))[kind];
    const cell = cells.get(result);
    if (cell === undefined) cells.set(result, { count, lastAt: at });
    else {
      cell.count += count;
      if (at > cell.lastAt) cell.lastAt = at;
    }
    pending += count;
  }

  const count = (kind: LegacyTallyKind, result: string): void => add(kind, result, 1, clock.now().getTime());

  /** Everything counted, as rows, and forgotten. */
  function take(): LegacyTally[] {
    const rows: LegacyTally[] = [];
    for (const [day, cells] of days) {
      for (const kind of ['check', 'relay', 'adoption'] as const) {
        for (const [result, cell] of cells[kind]) rows.push({ day: utcDay(day * DAY_MS), kind, result, count: cell.count, lastAt: new Date(cell.lastAt) });
      }
    }
    days = new Map();
    pending = 0;
    return rows;
  }

  async function write(): Promise<LegacyTallyFlush> {
    const rows = take();
    if (rows.length === 0) return { ok: true, rows: 0 };
    try {
      await store.addLegacyTallies(rows, utcDay(clock.now().getTime() - LEGACY_TALLY_RETENTION_DAYS * DAY_MS));
      return { ok: true, rows: rows.length };
    } catch (error) {
      // Back into memory, beside what was counted meanwhile: the next flush writes both.
      // (A row's last time lies in its day: add puts it back there.)
      for (const row of rows) add(row.kind, row.result, row.count, row.lastAt.getTime());
      return { ok: false, error };
    }
  }

  return {
    check: (result) => count('check', result),
    relay: (result) => count('relay', result),
    adoption: (result) => count('adoption', result),
    flush() {
      // One write at a time: a flush asked for during another starts after it, with what came meanwhile.
      const run = queue.then(write);
      queue = run;
      return run;
    },
    pending: () => pending,
  };
}
