/**
 * `svcapi-auth admin add|passwd|remove|list`: the admin console's accounts (src/domain/admin-accounts.ts).
 * Passwords come from a prompt or --password-stdin, never from arguments.
 */
import { Option, type Command } from 'commander';
import { ADMIN_ROLES, createAdminAccounts, isAdminRole, type AdminAccounts } from '../domain/admin-accounts.js';
import { createArgon2Hasher } from '../domain/password-hasher.js';
import { CliError, EXIT_USAGE, type CliIo } from './cli-io.js';
import { withStore } from './cli-store.js';
import { readPassword } from './read-password.js';
import { cliActor, storeAuditRecorder } from './audit-command.js';
import { unwrap } from './with-admin.js';

async function withAccounts<T>(io: CliIo, db: string | undefined, fn: (accounts: AdminAccounts) => Promise<T>): Promise<T> {
  return withStore(io, db, (store, config) => fn(createAdminAccounts({
    store, hasher: createArgon2Hasher(), audit: storeAuditRecorder(store, io), actor: cliActor(), throttle: config.bruteForce,
  })));
}

export function registerAdminAccountCommands(program: Command, io: CliIo, dbOption: () => Option): void {
  const admin = program.command('admin').description('manage accounts of the admin console (on the management listener, /admin/)');
  admin.command('add')
    .description('add a console account')
    .argument('<name>', 'account name (letters, digits, . _ @ -; case-insensitive)')
    .option('--password-stdin', 'read the password from stdin (one trailing newline is removed)')
    .addOption(new Option('--role <role>', 'editor: news only; admin: everything').choices([...ADMIN_ROLES]).default('admin'))
    .addOption(dbOption())
    .action(async (name: string, options: { passwordStdin?: boolean; role: string; db?: string }) => {
      if (!isAdminRole(options.role)) throw new CliError('the role must be editor or admin', EXIT_USAGE);
      const role = options.role;
      const added = await withAccounts(io, options.db, async (accounts) => {
        if ((await accounts.list()).some((a) => a.name === name.trim().toLowerCase())) throw new CliError(`an admin account ${name.trim().toLowerCase()} already exists`);
        const password = await readPassword(io, { fromStdin: options.passwordStdin === true, confirm: true });
        return unwrap(await accounts.add(name, password, role));
      });
      io.stdout.write(`Added admin account ${added.name} (${added.role})\n`);
    });
  admin.command('passwd')
    .description('set a console account\'s password (ends its console sessions)')
    .argument('<name>', 'account name')
    .option('--password-stdin', 'read the password from stdin (one trailing newline is removed)')
    .addOption(dbOption())
    .action(async (name: string, options: { passwordStdin?: boolean; db?: string }) => {
      const updated = await withAccounts(io, options.db, async (accounts) => {
        if (!(await accounts.list()).some((a) => a.name === name.trim().toLowerCase())) throw new CliError(`no admin account ${name.trim().toLowerCase()}`);
        const password = await readPassword(io, { fromStdin: options.passwordStdin === true, confirm: true });
        return unwrap(await accounts.setPassword(name, password));
      });
      io.stdout.write(`Password changed for admin account ${updated.name}; its console sessions ended\n`);
    });
  admin.command('remove')
    .description('remove a console account (ends its console sessions)')
    .argument('<name>', 'account name')
    .addOption(dbOption())
    .action(async (name: string, options: { db?: string }) => {
      const removed = await withAccounts(io, options.db, async (accounts) => unwrap(await accounts.remove(name)));
      io.stdout.write(`Removed admin account ${removed.name}\n`);
    });
  admin.command('list')
    .description('list console accounts')
    .addOption(dbOption())
    .action(async (options: { db?: string }) => {
      const list = await withAccounts(io, options.db, (accounts) => accounts.list());
      io.stdout.write('NAME  ROLE  CREATED  LAST-LOGIN\n');
      for (const a of list) io.stdout.write(`${a.name}  ${a.role}  ${a.createdAt.toISOString()}  ${a.lastLoginAt?.toISOString() ?? '-'}\n`);
    });
}
