/**
 * Seeding a benchmark database through the service's own CLI (dist/cli/main.js): migrate, the
 * GPS application's login URL, one user (password from stdin), and the news rows through
 * `import` (one JSON-lines file, far quicker than one `news add` per row). Works the same on
 * SQLite and PostgreSQL. Also: the brute-force throttling switched off for the benchmark when
 * the service has such settings (config `bruteForce`), since every ValidateUser comes from one
 * address.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import process from 'node:process';
import { run } from './proc.mjs';

export const BENCH_LOGIN = 'bench.user';
export const BENCH_PASSWORD = 'bench-Pa55word & <ok>';
export const APP_ID = 2;
export const LOGIN_URL = 'https://portal.example/sso?src=gps';
export const NEWS_LANGUAGE = 'en';

/** Runs the CLI; throws with its output when it fails. */
export async function cli(cliPath, args, { input, env = {} } = {}) {
  const r = await run(process.execPath, [cliPath, ...args], { input, env: { ...process.env, ...env } });
  if (r.code !== 0) throw new Error(`svcapi-auth ${args.join(' ')} failed (${r.code ?? r.signal}):\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** `count` news rows for AppID 2 in NEWS_LANGUAGE, one a minute back from now, as export records. */
export function newsRecords(count, now = Date.now()) {
  return Array.from({ length: count }, (_, i) => {
    const at = new Date(now - (i + 1) * 60_000).toISOString();
    return {
      type: 'news', appId: APP_ID, language: NEWS_LANGUAGE,
      title: `Bench news ${i + 1}: maps & routes <update>`,
      body: `Item ${i + 1}. New maps for the region are available; routes were recomputed & the "fastest" option now avoids tolls. `.repeat(2),
      url: i % 2 === 0 ? `https://gps.example/news/${i + 1}?a=1&b=2` : null,
      publishedAt: at, expiresAt: null, minVersion: null, maxVersion: null, membersOnly: false, createdAt: at,
    };
  });
}

/**
 * Migrates and seeds `db`; returns { passwordHash } (the user's argon2id hash, read back
 * through `export`). `tmpDir` holds the import file.
 */
export async function seedService({ cliPath, db, tmpDir, newsCount = 100, env = {} }) {
  await cli(cliPath, ['migrate', '--db', db], { env });
  await cli(cliPath, ['app', 'set', String(APP_ID), '--login-url', LOGIN_URL, '--db', db], { env });
  await cli(cliPath, ['user', 'add', BENCH_LOGIN, '--app', String(APP_ID), '--password-stdin', '--db', db], { input: BENCH_PASSWORD, env });
  if (newsCount > 0) {
    const file = join(tmpDir, 'news.jsonl');
    const header = { type: 'header', format: 'svcapi-auth-export', version: 1, exportedAt: new Date().toISOString(), schemaVersion: 1 };
    await writeFile(file, `${[header, ...newsRecords(newsCount)].map((r) => JSON.stringify(r)).join('\n')}\n`);
    await cli(cliPath, ['import', file, '--db', db], { env });
  }
  const exported = await cli(cliPath, ['export', '--db', db], { env });
  const user = exported.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l)).find((r) => r.type === 'user' && r.login === BENCH_LOGIN);
  if (!user) throw new Error('the seeded user is missing from the export');
  return { passwordHash: user.passwordHash };
}

/** Largest value a setting accepts, read from the service's own error message ("from A to B"). */
function maxFromError(text) {
  const m = /from (\d+) to (\d+)/.exec(text);
  return m ? Number(m[2]) : null;
}

/**
 * A config file (JSON) that switches brute-force throttling off, or raises its limits as far
 * as the service accepts, when the service has `bruteForce` settings; null when it has none.
 * Returns { file, note }.
 */
export async function throttleOffConfig(cliPath, tmpDir) {
  const printed = await run(process.execPath, [cliPath, 'config', 'print'], { env: { ...process.env, SVCAPI_CONFIG: '' } });
  if (printed.code !== 0) return { file: null, note: `config print failed: ${printed.stderr.trim()}` };
  let current;
  try {
    current = JSON.parse(printed.stdout);
  } catch {
    return { file: null, note: 'config print is not JSON' };
  }
  const bf = current.bruteForce;
  if (bf === undefined || bf === null || typeof bf !== 'object') return { file: null, note: 'the service has no bruteForce settings' };
  const file = join(tmpDir, 'bench-config.json');
  const settings = {};
  if (typeof bf.enabled === 'boolean') {
    settings.enabled = false;
  } else {
    for (const [key, value] of Object.entries(bf)) {
      if (typeof value === 'number' && /max(attempts|failures)|attempts|failures/i.test(key)) settings[key] = 1_000_000_000;
    }
  }
  // Lower each value the service refuses to the maximum it names, a few times at most.
  for (let attempt = 0; attempt < 20; attempt++) {
    await writeFile(file, JSON.stringify({ bruteForce: settings }));
    const check = await run(process.execPath, [cliPath, 'config', 'print'], { env: { ...process.env, SVCAPI_CONFIG: file } });
    if (check.code === 0) return { file, note: `bruteForce ${JSON.stringify(settings)}` };
    const key = Object.keys(settings).find((k) => check.stderr.includes(`bruteForce.${k}`));
    const max = maxFromError(check.stderr);
    if (key === undefined || max === null) return { file: null, note: `could not switch throttling off: ${check.stderr.trim()}` };
    settings[key] = max;
  }
  return { file: null, note: 'could not switch throttling off' };
}
