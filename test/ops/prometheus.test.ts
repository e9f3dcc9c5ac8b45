/**
 * src/ops/prometheus.ts: prom-client without its entry point registers what prom-client's own
 * collectDefaultMetrics registers (dashboards and alerts built on the standard process_* and
 * nodejs_* series keep working), and the process CPU counters made there count the process's CPU.
 */
import { Registry as PromRegistry, collectDefaultMetrics as promCollectDefaultMetrics } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { collectDefaultMetrics, Counter, Gauge, Registry } from '../../src/ops/prometheus.js';

interface Described {
  readonly name: string;
  readonly type: string;
  readonly help: string;
}

async function described(registry: PromRegistry): Promise<Described[]> {
  const json = await registry.getMetricsAsJSON();
  return json.map((m) => ({ name: m.name, type: String(m.type), help: m.help }));
}

function sample(text: string, name: string): number {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (m === null) throw new Error(`${name} missing from\n${text}`);
  return Number(m[1]);
}

describe('prom-client without its entry point', () => {
  it('registers the same default metrics as prom-client\'s collectDefaultMetrics, in the same order, with the same types and help', async () => {
    const ours = new Registry();
    collectDefaultMetrics(ours, 20);
    const theirs = new PromRegistry();
    promCollectDefaultMetrics({ register: theirs, eventLoopMonitoringPrecision: 20 });
    const expected = await described(theirs);
    expect(expected.map((m) => m.name)).toContain('process_cpu_seconds_total');
    expect(await described(ours)).toEqual(expected);
  });

  it('the classes are prom-client\'s own: a registry of one takes the metrics of the other', async () => {
    const registry = new PromRegistry();
    new Counter({ name: 'svcapi_test_total', help: 'a counter', registers: [registry] }).inc(3);
    new Gauge({ name: 'svcapi_test_gauge', help: 'a gauge', registers: [registry] }).set(7);
    const text = await registry.metrics();
    expect(sample(text, 'svcapi_test_total')).toBe(3);
    expect(sample(text, 'svcapi_test_gauge')).toBe(7);
    expect(new Registry()).toBeInstanceOf(PromRegistry);
  });

  it('the process CPU counters add the CPU spent since the last scrape: user + system = the total, growing with work', async () => {
    const registry = new Registry();
    collectDefaultMetrics(registry, 20);
    const first = await registry.metrics();
    const before = process.cpuUsage();
    const until = performance.now() + 60;
    let spin = 0;
    while (performance.now() < until) spin += Math.sqrt(spin + 1);
    expect(spin).toBeGreaterThan(0);
    const spent = process.cpuUsage(before);
    const second = await registry.metrics();
    const grown = sample(second, 'process_cpu_seconds_total') - sample(first, 'process_cpu_seconds_total');
    // At least the CPU this test spent between the two scrapes (process.cpuUsage is per process).
    expect(grown).toBeGreaterThanOrEqual((spent.user + spent.system) / 1e6 - 0.001);
    for (const text of [first, second]) {
      expect(sample(text, 'process_cpu_user_seconds_total') + sample(text, 'process_cpu_system_seconds_total'))
        .toBeCloseTo(sample(text, 'process_cpu_seconds_total'), 6);
    }
  });
});
