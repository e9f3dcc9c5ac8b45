/** What a CLI command may touch, so tests can run commands in-process with their own streams. */
export interface CliIo {
  readonly stdin: NodeJS.ReadableStream & { readonly isTTY?: boolean };
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly env: NodeJS.ProcessEnv;
  /** Stops `serve` when aborted (in-process tests); the binary stops on SIGINT / SIGTERM. */
  readonly signal?: AbortSignal;
}

/** A refusal to report to the operator: message on stderr, this exit code. */
export class CliError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
    this.name = 'CliError';
  }
}

/**
 * Exit codes (docs/cli.md): 0 done; 1 refused (bad value, unknown app, duplicate
 * login, database unreachable...); 2 command-line usage; 3-6 the database itself, which a script
 * or an operator must handle differently: 3 there is none (run `migrate`), 4 it is another
 * application's, 5 it is damaged (restore a backup), 6 it does not take writes.
 */
export const EXIT_REFUSED = 1;
export const EXIT_USAGE = 2;
export const EXIT_DB_MISSING = 3;
export const EXIT_DB_FOREIGN = 4;
export const EXIT_DB_DAMAGED = 5;
export const EXIT_DB_READ_ONLY = 6;
