#!/usr/bin/env node
/**
 * Client-compatibility suite (`npm run test:clients`, after `npm run build`).
 *
 * Starts the built service (dist/cli/main.js) on a temporary SQLite database, seeds it with the
 * CLI (application 2 with a login URL, one user, news), then runs real SOAP clients generated
 * from or driven by our WSDL against it, each as a child process with a timeout:
 *
 *   mono      .NET proxies from Mono's `wsdl` tool (Soap, Soap12, HttpGet, HttpPost), built with mcs
 *   zeep      Python zeep (Debian python3-zeep): SOAP 1.1 and SOAP 1.2 ports
 *   php       PHP SoapClient (php-cli, php-soap): SOAP_1_1 and SOAP_1_2
 *   node-soap npm `soap`: SOAP 1.1 and SOAP 1.2 (forceSoap12Headers)
 *   mono-profile  the Mono proxies again, against a second service run with a compatibility
 *             profile (`--compat`): WhatsNew's table `Noticias` with Portuguese column names, a
 *             Boolean and a string column from news attributes (docs/compat-news.md)
 *
 * Every client prints `RESULT <client> <protocol> <check> PASS|FAIL <detail>` per check and
 * `VERSION <client> <text>` once. This script prints the client x protocol x check matrix and
 * ends with `N passed, M failed`. Exit status is non-zero on any failure, and, when CI=true, when
 * a client toolchain is missing (locally a missing toolchain is reported as SKIP).
 *
 * Options: --only mono,zeep,...   run only these clients
 *          --markdown <file>      also write the matrix as Markdown (docs/compatibility.md uses it)
 *          --keep                 keep the temporary directory (and print its path)
 *          --verbose              print every check's detail, passed ones too (or VERBOSE=1)
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { clearTimeout, setTimeout } from 'node:timers';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(ROOT, 'dist', 'cli', 'main.js');
const CLIENTS_DIR = join(ROOT, 'clients');
const CI = /^(1|true|yes)$/i.test(process.env.CI ?? '');

export const CHECKS = [
  ['wsdl', 'the WSDL loads and the client is built from it'],
  ['login-ok', 'ValidateUser with good credentials returns a token'],
  ['login-bad', 'ValidateUser with a bad password returns "" (no exception)'],
  ['token-ok', 'ValidateUserToken is true for the token'],
  ['token-bad', 'ValidateUserToken is false for garbage'],
  ['whatsnew', 'WhatsNew deserializes: expected rows, typed columns (int, string, DateTime); an empty table too'],
  ['login-url', 'GetUserLoginURL returns the login URL with a ticket that validates exactly once'],
  ['json-user', 'ValidateUserJSON returns parseable JSON with a working token'],
  ['json-token', 'ValidateUserTokenJSON returns parseable JSON'],
  ['fault', 'a bad request surfaces as the client\'s native fault type with our message'],
];
const CHECK_NAMES = CHECKS.map(([name]) => name);

export const CLIENTS = {
  mono: ['soap11', 'soap12', 'httpget', 'httppost'],
  zeep: ['soap11', 'soap12'],
  php: ['soap11', 'soap12'],
  'node-soap': ['soap11', 'soap12'],
  'mono-profile': ['soap11', 'soap12', 'httpget', 'httppost'],
};

// The compatibility profile of the mono-profile run: what a legacy's own news table looked like.
const PROFILE = {
  whatsNew: {
    tableName: 'Noticias',
    columns: [
      { name: 'IdNoticia', type: 'int', from: { field: 'newsId' } },
      { name: 'Titulo', type: 'string', from: { field: 'title' } },
      { name: 'Texto', type: 'string', from: { field: 'body' } },
      { name: 'Idioma', type: 'string', from: { field: 'language' } },
      { name: 'Link', type: 'string', from: { field: 'url' } },
      { name: 'DataPublicacao', type: 'dateTime', from: { field: 'publishedAt' } },
      { name: 'Destaque', type: 'boolean', from: { attribute: 'Destaque' } },
      { name: 'Categoria', type: 'string', from: { attribute: 'Categoria' } },
    ],
  },
};
const PROFILE_FIELDS = { IdNoticia: 'newsId', Titulo: 'title', Texto: 'body', Idioma: 'language', Link: 'url', DataPublicacao: 'publishedAt', Destaque: 'destaque', Categoria: 'categoria' };

// The data the clients check against. The service runs in a zone with a non-zero UTC offset so
// that the DateTime column has to be read with its offset to give the right instant.
const SERVICE_TIME_ZONE = 'America/Sao_Paulo';
const CLIENT_TIME_ZONE = 'Europe/Berlin';
const LOGIN = 'compat.user';
const PASSWORD = 'Pa55 & <wörd>';
const APP_ID = 2;
const LOGIN_URL = 'http://gps.example/login?from=compat';
const QTY_NEWS = 3;
const NEWS = [
  // oldest first (as added); WhatsNew answers newest first and at most qtyNews of them
  { title: 'Compat news 1 (too old to be shown)', body: 'first', url: null, publishedAt: '2025-01-10T09:30:00.000Z' },
  { title: 'Compat news 2', body: 'plain body', url: 'http://gps.example/news/2', publishedAt: '2025-02-10T09:30:00.000Z', attrs: { Destaque: 'false' } },
  { title: 'Compat news 3 — café', body: 'accents: ação, naïve; emoji 🚀; CJK 漢字', url: null, publishedAt: '2025-03-10T12:00:00.000Z', attrs: {} },
  { title: 'Compat news 4 & <markup>', body: 'Fish & chips <b>not bold</b> "quoted" \'single\' ]]> end', url: 'http://gps.example/news/4?a=1&b=2', publishedAt: '2025-04-10T23:45:30.000Z', attrs: { Destaque: 'true', Categoria: 'Promoção & <mais>' } },
];

function parseArgs(argv) {
  const options = { only: null, markdown: null, keep: false, verbose: /^(1|true|yes)$/i.test(process.env.VERBOSE ?? '') };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--only') options.only = argv[++i].split(',').map((s) => s.trim()).filter(Boolean);
    else if (arg === '--markdown') options.markdown = resolve(argv[++i]);
    else if (arg === '--keep') options.keep = true;
    else if (arg === '--verbose' || arg === '-v') options.verbose = true;
    else if (arg === '--help' || arg === '-h') {
      process.stdout.write('usage: node scripts/test-clients.mjs [--only mono,zeep,php,node-soap] [--markdown FILE] [--keep] [--verbose]\n');
      process.exit(0);
    } else throw new Error(`unknown argument ${arg}`);
  }
  for (const name of options.only ?? []) if (!(name in CLIENTS)) throw new Error(`unknown client ${name}; known: ${Object.keys(CLIENTS).join(', ')}`);
  return options;
}

/** Runs a program; resolves with its output whatever the exit status (never rejects on status). */
function run(file, args, { input, timeoutMs = 60_000, cwd = ROOT, env = process.env } = {}) {
  return new Promise((resolvePromise) => {
    const started = Date.now();
    const child = execFile(file, args, { cwd, env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 32 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        resolvePromise({
          code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
          timedOut: Boolean(error?.killed),
          spawnError: error && typeof error.code === 'string' ? error.code : null,
          stdout: stdout ?? '', stderr: stderr ?? '', ms: Date.now() - started,
        });
      });
    if (input !== undefined) child.stdin.end(input);
    else child.stdin.end();
  });
}

async function cli(db, args, input) {
  const r = await run(process.execPath, [CLI, ...args, '--db', db], { input });
  if (r.code !== 0) throw new Error(`svcapi-auth ${args.join(' ')} failed (${r.code}):\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** `serve --port 0`; resolves with the WSDL address it prints, and the child to stop later. */
function startService(db, extraArgs = []) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [CLI, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db, '--log-level', 'warn', ...extraArgs], {
      cwd: ROOT,
      env: { ...process.env, SVCAPI_TIME_ZONE: SERVICE_TIME_ZONE },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the service did not print its address within 20 s:\n${out}`));
    }, 20_000);
    const onData = (chunk) => {
      out += chunk;
      const m = /^WSDL: (\S+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolvePromise({ child, wsdl: m[1], output: () => out });
      }
    };
    child.stdout.setEncoding('utf8').on('data', onData);
    child.stderr.setEncoding('utf8').on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the service exited (${code}) before listening:\n${out}`));
    });
  });
}

async function waitForWsdl(url) {
  const deadline = Date.now() + 15_000;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await globalThis.fetch(url);
      const text = await res.text();
      if (res.status === 200 && text.includes('wsdl:definitions')) return;
      last = `HTTP ${res.status}`;
    } catch (error) {
      last = error.message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the WSDL at ${url} did not become available: ${last}`);
}

// --- toolchains ---

async function which(cmd) {
  const r = await run('sh', ['-c', `command -v ${cmd}`]);
  return r.code === 0 ? r.stdout.trim() : null;
}

/** Debian's python3 has zeep; the python3 first on PATH (e.g. pyenv) may not. */
async function findPythonWithZeep() {
  const candidates = [process.env.ZEEP_PYTHON, '/usr/bin/python3', await which('python3')].filter(Boolean);
  for (const py of [...new Set(candidates)]) {
    const r = await run(py, ['-c', 'import zeep']);
    if (r.code === 0) return py;
  }
  return null;
}

async function detectToolchains() {
  const missing = {};
  const found = {};
  const [mono, mcs, wsdl] = await Promise.all([which('mono'), which('mcs'), which('wsdl')]);
  if (mono && mcs && wsdl) found.mono = found['mono-profile'] = { mono, mcs, wsdl };
  else missing.mono = missing['mono-profile'] = `needs mono, mcs and wsdl (apt-get install mono-complete); missing: ${[!mono && 'mono', !mcs && 'mcs', !wsdl && 'wsdl'].filter(Boolean).join(', ')}`;

  const python = await findPythonWithZeep();
  if (python) found.zeep = { python };
  else missing.zeep = 'needs a python3 with zeep (apt-get install python3-zeep, then /usr/bin/python3)';

  const php = await which('php');
  if (php && (await run(php, ['-r', 'exit(class_exists("SoapClient") ? 0 : 1);'])).code === 0) found.php = { php };
  else missing.php = php ? 'php has no SoapClient (apt-get install php-soap)' : 'needs php-cli and php-soap';

  try {
    createRequire(join(ROOT, 'package.json')).resolve('soap');
    found['node-soap'] = {};
  } catch {
    missing['node-soap'] = 'needs the npm package soap (npm ci installs the devDependency)';
  }
  return { found, missing };
}

// --- the clients ---

function clientCommand(name, tool, fixtureFile, work) {
  switch (name) {
    case 'mono':
      return { file: process.execPath, args: [join(CLIENTS_DIR, 'mono', 'run-mono.mjs'), fixtureFile, work], timeoutMs: 240_000 };
    case 'mono-profile':
      return { file: process.execPath, args: [join(CLIENTS_DIR, 'mono', 'run-mono.mjs'), fixtureFile, join(work, 'profile')], timeoutMs: 240_000 };
    case 'zeep':
      return { file: tool.python, args: [join(CLIENTS_DIR, 'python-zeep', 'client.py'), fixtureFile], timeoutMs: 120_000 };
    case 'php':
      return { file: tool.php, args: ['-d', 'display_errors=stderr', join(CLIENTS_DIR, 'php', 'client.php'), fixtureFile], timeoutMs: 120_000 };
    case 'node-soap':
      return { file: process.execPath, args: [join(CLIENTS_DIR, 'node-soap', 'client.mjs'), fixtureFile], timeoutMs: 120_000 };
    default:
      throw new Error(name);
  }
}

const RESULT_LINE = /^RESULT (\S+) (\S+) (\S+) (PASS|FAIL)(?: (.*))?$/;
const VERSION_LINE = /^VERSION (\S+) (.*)$/;

async function runClient(name, tool, fixtureFile, work) {
  const { file, args, timeoutMs } = clientCommand(name, tool, fixtureFile, work);
  // The clients run in another time zone than the service, so DateTime values must be read with
  // their offset (CLIENT_TZ overrides).
  const env = { ...process.env, PYTHONDONTWRITEBYTECODE: '1', TZ: process.env.CLIENT_TZ ?? CLIENT_TIME_ZONE };
  const r = await run(file, args, { timeoutMs, env });
  const results = [];
  const versions = [];
  for (const line of r.stdout.split(/\r?\n/)) {
    const m = RESULT_LINE.exec(line);
    if (m) {
      results.push({ client: m[1], protocol: m[2], check: m[3], ok: m[4] === 'PASS', detail: m[5] ?? '' });
      continue;
    }
    const v = VERSION_LINE.exec(line);
    if (v) versions.push(v[2]);
  }
  return { name, ...r, results, versions };
}

// --- reporting ---

function pad(text, width) {
  return text + ' '.repeat(Math.max(0, width - text.length));
}

function buildMatrix(cells, clientNames) {
  const rows = [];
  for (const client of clientNames) {
    for (const protocol of CLIENTS[client]) {
      rows.push({ client, protocol, cells: CHECK_NAMES.map((check) => cells.get(`${client}|${protocol}|${check}`)) });
    }
  }
  return rows;
}

function cellText(cell) {
  return cell === undefined ? '-' : cell.status;
}

function printMatrix(rows) {
  const head = ['client', 'protocol', ...CHECK_NAMES];
  const body = rows.map((r) => [r.client, r.protocol, ...r.cells.map(cellText)]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells) => cells.map((c, i) => pad(c, widths[i])).join('  ').trimEnd();
  const out = [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)];
  process.stdout.write(`\n${out.join('\n')}\n`);
}

function markdownMatrix(rows) {
  const head = ['Client', 'Protocol', ...CHECK_NAMES];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const r of rows) lines.push(`| ${r.client} | ${r.protocol} | ${r.cells.map((c) => (c === undefined ? '–' : c.status === 'PASS' ? 'pass' : c.status.toLowerCase())).join(' | ')} |`);
  return lines.join('\n');
}

// --- main ---

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const startedAt = Date.now();
  if (!existsSync(CLI)) {
    process.stderr.write(`${CLI} not found: run \`npm run build\` first (npm run test:clients does).\n`);
    process.exit(2);
  }
  const clientNames = Object.keys(CLIENTS).filter((c) => options.only === null || options.only.includes(c));

  const work = await mkdtemp(join(tmpdir(), 'svcapi-clients-'));
  const db = `sqlite:${join(work, 'clients.db')}`;
  let service = null;
  let profileService = null;
  let exitCode = 1;
  try {
    // Seed the database through the CLI, as an operator would.
    const seed = async (database) => {
      await cli(database, ['migrate']);
      await cli(database, ['app', 'set', String(APP_ID), '--login-url', LOGIN_URL]);
      await cli(database, ['user', 'add', LOGIN, '--app', String(APP_ID), '--password-stdin'], `${PASSWORD}\n`);
      const news = [];
      for (const item of NEWS) {
        const args = ['news', 'add', '--app', String(APP_ID), '--title', item.title, '--body', item.body, '--language', 'en', '--published-at', item.publishedAt];
        if (item.url !== null) args.push('--url', item.url);
        for (const [key, value] of Object.entries(item.attrs ?? {})) args.push('--attr', `${key}=${value}`);
        const out = await cli(database, args);
        const m = /Added news (\d+)/.exec(out);
        if (!m) throw new Error(`cannot read the news id from: ${out}`);
        news.push({
          newsId: Number(m[1]), appId: APP_ID, title: item.title, body: item.body, language: 'en', url: item.url ?? '', publishedAt: item.publishedAt,
          destaque: item.attrs?.Destaque === undefined ? null : item.attrs.Destaque === 'true', categoria: item.attrs?.Categoria ?? null,
        });
      }
      return [...news].sort((a, b) => b.publishedAt.localeCompare(a.publishedAt)).slice(0, QTY_NEWS);
    };
    const expectedNews = await seed(db);

    service = await startService(db);
    await waitForWsdl(service.wsdl);
    const endpoint = service.wsdl.replace(/\?WSDL$/i, '');
    process.stdout.write(`Service under test: ${endpoint} (database ${db}, time zone ${SERVICE_TIME_ZONE})\n`);

    const fixture = {
      wsdl: service.wsdl,
      endpoint,
      login: LOGIN,
      password: PASSWORD,
      badPassword: `${PASSWORD}x`,
      appId: APP_ID,
      loginUrl: LOGIN_URL,
      qtyNews: QTY_NEWS,
      news: expectedNews,
      columns: [['NewsID', 'int'], ['AppID', 'int'], ['Title', 'string'], ['Body', 'string'], ['Language', 'string'], ['Url', 'string'], ['PublishedAt', 'dateTime']],
      // What our service says for the bad requests the clients send (AppID = "abc").
      soapFaultText: 'Input string was not in a correct format',
      httpErrorText: 'Cannot convert abc to System.Int32',
    };
    const fixtureFile = join(work, 'fixture.json');
    await writeFile(fixtureFile, `${JSON.stringify(fixture, null, 2)}\n`);
    const fixtureFiles = Object.fromEntries(Object.keys(CLIENTS).map((c) => [c, fixtureFile]));

    // The same checks against a second service answering WhatsNew as the profile says.
    if (clientNames.includes('mono-profile')) {
      const profileDb = `sqlite:${join(work, 'profile.db')}`;
      const profileFile = join(work, 'compat-profile.json');
      await writeFile(profileFile, `${JSON.stringify(PROFILE, null, 2)}\n`);
      const profileNews = await seed(profileDb);
      profileService = await startService(profileDb, ['--compat', profileFile]);
      await waitForWsdl(profileService.wsdl);
      const profileFixture = {
        ...fixture, clientName: 'mono-profile', wsdl: profileService.wsdl, endpoint: profileService.wsdl.replace(/\?WSDL$/i, ''), news: profileNews,
        tableName: PROFILE.whatsNew.tableName, columns: PROFILE.whatsNew.columns.map((c) => [c.name, c.type]), columnFields: PROFILE_FIELDS,
      };
      fixtureFiles['mono-profile'] = join(work, 'fixture-profile.json');
      await writeFile(fixtureFiles['mono-profile'], `${JSON.stringify(profileFixture, null, 2)}\n`);
      process.stdout.write(`Service with the compatibility profile: ${profileFixture.endpoint}\n`);
    }

    const { found, missing } = await detectToolchains();
    const cells = new Map();
    const notes = [];
    const versions = {};
    const toRun = clientNames.filter((c) => found[c]);
    for (const c of clientNames.filter((n) => !found[n])) {
      const status = CI ? 'FAIL' : 'SKIP';
      const line = `${status} ${c}: toolchain missing — ${missing[c]}${CI ? '' : ' (skipped; in CI this is a failure)'}`;
      notes.push(line);
      process.stdout.write(`${line}\n`);
      for (const protocol of CLIENTS[c]) for (const check of CHECK_NAMES) cells.set(`${c}|${protocol}|${check}`, { status, detail: 'toolchain missing' });
    }

    // Two cores: run the clients two at a time, slowest (mono) first.
    const queue = [...toRun];
    const runs = [];
    const worker = async () => {
      while (queue.length > 0) {
        const name = queue.shift();
        const t0 = Date.now();
        const r = await runClient(name, found[name], fixtureFiles[name], work);
        process.stdout.write(`ran ${name} in ${((Date.now() - t0) / 1000).toFixed(1)} s (exit ${r.code}${r.timedOut ? ', TIMED OUT' : ''})\n`);
        runs.push(r);
      }
    };
    await Promise.all([worker(), worker()]);

    for (const r of runs) {
      versions[r.name] = r.versions;
      for (const res of r.results) {
        if (res.client !== r.name || !CLIENTS[r.name].includes(res.protocol) || !CHECK_NAMES.includes(res.check)) {
          notes.push(`FAIL ${r.name}: unexpected result line for ${res.client} ${res.protocol} ${res.check}`);
          continue;
        }
        const key = `${res.client}|${res.protocol}|${res.check}`;
        const previous = cells.get(key);
        // A check reported twice counts as failed if either report failed.
        if (previous === undefined || previous.status === 'PASS') cells.set(key, { status: res.ok ? 'PASS' : 'FAIL', detail: res.detail });
      }
      const problems = [];
      if (r.timedOut) problems.push('timed out');
      if (r.spawnError) problems.push(`could not start: ${r.spawnError}`);
      if (r.code !== 0) problems.push(`exit status ${r.code}`);
      for (const protocol of CLIENTS[r.name]) {
        for (const check of CHECK_NAMES) {
          const key = `${r.name}|${protocol}|${check}`;
          if (!cells.has(key)) cells.set(key, { status: 'FAIL', detail: `no result reported${problems.length ? ` (${problems.join(', ')})` : ''}` });
        }
      }
      const anyFail = r.results.some((x) => !x.ok) || problems.length > 0;
      if (anyFail && r.stderr.trim() !== '') notes.push(`--- ${r.name} stderr (last lines) ---\n${r.stderr.trim().split('\n').slice(-25).join('\n')}`);
    }

    if (options.verbose) {
      process.stdout.write('\nResults:\n');
      for (const [key, cell] of cells) process.stdout.write(`  ${key.split('|').join(' ')} ${cell.status} ${cell.detail}\n`);
    }

    const rows = buildMatrix(cells, clientNames);
    process.stdout.write('\nChecks:\n');
    for (const [name, text] of CHECKS) process.stdout.write(`  ${pad(name, 10)}  ${text}\n`);
    printMatrix(rows);

    const failures = [];
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const r of rows) {
      // One line per distinct reason, so a client that did not build does not print 40 lines.
      const reasons = new Map();
      r.cells.forEach((cell, i) => {
        if (cell.status === 'PASS') passed++;
        else if (cell.status === 'SKIP') skipped++;
        else {
          failed++;
          reasons.set(cell.detail, [...(reasons.get(cell.detail) ?? []), CHECK_NAMES[i]]);
        }
      });
      for (const [detail, checks] of reasons) failures.push(`  ${r.client} ${r.protocol} ${checks.join(',')}: ${detail}`);
    }
    process.stdout.write('\nClient versions:\n');
    for (const c of clientNames) process.stdout.write(`  ${pad(c, 10)} ${versions[c]?.join('; ') || (found[c] ? '(not reported)' : 'not installed')}\n`);
    if (failures.length > 0) process.stdout.write(`\nFailures:\n${failures.join('\n')}\n`);
    if (notes.length > 0) process.stdout.write(`\n${notes.join('\n')}\n`);

    if (options.markdown) {
      const md = [
        markdownMatrix(rows),
        '',
        'Client versions:',
        '',
        ...clientNames.map((c) => `- **${c}**: ${versions[c]?.join('; ') || 'not installed'}`),
        '',
        `${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''} (Node ${process.version}, ${new Date().toISOString().slice(0, 10)}).`,
        '',
      ].join('\n');
      await writeFile(options.markdown, md);
      process.stdout.write(`\nMarkdown matrix written to ${options.markdown}\n`);
    }

    process.stdout.write(`\nTotal time ${((Date.now() - startedAt) / 1000).toFixed(1)} s${skipped ? `; ${skipped} checks skipped (toolchains missing)` : ''}\n`);
    process.stdout.write(`${passed} passed, ${failed} failed\n`);
    exitCode = failed > 0 ? 1 : 0;
  } finally {
    for (const running of [service, profileService]) {
      if (running === null) continue;
      running.child.kill('SIGTERM');
      await new Promise((r) => {
        const t = setTimeout(() => {
          running.child.kill('SIGKILL');
          r();
        }, 5000);
        running.child.once('exit', () => {
          clearTimeout(t);
          r();
        });
      });
    }
    if (options.keep) process.stdout.write(`kept ${work}\n`);
    else await rm(work, { recursive: true, force: true });
  }
  process.exitCode = exitCode;
}

main().catch((error) => {
  process.stderr.write(`test-clients: ${error.stack ?? error}\n`);
  process.stdout.write('0 passed, 1 failed\n');
  process.exitCode = 1;
});
