#!/usr/bin/env node
/**
 * The `svcapi-auth` executable. The commands are in program.ts, loaded on first use: a `serve`
 * that starts itself again with its memory settings (memory-tuning.ts) leaves a launcher
 * process waiting for the service, and that process should not hold the whole program.
 */
import { realpath } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { CliIo } from './cli-io.js';
import { launcherSignal, relaunchTuning, runRelaunched, tuneHeapGrowth } from './memory-tuning.js';

export type { CliIo } from './cli-io.js';

/**
 * Runs one command. `argv` holds the arguments after the program name (`process.argv.slice(2)`).
 * Resolves to the exit code; never calls process.exit.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const program = await import('./program.js');
  return program.runCli(argv, io);
}

async function isEntryPoint(): Promise<boolean> {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    // npm installs the binary as a symlink; compare real paths.
    return import.meta.url === pathToFileURL(await realpath(script)).href;
  } catch {
    return false;
  }
}

if (await isEntryPoint()) {
  // `svcapi-auth export | head`: the reader went away; stop quietly as other Unix tools do.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
  const argv = process.argv.slice(2);
  const tuning = relaunchTuning(argv, process.env, process.execArgv, process.platform);
  const relaunched = tuning === null ? null : await runRelaunched(tuning, fileURLToPath(import.meta.url), argv);
  if (relaunched !== null) {
    process.exitCode = relaunched;
  } else {
    const signal = launcherSignal(process.env);
    if (argv[0] === 'serve') tuneHeapGrowth(process.execArgv);
    process.exitCode = await runCli(argv, {
      stdin: process.stdin,
      stdout: process.stdout,
      stderr: process.stderr,
      env: process.env,
      ...(signal !== undefined && { signal }),
    });
  }
}
