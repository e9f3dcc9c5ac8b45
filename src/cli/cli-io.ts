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

/** Exit codes: 0 done; 1 refused (bad value, unknown app, duplicate login...); 2 command-line usage. */
export const EXIT_REFUSED = 1;
export const EXIT_USAGE = 2;
