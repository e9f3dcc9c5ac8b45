/**
 * prom-client's classes and its default metrics, loaded without its entry point.
 *
 * prom-client's index loads every module it has, and one of them (the process CPU metric) loads
 * `@opentelemetry/api` for exemplars at start, used only when exemplars are enabled, which this
 * service never does. That load was 45 ms of each start's CPU here (2026-11-29: `import('prom-client')`
 * 86 ms, `@opentelemetry/api` alone 56 ms; in a CPU profile of `serve` up to its first answer,
 * 66 of prom-client's 107 ms), about a twelfth of a start that issue 18 wants under a second.
 * So the classes come from their own files, and the default metrics are prom-client's own
 * modules, called as its `collectDefaultMetrics` calls them, except the process CPU counters,
 * made here with the same names, help and values.
 *
 * prom-client declares no "exports", so its files are reachable. test/ops/prometheus.test.ts
 * compares what this registers with what prom-client's own `collectDefaultMetrics` does (names,
 * types, help) and loads every file named here, so a prom-client that renames or moves one
 * fails there, not in production.
 */
import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';

const requireLib = createRequire(import.meta.url);
const lib = <T>(path: string): T => requireLib(`prom-client/lib/${path}`) as T;

export const Registry = lib<typeof PromClient.Registry>('registry.js');
export const Counter = lib<typeof PromClient.Counter>('counter.js');
export const Gauge = lib<typeof PromClient.Gauge>('gauge.js');
export type Registry = PromClient.Registry;
export type Counter<T extends string = string> = PromClient.Counter<T>;
export type Gauge<T extends string = string> = PromClient.Gauge<T>;

/** One of prom-client's default metric modules: registers its metrics on the registry. */
type DefaultMetric = (registry: Registry, config: { readonly eventLoopMonitoringPrecision?: number }) => void;

/**
 * prom-client's default metrics but its CPU counters, in the order of its defaultMetrics.js.
 * `processResources` only where Node.js has process.getActiveResourcesInfo, as there.
 */
export const DEFAULT_METRIC_MODULES: readonly string[] = [
  'processStartTime', 'osMemoryHeap', 'processOpenFileDescriptors', 'processMaxFileDescriptors', 'eventLoopLag',
  ...(typeof process.getActiveResourcesInfo === 'function' ? ['processResources'] : []),
  'processHandles', 'processRequests', 'heapSizeAndUsed', 'heapSpacesSizeAndUsed', 'version', 'gc',
];

/** What prom-client's `collectDefaultMetrics({ register, eventLoopMonitoringPrecision })` registers. */
export function collectDefaultMetrics(registry: Registry, eventLoopMonitoringPrecision: number): void {
  processCpuTotal(registry);
  for (const name of DEFAULT_METRIC_MODULES) lib<DefaultMetric>(`metrics/${name}.js`)(registry, { eventLoopMonitoringPrecision });
}

/** prom-client's metrics/processCpuTotal.js without exemplars: the CPU time since the last scrape, added at each scrape. */
function processCpuTotal(registry: Registry): void {
  const registers = [registry];
  let last = process.cpuUsage();
  const user = new Counter({
    name: 'process_cpu_user_seconds_total',
    help: 'Total user CPU time spent in seconds.',
    registers,
    // One metric's collect sets all three, as prom-client's does.
    collect() {
      const now = process.cpuUsage();
      const userMicros = now.user - last.user;
      const systemMicros = now.system - last.system;
      last = now;
      user.inc(userMicros / 1e6);
      system.inc(systemMicros / 1e6);
      total.inc((userMicros + systemMicros) / 1e6);
    },
  });
  const system = new Counter({ name: 'process_cpu_system_seconds_total', help: 'Total system CPU time spent in seconds.', registers });
  const total = new Counter({ name: 'process_cpu_seconds_total', help: 'Total user and system CPU time spent in seconds.', registers });
}
