/** `svcapi-auth app add|list|set`: the applications (AppID) through the admin service. */
import type { Command } from 'commander';
import type { Application } from '../store/store.js';
import { displayText, quoted } from '../domain/display-text.js';
import { CliError, EXIT_USAGE, type CliIo } from './cli-io.js';
import { collectText, integerArg } from './cli-args.js';
import { jsonLines, table, yesNo } from './cli-output.js';
import { dbOption } from './cli-store.js';
import { durationArg, formatDuration } from './durations.js';
import { unwrap, withAdmin, type DbOptions } from './with-admin.js';

/** servers whose ValidateUser IPAddress names the end user (checked by the admin service). */
const TRUSTED_CALLER_HELP = 'IP address or CIDR range of a server that logs its own users in: its IPAddress then counts as the end user\'s address for brute-force protection (repeat for several)';

function describeApp(app: Application): string {
  return `AppID ${app.appId} ${quoted(app.name)} (${app.enabled ? 'enabled' : 'DISABLED'}, requireIp ${yesNo(app.requireIp)}, ` +
    `token lifetime ${formatDuration(app.tokenLifetimeSeconds)}, idle timeout ${app.idleTimeoutSeconds === null ? 'none' : formatDuration(app.idleTimeoutSeconds)}, ` +
    `default language ${displayText(app.defaultLanguage)}, login URL ${app.loginUrl === null ? 'none' : displayText(app.loginUrl)}, trusted callers ${app.trustedCallers.join(' ') || 'none'})`;
}

export function registerAppCommands(program: Command, io: CliIo): void {
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
}
