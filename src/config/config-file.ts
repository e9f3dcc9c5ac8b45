/**
 * The configuration file layer (`--config path` / `SVCAPI_CONFIG`): JSON or YAML, keys shaped
 * like the effective configuration (`svcapi-auth config print` shows the shape), e.g.
 *
 *   port: 8080
 *   management: { host: 127.0.0.1, port: 9464 }
 *   trustedProxies: [10.0.0.5, 10.1.0.0/16]
 *
 * The file is flattened to dotted keys (`management.port`). loadConfig() takes each key it knows;
 * whatever is left over is an unknown key and an error naming it.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname, resolve } from 'node:path';
import type { parse } from 'yaml';

/** The YAML parser, loaded only for a file that is not JSON: ~80 ms of CPU at every start otherwise (2026-11-26). */
function parseYaml(text: string, options: { readonly prettyErrors: boolean; readonly uniqueKeys: boolean }): unknown {
  return (createRequire(import.meta.url)('yaml') as { parse: typeof parse }).parse(text, options);
}

/** One setting's text and the name to use for it in error messages. */
export interface SettingSource {
  readonly value: string;
  readonly key: string;
}

/**
 * A problem with the file: `key` names the setting (dotted key and file) when one is at fault,
 * null when the file itself is (unreadable, not JSON/YAML, not a mapping).
 */
export class ConfigFileError extends Error {
  constructor(readonly key: string | null, readonly reason: string) {
    super(key === null ? reason : `${key}: ${reason}`);
    this.name = 'ConfigFileError';
  }
}

function scalarText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

export class ConfigFileLayer {
  private readonly values = new Map<string, unknown>();
  private readonly taken = new Set<string>();

  constructor(readonly path: string, data: unknown) {
    if (data === null || data === undefined) return; // an empty file sets nothing
    if (typeof data !== 'object' || Array.isArray(data)) throw new ConfigFileError(null, `${path}: expected a mapping of settings at the top level`);
    this.flatten('', data as Record<string, unknown>);
  }

  private flatten(prefix: string, object: Record<string, unknown>): void {
    for (const [name, value] of Object.entries(object)) {
      const key = prefix === '' ? name : `${prefix}.${name}`;
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) this.flatten(key, value as Record<string, unknown>);
      else this.values.set(key, value);
    }
  }

  /** How a key is named in messages: the dotted key and the file. */
  private label(key: string): string {
    return `${key} (in ${this.path})`;
  }

  /**
   * The file's value for `key` as text (lists joined by commas), marking the key as known;
   * undefined when the file does not set it (or sets it to null / an empty value).
   */
  take(key: string): SettingSource | undefined {
    this.taken.add(key);
    if (!this.values.has(key)) {
      const nested = [...this.values.keys()].find((k) => k.startsWith(`${key}.`));
      if (nested !== undefined) throw new ConfigFileError(this.label(key), 'expected a single value, got a mapping');
      return undefined;
    }
    const value = this.values.get(key);
    if (value === null || value === undefined) return undefined;
    if (Array.isArray(value)) {
      const items = value.map(scalarText);
      if (items.some((item) => item === undefined)) throw new ConfigFileError(this.label(key), 'expected a list of plain values');
      return { value: items.join(','), key: this.label(key) };
    }
    const text = scalarText(value);
    if (text === undefined) throw new ConfigFileError(this.label(key), 'expected a single value');
    return { value: text, key: this.label(key) };
  }

  /** Keys present in the file that no take() asked for, in file order. */
  unknownKeys(): { readonly key: string; readonly label: string; readonly reason: string }[] {
    return [...this.values.keys()]
      .filter((key) => !this.taken.has(key))
      .map((key) => {
        // `management: 5` where a section was expected shows up as the section's own name.
        const section = [...this.taken].some((k) => k.startsWith(`${key}.`));
        const reason = section
          ? 'expected a mapping (a section), got a single value'
          : `unknown setting; the known settings are ${this.knownKeys().join(', ')}`;
        return { key, label: this.label(key), reason };
      });
  }

  /** The keys asked for, for "known keys are..." hints. */
  knownKeys(): readonly string[] {
    return [...this.taken].sort();
  }
}

/** Reads and parses a config file: `.json` as JSON, anything else as YAML (a superset of JSON). */
export function readConfigFile(path: string): ConfigFileLayer {
  const absolute = resolve(path);
  let text: string;
  try {
    text = readFileSync(absolute, 'utf8');
  } catch (error) {
    throw new ConfigFileError(null, `cannot read ${absolute}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  let data: unknown;
  try {
    data = extname(absolute).toLowerCase() === '.json' ? JSON.parse(text) : parseYaml(text, { prettyErrors: true, uniqueKeys: true });
  } catch (error) {
    const kind = extname(absolute).toLowerCase() === '.json' ? 'JSON' : 'YAML';
    throw new ConfigFileError(null, `${absolute} is not valid ${kind}: ${(error as Error).message.split('\n')[0] ?? ''}`);
  }
  return new ConfigFileLayer(absolute, data);
}
