/**
 * How the deployment files start the service (deploy/systemd/svcapi-auth.service; the
 * Containerfile sets the same, test/deploy/deploy-files.test.ts keeps them equal): the
 * environment they add (MALLOC_ARENA_MAX, NODE_OPTIONS) and node's own flags before the script.
 * The benchmark starts svcapi-auth this way, so that it measures what ships: these memory
 * settings only take effect before the process starts, so the service itself cannot apply them.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const UNIT = join(resolve(dirname(fileURLToPath(import.meta.url)), '..', '..'), 'deploy', 'systemd', 'svcapi-auth.service');

/** { env: { NAME: value }, nodeArgs: ['--flag', ...] } as the systemd unit has them. */
export function deployedNode(unitFile = UNIT) {
  const lines = readFileSync(unitFile, 'utf8').split('\n').map((l) => l.trim());
  const env = {};
  for (const line of lines) {
    const m = /^Environment=([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (m) env[m[1]] = m[2];
  }
  const exec = lines.find((l) => l.startsWith('ExecStart='));
  if (exec === undefined) throw new Error(`${unitFile}: no ExecStart=`);
  const words = exec.slice('ExecStart='.length).split(/\s+/);
  // The svcapi-auth executable: main.js behind the entry that sizes libuv's pool (src/cli/svcapi-auth.cts).
  const script = words.findIndex((w) => w.endsWith('/dist/cli/svcapi-auth.cjs'));
  if (script < 1) throw new Error(`${unitFile}: ExecStart= does not run node dist/cli/svcapi-auth.cjs`);
  return { env, nodeArgs: words.slice(1, script) };
}
