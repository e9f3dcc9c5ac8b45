/**
 * The `svcapi-auth` command: `serve` runs the service; the other commands administer the
 * database (applications, users, news, tokens). Written as `runCli(argv, io)` so tests run
 * commands in-process. The executable is main.ts, which loads this module when it is needed.
 */
import { Command, CommanderError, Option } from 'commander';
import type { ConfigFlags } from '../config/config.js';
import { quoted } from '../domain/display-text.js';
import { loginProblem } from '../domain/logins.js';
import { redactDatabaseUrl } from '../store/open-store.js';
import { registerAdminAccountCommands } from './admin-accounts-command.js';
import { registerAppCommands } from './app-commands.js';
import { registerAuditCommand } from './audit-command.js';
import { CliError, EXIT_USAGE, type CliIo } from './cli-io.js';
import { addConfigFlagOptions, cliConfig, databaseFailure, dbOption, openCliStore } from './cli-store.js';
import { serveCommand, workersArg } from './cluster.js';
import { registerCompatCommands } from './compat-commands.js';
import { registerExportImport } from './export-import.js';
import { registerLegacyImports, registerMigrationReport } from './import-legacy.js';
import { registerNewsCommands } from './news-commands.js';
import { registerNewsImport } from './news-import.js';
import { registerOpsCommands } from './ops-commands.js';
import { registerTokenCommands } from './token-commands.js';
import { registerUserCommands } from './user-commands.js';
import type { DbOptions } from './with-admin.js';

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
  addConfigFlagOptions(program.command('serve')
    .description('run the service (creates and migrates the database on first start)'))
    .addOption(new Option('--workers <n>', 'worker processes sharing the port: a number, or auto for one per core (env SVCAPI_WORKERS; default 1)').argParser(workersArg))
    .action(async (options: ConfigFlags & { workers?: number }) => {
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

  registerAppCommands(program, io);
  const user = registerUserCommands(program, io);
  registerMigrationReport(user, io);
  const news = registerNewsCommands(program, io);
  registerNewsImport(news, io);
  registerTokenCommands(program, io);
  registerAdminAccountCommands(program, io, dbOption);
  const importCommand = registerExportImport(program, io);
  registerLegacyImports(importCommand, io);
  registerOpsCommands(program, io);
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
