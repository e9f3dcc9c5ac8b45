/** A setting that cannot be used; `key` names where it came from (flag, environment variable, or the file's key and path). */
export class ConfigError extends Error {
  constructor(readonly key: string, message: string) {
    super(`invalid configuration ${key}: ${message}`);
    this.name = 'ConfigError';
  }
}
