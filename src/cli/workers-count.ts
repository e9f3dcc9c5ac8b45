/** The number of `serve --workers` processes (cluster.ts, when it parses the option). */
import { availableParallelism } from 'node:os';

export const MAX_WORKERS = 256;

/** `--workers` / SVCAPI_WORKERS: a whole number from 1 to 256, or `auto` (the number of cores). */
export function parseWorkers(text: string): number | null {
  const value = text.trim().toLowerCase();
  if (value === 'auto') return Math.min(MAX_WORKERS, Math.max(1, availableParallelism()));
  if (!/^\d+$/.test(value)) return null;
  const n = Number(value);
  return n >= 1 && n <= MAX_WORKERS ? n : null;
}
