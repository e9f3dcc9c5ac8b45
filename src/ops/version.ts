import { createRequire } from 'node:module';

/** The package version (from package.json, two levels up from both src/ops and dist/ops). */
export function packageVersion(): string {
  try {
    const pkg = createRequire(import.meta.url)('../../package.json') as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}
