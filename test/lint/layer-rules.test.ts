/**
 * The layer rules of eslint.config.js (docs/architecture.md#layers), run through ESLint's Node API
 * with the project's own configuration: each wrong-layer import must be an error, and the imports
 * the layers really make must stay clean. The files need not exist: ESLint picks the rules by path.
 */
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RULE = '@typescript-eslint/no-restricted-imports';

let eslint: ESLint;
beforeAll(() => {
  eslint = new ESLint({ cwd: ROOT });
});

/** The layer-rule messages for one import line placed in a file at `filePath`. */
async function layerErrors(filePath: string, importLine: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${importLine}\nexport const used = [x];\n`, { filePath });
  if (result === undefined) throw new Error('ESLint returned no result');
  const fatal = result.messages.filter((m) => m.fatal === true);
  if (fatal.length > 0) throw new Error(`parse error: ${fatal[0]?.message}`);
  return result.messages.filter((m) => m.ruleId === RULE && m.severity === 2).map((m) => m.message);
}

// [file, import line] pairs that break a layer rule.
const WRONG: [string, string][] = [
  ['src/domain/create-auth-service.ts', "import { x } from '../http/app.js';"],
  ['src/domain/create-auth-service.ts', "import type { x } from '../http/app.js';"],
  ['src/domain/create-auth-service.ts', "import { x } from '../wire/soap-request.js';"],
  ['src/domain/create-auth-service.ts', "import { x } from '../cli/main.js';"],
  ['src/domain/create-auth-service.ts', "import { x } from '../ops/metrics.js';"],
  ['src/domain/create-auth-service.ts', "import { x } from '../store/store.js';"], // the port: types only
  ['src/domain/create-auth-service.ts', "import { x } from '../store/sqlite/sqlite-store.js';"],
  ['src/domain/create-auth-service.ts', "import type { x } from '../store/postgres/postgres-store.js';"],
  ['src/domain/create-auth-service.ts', "import { x } from '../store/open-store.js';"],
  ['src/domain/create-auth-service.ts', "import x from 'pg';"],
  ['src/domain/create-auth-service.ts', "import x from 'better-sqlite3';"],
  ['src/domain/create-auth-service.ts', "import { x } from 'node:http';"],
  ['src/domain/create-auth-service.ts', "export { x } from '../http/app.js';"],
  ['src/domain/legacy-hashes/bcrypt.ts', "import { x } from '../../wire/xml-reader.js';"],
  ['src/contract/operations.ts', "import { x } from '../wire/wsdl.js';"],
  ['src/contract/operations.ts', "import { x } from '../domain/tokens.js';"],
  ['src/contract/operations.ts', "import { x } from 'node:fs';"],
  ['src/wire/news-row-reader.ts', "import type { x } from '../domain/news-import.js';"],
  ['src/wire/soap-request.ts', "import { x } from '../http/app.js';"],
  ['src/wire/soap-request.ts', "import { x } from '../store/store.js';"],
  ['src/wire/soap-request.ts', "import { x } from 'node:net';"],
  ['src/store/sqlite/sqlite-store.ts', "import { x } from '../../http/app.js';"],
  ['src/store/sqlite/sqlite-store.ts', "import { x } from '../../wire/soap-request.js';"],
  ['src/store/store.ts', "import { x } from '../domain/tokens.js';"], // domain: types only
  ['src/http/app.ts', "import { x } from '../cli/serve.js';"],
  ['src/http/app.ts', "import { x } from '../store/sqlite/sqlite-store.js';"],
  ['src/http/app.ts', "import { x } from '../console/console-app.js';"],
  ['src/console/console-app.ts', "import { x } from '../cli/cli-io.js';"],
  ['src/ops/metrics.ts', "import { x } from '../cli/program.js';"],
  ['src/compat/shadow.ts', "import { x } from '../cli/compat-commands.js';"],
  ['src/compat/shadow.ts', "import { x } from '../http/app.js';"],
  ['src/legacy/soap-transport.ts', "import { x } from '../cli/main.js';"],
  ['src/config/load-config.ts', "import { x } from '../store/open-store.js';"],
  ['src/config/load-config.ts', "import { x } from '../cli/main.js';"],
  ['src/config/load-config.ts', "import { x } from '../http/app.js';"],
  ['src/config/legacy-settings.ts', "import { x } from '../legacy/soap-transport.js';"],
  ['src/config/setting-values.ts', "import { x } from '../domain/tokens.js';"],
  ['src/config/config-file.ts', "import { x } from '../contract/operations.js';"],
  ['src/config/config-file.ts', "import { x } from '../config/setting-values.js';"],
];

// Imports the layers make today (or may make): they must stay clean.
const RIGHT: [string, string][] = [
  ['src/domain/create-auth-service.ts', "import type { x } from '../store/store.js';"],
  ['src/domain/create-auth-service.ts', "import { x } from '../contract/operations.js';"],
  ['src/domain/create-auth-service.ts', "import { x } from './tokens.js';"],
  ['src/domain/create-auth-service.ts', "import { x } from 'node:crypto';"],
  ['src/domain/login-throttle.ts', "import { x } from '../store/login-throttle-rules.js';"],
  ['src/domain/legacy-hashes/bcrypt.ts', "import { x } from '../password-limits.js';"],
  ['src/domain/legacy-hashes/bcrypt.ts', "import { x } from '../../contract/operations.js';"],
  ['src/contract/compat-profile.ts', "import { x } from './operations.js';"],
  ['src/wire/soap-request.ts', "import { x } from '../contract/operations.js';"],
  ['src/wire/xml-reader.ts', "import { x } from 'saxes';"],
  ['src/store/sqlite/sqlite-store.ts', "import type { x } from '../store.js';"],
  ['src/store/sqlite/sqlite-store.ts', "import x from 'better-sqlite3';"],
  ['src/store/store.ts', "import type { x } from '../domain/tokens.js';"],
  ['src/http/app.ts', "import { x } from '../compat/shadow.js';"],
  ['src/http/app.ts', "import { x } from '../ops/access-log.js';"],
  ['src/console/console-wiring.ts', "import { x } from '../http/news-rows.js';"],
  ['src/ops/runtime.ts', "import type { x } from '../config/config.js';"],
  ['src/cli/serve.ts', "import { x } from '../store/open-store.js';"],
  ['src/cli/serve.ts', "import { x } from './program.js';"],
  ['src/config/load-config.ts', "import { x } from '../store/database-url.js';"],
  ['src/config/load-config.ts', "import { x } from '../domain/login-throttle.js';"],
  ['src/config/load-config.ts', "import { x } from '../compat-profile-file.js';"],
  ['src/config/legacy-settings.ts', "import { x } from '../contract/operations.js';"],
  ['src/config/load-config.ts', "import { x } from './config-file.js';"],
];

describe('layer rules (eslint.config.js)', () => {
  it.each(WRONG)('%s: %s is an error', async (filePath, importLine) => {
    const errors = await layerErrors(filePath, importLine);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/docs\/architecture\.md#layers/);
  });

  it.each(RIGHT)('%s: %s passes', async (filePath, importLine) => {
    expect(await layerErrors(filePath, importLine)).toEqual([]);
  });

  it('names what the layer may import', async () => {
    const [message] = await layerErrors('src/domain/create-auth-service.ts', "import { x } from '../http/app.js';");
    expect(message).toContain('src/domain may import only contract/ freely, domain/ freely');
    expect(message).toContain('store/store.js types');
  });
});
