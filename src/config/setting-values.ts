/**
 * One setting's text made a value, or refused with a ConfigError naming where it came from (the
 * flag, the environment variable, or the file's dotted key and path), so a bad value stops the
 * process with a message the operator can act on.
 */
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { OPERATIONS } from '../contract/operations.js';
import type { SettingSource } from './config-file.js';
import { ConfigError } from './config-error.js';

/** localhost, 127.0.0.0/8 or ::1 (a URL's hostname, IPv6 in brackets). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** true / false, also 1 / 0, yes / no, on / off. */
export function boolean(source: SettingSource | undefined, fallback: boolean): boolean {
  if (source === undefined) return fallback;
  const text = source.value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(text)) return true;
  if (['false', '0', 'no', 'off'].includes(text)) return false;
  throw new ConfigError(source.key, `expected true or false, got ${JSON.stringify(source.value)}`);
}

/** A host name or address (no spaces); `name` names the default in a message. */
export function hostSetting(source: SettingSource | undefined, fallback: string, name: string): string {
  const host = (source?.value ?? fallback).trim();
  if (host === '' || /\s/.test(host)) throw new ConfigError(source?.key ?? name, `expected a host name or address, got ${JSON.stringify(source?.value)}`);
  return host;
}

/** proxy-addr's names (@fastify/proxy-addr, used by src/http/app.ts) for address ranges. */
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/** A comma- or space-separated list of IP addresses and CIDR ranges, checked one by one. */
export function proxyList(source: SettingSource | undefined): string[] {
  if (source === undefined) return [];
  const entries = source.value.split(/[\s,]+/).filter((e) => e !== '');
  for (const entry of entries) {
    if (PROXY_RANGE_NAMES.includes(entry) || isIP(entry) !== 0) continue;
    const [address = '', bits, ...rest] = entry.split('/');
    const family = isIP(address);
    const max = family === 6 ? 128 : 32;
    const valid = family !== 0 && rest.length === 0 && bits !== undefined && /^\d{1,3}$/.test(bits) && Number(bits) <= max;
    if (valid) continue;
    throw new ConfigError(source.key, `expected IP addresses or CIDR ranges (like 10.0.0.5 or 10.0.0.0/8), got ${JSON.stringify(entry)}`);
  }
  return entries;
}

/** `true`/`false` (also on/off, yes/no), or a comma-separated list of operation names. */
export function httpGetSetting(source: SettingSource | undefined): boolean | string[] {
  if (source === undefined) return true;
  const text = source.value.trim();
  const lower = text.toLowerCase();
  if (['true', 'on', 'yes', '1'].includes(lower)) return true;
  if (['false', 'off', 'no', '0', ''].includes(lower)) return false;
  const names = text.split(/[\s,]+/).filter((n) => n !== '');
  const known: readonly string[] = OPERATIONS.map((op) => op.name);
  const bad = names.find((n) => !known.includes(n));
  if (bad !== undefined) throw new ConfigError(source.key, `expected true, false or operation names (${known.join(', ')}), got ${JSON.stringify(bad)}`);
  return names;
}

/** A whole number from `min` to `max`, digits only. */
export function integer(source: SettingSource | undefined, fallback: number, min: number, max: number): number {
  if (source === undefined) return fallback;
  const text = source.value.trim();
  if (!/^\d+$/.test(text)) throw new ConfigError(source.key, `expected a whole number from ${min} to ${max}, got ${JSON.stringify(source.value)}`);
  const n = Number(text);
  if (n < min || n > max) throw new ConfigError(source.key, `expected a whole number from ${min} to ${max}, got ${n}`);
  return n;
}

/** A decimal from 0 to 1 (a share), e.g. 0.05. */
export function fraction(source: SettingSource | undefined, fallback: number): number {
  if (source === undefined) return fallback;
  const text = source.value.trim();
  const n = /^(0|1|0?\.\d+|1\.0*)$/.test(text) ? Number(text) : NaN;
  if (!(n >= 0 && n <= 1)) throw new ConfigError(source.key, `expected a share from 0 to 1 (like 0.05), got ${JSON.stringify(source.value)}`);
  return n;
}

/**
 * `off` (also false, no), or the instant passthrough ends: an ISO 8601 date and time with its
 * offset (`2027-03-31T23:59:59Z`, `2027-03-31T23:59:59+02:00`). A date alone or a time without
 * an offset is refused: whose midnight, which zone, would be a guess.
 */
export function passthroughUntil(source: SettingSource | undefined): string | null {
  if (source === undefined) return null;
  const text = source.value.trim();
  if (['off', 'false', 'no', '0'].includes(text.toLowerCase())) return null;
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i.exec(text);
  const expected = 'expected off, or the end of passthrough as an ISO 8601 date and time with its offset, like 2027-03-31T23:59:59Z';
  if (m === null) throw new ConfigError(source.key, `${expected}, got ${JSON.stringify(source.value)}`);
  const [year, month, day, hour, minute, second = '00'] = m.slice(1, 7).map((v) => v ?? '00') as [string, string, string, string, string, string];
  // Date.parse rolls 2027-02-30 over into March: the fields must survive the round trip.
  const probe = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second)));
  const exists = probe.getUTCFullYear() === Number(year) && probe.getUTCMonth() === Number(month) - 1 && probe.getUTCDate() === Number(day)
    && probe.getUTCHours() === Number(hour) && probe.getUTCMinutes() === Number(minute) && probe.getUTCSeconds() === Number(second);
  const ms = Date.parse(text);
  if (!exists || !Number.isFinite(ms)) throw new ConfigError(source.key, `no such date and time: ${JSON.stringify(source.value)}`);
  return new Date(ms).toISOString();
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function defaultTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

/** An IANA time zone; the machine's own (or UTC) by default. */
export function timeZoneSetting(source: SettingSource | undefined): string {
  const timeZone = source?.value.trim() ?? defaultTimeZone();
  if (!isTimeZone(timeZone)) throw new ConfigError(source?.key ?? 'timeZone', `not an IANA time zone: ${JSON.stringify(timeZone)}`);
  return timeZone;
}

/** One of `choices`, case-insensitive; `what` is how a message lists them. */
export function choice<T extends string>(source: SettingSource | undefined, fallback: T, choices: readonly T[], name: string, what: string): T {
  const value = source?.value.trim().toLowerCase() ?? fallback;
  if (!(choices as readonly string[]).includes(value)) throw new ConfigError(source?.key ?? name, `expected ${what}, got ${JSON.stringify(source?.value)}`);
  return value as T;
}

/** A file path, made absolute against the working directory at start. */
export function pathSetting(source: SettingSource | undefined): string | null {
  return source === undefined ? null : resolve(source.value.trim());
}
