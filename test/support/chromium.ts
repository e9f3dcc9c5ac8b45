/**
 * Chromium for the browser tests (playwright-core drives it; no browser download): the file
 * named by CHROMIUM_PATH, else the first `chromium` or `chromium-browser` on PATH (Debian's
 * package puts it in /usr/bin). Without one the browser tests are skipped on a developer's
 * machine, but never in CI (CI=true), where .ci/run installs it: there a missing browser fails.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function findChromium(env: NodeJS.ProcessEnv = process.env): string | null {
  const named = env['CHROMIUM_PATH'];
  if (named !== undefined && named !== '') return named;
  for (const dir of (env['PATH'] ?? '').split(delimiter)) {
    for (const name of ['chromium', 'chromium-browser']) {
      if (dir !== '' && executable(join(dir, name))) return join(dir, name);
    }
  }
  return null;
}

/** The browser's path, or where CI expects it (so that a missing browser fails there, loudly). */
export const CHROMIUM: string = findChromium() ?? '/usr/bin/chromium';
/** Skip the browser tests: no browser here, and not CI. */
export const SKIP_BROWSER_TESTS: boolean = findChromium() === null && process.env['CI'] !== 'true';

/** Headless, and none of the background traffic this machine's closed network would refuse. */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];
