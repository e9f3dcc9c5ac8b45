/**
 * Commands migrating from the legacy system while keeping users' passwords:
 *
 *   svcapi-auth import membership <file.csv>  aspnet_Users + aspnet_Membership rows
 *   svcapi-auth import identity <file.csv>    AspNetUsers rows
 *   svcapi-auth import users <file.jsonl>     PHC / MCF hashes (argon2, bcrypt, scrypt, PBKDF2)
 *   svcapi-auth user migration-report         users per password hash format, token passthrough's counts (also `users ...`)
 *
 * The rules live in domain/legacy-import.ts and domain/migration-report.ts; this file reads the
 * files (CSV through csv-parse, JSON lines) and prints the reports. See docs/migration.md.
 */
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream';
import { parse } from 'csv-parse';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { createPasswordHasher } from '../domain/composite-password-hasher.js';
import {
  importUsers, type CsvRow, type FormatCounts, type ImportOptions, type ImportReport, type ImportSource, type JsonRow,
} from '../domain/legacy-import.js';
import { MEMBERSHIP_ALGORITHMS, parseMachineKey, parseMembershipAlgorithm, type MachineKey, type MembershipAlgorithm } from '../domain/legacy-hashes/aspnet-membership.js';
import { migrationReport, type PassthroughReport } from '../domain/migration-report.js';
import { importLegacyTokens, missingTokenColumns } from '../domain/legacy-token-import.js';
import { systemClock } from '../domain/clock.js';
import { appIdArg, collecting } from './cli-args.js';
import { dbOption, withStore } from './cli-store.js';
import { CliError, type CliIo } from './cli-io.js';
import { recordCliAudit } from './audit-command.js';

/** Where the machine key may come from besides a file: never the command line. */
export const DECRYPTION_KEY_ENV = 'SVCAPI_DECRYPTION_KEY';

const REQUIRED_COLUMNS: Record<'membership' | 'identity', readonly string[]> = {
  membership: ['username', 'password', 'passwordformat', 'passwordsalt'],
  identity: ['username', 'passwordhash'],
};
const requiredColumns = (source: 'membership' | 'identity') => (names: readonly string[]): string[] => REQUIRED_COLUMNS[source].filter((c) => !names.includes(c));

function algorithmArg(text: string): MembershipAlgorithm {
  const algorithm = parseMembershipAlgorithm(text);
  if (algorithm === null) throw new InvalidArgumentError(`expected one of ${MEMBERSHIP_ALGORITHMS.join(', ')}.`);
  return algorithm;
}

function delimiterArg(text: string): string {
  if (text.toLowerCase() === 'tab' || text === '\\t') return '\t';
  if (text.length !== 1) throw new InvalidArgumentError('expected one character, or "tab".');
  return text;
}

/** The `<machineKey>` from --decryption-key-file or the environment; null without one. */
async function machineKeyFrom(io: CliIo, options: { decryption: string; decryptionKeyFile?: string }): Promise<MachineKey | null> {
  let hex: string | undefined;
  if (options.decryptionKeyFile !== undefined) {
    hex = await readFile(options.decryptionKeyFile, 'utf8').catch((error: unknown) => {
      throw new CliError(`cannot read --decryption-key-file: ${(error as Error).message}`);
    });
  } else if ((io.env[DECRYPTION_KEY_ENV] ?? '') !== '') {
    hex = io.env[DECRYPTION_KEY_ENV];
  }
  if (hex === undefined) return null;
  const key = parseMachineKey(options.decryption, hex);
  if (typeof key === 'string') throw new CliError(key);
  return key;
}

/** CSV rows with lower-cased column names, checked to have what the source needs. */
async function* csvRows(file: string, missingColumns: (names: readonly string[]) => string[], delimiter: string): AsyncGenerator<CsvRow> {
  let missing: string[] = [];
  const input = createReadStream(file);
  const parser = parse({
    bom: true,
    delimiter,
    skip_empty_lines: true,
    info: true,
    columns: (header: string[]) => {
      const names = header.map((h) => h.trim().toLowerCase());
      missing = missingColumns(names);
      return names;
    },
  });
  // pipeline carries a read error (no such file...) into the parser, and so into the loop below.
  pipeline(input, parser, () => undefined);
  // csv-parse tells where a record ends; a record starts after the previous one and any blank lines.
  let previousEnd = 1;
  let previousEmpty = 0;
  try {
    for await (const item of parser as AsyncIterable<{ record: Record<string, string>; info: { lines: number; empty_lines: number } }>) {
      if (missing.length > 0) break;
      const line = previousEnd + 1 + (item.info.empty_lines - previousEmpty);
      previousEnd = item.info.lines;
      previousEmpty = item.info.empty_lines;
      yield { line, fields: item.record };
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EISDIR' || code === 'EACCES') throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
    throw new CliError(`${file} is not readable CSV: ${(error as Error).message}`);
  } finally {
    input.destroy();
  }
  if (missing.length > 0) {
    throw new CliError(`${file} lacks the column(s) ${missing.join(', ')} (a header line is required; names are case-insensitive)`);
  }
}

async function* jsonLines(file: string): AsyncGenerator<JsonRow> {
  const input = createReadStream(file, { encoding: 'utf8' });
  const lines = createInterface({ input, crlfDelay: Infinity });
  let line = 0;
  try {
    for await (const text of lines) {
      line += 1;
      if (text.trim() === '') continue;
      try {
        yield { line, value: JSON.parse(text) as unknown };
      } catch (error) {
        yield { line, value: null, error: `not JSON: ${(error as Error).message}` };
      }
    }
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
  } finally {
    lines.close();
  }
}

const SOURCE_TITLE: Record<ImportSource, string> = {
  membership: 'ASP.NET Membership',
  identity: 'ASP.NET Identity',
  users: 'Users (PHC / MCF hashes)',
};

function skippedText(c: FormatCounts): string {
  const parts = Object.entries(c.skipped).map(([reason, n]) => `${reason} ${n}`);
  const total = Object.values(c.skipped).reduce((a, b) => a + (b ?? 0), 0);
  return parts.length === 0 ? '0' : `${total} (${parts.join(', ')})`;
}

const ROWS_SHOWN_PER_OUTCOME = 50;

function printReport(io: CliIo, file: string, report: ImportReport): void {
  const out = (text: string): void => {
    io.stdout.write(`${text}\n`);
  };
  out(`${SOURCE_TITLE[report.source]} import from ${file}: ${report.rows} row(s)${report.dryRun ? ' -- DRY RUN, nothing was written; the counts say what an import would do' : ''}`);
  const headers = ['FORMAT', 'IMPORTED', 'NEEDS-RESET', 'UPDATED', 'SKIPPED'];
  const rows = Object.entries(report.formats).sort(([a], [b]) => a.localeCompare(b))
    .map(([format, c]) => [format, String(c.imported), String(c.needsReset), String(c.updated), skippedText(c)]);
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  for (const cells of [headers, ...rows]) out(cells.map((c, i) => (i === 0 || i === 4 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ').trimEnd());
  if (report.notable.length > 0) {
    out('');
    out('Rows not simply imported:');
    // A re-run reports every row as "exists": list the first few of each outcome, --json has them all.
    const shown = new Map<string, number>();
    for (const r of report.notable) {
      const n = (shown.get(r.outcome) ?? 0) + 1;
      shown.set(r.outcome, n);
      if (n <= ROWS_SHOWN_PER_OUTCOME) out(`  line ${r.line}  ${JSON.stringify(r.login)}  ${r.format}  ${r.outcome}${r.detail === undefined ? '' : `: ${r.detail}`}`);
    }
    for (const [outcome, n] of shown) {
      if (n > ROWS_SHOWN_PER_OUTCOME) out(`  ... and ${n - ROWS_SHOWN_PER_OUTCOME} more ${outcome} (--json lists every row)`);
    }
  }
  const needsReset = Object.values(report.formats).reduce((n, c) => n + c.needsReset, 0);
  if (needsReset > 0) {
    out('');
    out(`${needsReset} user(s) have no usable password: set one with "svcapi-auth user passwd <login>", run the import again with the`);
    out('machine key (--decryption-key-file), or let the old service vouch for them at their next login (legacy.url; docs/migration.md#4-side-by-side-with-the-old-service).');
  }
}

interface CommonOptions {
  app?: number[];
  dryRun?: boolean;
  json?: boolean;
  db?: string;
}

async function runImport(io: CliIo, source: ImportSource, file: string, options: CommonOptions, extra: ImportOptions, rows: AsyncIterable<CsvRow | JsonRow>): Promise<void> {
  const report = await withStore(io, options.db, async (store) => {
    const done = await importUsers({ store, hasher: createPasswordHasher() }, source, rows, { ...extra, appIds: options.app ?? [], dryRun: options.dryRun === true });
    // Audit: one summary event per import that wrote something (a dry run changes nothing).
    if (!done.dryRun) {
      const total = (pick: (c: FormatCounts) => number): number => Object.values(done.formats).reduce((n, c) => n + pick(c), 0);
      await recordCliAudit(store, io, {
        type: 'admin.import-legacy',
        detail: { source, file, rows: done.rows, imported: total((c) => c.imported), needsReset: total((c) => c.needsReset), updated: total((c) => c.updated) },
      });
    }
    return done;
  });
  if (options.json === true) io.stdout.write(`${JSON.stringify(report)}\n`);
  else printReport(io, file, report);
}

interface CsvOptions extends CommonOptions {
  hashAlgorithm: MembershipAlgorithm;
  decryption: string;
  decryptionKeyFile?: string;
  delimiter: string;
}

/**
 * `--db` wherever it was written: a parent command that has its own `--db` (the export `import`)
 * takes the option even after the subcommand's name, so look there too.
 */
function withDb<T extends { db?: string }>(options: T, command: Command): T {
  const db = options.db ?? (command.optsWithGlobals() as { db?: string }).db;
  return db === undefined ? options : { ...options, db };
}

const appOption = (): Option => new Option('--app <appId>', 'grant this application to every imported user (repeat for several), besides the Applications column').argParser(collecting(appIdArg));
const dryRunOption = (): Option => new Option('--dry-run', 'decide every row and print the report, but write nothing');
const jsonOption = (): Option => new Option('--json', 'print the report as one JSON object');
const delimiterOption = (): Option => new Option('--delimiter <char>', 'CSV field separator: one character, or "tab"').argParser(delimiterArg).default(',');
const algorithmOption = (forWhat: string): Option => new Option('--hash-algorithm <name>', `the old membership hashAlgorithmType${forWhat}: ${MEMBERSHIP_ALGORITHMS.join(', ')}`).argParser(algorithmArg).default('SHA1');
const decryptionOption = (): Option => new Option('--decryption <algorithm>', 'the old <machineKey decryption>, for Encrypted passwords: AES or 3DES').default('AES');
const keyFileOption = (): Option => new Option('--decryption-key-file <path>', `file holding the old <machineKey decryptionKey> in hex (or env ${DECRYPTION_KEY_ENV}; never an argument)`);

/** The legacy sources, as subcommands of `import` (whose own argument is an svcapi-auth export: export-import.ts). */
export function registerLegacyImports(importCommand: Command, io: CliIo): void {

  // The two ASP.NET CSV sources differ only in their columns and in what the hash algorithm option applies to.
  const csvSources = [
    {
      source: 'membership',
      description: 'import ASP.NET Membership users (aspnet_Users + aspnet_Membership as CSV), keeping their passwords',
      columns: 'CSV with a header: UserName, Password, PasswordFormat, PasswordSalt, IsApproved, IsLockedOut[, Applications]',
      algorithmOf: '',
    },
    {
      source: 'identity',
      description: 'import ASP.NET Identity users (AspNetUsers as CSV), keeping their passwords',
      columns: 'CSV with a header: UserName, PasswordHash[, LockoutEnd or LockoutEndDateUtc, LockoutEnabled, Applications]',
      algorithmOf: ' of Membership "hash|format|salt" triplets',
    },
  ] as const;
  for (const { source, description, columns, algorithmOf } of csvSources) {
    importCommand.command(source)
      .description(description)
      .argument('<file>', columns)
      .addOption(algorithmOption(algorithmOf))
      .addOption(decryptionOption())
      .addOption(keyFileOption())
      .addOption(appOption())
      .addOption(delimiterOption())
      .addOption(dryRunOption())
      .addOption(jsonOption())
      .addOption(dbOption())
      .action(async (file: string, options: CsvOptions, command: Command) => {
        const machineKey = await machineKeyFrom(io, options);
        await runImport(io, source, file, withDb(options, command), { hashAlgorithm: options.hashAlgorithm, machineKey }, csvRows(file, requiredColumns(source), options.delimiter));
      });
  }

  importCommand.command('users')
    .description('import users with PHC / MCF password hashes (argon2, bcrypt, scrypt, PBKDF2) from JSON lines')
    .argument('<file>', 'one JSON object a line: {"login": "...", "passwordHash": "...", "enabled": true, "appIds": [2]}')
    .addOption(appOption())
    .addOption(dryRunOption())
    .addOption(jsonOption())
    .addOption(dbOption())
    .action(async (file: string, options: CommonOptions, command: Command) => {
      await runImport(io, 'users', file, withDb(options, command), {}, jsonLines(file));
    });

  importCommand.command('tokens')
    .description('carry the old service\'s live tokens across the switch: stored as SHA-256 hashes, valid until their own expiry')
    .argument('<file>', 'CSV with a header: Token, Login (or UserName), AppID, ExpiresAt [, IssuedAt]; times ISO 8601, or yyyy-mm-dd hh:mi:ss in UTC')
    .addOption(delimiterOption())
    .addOption(dryRunOption())
    .addOption(jsonOption())
    .addOption(dbOption())
    .action(async (file: string, options: CommonOptions & { delimiter: string }, command: Command) => {
      const report = await withStore(io, withDb(options, command).db, async (store) => {
        const done = await importLegacyTokens({ store, clock: systemClock }, csvRows(file, missingTokenColumns, options.delimiter), { dryRun: options.dryRun === true });
        if (!done.dryRun) {
          await recordCliAudit(store, io, { type: 'admin.import-tokens', detail: { file, rows: done.rows, imported: done.imported, alreadyPresent: done.alreadyPresent, expired: done.expired, skipped: done.skipped.length } });
        }
        return done;
      });
      if (options.json === true) {
        io.stdout.write(`${JSON.stringify(report)}\n`);
        return;
      }
      const out = (text: string): void => {
        io.stdout.write(`${text}\n`);
      };
      out(`Legacy tokens from ${file}: ${report.rows} row(s)${report.dryRun ? ' -- DRY RUN, nothing was written' : ''}`);
      out(`  imported ${report.imported}, already here ${report.alreadyPresent}, expired (not imported) ${report.expired}, skipped ${report.skipped.length}`);
      for (const skip of report.skipped.slice(0, ROWS_SHOWN_PER_OUTCOME)) {
        out(`  line ${skip.line}  ${skip.login === null ? '-' : JSON.stringify(skip.login)}  AppID ${skip.appId ?? '-'}  ${skip.reason}`);
      }
      if (report.skipped.length > ROWS_SHOWN_PER_OUTCOME) out(`  ... and ${report.skipped.length - ROWS_SHOWN_PER_OUTCOME} more (--json lists every row)`);
      if (!report.dryRun) out(`The file holds live tokens: delete it now (tokens are stored here only as hashes).`);
    });

}

/**
 * `user migration-report` (also `users migration-report`): the password hash formats and what
 * becomes of each; the live sessions the old service issued; token passthrough's counts.
 */
export function registerMigrationReport(userCommand: Command, io: CliIo): void {
  userCommand.command('migration-report')
    .description('how many users are on each password hash format (legacy formats are upgraded to argon2id at the next login), and what token passthrough counted')
    .option('--json', 'print the report as one JSON object')
    .addOption(dbOption())
    .action(async (options: { json?: boolean; db?: string }, command: Command) => {
      const report = await withStore(io, withDb(options, command).db, (store) => migrationReport(store, createPasswordHasher()));
      if (options.json === true) {
        io.stdout.write(`${JSON.stringify(report)}\n`);
        return;
      }
      const headers = ['FORMAT', 'USERS', 'STATUS'];
      const status = { 'current': 'current', 'upgraded-on-login': 'upgraded to argon2id at the next login', 'cannot-log-in': 'no usable password: needs a reset (or the legacy service)' };
      const rows = report.formats.map((f) => [f.format, String(f.users), status[f.status]]);
      const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
      for (const cells of [headers, ...rows]) {
        io.stdout.write(`${cells.map((c, i) => (i === 1 ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0))).join('  ').trimEnd()}\n`);
      }
      io.stdout.write(`Total: ${report.users} user(s); ${report.migratedByLegacyService} migrated through the legacy service at their first login\n`);
      io.stdout.write(`Live sessions issued by the legacy service (import tokens, token adoption): ${report.legacyTokensLive}\n`);
      for (const line of passthroughLines(report.passthrough)) io.stdout.write(`${line}\n`);
    });
}

/**
 * The passthrough section of the text report: the results counted in the last 30 days (every
 * `serve` on the database, written about once a minute), and when an old token was last vouched for.
 */
export function passthroughLines(p: PassthroughReport): string[] {
  const rows = ([['check', p.checks], ['relay', p.relays], ['adoption', p.adoptions]] as const)
    .flatMap(([kind, counts]) => counts.filter((c) => c.last30Days > 0).map((c) => [kind, c.result, String(c.last7Days), String(c.last30Days)]));
  const lines = [`Token passthrough, every instance on this database (UTC days to ${p.today}; serve writes its counts about once a minute):`];
  if (rows.length === 0) lines.push('  nothing counted in the last 30 days');
  else {
    const headers = ['KIND', 'RESULT', 'LAST 7 DAYS', 'LAST 30 DAYS'];
    const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
    for (const cells of [headers, ...rows]) lines.push(`  ${cells.map((c, i) => (i >= 2 ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0))).join('  ').trimEnd()}`);
  }
  lines.push(`Last vouched-for legacy token: ${p.lastVouchedAt === null ? 'never' : `${p.lastVouchedAt.toISOString()} (${p.lastVouchedDaysAgo ?? 0} days ago)`}`);
  return lines;
}
