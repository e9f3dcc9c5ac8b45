/**
 * `svcapi-auth serve`: the command as program.ts registers it, and a program holding it alone.
 * main.ts runs a `serve` command line through the latter, so that a start loads what serving
 * needs and not every other command's modules (the console, compat tools, imports and exports):
 * the whole CLI cost about as much CPU as the service's own modules (docs/fast-paths.md).
 */
import { Option, type Command } from 'commander';
import type { ConfigFlags } from '../config/config.js';
import type { CliIo } from './cli-io.js';
import { addConfigFlagOptions, cliConfig } from './cli-store.js';
import { resolveWorkers, serveCommand, workersArg } from './cluster.js';
import { newProgram, runProgram } from './run-program.js';

/** Adds `serve` to `program`; its exit code goes to `setExitCode`. */
export function registerServeCommand(program: Command, io: CliIo, setExitCode: (code: number) => void): void {
  addConfigFlagOptions(program.command('serve')
    .description('run the service (creates and migrates the database on first start)'))
    .addOption(new Option('--workers <n>', 'worker processes sharing the port: a number, or auto for one per core (env SVCAPI_WORKERS; default 1)').argParser(workersArg))
    .action(async (options: ConfigFlags & { workers?: number }) => {
      // Resolved first: the configuration's defaults share the machine among the workers.
      const workers = resolveWorkers(options.workers, io.env);
      setExitCode(await serveCommand(cliConfig(io, options, workers), io, workers));
    });
}

/** Runs a command line whose command is `serve` (argv as for program.ts runCli), with the same parsing, help and errors. */
export function runServeCli(argv: readonly string[], io: CliIo): Promise<number> {
  return runProgram((programIo, setExitCode) => {
    const program = newProgram(programIo);
    registerServeCommand(program, programIo, setExitCode);
    return program;
  }, argv, io);
}
