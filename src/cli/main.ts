#!/usr/bin/env node
/**
 * The `svcapi-auth` executable. The commands are in program.ts. Process and memory tuning
 * (malloc arenas, V8 heap flags) is not done here: the deployment files set it before the
 * process starts (deploy/, docs/operations.md), which is the only time it can take effect.
 */
import { realpath } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import type { CliIo } from './cli-io.js';

export type { CliIo } from './cli-io.js';

/**
 * Runs one command. `argv` holds the arguments after the program name (`process.argv.slice(2)`).
 * Resolves to the exit code; never calls process.exit.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  // `serve` loads only what serving needs (serve-program.ts): the same command, parsed alike.
  if (argv[0] === 'serve') return (await import('./serve-program.js')).runServeCli(argv, io);
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

/** Runs the command line of this process on its standard streams, and sets its exit code. */
export async function runAsEntryPoint(): Promise<void> {
  // `svcapi-auth export | head`: the reader went away; stop quietly as other Unix tools do.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
  process.exitCode = await runCli(process.argv.slice(2), {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
  });
}

// Run directly (`node dist/cli/main.js`): libuv's thread pool then has its default size, and
// serve fits hashing into it (ops/hashing-threads.ts). The `svcapi-auth` executable is
// svcapi-auth.cjs, which sizes the pool first and then calls runAsEntryPoint.
if (await isEntryPoint()) await runAsEntryPoint();
