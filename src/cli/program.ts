/**
 * The `svcapi-auth` command: `serve` runs the service; the other commands administer the
 * database (applications, users, news, tokens). Written as `runCli(argv, io)` so tests run
 * commands in-process. The executable is main.ts, which loads this module when it is needed.
 */
import { readFile } from 'node:fs/promises';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { ConfigError, loadConfig, type Config, type ConfigFlags } from '../config.js';
import { createAdminService, type AdminResult, type AdminService } from '../domain/admin-service.js';
import { createArgon2Hasher } from '../domain/password-hasher.js';
import type { Application, NewsRecord, User } from '../store/store.js';
import { openStore, redactDatabaseUrl } from '../store/open-store.js';
import { CliError, EXIT_USAGE, type CliIo } from './cli-io.js';
import { formatDuration, parseDuration } from './durations.js';
import { readPassword } from './read-password.js';
import { serveCommand, workersArg } from './cluster.js';
import { registerExportImport } from './export-import.js';
import { configFileOption, logPrettyOption, managementHostOption, managementPortOption, registerOpsCommands, trustedProxiesOption } from './ops-commands.js';
import { registerLegacyCommands } from './import-legacy.js';
import { cliActor, registerAuditCommand, storeAuditRecorder } from './audit-command.js';
import { registerCompatCommands } from './compat-commands.js';

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

/** Issue 6: servers whose ValidateUser IPAddress names the end user (checked by the admin service). */
const TRUSTED_CALLER_HELP = 'IP address or CIDR range of a server that logs its own users in: its IPAddress then counts as the end user\'s address for brute-force protection (repeat for several)';

function durationArg(text: string): number {
  const seconds = parseDuration(text);
  if (seconds === null) throw new InvalidArgumentError('expected a duration like 90s, 30m, 24h, 7d or 1h30m.');
  return seconds;
}

function dateArg(text: string): Date {
  // ISO 8601 only: "2025-03-01", "2025-03-01T09:00", "2025-03-01T09:00:00Z", "...+01:00".
  const d = new Date(text);
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(text.trim()) || Number.isNaN(d.getTime())) {
    throw new InvalidArgumentError('expected an ISO 8601 date like 2025-03-01 or 2025-03-01T09:00:00Z.');
  }
  return d;
}

// --- output ---

function table(io: CliIo, headers: readonly string[], rows: readonly (readonly string[])[]): void {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  io.stdout.write(`${line(headers)}\n`);
  for (const row of rows) io.stdout.write(`${line(row)}\n`);
}

const iso = (d: Date | null): string => (d === null ? '-' : d.toISOString());
const yesNo = (b: boolean): string => (b ? 'yes' : 'no');

function describeApp(app: Application): string {
  return `AppID ${app.appId} "${app.name}" (${app.enabled ? 'enabled' : 'DISABLED'}, requireIp ${yesNo(app.requireIp)}, ` +
    `token lifetime ${formatDuration(app.tokenLifetimeSeconds)}, idle timeout ${app.idleTimeoutSeconds === null ? 'none' : formatDuration(app.idleTimeoutSeconds)}, ` +
    `default language ${app.defaultLanguage}, login URL ${app.loginUrl ?? 'none'}, trusted callers ${app.trustedCallers.join(' ') || 'none'})`;
}

function describeUser(user: User): string {
  return `user ${JSON.stringify(user.login)} (${user.enabled ? 'enabled' : 'DISABLED'}, applications ${user.appIds.join(', ') || 'none'})`;
}

function jsonLines(io: CliIo, values: readonly object[]): void {
  for (const value of values) io.stdout.write(`${JSON.stringify(value)}\n`);
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

function configFrom(io: CliIo, flags: ConfigFlags): Config {
  try {
    return loadConfig({ flags, env: io.env });
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(error.message, EXIT_USAGE);
    throw error;
  }
}

/** Opens the database named by --db / DATABASE_URL, runs `fn` with an admin service, closes it. */
async function withAdmin<T>(io: CliIo, options: DbOptions, fn: (admin: AdminService) => Promise<T>): Promise<T> {
  const config = configFrom(io, { db: options.db });
  let store;
  try {
    store = await openStore(config.databaseUrl);
  } catch (error) {
    throw new CliError(`cannot open the database ${redactDatabaseUrl(config.databaseUrl)}: ${(error as Error).message}`);
  }
  try {
    return await fn(createAdminService({ store, hasher: createArgon2Hasher(), audit: storeAuditRecorder(store, io), actor: cliActor() }));
  } finally {
    await store.close();
  }
}

const dbOption = (): Option => new Option('--db <url>', 'database URL (env DATABASE_URL; default sqlite:./data/svcapi-auth.db)');

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
    .addOption(trustedProxiesOption())
    .addOption(managementHostOption())
    .addOption(managementPortOption())
    .addOption(new Option('--tls-cert <file>', 'serve HTTPS (TLS 1.2+) with this PEM certificate chain (env SVCAPI_TLS_CERT; needs --tls-key)'))
    .addOption(new Option('--tls-key <file>', 'the PEM private key of --tls-cert (env SVCAPI_TLS_KEY)'))
    .addOption(new Option('--audit-retention-days <days>', 'purge audit events older than this, 0 to keep them (env SVCAPI_AUDIT_RETENTION_DAYS; default 90)'))
    .addOption(new Option('--compat <file>', 'answer as the legacy service did: a compatibility profile (JSON; env SVCAPI_COMPAT; docs/compat-profile.md)'))
    .addOption(new Option('--workers <n>', 'worker processes sharing the port: a number, or auto for one per core (env SVCAPI_WORKERS; default 1)').argParser(workersArg))
    .action(async (options: { host?: string; port?: string; db?: string; logLevel?: string; workers?: number }) => {
      setExitCode(await serveCommand(configFrom(io, options), io, options.workers));
    });

  // migrate
  program.command('migrate')
    .description('create the database if needed and apply pending schema migrations')
    .addOption(dbOption())
    .action(async (options: DbOptions) => {
      const config = configFrom(io, { db: options.db });
      const store = await openStore(config.databaseUrl).catch((error: unknown) => {
        throw new CliError(`cannot migrate ${redactDatabaseUrl(config.databaseUrl)}: ${(error as Error).message}`);
      });
      try {
        io.stdout.write(`Database ${redactDatabaseUrl(config.databaseUrl)} is at schema version ${await store.schemaVersion()}\n`);
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
        if ((await admin.getUser(login)).ok) throw new CliError(`a user with login ${JSON.stringify(login)} already exists (logins are case-insensitive)`);
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
    .addOption(dbOption())
    .action(async (options: {
      app: number; title: string; body?: string; bodyFile?: string; language?: string; url?: string; publishedAt?: Date;
      expiresAt?: Date; minVersion?: string; maxVersion?: string; membersOnly?: boolean; db?: string;
    }) => {
      if ((options.body === undefined) === (options.bodyFile === undefined)) throw new CliError('give exactly one of --body and --body-file', EXIT_USAGE);
      const body = options.body ?? await readFile(options.bodyFile ?? '', 'utf8').catch((error: unknown) => {
        throw new CliError(`cannot read --body-file: ${(error as Error).message}`);
      });
      const created = await withAdmin(io, options, async (admin) => unwrap(await admin.addNews({
        appId: options.app, title: options.title, body, language: options.language, url: options.url ?? null,
        publishedAt: options.publishedAt, expiresAt: options.expiresAt ?? null,
        minVersion: options.minVersion ?? null, maxVersion: options.maxVersion ?? null, membersOnly: options.membersOnly === true,
      })));
      io.stdout.write(`Added news ${created.newsId} for AppID ${created.appId} (${created.language}): ${created.title}\n`);
    });
  news.command('list')
    .description('list news items, newest first')
    .option('--app <appId>', 'only this AppID', integerArg)
    .option('--json', 'one JSON object per line')
    .addOption(dbOption())
    .action(async (options: { app?: number; json?: boolean; db?: string }) => {
      const items: readonly NewsRecord[] = await withAdmin(io, options, async (admin) => unwrap(await admin.listNews(options.app === undefined ? {} : { appId: options.app })));
      if (options.json === true) return jsonLines(io, items);
      table(io, ['ID', 'APPID', 'LANG', 'PUBLISHED', 'EXPIRES', 'VERSIONS', 'MEMBERS', 'TITLE'], items.map((n) => [
        String(n.newsId), String(n.appId), n.language, iso(n.publishedAt), iso(n.expiresAt),
        n.minVersion === null && n.maxVersion === null ? 'all' : `${n.minVersion ?? '*'}..${n.maxVersion ?? '*'}`,
        yesNo(n.membersOnly), n.title,
      ]));
    });
  news.command('remove')
    .description('delete a news item')
    .argument('<newsId>', 'id shown by news list', integerArg)
    .addOption(dbOption())
    .action(async (newsId: number, options: DbOptions) => {
      const removed = await withAdmin(io, options, async (admin) => unwrap(await admin.removeNews(newsId)));
      io.stdout.write(`Removed news ${removed.newsId}: ${removed.title}\n`);
    });

  // token
  const token = program.command('token').description('manage issued tokens');
  token.command('revoke')
    .description('revoke tokens at once: one user\'s, or everybody\'s')
    .option('--user <login>', 'revoke this user\'s tokens')
    .option('--all', 'revoke every token')
    .addOption(dbOption())
    .action(async (options: { user?: string; all?: boolean; db?: string }) => {
      if ((options.user === undefined) === (options.all !== true)) throw new CliError('give exactly one of --user <login> and --all', EXIT_USAGE);
      const count = await withAdmin(io, options, async (admin) => unwrap(await admin.revokeTokens(options.all === true ? { all: true } : { login: options.user ?? '' })));
      io.stdout.write(`Revoked ${count} token(s)\n`);
    });

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
    if (error instanceof CliError) {
      io.stderr.write(`error: ${error.message}\n`);
      return error.exitCode;
    }
    io.stderr.write(`error: ${(error as Error).stack ?? String(error)}\n`);
    return 1;
  }
}
