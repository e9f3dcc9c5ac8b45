/**
 * What the listing commands print: aligned tables for people, JSON lines for scripts. Every
 * table cell is shown with invisible and control characters escaped (display-text.ts), so a
 * login or a title cannot reorder or hide the line.
 */
import { displayText, safeJson } from '../domain/display-text.js';
import type { CliIo } from './cli-io.js';

export function table(io: CliIo, headers: readonly string[], unsafeRows: readonly (readonly string[])[]): void {
  const rows = unsafeRows.map((r) => r.map(displayText));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  io.stdout.write(`${line(headers)}\n`);
  for (const row of rows) io.stdout.write(`${line(row)}\n`);
}

/** One JSON object per line, text escaped as safeJson does. */
export function jsonLines(io: CliIo, values: readonly object[]): void {
  for (const value of values) io.stdout.write(`${safeJson(value)}\n`);
}

export const iso = (d: Date | null): string => (d === null ? '-' : d.toISOString());
export const yesNo = (b: boolean): string => (b ? 'yes' : 'no');
