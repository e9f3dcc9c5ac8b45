// @ts-check
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/*
 * Layer rules (docs/architecture.md#layers): what each part of src/ may import, written as the
 * allowed list and enforced by @typescript-eslint/no-restricted-imports (the built-in rule plus
 * `allowTypeImports`), so no import resolver is needed.
 *
 * The rule sees the specifier as written, so every top-level entry of src/ (read from disk: a new
 * folder is forbidden to every layer until it is listed) becomes a pattern matching "../" any
 * number of times, then that name. A subfolder named like a top-level entry would be misread as
 * it: that fails loudly (a false error), never silently. Dynamic import() is not checked; outside
 * cli/, src/ loads none of its own files that way.
 */
const SRC_ENTRIES = readdirSync(join(import.meta.dirname, 'src'), { withFileTypes: true }).map((entry) =>
  entry.isDirectory() ? `${entry.name}/` : entry.name.replace(/\.ts$/, '.js'),
);
const ALL = SRC_ENTRIES;
const escape = (/** @type {string} */ text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** Packages that do I/O of their own: a pure layer reaches them only through a port. */
const IO_PACKAGES = '^(?:pg|better-sqlite3|(?:node:)?(?:https?|http2|net|fs|fs/promises|child_process))$';

/**
 * @param {string} layer        the name used in messages
 * @param {string[]} files      flat-config globs of the layer's files
 * @param {{ may: string[], typesFrom?: string[], packages?: string, root?: boolean }} rule
 *   may: top-level entries ('domain/'), or single files in one ('store/login-throttle-rules.js'),
 *   imported freely; typesFrom: the same, imported with `import type` only; packages: a regex of
 *   packages the layer may not import; root: the files sit in src/ itself (specifiers start "./").
 */
function layer(layer, files, { may, typesFrom = [], packages, root = false }) {
  const up = root ? '^\\./' : '^(?:\\.\\./)+';
  const allowed = [...may.map((m) => `${m} freely`), ...typesFrom.map((m) => `${m} types`)].join(', ');
  const message = `${layer} may import only ${allowed} (docs/architecture.md#layers).`;
  /** @type {{ regex: string, message: string, allowTypeImports?: boolean }[]} */
  const patterns = [];
  for (const entry of ALL) {
    if (may.includes(entry)) continue;
    if (typesFrom.includes(entry)) {
      patterns.push({ regex: `${up}${escape(entry)}`, allowTypeImports: true, message });
      continue;
    }
    // Single files of this entry that are allowed: everything else in it is not.
    const filesIn = (/** @type {string[]} */ list) =>
      list.filter((m) => m.startsWith(entry) && m !== entry).map((m) => m.slice(entry.length));
    const exceptions = [...filesIn(may), ...filesIn(typesFrom)];
    const except = exceptions.length === 0 ? '' : `(?!(?:${exceptions.map(escape).join('|')})$)`;
    patterns.push({ regex: `${up}${escape(entry)}${except}${entry.endsWith('/') ? '' : '$'}`, message });
    for (const file of filesIn(typesFrom)) {
      patterns.push({ regex: `${up}${escape(entry + file)}$`, allowTypeImports: true, message });
    }
  }
  if (packages !== undefined) {
    patterns.push({ regex: packages, message: `${layer} does no I/O of its own: it reaches it through a port (docs/architecture.md#layers).` });
  }
  return { files, rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] } };
}

const EDGE = ALL.filter((entry) => entry !== 'cli/');

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'test/fixtures/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/explicit-function-return-type': ['error', { allowExpressions: true, allowTypedFunctionExpressions: true }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
      'no-console': 'off',
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: { '@typescript-eslint/explicit-function-return-type': 'off' },
  },
  // Contract: operations and the profile as data; imports nothing, not even a package.
  {
    files: ['src/contract/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [{ regex: '^(?!\\./)', message: 'src/contract imports nothing but its own files (docs/architecture.md#layers).' }],
      }],
    },
  },
  layer('src/wire', ['src/wire/**/*.ts'], { may: ['contract/', 'wire/'], packages: IO_PACKAGES }),
  layer('src/domain', ['src/domain/**/*.ts'], {
    // login-throttle-rules.ts: the brute-force counting rules as pure functions, written once in
    // store/ because both adapters apply them inside their write transactions; the domain reads a
    // counter row through the same functions. It imports only store.ts types.
    may: ['contract/', 'domain/', 'store/login-throttle-rules.js'],
    typesFrom: ['store/store.js'],
    packages: '^(?:pg|better-sqlite3|saxes|(?:node:)?(?:https?|http2|fs|fs/promises|child_process))$',
  }),
  layer('src/store', ['src/store/**/*.ts'], { may: ['contract/', 'store/'], typesFrom: ['domain/'] }),
  layer('src/legacy', ['src/legacy/**/*.ts'], {
    // The forwarder (front mode) shares compat's HTTP probe and answer type with shadow.ts.
    may: ['contract/', 'wire/', 'legacy/', 'compat/'],
    typesFrom: ['domain/'],
  }),
  layer('src/compat', ['src/compat/**/*.ts'], {
    may: ['contract/', 'wire/', 'domain/', 'legacy/', 'compat/', 'compat-profile-file.js'],
    typesFrom: ['store/store.js'],
  }),
  layer('src/http', ['src/http/**/*.ts'], {
    may: ['contract/', 'wire/', 'domain/', 'compat/', 'http/', 'ops/access-log.js'],
  }),
  layer('src/console', ['src/console/**/*.ts'], {
    may: ['contract/', 'wire/', 'domain/', 'http/', 'console/'],
    typesFrom: ['store/store.js'],
  }),
  layer('src/ops', ['src/ops/**/*.ts'], { may: EDGE }),
  layer('src/config', ['src/config/**/*.ts'], {
    // bounded-hasher and login-throttle: the defaults of their settings live beside the code.
    may: ['contract/', 'config/', 'compat-profile-file.js', 'store/database-url.js', 'domain/bounded-hasher.js', 'domain/login-throttle.js'],
  }),
  // The file layer reads a file and knows nothing of the settings in it.
  layer('src/config/config-file.ts', ['src/config/config-file.ts'], { may: [] }),
  layer('src/compat-profile-file.ts', ['src/compat-profile-file.ts'], {
    // The profile file is checked with the same cell writers and token forms that will use it.
    may: ['contract/', 'wire/datatable-values.js', 'domain/token-form.js'],
    root: true,
  }),
);
