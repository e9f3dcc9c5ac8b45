/**
 * The `svcapi-auth` command: `serve` runs the service; the other commands administer the
 * database (applications, users, news, tokens). Written as `runCli(argv, io)` so tests run
 * commands in-process. The executable is main.ts, which loads this module when it is needed.
 */
import { readFile } from 'node:fs/promises';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import type { Config } from '../config/config.js';
import { createAdminService, type AdminResult, type AdminService } from '../domain/admin-service.js';
import { createArgon2Hasher } from '../domain/password-hasher.js';
import type { LoginThrottleReport } from '../domain/login-throttle.js';
import type { Application, NewsRecord, User } from '../store/store.js';
import { redactDatabaseUrl } from '../store/open-store.js';
import { CliError, EXIT_USAGE, type CliIo } from './cli-io.js';
import { cliConfig, databaseFailure, dbOption, openCliStore, withStore } from './cli-store.js';
import { parseCliDate } from './dates.js';
import { formatDuration, parseDuration } from './durations.js';
import { readPassword } from './read-password.js';
import { serveCommand, workersArg } from './cluster.js';
import { registerExportImport } from './export-import.js';
import { registerNewsImport } from './news-import.js';
import { configFileOption, logPrettyOption, managementHostOption, managementPortOption, registerOpsCommands, trustedProxiesOption } from './ops-commands.js';
import { registerLegacyCommands } from './import-legacy.js';
import { cliActor, registerAuditCommand, storeAuditRecorder } from './audit-command.js';
import { displayText, quoted, safeJson } from '../domain/display-text.js';
import { loginProblem } from '../domain/logins.js';
import { registerCompatCommands } from './compat-commands.js';
import { registerAdminAccountCommands } from './admin-accounts-command.js';

// --- argument parsers (commander calls them; InvalidArgumentError becomes a usage error) ---

function integerArg(text: string): number {
  if (!/^-?\d+$/.test(text.trim())) throw new InvalidArgumentError('expected a whole number.');
  return Number(text.trim());
}

function collectInteger(text: string, previous: number[] | undefined): number[] {
  return [...(previous ?? []), integerArg(text)];
}

function collectText(text: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), text];
}

/** servers whose ValidateUser IPAddress names the end user (checked by the admin service). */
const TRUSTED_CALLER_HELP = 'IP address or CIDR range of a server that logs its own users in: its IPAddress then counts as the end user\'s address for brute-force protection (repeat for several)';

/** `--attr KEY=VALUE`, repeatable; the value may contain `=`. A key given twice is a usage error. */
function collectAttribute(text: string, previous: Record<string, string> | undefined): Record<string, string> {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError('expected KEY=VALUE.');
  const key = text.slice(0, eq);
  if (previous !== undefined && Object.hasOwn(previous, key)) throw new InvalidArgumentError(`attribute ${key} is given twice.`);
  return { ...previous, [key]: text.slice(eq + 1) };
}

/** Attributes as one cell of `news list`: key=value pairs, `;`-separated, keys in order. */
function attributesCell(attributes: Readonly<Record<string, string>>): string {
  const pairs = Object.entries(attributes).map(([k, v]) => `${k}=${v}`);
  return pairs.length === 0 ? '-' : pairs.join(';');
}

function durationArg(text: string): number {
  const seconds = parseDuration(text);
  if (seconds === null) throw new InvalidArgumentError('expected a duration like 90s, 30m, 24h, 7d or 1h30m.');
  return seconds;
}

function dateArg(text: string): Date {
  const parsed = parseCliDate(text);
  if (!parsed.ok) throw new InvalidArgumentError(parsed.message);
  return parsed.date;
}

// --- output ---

/** Every cell shown with invisible and control characters escaped (display-text.ts): a login or a title cannot reorder or hide the line. */
function table(io: CliIo, headers: readonly string[], unsafeRows: readonly (readonly string[])[]): void {
  const rows = unsafeRows.map((r) => r.map(displayText));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  io.stdout.write(`${line(headers)}\n`);
  for (const row of rows) io.stdout.write(`${line(row)}\n`);
}

const iso = (d: Date | null): string => (d === null ? '-' : d.toISOString());
const yesNo = (b: boolean): string => (b ? 'yes' : 'no');

function describeApp(app: Application): string {
  return `AppID ${app.appId} ${quoted(app.name)} (${app.enabled ? 'enabled' : 'DISABLED'}, requireIp ${yesNo(app.requireIp)}, ` +
    `token lifetime ${formatDuration(app.tokenLifetimeSeconds)}, idle timeout ${app.idleTimeoutSeconds === null ? 'none' : formatDuration(app.idleTimeoutSeconds)}, ` +
    `default language ${displayText(app.defaultLanguage)}, login URL ${app.loginUrl === null ? 'none' : displayText(app.loginUrl)}, trusted callers ${app.trustedCallers.join(' ') || 'none'})`;
}

function describeUser(user: User): string {
  return `user ${quoted(user.login)} (${user.enabled ? 'enabled' : 'DISABLED'}, applications ${user.appIds.join(', ') || 'none'})`;
}

/** `user throttle`: the per-login ceiling, its known sources and its pairs (stored source keys; never a password). */
function printLoginThrottle(io: CliIo, login: string, r: LoginThrottleReport & { readonly userExists: boolean }, enabled: boolean): void {
  const say = (line: string): void => {
    io.stdout.write(`${line}\n`);
  };
  say(`Login ${JSON.stringify(login)}: ${r.userExists ? 'a user' : 'no such user (its attempts are counted all the same)'}`);
  if (!enabled) say('Brute-force protection is off in this configuration (bruteForce.enabled); the counters below are not consulted.');
  const underWay = r.underWay > 0 ? ` (+${r.underWay} verification(s) under way)` : '';
  const state = r.tripped
    ? `TRIPPED until ${iso(r.windowEndsAt)}: new sources are refused, known sources are still verified`
    : r.busy ? `full with verifications under way: new sources wait for them (window ends ${iso(r.windowEndsAt)})`
      : `not tripped${r.windowEndsAt === null ? '' : ` (window ends ${iso(r.windowEndsAt)})`}`;
  say(`Login ceiling: ${r.failures} of ${r.limit} failures in the window${underWay}; ${state}`);
  say(`Known sources (a success within ${r.knownSourceDays} days): ${r.knownSourceCount}${r.knownSourceCount > r.knownSources.length ? `, the ${r.knownSources.length} most recent:` : ''}`);
  for (const k of r.knownSources) say(`  ${k.source}  last success ${iso(k.lastSuccessAt)}`);
  const blocked = r.pairs.filter((p) => p.blockedUntil !== null).length;
  const cut = r.pairCount > r.pairs.length;
  say(`Sources with failures or verifications under way for this login: ${r.pairCount}` +
    `${cut ? `; the ${r.pairs.length} with most failures` : ''}${blocked > 0 ? `, ${blocked} ${cut ? 'of them ' : ''}blocked` : ''}${cut ? ':' : ''}`);
  if (r.pairs.length > 0) {
    table(io, ['  SOURCE', 'FAILURES', 'UNDER-WAY', 'BLOCKED-UNTIL'], r.pairs.map((p) => [`  ${p.source}`, String(p.failures), String(p.underWay), iso(p.blockedUntil)]));
  }
}

function jsonLines(io: CliIo, values: readonly object[]): void {
  for (const value of values) io.stdout.write(`${safeJson(value)}\n`);
}

/** The value of an admin result, or a CliError carrying its message. */
function unwrap<T>(result: AdminResult<T>): T {
  if (!result.ok) throw new CliError(result.message);
  return result.value;
}

// --- plumbing shared by the commands ---

interface DbOptions {
  readonly db?: string;
}

/** Opens the existing database named by --db / DATABASE_URL, runs `fn` with an admin service (and the configuration), closes it. */
async function withAdmin<T>(io: CliIo, options: DbOptions, fn: (admin: AdminService, config: Config) => Promise<T>): Promise<T> {
  return withStore(io, options.db, (store, config) => fn(createAdminService({
    store, hasher: createArgon2Hasher(), audit: storeAuditRecorder(store, io), actor: cliActor(), throttle: config.bruteForce,
  }), config));
}

function buildProgram(io: CliIo, setExitCode: (code: number) => void): Command {
  const program = new Command('svcapi-auth')
    .description('Authentication service (drop-in replacement for Authentication.asmx) and its administration.')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
    .showHelpAfterError('(add --help for usage)');

  // serve
  program.command('serve')
    .description('run the service (creates and migrates the database on first start)')
    .addOption(new Option('--host <host>', 'address to listen on (env SVCAPI_HOST; default 127.0.0.1)'))
    .addOption(new Option('--port <port>', 'port to listen on, 0 for any free port (env SVCAPI_PORT; default 8080)'))
    .addOption(dbOption())
    .addOption(new Option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent (env SVCAPI_LOG_LEVEL; default info)'))
    .addOption(new Option('--time-zone <zone>', 'IANA zone whose UTC offset WhatsNew DateTimes carry (env SVCAPI_TIME_ZONE; default the machine\'s)'))
    .addOption(configFileOption())
    .addOption(logPrettyOption())
    .addOption(new Option('--log-file <file>', 'write log lines to this file instead of standard output, reopened on SIGHUP (env SVCAPI_LOG_FILE)'))
    .addOption(trustedProxiesOption())
    .addOption(managementHostOption())
    .addOption(managementPortOption())
    .addOption(new Option('--tls-cert <file>', 'serve HTTPS (TLS 1.2+) with this PEM certificate chain (env SVCAPI_TLS_CERT; needs --tls-key)'))
    .addOption(new Option('--tls-key <file>', 'the PEM private key of --tls-cert (env SVCAPI_TLS_KEY)'))
    .addOption(new Option('--audit-retention-days <days>', 'purge audit events older than this, 0 to keep them (env SVCAPI_AUDIT_RETENTION_DAYS; default 90)'))
    .addOption(new Option('--compat <file>', 'answer as the legacy service did: a compatibility profile (JSON; env SVCAPI_COMPAT; docs/compat-profile.md)'))
    .addOption(new Option('--workers <n>', 'worker processes sharing the port: a number, or auto for one per core (env SVCAPI_WORKERS; default 1)').argParser(workersArg))
    .action(async (options: { host?: string; port?: string; db?: string; logLevel?: string; workers?: number }) => {
      setExitCode(await serveCommand(cliConfig(io, options), io, options.workers));
    });

  // migrate
  program.command('migrate')
    .description('create the database if needed and apply pending schema migrations (with serve, the only commands that create one)')
    .addOption(dbOption())
    .action(async (options: DbOptions) => {
      const config = cliConfig(io, { db: options.db });
      const store = await openCliStore(config.databaseUrl, { create: true }, 'migrate');
      try {
        io.stdout.write(`Database ${redactDatabaseUrl(config.databaseUrl)} is at schema version ${await store.schemaVersion()}\n`);
        // Logins created before RFC 8265 (PRECIS) was applied that it would not accept today.
        const problems = (await store.listUsers()).flatMap((u) => {
          const problem = loginProblem(u.login);
          return problem === null ? [] : [`  ${quoted(u.login)}: ${problem}`];
        });
        if (problems.length > 0) {
          io.stdout.write(`${problems.length} login(s) predate the RFC 8265 login rules (docs/security.md#logins-and-passwords):\n${problems.join('\n')}\n`);
        }
      } finally {
        await store.close();
      }
    });

  // app
  const app = program.command('app').description('manage applications (AppID)');
  app.command('add')
    .description('add an application')
    .argument('<appId>', 'integer AppID (1 to 2147483647)', integerArg)
    .argument('<name>', 'display name')
    .option('--no-require-ip', 'do not require a valid IPAddress in ValidateUser (like GPS)')
    .option('--login-url <url>', 'absolute http(s) URL GetUserLoginURL appends ticket=... to')
    .option('--token-lifetime <duration>', 'token lifetime, e.g. 24h (default 24h)', durationArg)
    .option('--idle-timeout <duration>', 'expire tokens unused for this long, e.g. 30m (default: none)', durationArg)
    .option('--default-language <tag>', 'news language when the caller\'s has none (default en)')
    .option('--disabled', 'create it disabled')
    .option('--trusted-caller <address>', TRUSTED_CALLER_HELP, collectText)
    .addOption(dbOption())
    .action(async (appId: number, name: string, options: { requireIp: boolean; loginUrl?: string; tokenLifetime?: number; idleTimeout?: number; defaultLanguage?: string; disabled?: boolean; trustedCaller?: string[]; db?: string }) => {
      const created = await withAdmin(io, options, async (admin) => unwrap(await admin.addApplication({
        appId, name, enabled: options.disabled !== true, requireIp: options.requireIp, loginUrl: options.loginUrl ?? null,
        tokenLifetimeSeconds: options.tokenLifetime, idleTimeoutSeconds: options.idleTimeout ?? null, defaultLanguage: options.defaultLanguage,
        ...(options.trustedCaller !== undefined && { trustedCallers: options.trustedCaller }),
      })));
      io.stdout.write(`Added ${describeApp(created)}\n`);
    });
  app.command('list')
    .description('list applications')
    .option('--json', 'one JSON object per line')
    .addOption(dbOption())
    .action(async (options: DbOptions & { json?: boolean }) => {
      const apps = await withAdmin(io, options, (admin) => admin.listApplications());
      if (options.json === true) return jsonLines(io, apps);
      table(io, ['APPID', 'NAME', 'ENABLED', 'REQUIRE-IP', 'LIFETIME', 'IDLE', 'LANGUAGE', 'LOGIN-URL', 'TRUSTED-CALLERS'], apps.map((a) => [
        String(a.appId), a.name, yesNo(a.enabled), yesNo(a.requireIp), formatDuration(a.tokenLifetimeSeconds),
        a.idleTimeoutSeconds === null ? '-' : formatDuration(a.idleTimeoutSeconds), a.defaultLanguage, a.loginUrl ?? '-', a.trustedCallers.join(',') || '-',
      ]));
    });
  app.command('set')
    .description('change an application (disabling it revokes its tokens at once)')
    .argument('<appId>', 'AppID', integerArg)
    .option('--name <name>', 'new display name')
    .option('--enable', 'enable it')
    .option('--disable', 'disable it and revoke its tokens')
    .option('--require-ip', 'require a valid IPAddress in ValidateUser')
    .option('--no-require-ip', 'do not require IPAddress')
    .option('--login-url <url>', 'set the login URL')
    .option('--no-login-url', 'remove the login URL')
    .option('--token-lifetime <duration>', 'token lifetime for new tokens, e.g. 8h', durationArg)
    .option('--idle-timeout <duration>', 'idle timeout, e.g. 30m', durationArg)
    .option('--no-idle-timeout', 'remove the idle timeout')
    .option('--default-language <tag>', 'default news language')
    .option('--trusted-caller <address>', `${TRUSTED_CALLER_HELP}; replaces the list`, collectText)
    .option('--no-trusted-callers', 'remove every trusted caller (IPAddress is then only recorded)')
    .addOption(dbOption())
    .action(async (appId: number, options: {
      name?: string; enable?: boolean; disable?: boolean; requireIp?: boolean; loginUrl?: string | false;
      tokenLifetime?: number; idleTimeout?: number | false; defaultLanguage?: string; trustedCaller?: string[]; trustedCallers?: boolean; db?: string;
    }) => {
      if (options.enable === true && options.disable === true) throw new CliError('--enable and --disable contradict each other', EXIT_USAGE);
      if (options.trustedCaller !== undefined && options.trustedCallers === false) throw new CliError('--trusted-caller and --no-trusted-callers contradict each other', EXIT_USAGE);
      const patch = {
        ...(options.name !== undefined && { name: options.name }),
        ...(options.enable === true && { enabled: true }),
        ...(options.disable === true && { enabled: false }),
        ...(options.requireIp !== undefined && { requireIp: options.requireIp }),
        ...(options.loginUrl !== undefined && { loginUrl: options.loginUrl === false ? null : options.loginUrl }),
        ...(options.tokenLifetime !== undefined && { tokenLifetimeSeconds: options.tokenLifetime }),
        ...(options.idleTimeout !== undefined && { idleTimeoutSeconds: options.idleTimeout === false ? null : options.idleTimeout }),
        ...(options.defaultLanguage !== undefined && { defaultLanguage: options.defaultLanguage }),
        ...(options.trustedCaller !== undefined && { trustedCallers: options.trustedCaller }),
        ...(options.trustedCallers === false && { trustedCallers: [] }),
      };
      if (Object.keys(patch).length === 0) throw new CliError('nothing to change: give at least one option (see --help)', EXIT_USAGE);
      const updated = await withAdmin(io, options, async (admin) => unwrap(await admin.updateApplication(appId, patch)));
      io.stdout.write(`Updated ${describeApp(updated)}\n`);
    });

  // user
  const user = program.command('user').description('manage users (passwords are read from a prompt or --password-stdin, never from arguments)');
  user.command('add')
    .description('add a user')
    .argument('<login>', 'login (unique, case-insensitive)')
    .requiredOption('--app <appId>', 'application the user may use (repeat for several)', collectInteger)
    .option('--password-stdin', 'read the password from stdin (one trailing newline is removed)')
    .option('--disabled', 'create the user disabled')
    .addOption(dbOption())
    .action(async (login: string, options: { app: number[]; passwordStdin?: boolean; disabled?: boolean; db?: string }) => {
      const created = await withAdmin(io, options, async (admin) => {
        // Cheap checks first, so nobody types a password for a command that will fail anyway.
        for (const appId of options.app) unwrap(await admin.getApplication(appId));
        if ((await admin.getUser(login)).ok) throw new CliError(`a user with login ${quoted(login)} already exists (logins are case-insensitive)`);
        const password = await readPassword(io, { fromStdin: options.passwordStdin === true, confirm: true });
        return unwrap(await admin.addUser({ login, password, appIds: options.app, enabled: options.disabled !== true }));
      });
      io.stdout.write(`Added ${describeUser(created)}\n`);
    });
  user.command('passwd')
    .description('set a user\'s password (revokes the user\'s tokens)')
    .argument('<login>', 'login')
    .option('--password-stdin', 'read the password from stdin (one trailing newline is removed)')
    .addOption(dbOption())
    .action(async (login: string, options: { passwordStdin?: boolean; db?: string }) => {
      const updated = await withAdmin(io, options, async (admin) => {
        unwrap(await admin.getUser(login));
        const password = await readPassword(io, { fromStdin: options.passwordStdin === true, confirm: true });
        return unwrap(await admin.changePassword(login, password));
      });
      io.stdout.write(`Password changed for ${describeUser(updated)}; existing tokens revoked\n`);
    });
  for (const [name, enabled] of [['disable', false], ['enable', true]] as const) {
    user.command(name)
      .description(enabled ? 'enable a user' : 'disable a user (revokes the user\'s tokens)')
      .argument('<login>', 'login')
      .addOption(dbOption())
      .action(async (login: string, options: DbOptions) => {
        const updated = await withAdmin(io, options, async (admin) => unwrap(await admin.setUserEnabled(login, enabled)));
        io.stdout.write(`${enabled ? 'Enabled' : 'Disabled'} ${describeUser(updated)}${enabled ? '' : '; existing tokens revoked'}\n`);
      });
  }
  // grant and revoke-app: one AppID or several, each applied in turn; the user as it ends up is shown.
  for (const [name, description, verb, apply] of [
    ['grant', 'let a user use an application', 'Granted', (admin: AdminService, login: string, appId: number) => admin.grantApplication(login, appId)],
    ['revoke-app', 'withdraw an application from a user (revokes the user\'s tokens for it)', 'Withdrawn', (admin: AdminService, login: string, appId: number) => admin.revokeApplication(login, appId)],
  ] as const) {
    user.command(name)
      .description(description)
      .argument('<login>', 'login')
      .requiredOption('--app <appId>', 'AppID (repeat for several)', collectInteger)
      .addOption(dbOption())
      .action(async (login: string, options: { app: number[]; db?: string }) => {
        const updated = await withAdmin(io, options, async (admin) => {
          let last: User | undefined;
          for (const appId of options.app) last = unwrap(await apply(admin, login, appId));
          return last;
        });
        if (updated !== undefined) io.stdout.write(`${verb}: ${describeUser(updated)}\n`);
      });
  }
  user.command('throttle')
    .description('show the brute-force counters of a login (its ceiling across sources, known sources, blocked sources), or --reset them')
    .argument('<login>', 'login (case-insensitive; counted whether or not such a user exists)')
    .option('--reset', 'clear the login\'s ceiling and the failures and blocks of every source for it (known sources stay)')
    .option('--json', 'the state as one JSON object')
    .addOption(dbOption())
    .action(async (login: string, options: { reset?: boolean; json?: boolean; db?: string }) => {
      if (options.reset === true && options.json === true) throw new CliError('--reset and --json do not go together', EXIT_USAGE);
      if (options.reset === true) {
        const cleared = await withAdmin(io, options, async (admin) => unwrap(await admin.resetLoginThrottle(login)));
        io.stdout.write(`Reset the brute-force counters of login ${JSON.stringify(login)}: ${cleared} counter(s) cleared; known sources kept\n`);
        return;
      }
      const [report, enabled] = await withAdmin(io, options, async (admin, config) => [unwrap(await admin.loginThrottle(login)), config.bruteForce.enabled] as const);
      if (options.json === true) return jsonLines(io, [{ login, enabled, ...report }]);
      printLoginThrottle(io, login, report, enabled);
    });
  user.command('list')
    .description('list users')
    .option('--app <appId>', 'only users granted this AppID', integerArg)
    .option('--json', 'one JSON object per line')
    .addOption(dbOption())
    .action(async (options: { app?: number; json?: boolean; db?: string }) => {
      const users = await withAdmin(io, options, async (admin) => unwrap(await admin.listUsers(options.app === undefined ? {} : { appId: options.app })));
      if (options.json === true) return jsonLines(io, users);
      table(io, ['LOGIN', 'ENABLED', 'APPS', 'CREATED', 'LAST-LOGIN'], users.map((u) => [
        u.login, yesNo(u.enabled), u.appIds.join(',') || '-', iso(u.createdAt), iso(u.lastLoginAt),
      ]));
    });

  // news
  const news = program.command('news').description('manage WhatsNew items');
  news.command('add')
    .description('add a news item')
    .requiredOption('--app <appId>', 'AppID', integerArg)
    .requiredOption('--title <text>', 'title')
    .option('--body <text>', 'body text')
    .option('--body-file <path>', 'read the body from a UTF-8 file')
    .option('--language <tag>', 'language tag, e.g. pt-BR (default: the application\'s default language)')
    .option('--url <url>', 'link shown with the item')
    .option('--published-at <date>', 'publication time, ISO 8601 (default now; a future time schedules it)', dateArg)
    .option('--expires-at <date>', 'hide it from this time on, ISO 8601', dateArg)
    .option('--min-version <version>', 'only for AppVersion >= this (dotted numbers)')
    .option('--max-version <version>', 'only for AppVersion <= this (dotted numbers)')
    .option('--members-only', 'only shown when AppToken is a valid token for the application')
    .option('--attr <key=value>', 'an extra value for a WhatsNew column of the compatibility profile (repeat for several)', collectAttribute)
    .addOption(dbOption())
    .action(async (options: {
      app: number; title: string; body?: string; bodyFile?: string; language?: string; url?: string; publishedAt?: Date;
      expiresAt?: Date; minVersion?: string; maxVersion?: string; membersOnly?: boolean; attr?: Record<string, string>; db?: string;
    }) => {
      if ((options.body === undefined) === (options.bodyFile === undefined)) throw new CliError('give exactly one of --body and --body-file', EXIT_USAGE);
      const body = options.body ?? await readFile(options.bodyFile ?? '', 'utf8').catch((error: unknown) => {
        throw new CliError(`cannot read --body-file: ${(error as Error).message}`);
      });
      const created = await withAdmin(io, options, async (admin) => unwrap(await admin.addNews({
        appId: options.app, title: options.title, body, language: options.language, url: options.url ?? null,
        publishedAt: options.publishedAt, expiresAt: options.expiresAt ?? null,
        minVersion: options.minVersion ?? null, maxVersion: options.maxVersion ?? null, membersOnly: options.membersOnly === true,
        ...(options.attr !== undefined && { attributes: options.attr }),
      })));
      io.stdout.write(`Added news ${created.newsId} for AppID ${created.appId} (${displayText(created.language)}): ${displayText(created.title)}\n`);
    });
  news.command('list')
    .description('list news items, newest first')
    .option('--app <appId>', 'only this AppID', integerArg)
    .option('--json', 'one JSON object per line')
    .addOption(dbOption())
    .action(async (options: { app?: number; json?: boolean; db?: string }) => {
      const items: readonly NewsRecord[] = await withAdmin(io, options, async (admin) => unwrap(await admin.listNews(options.app === undefined ? {} : { appId: options.app })));
      if (options.json === true) return jsonLines(io, items);
      table(io, ['ID', 'APPID', 'LANG', 'PUBLISHED', 'EXPIRES', 'VERSIONS', 'MEMBERS', 'ATTRIBUTES', 'TITLE'], items.map((n) => [
        String(n.newsId), String(n.appId), n.language, iso(n.publishedAt), iso(n.expiresAt),
        n.minVersion === null && n.maxVersion === null ? 'all' : `${n.minVersion ?? '*'}..${n.maxVersion ?? '*'}`,
        yesNo(n.membersOnly), attributesCell(n.attributes), n.title,
      ]));
    });
  news.command('remove')
    .description('delete a news item')
    .argument('<newsId>', 'id shown by news list', integerArg)
    .addOption(dbOption())
    .action(async (newsId: number, options: DbOptions) => {
      const removed = await withAdmin(io, options, async (admin) => unwrap(await admin.removeNews(newsId)));
      io.stdout.write(`Removed news ${removed.newsId}: ${displayText(removed.title)}\n`);
    });
  registerNewsImport(news, io);

  // token
  const token = program.command('token').description('manage issued tokens');
  token.command('list')
    .description('list a user\'s live sessions (the ID is a fingerprint of the token, never the token; ORIGIN: ours, or legacy if `import tokens` brought it or token adoption stored it)')
    .requiredOption('--user <login>', 'the user')
    .option('--json', 'one JSON object per line')
    .addOption(dbOption())
    .action(async (options: { user: string; json?: boolean; db?: string }) => {
      const sessions = await withAdmin(io, options, async (admin) => unwrap(await admin.listSessions(options.user)));
      if (options.json === true) return jsonLines(io, sessions);
      table(io, ['ID', 'APP', 'ISSUED', 'LAST-USED', 'EXPIRES', 'SOURCE', 'CLIENT-IP', 'ORIGIN'], sessions.map((t) => [
        t.id, String(t.appId), iso(t.issuedAt), iso(t.lastUsedAt), iso(t.expiresAt), t.sourceIp ?? '-', t.clientIp ?? '-', t.origin,
      ]));
    });
  token.command('revoke')
    .description('revoke tokens at once: one session by its ID (token list), one user\'s, or everybody\'s')
    .argument('[id]', 'the session\'s ID as `token list` shows it (with --user: only if it is that user\'s)')
    .option('--user <login>', 'revoke this user\'s tokens (with an ID: the user the session must belong to)')
    .option('--all', 'revoke every token')
    .addOption(dbOption())
    .action(async (id: string | undefined, options: { user?: string; all?: boolean; db?: string }) => {
      if (id !== undefined) {
        if (options.all === true) throw new CliError('give an ID or --all, not both', EXIT_USAGE);
        const revoked = await withAdmin(io, options, async (admin) => unwrap(await admin.revokeSession(id, options.user)));
        io.stdout.write(`Revoked session ${revoked.id} of ${revoked.login === null ? `user id ${revoked.userId}` : quoted(revoked.login)} (AppID ${revoked.appId})\n`);
        return;
      }
      if ((options.user === undefined) === (options.all !== true)) throw new CliError('give a session ID, or exactly one of --user <login> and --all', EXIT_USAGE);
      const count = await withAdmin(io, options, async (admin) => unwrap(await admin.revokeTokens(options.all === true ? { all: true } : { login: options.user ?? '' })));
      io.stdout.write(`Revoked ${count} token(s)\n`);
    });

  registerAdminAccountCommands(program, io, dbOption);
  registerExportImport(program, io);
  registerOpsCommands(program, io);
  registerLegacyCommands(program, io); // after registerExportImport: adds membership/identity/users under its `import`
  registerAuditCommand(program, io);
  registerCompatCommands(program, io, setExitCode);
  return program;
}

/** Passwords on the command line end up in shell history and `ps`; refuse before anything runs. */
function passwordInArgv(argv: readonly string[]): boolean {
  return argv.some((arg) => /^--(password|passwd|pass|pwd)(=|$)/i.test(arg));
}

/**
 * Runs one command. `argv` holds the arguments after the program name (`process.argv.slice(2)`).
 * Resolves to the exit code; never calls process.exit.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  if (passwordInArgv(argv)) {
    io.stderr.write('error: passwords are never accepted as arguments; use --password-stdin or the interactive prompt\n');
    return EXIT_USAGE;
  }
  let exitCode = 0;
  const program = buildProgram(io, (code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version exit 0; any other commander error is a usage error (already printed).
      return error.exitCode === 0 ? 0 : EXIT_USAGE;
    }
    // A database condition raised where no command expected it still gets its one line and code.
    const failure = error instanceof CliError ? error : databaseFailure(error);
    if (failure !== null) {
      io.stderr.write(`error: ${failure.message}\n`);
      return failure.exitCode;
    }
    io.stderr.write(`error: ${(error as Error).stack ?? String(error)}\n`);
    return 1;
  }
}
