/**
 * The `svcapi-auth` command: `serve` runs the service; the other commands administer the
 * database (applications, users, news, tokens). Written as `runCli(argv, io)` so tests run
 * commands in-process. The executable is main.ts, which loads this module when it is needed.
 */
import type { Command } from 'commander';
import { quoted } from '../domain/display-text.js';
import { loginProblem } from '../domain/logins.js';
import { redactDatabaseUrl } from '../store/open-store.js';
import { registerAdminAccountCommands } from './admin-accounts-command.js';
import { registerAppCommands } from './app-commands.js';
import { registerAuditCommand } from './audit-command.js';
import type { CliIo } from './cli-io.js';
import { cliConfig, dbOption, openCliStore } from './cli-store.js';
import { registerCompatCommands } from './compat-commands.js';
import { registerExportImport } from './export-import.js';
import { registerLegacyImports, registerMigrationReport } from './import-legacy.js';
import { registerNewsCommands } from './news-commands.js';
import { registerNewsImport } from './news-import.js';
import { registerOpsCommands } from './ops-commands.js';
import { registerTokenCommands } from './token-commands.js';
import { registerUserCommands } from './user-commands.js';
import { newProgram, runProgram } from './run-program.js';
import { registerServeCommand } from './serve-program.js';
import type { DbOptions } from './with-admin.js';

function buildProgram(io: CliIo, setExitCode: (code: number) => void): Command {
  const program = newProgram(io);

  // serve
  registerServeCommand(program, io, setExitCode);

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

/**
 * Runs one command. `argv` holds the arguments after the program name (`process.argv.slice(2)`).
 * Resolves to the exit code; never calls process.exit.
 */
export function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  return runProgram(buildProgram, argv, io);
}
