/**
 * Counts of the request path kept in plain numbers and handed to prom-client only when the
 * metrics are read. prom-client's inc() and observe() hash the label object, check every label
 * name and look the series up on every call: 0.4 to 0.8 µs each in a loop, three of them per
 * request (a twentieth of a ValidateUserToken). Here a call adds to a slot found by a string key
 * of label values the caller draws from fixed sets; a scrape folds the slots into prom-client's
 * counters (their `collect` hook), and the request-duration histogram produces prom-client's
 * own values (`get`), so /metrics reads as before (test/ops/tallies.test.ts compares the text
 * with prom-client's own metrics fed the same calls).
 */
import type { Counter, Registry } from 'prom-client';

type Labels<L extends string> = Partial<Record<L, string>>;

/** Increments of one counter, by label values, until the next scrape. */
export class CounterTallies<L extends string> {
  private readonly slots = new Map<string, { readonly labels: Labels<L>; n: number }>();

  /** Adds 1 to the series `labels()` names; `key` must be a function of those label values alone. */
  add(key: string, labels: () => Labels<L>): void {
    const slot = this.slots.get(key);
    if (slot !== undefined) slot.n += 1;
    else this.slots.set(key, { labels: labels(), n: 1 });
  }

  /** Hands what was counted since the last scrape to `counter` (its `collect` hook). */
  drainInto(counter: Counter<L>): void {
    for (const slot of this.slots.values()) {
      if (slot.n === 0) continue;
      counter.inc(slot.labels, slot.n);
      slot.n = 0;
    }
  }
}

interface Series<L extends string> {
  readonly labels: Labels<L>;
  /** Per bucket (not cumulative), in the order of the upper bounds; one more for above the last. */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

interface ValuePair {
  readonly labels: Record<string, string | number>;
  readonly value: number;
  readonly metricName: string;
  readonly sharedLabels?: Record<string, string>;
  readonly exemplar?: null;
}

/**
 * A histogram registered in a prom-client Registry, with prom-client's output (`get()` and
 * `getForPromString()` give the values a prom-client Histogram of the same name, help, labels
 * and buckets gives for the same observations) and an observe() that only adds to arrays.
 */
export class TalliedHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, Series<L>>();

  constructor(readonly name: string, readonly help: string, readonly labelNames: readonly L[], private readonly upperBounds: readonly number[], registry?: Registry) {
    // The Registry reads a metric through get(), getForPromString(), name, help, type and aggregator only.
    registry?.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** Counts `value` for the series `labels()` names; `key` must be a function of those label values alone. */
  observe(key: string, labels: () => Labels<L>, value: number): void {
    let series = this.series.get(key);
    if (series === undefined) {
      series = { labels: labels(), counts: new Float64Array(this.upperBounds.length + 1), sum: 0, count: 0 };
      this.series.set(key, series);
    }
    const bounds = this.upperBounds;
    let b = 0;
    while (b < bounds.length && value > (bounds[b] as number)) b++;
    series.counts[b] = (series.counts[b] ?? 0) + 1;
    series.sum += value;
    series.count += 1;
  }

  /** prom-client's getForPromString(): the series' labels apart, in sharedLabels. */
  getForPromString(): { name: string; help: string; type: string; values: ValuePair[]; aggregator: string } {
    const values: ValuePair[] = [];
    for (const s of this.series.values()) {
      let acc = 0;
      this.upperBounds.forEach((le, i) => {
        acc += s.counts[i] ?? 0;
        values.push({ labels: { le }, value: acc, metricName: `${this.name}_bucket`, exemplar: null, sharedLabels: s.labels as Record<string, string> });
      });
      values.push(
        { labels: { le: '+Inf' }, value: s.count, metricName: `${this.name}_bucket`, exemplar: null, sharedLabels: s.labels as Record<string, string> },
        { labels: {}, value: s.sum, metricName: `${this.name}_sum`, sharedLabels: s.labels as Record<string, string> },
        { labels: {}, value: s.count, metricName: `${this.name}_count`, sharedLabels: s.labels as Record<string, string> },
      );
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** prom-client's get(): the series' labels merged into each value's. */
  get(): { name: string; help: string; type: string; values: ValuePair[]; aggregator: string } {
    const data = this.getForPromString();
    return { ...data, values: data.values.map(({ sharedLabels, labels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } })) };
  }

  reset(): void {
    this.series.clear();
  }
}
