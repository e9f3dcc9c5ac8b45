/**
 * Durations on the command line: `90` or `90s` (seconds), `30m`, `24h`, `7d`, or combined
 * (`1h30m`). Returns whole seconds, or null when the text is not a duration.
 */
import { InvalidArgumentError } from 'commander';

export function parseDuration(text: string): number | null {
  const trimmed = text.trim().toLowerCase();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  if (!/^(\d+[dhms])+$/.test(trimmed)) return null;
  const factors: Record<string, number> = { d: 86_400, h: 3_600, m: 60, s: 1 };
  let total = 0;
  for (const match of trimmed.matchAll(/(\d+)([dhms])/g)) {
    total += Number(match[1]) * (factors[match[2] ?? 's'] ?? 1);
  }
  return Number.isSafeInteger(total) ? total : null;
}

/** The shortest exact rendering of whole seconds (`86400` -> `24h`, `5400` -> `1h30m`). */
export function formatDuration(seconds: number): string {
  if (seconds === 0) return '0s';
  let rest = seconds;
  let out = '';
  for (const [unit, size] of [['d', 86_400], ['h', 3_600], ['m', 60], ['s', 1]] as const) {
    if (rest >= size) {
      out += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
    }
  }
  return out;
}

/** parseDuration for commander: whole seconds, or a usage error. */
export function durationArg(text: string): number {
  const seconds = parseDuration(text);
  if (seconds === null) throw new InvalidArgumentError('expected a duration like 90s, 30m, 24h, 7d or 1h30m.');
  return seconds;
}
