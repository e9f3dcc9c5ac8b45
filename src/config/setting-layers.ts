/**
 * Where a setting's text comes from: its command-line flag, else its environment variable (an
 * empty one counts as unset), else the config file (`--config` / SVCAPI_CONFIG, config-file.ts),
 * else nothing and the caller's default applies. The answer carries the name to use in messages.
 */
import type { ConfigFlags, LoadConfigInput } from './config.js';
import { ConfigFileError, readConfigFile, type SettingSource } from './config-file.js';
import { ConfigError } from './config-error.js';

export interface SettingLayers {
  /**
   * The text of the setting at the file's dotted `key` (marking the key as known), from the flag
   * `flag` (written `--kebab-case`) if given, else the environment variable `envName`, else the file.
   */
  read(key: string, envName: string, flag?: keyof ConfigFlags): SettingSource | undefined;
  /** The file that was read (absolute path), if any. */
  readonly configFile: string | null;
  /** Called once every setting has been read: a key of the file nothing read is an error. */
  refuseUnknownKeys(): void;
}

export function openSettingLayers(input: LoadConfigInput): SettingLayers {
  const flags = input.flags ?? {};
  const env = input.env ?? {};
  const configSource = pick(flags.config, '--config', env, 'SVCAPI_CONFIG', undefined);
  const file = configSource === undefined ? undefined : withKey(configSource.key, () => readConfigFile(configSource.value.trim()));
  return {
    read(key, envName, flag) {
      const fromFile = file === undefined ? undefined : withKey(key, () => file.take(key));
      return flag === undefined ? pick(undefined, '', env, envName, fromFile) : pick(flags[flag], flagName(flag), env, envName, fromFile);
    },
    configFile: file?.path ?? null,
    refuseUnknownKeys() {
      const unknown = file?.unknownKeys()[0];
      if (unknown !== undefined) throw new ConfigError(unknown.label, unknown.reason);
    },
  };
}

function pick(flag: string | number | boolean | undefined, name: string, env: NodeJS.ProcessEnv, envName: string, fromFile: SettingSource | undefined): SettingSource | undefined {
  if (flag !== undefined) return { value: String(flag), key: name };
  const fromEnv = env[envName];
  if (fromEnv !== undefined && fromEnv !== '') return { value: fromEnv, key: envName };
  if (fromFile !== undefined && fromFile.value.trim() !== '') return fromFile;
  return undefined;
}

/** `timeZone` is `--time-zone`. */
function flagName(flag: keyof ConfigFlags): string {
  return `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** The file's own errors as configuration errors, named by the file's key or else `key`. */
function withKey<T>(key: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof ConfigFileError) throw new ConfigError(error.key ?? key, error.reason);
    throw error;
  }
}
