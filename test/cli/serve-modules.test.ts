/**
 * `serve` loads what serving needs and nothing it was not configured for: not the rest of the
 * CLI (program.ts and every other command's modules), not the admin console before its first
 * request, not shadow / front mode, the legacy clients, node-postgres, pino-pretty, YAML or zod
 * unless configured (docs/architecture.md, "serve loads only what serving needs"). The server
 * runs as deployed (dist/), with a preload recording every module it loads
 * (test/support/module-trace.mjs); the configured cases show the same record does see them.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { killAll, requireDist, startServer, type ServerProcess } from '../support/server-process.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-serve-modules-'));
afterEach(() => killAll());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PRELOAD = fileURLToPath(new URL('../support/module-trace.mjs', import.meta.url));
let counter = 0;

/** The files a `serve` loaded until it was stopped, as the trace has them. */
async function filesOf(args: readonly string[], env: Record<string, string>, during?: (server: ServerProcess) => Promise<void>): Promise<string[]> {
  requireDist();
  const trace = join(dir, `trace-${++counter}`);
  const server = await startServer(['--db', `sqlite:${join(dir, `db-${counter}.db`)}`, ...args], {
    ...env, SVCAPI_MODULE_TRACE: trace, NODE_OPTIONS: `--import=${PRELOAD}`,
  });
  await (await fetch(`${server.url}?WSDL`)).arrayBuffer();
  await during?.(server);
  server.child.kill('SIGTERM');
  expect((await server.exited).code).toBe(0);
  const text = readFileSync(`${trace}.${server.child.pid ?? 0}`, 'utf8');
  return text.split('\n').filter(Boolean).map((line) => decodeURIComponent(line.replace(/^(esm|cjs) (file:\/\/)?/, '')));
}

/** What a `serve` loaded until it was stopped: module paths (dist/... or node_modules/<package>/...). */
async function modulesOf(args: readonly string[], env: Record<string, string>, during?: (server: ServerProcess) => Promise<void>): Promise<string[]> {
  return [...new Set((await filesOf(args, env, during)).map((path) => {
    const nm = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(path);
    if (nm) return `node_modules/${nm[1]}/`;
    const ours = /\/dist\/(.+)$/.exec(path);
    return ours ? `dist/${ours[1]}` : path;
  }))];
}

// @opentelemetry/api: prom-client's entry point loads it for exemplars, which are never enabled
// (45 ms of a start: src/ops/prometheus.ts).
const NOT_FOR_SERVING = [
  'node_modules/@opentelemetry/api/', 'dist/cli/program.js', 'dist/cli/import-legacy.js', 'dist/cli/export-import.js', 'dist/cli/news-import.js', 'dist/cli/compat-commands.js',
  'dist/cli/ops-commands.js', 'dist/cli/user-commands.js', 'dist/compat/learn.js', 'node_modules/csv-parse/',
];
const UNLESS_CONFIGURED = [
  'dist/console/console-wiring.js', 'dist/console/console-app.js', 'dist/compat/shadow.js', 'dist/compat/answer-compare.js', 'dist/legacy/soap-legacy-authenticator.js',
  'dist/cli/legacy-passthrough.js', 'dist/store/postgres/postgres-store.js', 'node_modules/pg/', 'node_modules/undici/', 'node_modules/diff/',
  'node_modules/pino-pretty/', 'node_modules/yaml/', 'node_modules/zod/',
];

describe('serve loads only what serving needs', () => {
  it('as configured by default (SQLite, JSON configuration file): none of the rest of the CLI, nothing that is not configured', async () => {
    const configFile = join(dir, 'config.json');
    writeFileSync(configFile, JSON.stringify({ logLevel: 'warn' }));
    const loaded = await modulesOf([], { SVCAPI_CONFIG: configFile });
    // The record sees what serving loads.
    expect(loaded).toEqual(expect.arrayContaining(['dist/cli/serve.js', 'dist/http/app.js', 'dist/store/sqlite/sqlite-store.js', 'node_modules/better-sqlite3/', 'node_modules/pino/']));
    expect(loaded.filter((m) => NOT_FOR_SERVING.includes(m) || UNLESS_CONFIGURED.includes(m))).toEqual([]);
  });

  it('loads the console on its first request, shadow mode and the legacy clients when configured, YAML for a YAML file', async () => {
    const legacy = await startServer(['--db', `sqlite:${join(dir, 'legacy.db')}`]);
    const configFile = join(dir, 'config.yaml');
    writeFileSync(configFile, 'logLevel: warn\n');
    const loaded = await modulesOf([], {
      SVCAPI_CONFIG: configFile, SVCAPI_LEGACY_URL: legacy.url, SVCAPI_LEGACY_SHADOW_RATE: '1', SVCAPI_MANAGEMENT_PORT: '0',
    }, async (server) => {
      const management = /^Management: (http:\/\/\S+) /m.exec(server.output())?.[1];
      expect(management).toBeDefined();
      await (await fetch(`${management ?? ''}/admin/`)).arrayBuffer();
    });
    expect(loaded).toEqual(expect.arrayContaining([
      'dist/console/console-wiring.js', 'dist/compat/shadow.js', 'node_modules/undici/', 'dist/legacy/soap-legacy-authenticator.js', 'dist/cli/legacy-passthrough.js',
      'node_modules/yaml/',
    ]));
    expect(loaded.filter((m) => NOT_FOR_SERVING.includes(m))).toEqual([]);
  });

  it('loads undici\'s client and diff\'s patch maker for shadow mode, not their entry points (fetch, WebSocket, caches: 240 ms of a start)', async () => {
    const legacy = await startServer(['--db', `sqlite:${join(dir, 'legacy-undici.db')}`]);
    const files = await filesOf([], { SVCAPI_LEGACY_URL: legacy.url, SVCAPI_LEGACY_SHADOW_RATE: '1', SVCAPI_LOG_LEVEL: 'warn' });
    const undici = files.filter((f) => f.includes('/node_modules/undici/')).map((f) => f.replace(/.*\/node_modules\/undici\//, ''));
    expect(undici).toEqual(expect.arrayContaining(['lib/dispatcher/client.js', 'lib/core/connect.js']));
    expect(undici.filter((f) => f === 'index.js' || f.startsWith('lib/web/'))).toEqual([]);
    // diff: the patch maker answer-compare.ts uses, not the package's entry point.
    const diff = files.filter((f) => f.includes('/node_modules/diff/')).map((f) => f.replace(/.*\/node_modules\/diff\//, ''));
    expect(diff).toContain('libesm/patch/create.js');
    expect(diff).not.toContain('libesm/index.js');
  });
});
