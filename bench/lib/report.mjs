/**
 * Statistics and report formatting shared by bench.mjs and scale.mjs.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export function median(values) {
  const v = values.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 === 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

/** Each numeric field of the runs, as its median. */
export function medianOf(runs, fields) {
  const out = {};
  for (const f of fields) out[f] = median(runs.map((r) => r[f]));
  return out;
}

export function fmtInt(n) {
  return n === null || n === undefined ? '–' : Math.round(n).toLocaleString('en-US');
}

export function fmt(n, digits = 2) {
  if (n === null || n === undefined || !Number.isFinite(n)) return '–';
  if (Math.abs(n) >= 100) return n.toFixed(0);
  if (Math.abs(n) >= 10) return n.toFixed(1);
  return n.toFixed(digits);
}

export function ratio(a, b) {
  return a === null || a === undefined || b === null || b === undefined || b === 0 ? null : a / b;
}

export function fmtRatio(r) {
  return r === null || r === undefined || !Number.isFinite(r) ? '–' : `${r >= 10 ? r.toFixed(1) : r.toFixed(2)}×`;
}

export function timestamp(d = new Date()) {
  return d.toISOString().replace(/[:]/g, '').replace(/\.\d+Z$/, 'Z');
}

/** Writes `<name>-latest.{json,md}` (or latest.*) and timestamped copies into dir. */
export async function writeResults(dir, prefix, json, markdown) {
  await mkdir(dir, { recursive: true });
  // The latest run only: older ones are in git history (a timestamped copy is written too, ignored by git).
  const base = prefix === '' ? '' : `${prefix}-`;
  const stamp = timestamp(new Date(json.startedAt));
  const files = [join(dir, `${base}latest.json`), join(dir, `${base}latest.md`), join(dir, `${base}${stamp}.md`)];
  await writeFile(files[0], `${JSON.stringify(json, null, 2)}\n`);
  await writeFile(files[1], markdown);
  await writeFile(files[2], markdown);
  return files;
}

/** Replaces the text between `<!-- name:start -->` and `<!-- name:end -->` in a file (if both are there). */
export async function replaceSection(file, name, text) {
  if (!existsSync(file)) return false;
  const content = readFileSync(file, 'utf8');
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const i = content.indexOf(start);
  const j = content.indexOf(end);
  if (i === -1 || j === -1 || j < i) return false;
  await writeFile(file, `${content.slice(0, i + start.length)}\n${text.trim()}\n${content.slice(j)}`);
  return true;
}

export function machineLine(machine, layout, loadStart, loadEnd, client) {
  return `${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGb} GB RAM, ${machine.os} (Linux ${machine.kernel ?? '?'}), Node ${machine.node}; ` +
    `load generator ${client}; ${layout.pinned ? `servers pinned to core ${layout.server}, load generator to core ${layout.load} (taskset)` : `nothing pinned (${layout.reason})`}; ` +
    `load average ${loadStart.join(' ')} at the start, ${loadEnd.join(' ')} at the end`;
}
