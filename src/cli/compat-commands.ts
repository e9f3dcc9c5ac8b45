/**
 * `svcapi-auth compat learn` and `svcapi-auth compat check` (docs/compat-tools.md): the command
 * lines around src/compat/learn.ts and src/compat/check.ts. The password is read from stdin
 * (`--password-stdin`) or a no-echo prompt, never from arguments, and never printed.
 * `svcapi-auth compat shadow-report` shows the differences the shadow and front modes kept in
 * the database (src/compat/shadow.ts; docs/cutover.md "Front and shadow").
 *
 * Exit codes: 0 done (check: no difference); 1 refused (learn: the legacy did not log the user
 * in) or, for check, differences found; 2 usage or connection errors.
 */
import { writeFile } from 'node:fs/promises';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { displayText, safeJson } from '../domain/display-text.js';
import type { ShadowDifferenceRecord } from '../store/store.js';
import { dbOption, withStore } from './cli-store.js';
import { acceptedDeviations, CheckError, jsonReport, markdownReport, runCheck, summaryLine, type CaseOutcome } from '../compat/check.js';
import { DEFAULT_PROBE_LIMITS, type ProbeLimits } from '../compat/http-probe.js';
import { learnProfile, LearnError } from '../compat/learn.js';
import { CliError, EXIT_USAGE, type CliIo } from './cli-io.js';
import { parseDuration } from './durations.js';
import { readPassword } from './read-password.js';

function appIdArg(text: string): number {
  if (!/^-?\d{1,10}$/.test(text.trim()) || Math.abs(Number(text)) > 2_147_483_647) throw new InvalidArgumentError('expected an AppID (a whole number).');
  return Number(text.trim());
}

function timeoutArg(text: string): number {
  const seconds = parseDuration(text);
  if (seconds === null || seconds < 1 || seconds > 600) throw new InvalidArgumentError('expected a duration from 1s to 10m, e.g. 10s.');
  return seconds * 1000;
}

const timeoutOption = (): Option => new Option('--timeout <duration>', 'longest wait for one answer, e.g. 10s (default 10s)').argParser(timeoutArg);

function limitsOf(timeoutMs: number | undefined): ProbeLimits {
  return { ...DEFAULT_PROBE_LIMITS, ...(timeoutMs !== undefined && { timeoutMs }) };
}

interface CommonOptions {
  legacy: string;
  login: string;
  passwordStdin?: boolean;
  app: number;
  ip?: string;
  timeout?: number;
}

/** Console lines for one different answer: its name, the request line and the diff (shortened). */
function printDifference(io: CliIo, outcome: CaseOutcome): void {
  const diff = outcome.diff.split('\n');
  const shown = diff.length > 60 ? [...diff.slice(0, 60), `... (${diff.length - 60} more lines; see --report)`] : diff;
  io.stdout.write(`DIFFERENT: ${outcome.name}\n  ${outcome.request.method} ${outcome.request.target.length > 160 ? `${outcome.request.target.slice(0, 160)}...` : outcome.request.target}\n${shown.map((l) => `  ${l}`).join('\n')}\n`);
}

function limitArg(text: string): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < 1 || Number(text) > 100_000) throw new InvalidArgumentError('expected a whole number from 1 to 100000.');
  return Number(text.trim());
}

/** A kept document (written by the service as JSON), or its text if it is not JSON. */
function document(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** One kept difference for a terminal: what was asked, and the diff (every line made safe to print). */
function printShadowDifference(io: CliIo, d: ShadowDifferenceRecord): void {
  const request = document(d.requestJson) as { method?: string; target?: string; headers?: Record<string, string>; body?: string };
  const lines = [
    `#${d.id}  ${d.at.toISOString()}  ${d.mode}  ${d.operation ?? '-'}  ${d.binding}`,
    `  ${request.method ?? '?'} ${request.target ?? '?'}`,
    ...Object.entries(request.headers ?? {}).map(([n, v]) => `  ${n}: ${v}`),
    ...(request.body === undefined || request.body === '' ? [] : [`  body: ${request.body.length > 400 ? `${request.body.slice(0, 400)}...` : request.body}`]),
    ...d.diff.replace(/\n$/, '').split('\n').map((l) => `  ${l}`),
    '',
  ];
  io.stdout.write(lines.map(displayText).join('\n') + '\n');
}

export function registerCompatCommands(program: Command, io: CliIo, setExitCode: (code: number) => void): void {
  const compat = program.command('compat').description('learn a legacy Authentication.asmx\'s choices into a compatibility profile, and compare svcapi-auth with it');

  compat.command('learn')
    .description('ask a live legacy service what its clients depend on and write a compatibility profile (JSON) for serve --compat')
    .requiredOption('--legacy <url>', 'the legacy service\'s URL, e.g. https://old.example/Authentication.asmx')
    .requiredOption('--login <login>', 'a real user of the legacy service')
    .option('--password-stdin', 'read that user\'s password from stdin (one trailing newline is removed)')
    .requiredOption('--app <appId>', 'an AppID the user may use', appIdArg)
    .option('--ip <address>', 'IPAddress to send with the logins (default none; GPS, AppID 2, needs none)')
    .option('--out <file>', 'write the profile here (default: standard output, the report on standard error)')
    .addOption(timeoutOption())
    .action(async (options: CommonOptions & { out?: string }) => {
      const password = await readPassword(io, { fromStdin: options.passwordStdin === true, confirm: false });
      const report = options.out === undefined ? io.stderr : io.stdout;
      let result;
      try {
        result = await learnProfile({ legacyUrl: options.legacy, login: options.login, password, appId: options.app, ipAddress: options.ip ?? '', limits: limitsOf(options.timeout) });
      } catch (error) {
        if (error instanceof LearnError) throw new CliError(error.message, error.kind === 'refused' ? 1 : EXIT_USAGE);
        throw error;
      }
      report.write(`Learned from ${options.legacy}:\n${result.learned.map((l) => `  ${l}\n`).join('')}`);
      if (result.wsdl !== null && result.wsdl.patch !== '') report.write(`WSDL differences (canonical form):\n${result.wsdl.patch}`);
      report.write(result.undecided.length === 0 ? 'Could not decide: nothing.\n' : `Could not decide:\n${result.undecided.map((l) => `  ${l}\n`).join('')}`);
      const text = `${JSON.stringify(result.profile, null, 2)}\n`;
      if (options.out === undefined) {
        io.stdout.write(text);
      } else {
        await writeFile(options.out, text, { mode: 0o644 }).catch((error: unknown) => {
          throw new CliError(`cannot write ${options.out}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
        });
        report.write(`Profile written to ${options.out} (use it with: svcapi-auth serve --compat ${options.out})\n`);
      }
    });

  compat.command('check')
    .description('send the same requests to the legacy service and to svcapi-auth and report every difference; exit 1 if any')
    .requiredOption('--legacy <url>', 'the legacy service\'s URL, e.g. https://old.example/Authentication.asmx')
    .requiredOption('--ours <url>', 'svcapi-auth\'s URL, e.g. http://127.0.0.1:8080/Authentication.asmx')
    .requiredOption('--login <login>', 'a user who exists on both sides with the same password')
    .option('--password-stdin', 'read that user\'s password from stdin (one trailing newline is removed)')
    .requiredOption('--app <appId>', 'an AppID the user may use on both sides', appIdArg)
    .option('--ip <address>', 'IPAddress to send with the logins (default none)')
    .option('--report <file>', 'also write a report: JSON if the name ends in .json, else Markdown')
    .addOption(timeoutOption())
    .action(async (options: CommonOptions & { ours: string; report?: string }) => {
      const password = await readPassword(io, { fromStdin: options.passwordStdin === true, confirm: false });
      let result;
      try {
        result = await runCheck(
          { legacyUrl: options.legacy, oursUrl: options.ours, login: options.login, password, appId: options.app, ipAddress: options.ip ?? '', limits: limitsOf(options.timeout) },
          (outcome) => {
            if (!outcome.same) printDifference(io, outcome);
          },
        );
      } catch (error) {
        if (error instanceof CheckError) throw new CliError(error.message, EXIT_USAGE);
        throw error;
      }
      if (options.report !== undefined) {
        const text = /\.json$/i.test(options.report) ? jsonReport(result) : markdownReport(result);
        await writeFile(options.report, text, { mode: 0o644 }).catch((error: unknown) => {
          throw new CliError(`cannot write ${options.report}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, EXIT_USAGE);
        });
        io.stdout.write(`Report written to ${options.report}\n`);
      }
      const accepted = acceptedDeviations(result);
      if (accepted.length > 0) io.stdout.write(`Accepted (svcapi-auth's deliberate deviations): ${accepted.map(([d, n]) => `${d} (${n})`).join('; ')}\n`);
      io.stdout.write(`${summaryLine(result)}\n`);
      setExitCode(result.different > 0 ? 1 : 0);
    });

  compat.command('shadow-report')
    .description('show the differences the shadow and front modes kept (newest first): the request and both answers, credentials as fingerprints')
    .option('--limit <n>', 'at most this many differences (default 20)', limitArg, 20)
    .option('--json', 'one JSON object per line, with both answers')
    .addOption(dbOption())
    .action(async (options: { limit: number; json?: boolean; db?: string }) => {
      const rows = await withStore(io, options.db, (store) => store.listShadowDifferences(options.limit));
      if (options.json === true) {
        for (const d of rows) {
          io.stdout.write(`${safeJson({
            id: d.id, at: d.at.toISOString(), mode: d.mode, operation: d.operation, binding: d.binding,
            request: document(d.requestJson), legacy: document(d.legacyJson), ours: document(d.oursJson), diff: d.diff,
          })}\n`);
        }
        return;
      }
      if (rows.length === 0) {
        io.stdout.write('No differences kept (shadow and front modes keep the last legacy.shadow.keep).\n');
        return;
      }
      for (const d of rows) printShadowDifference(io, d);
    });
}
