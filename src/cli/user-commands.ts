/**
 * `svcapi-auth user ...` (also `users`): users, their applications and their brute-force counters
 * through the admin service. Passwords come from a prompt or --password-stdin, never from arguments.
 */
import type { Command } from 'commander';
import type { AdminService } from '../domain/admin-service.js';
import type { LoginThrottleReport } from '../domain/login-throttle.js';
import type { User } from '../store/store.js';
import { quoted } from '../domain/display-text.js';
import { CliError, EXIT_USAGE, type CliIo } from './cli-io.js';
import { collecting, integerArg } from './cli-args.js';
import { iso, jsonLines, table, yesNo } from './cli-output.js';
import { dbOption } from './cli-store.js';
import { readPassword } from './read-password.js';
import { unwrap, withAdmin, type DbOptions } from './with-admin.js';

const collectInteger = collecting(integerArg);

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

/** Registers `user` and its commands; returns it for the commands other modules add (migration-report). */
export function registerUserCommands(program: Command, io: CliIo): Command {
  const user = program.command('user').alias('users').description('manage users (passwords are read from a prompt or --password-stdin, never from arguments)');
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
  return user;
}
