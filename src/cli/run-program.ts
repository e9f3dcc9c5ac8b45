/**
 * Runs a commander program for `runCli`: what every command line goes through, whether it was
 * built whole (program.ts) or for `serve` alone (serve-program.ts).
 */
import { Command, CommanderError } from 'commander';
import { CliError, EXIT_USAGE, type CliIo } from './cli-io.js';
import { databaseFailure } from './open-cli-store.js';

/** The program and its settings every command inherits: output to `io`, errors as values, help after an error. */
export function newProgram(io: CliIo): Command {
  return new Command('svcapi-auth')
    .description('Authentication service (drop-in replacement for Authentication.asmx) and its administration.')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
    .showHelpAfterError('(add --help for usage)');
}

/** Passwords on the command line end up in shell history and `ps`; refuse before anything runs. */
function passwordInArgv(argv: readonly string[]): boolean {
  return argv.some((arg) => /^--(password|passwd|pass|pwd)(=|$)/i.test(arg));
}

/**
 * Builds the program with `build` and runs `argv` (the arguments after the program name) through
 * it. Resolves to the exit code; never calls process.exit.
 */
export async function runProgram(build: (io: CliIo, setExitCode: (code: number) => void) => Command, argv: readonly string[], io: CliIo): Promise<number> {
  if (passwordInArgv(argv)) {
    io.stderr.write('error: passwords are never accepted as arguments; use --password-stdin or the interactive prompt\n');
    return EXIT_USAGE;
  }
  let exitCode = 0;
  const program = build(io, (code) => {
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
