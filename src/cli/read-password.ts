import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { CliError, EXIT_USAGE, type CliIo } from './cli-io.js';

/**
 * All of stdin as the password (`--password-stdin`), minus ONE trailing newline (what `echo` or a
 * here-string adds); everything else, spaces included, is part of the password. Bytes that are
 * not UTF-8 are refused (exit 2) rather than replaced by U+FFFD: replaced, several different
 * byte strings would all set (and later match) one password.
 */
export async function readPasswordFromStdin(stdin: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk as Uint8Array));
  let text: string;
  try {
    // ignoreBOM: a leading U+FEFF stays in the text, where the password rules refuse it, instead of vanishing.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new CliError('the password on stdin is not valid UTF-8; nothing was changed', EXIT_USAGE);
  }
  if (text.endsWith('\r\n')) return text.slice(0, -2);
  if (text.endsWith('\n')) return text.slice(0, -1);
  return text;
}

/**
 * Lines typed at a terminal, without echo: readline writes to a muted stream. One interface
 * serves every prompt of the command, so a fast typist (or a test) loses no line between them.
 */
async function promptHidden(io: CliIo, prompts: readonly string[]): Promise<string[]> {
  const muted = new Writable({ write: (_chunk, _encoding, callback) => callback() });
  const rl = createInterface({ input: io.stdin, output: muted, terminal: true });
  const lines: string[] = [];
  const waiting: ((line: string | null) => void)[] = [];
  let closed = false;
  rl.on('line', (line) => {
    const next = waiting.shift();
    if (next) next(line);
    else lines.push(line);
  });
  rl.once('close', () => {
    closed = true;
    for (const next of waiting.splice(0)) next(null);
  });
  // Ctrl-C at the prompt aborts the command rather than leaving the terminal waiting.
  let cancelled = false;
  rl.once('SIGINT', () => {
    cancelled = true;
    rl.close();
  });
  const nextLine = (): Promise<string | null> => {
    const ready = lines.shift();
    if (ready !== undefined) return Promise.resolve(ready);
    if (closed) return Promise.resolve(null);
    return new Promise((resolve) => waiting.push(resolve));
  };
  try {
    const answers: string[] = [];
    for (const prompt of prompts) {
      io.stderr.write(prompt);
      const line = await nextLine();
      io.stderr.write('\n');
      if (cancelled) throw new CliError('cancelled', 130);
      if (line === null) throw new CliError('no password entered');
      answers.push(line);
    }
    return answers;
  } finally {
    rl.close();
  }
}

/**
 * The password for a command: from stdin with `--password-stdin`, else from a no-echo prompt
 * (typed twice when `confirm`). Never from argv. Refuses a non-terminal stdin without the flag,
 * so a script cannot hang on a prompt nobody sees.
 */
export async function readPassword(io: CliIo, options: { fromStdin: boolean; confirm: boolean }): Promise<string> {
  if (options.fromStdin) return readPasswordFromStdin(io.stdin);
  if (io.stdin.isTTY !== true) {
    throw new CliError('stdin is not a terminal: pipe the password and add --password-stdin', 2);
  }
  const [first = '', second] = await promptHidden(io, options.confirm ? ['Password: ', 'Repeat password: '] : ['Password: ']);
  if (options.confirm && first !== second) throw new CliError('the passwords do not match');
  // readline decodes the terminal's bytes leniently: U+FFFD is what it makes of bytes that are not UTF-8.
  if (first.includes('\ufffd')) throw new CliError('the password typed is not valid UTF-8 (check the terminal\'s encoding); nothing was changed', EXIT_USAGE);
  return first;
}
