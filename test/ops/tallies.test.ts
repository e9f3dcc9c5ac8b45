/**
 * The request path's tallies (src/ops/tallies.ts) read exactly as prom-client's own metrics fed
 * the same calls: the /metrics text, and the JSON a registry gives.
 */
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CounterTallies, TalliedHistogram } from '../../src/ops/tallies.js';

const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const OPERATIONS = ['ValidateUserToken', 'WhatsNew', 'none'];
const BINDINGS = ['soap11', 'soap12', 'http-get'];

function random(seed: number): (n: number) => number {
  let s = seed;
  return (n) => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s % n;
  };
}

describe('tallied metrics', () => {
  it('a tallied histogram reads as prom-client\'s Histogram given the same observations, bounds and beyond included', async () => {
    const [reference, tallied] = [new Registry(), new Registry()];
    const histogram = new Histogram({ name: 'h_seconds', help: 'Time "spent", by \\\\ op.', labelNames: ['operation', 'binding'], buckets: BUCKETS, registers: [reference] });
    const fast = new TalliedHistogram('h_seconds', 'Time "spent", by \\\\ op.', ['operation', 'binding'], BUCKETS, tallied);
    const rand = random(11);
    const values = [0, 0.001, 0.0049, 0.005, 10, 10.5, 1e-7, 3];
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 500; i++) {
        const operation = OPERATIONS[rand(OPERATIONS.length)] as string;
        const binding = BINDINGS[rand(BINDINGS.length)] as string;
        const value = rand(3) === 0 ? (values[rand(values.length)] as number) : rand(20_000) / 1000;
        histogram.observe({ operation, binding }, value);
        fast.observe(`${operation}|${binding}`, () => ({ operation, binding }), value);
      }
      expect(await tallied.metrics()).toBe(await reference.metrics());
      expect(JSON.parse(JSON.stringify(await tallied.getMetricsAsJSON()))).toEqual(JSON.parse(JSON.stringify(await reference.getMetricsAsJSON())));
    }
  });

  it('tallied counter increments read as prom-client\'s, scrape after scrape', async () => {
    const [reference, tallied] = [new Registry(), new Registry()];
    const counter = new Counter({ name: 'c_total', help: 'c', labelNames: ['operation', 'binding', 'outcome'], registers: [reference] });
    const tallies = new CounterTallies<'operation' | 'binding' | 'outcome'>();
    new Counter({
      name: 'c_total', help: 'c', labelNames: ['operation', 'binding', 'outcome'], registers: [tallied],
      collect() {
        tallies.drainInto(this);
      },
    });
    const rand = random(5);
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 300; i++) {
        const [operation, binding, outcome] = [OPERATIONS[rand(3)] as string, BINDINGS[rand(3)] as string, rand(4) === 0 ? 'fault' : 'ok'];
        counter.inc({ operation, binding, outcome });
        tallies.add(`${operation}|${binding}|${outcome}`, () => ({ operation, binding, outcome }));
      }
      expect(await tallied.metrics()).toBe(await reference.metrics());
    }
  });
});
