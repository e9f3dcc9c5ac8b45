/**
 * `svcapi-auth news import`: the legacy service's news, so that our WhatsNew gives the same rows
 * as its WhatsNew for the same AppID / Language / AppVersion / qtyNews.
 *
 *   news import --from-legacy URL --app ID [--language L ...] [--app-version V] [--qty N] [--compat FILE]
 *     asks the legacy's WhatsNew (SOAP 1.1) once per language (none: its default language) and
 *     stores each row it shows, read back through the profile's columns.
 *   news import --csv FILE --app ID [--compat FILE]
 *     reads a CSV export of the legacy news table whose header names the profile's columns (an
 *     empty field is DBNull).
 *
 * The profile (--compat, SVCAPI_COMPAT or the config file) must be the one the legacy's table
 * matches: its table and column names, types and DateTime form (read in --time-zone). The rules:
 * src/domain/news-import.ts (key, idempotence); the reading: src/wire/news-row-reader.ts.
 */
import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream';
import { parse } from 'csv-parse';
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { NewsTableProfile } from '../contract/compat-profile.js';
import type { Config } from '../config/config.js';
import { canonicalLanguage } from '../domain/languages.js';
import type { NewsFacts } from '../contract/compat-profile.js';
import { emptyNewsImportReport, importNewsFacts, type NewsImportReport } from '../domain/news-import.js';
import { fetchLegacyWhatsNew } from '../legacy/soap-legacy-news.js';
import { openStore, redactDatabaseUrl } from '../store/open-store.js';
import type { Application, Store } from '../store/store.js';
import { quoteUntrusted, type DataTableColumnInfo } from '../wire/datatable-reader.js';
import { compileNewsRowReader } from '../wire/news-row-reader.js';
import { recordCliAudit } from './audit-command.js';
import { appIdArg, collectText } from './cli-args.js';
import { readLegacyCa } from './legacy-passthrough.js';
import { CliError, EXIT_USAGE, type CliIo } from './cli-io.js';
import { cliConfig, dbOption } from './cli-store.js';
import { parseDuration } from './durations.js';

interface NewsImportOptions {
  readonly fromLegacy?: string;
  readonly csv?: string;
  readonly app: number;
  readonly language?: string[];
  readonly appVersion?: string;
  readonly qty?: number;
  readonly compat?: string;
  readonly timeZone?: string;
  readonly timeout?: number;
  readonly delimiter?: string;
  readonly db?: string;
}

function qtyArg(text: string): number {
  if (!/^\d{1,5}$/.test(text.trim()) || Number(text) < 1 || Number(text) > 10_000) throw new InvalidArgumentError('expected a number of rows from 1 to 10000.');
  return Number(text.trim());
}

function timeoutArg(text: string): number {
  const seconds = parseDuration(text);
  if (seconds === null || seconds < 1 || seconds > 3600) throw new InvalidArgumentError('expected a duration from 1s to 1h, like 30s or 2m.');
  return seconds * 1000;
}

function legacyUrlArg(text: string): string {
  if (!URL.canParse(text) || !/^https?:$/.test(new URL(text).protocol)) throw new InvalidArgumentError('expected an http(s) URL of the legacy Authentication.asmx.');
  return text;
}

function configFrom(io: CliIo, options: NewsImportOptions): Config {
  return cliConfig(io, { db: options.db, compat: options.compat, timeZone: options.timeZone });
}

/**
 * What differs between the legacy's columns and the profile's: a different table name stops the
 * import (the profile is not the legacy's); the rest are warnings.
 */
function compareColumns(profile: NewsTableProfile, tableName: string | null, columns: readonly DataTableColumnInfo[] | null, headerOnly: readonly string[] | null): string[] {
  if (tableName !== null && tableName !== profile.tableName) {
    throw new CliError(`the legacy's table is named ${quoteUntrusted(tableName)}, the compatibility profile's whatsNew.tableName is ${JSON.stringify(profile.tableName)}: give the profile the legacy's clients read (--compat)`);
  }
  const warnings: string[] = [];
  const theirs = new Map((columns ?? (headerOnly ?? []).map((name) => ({ name, type: null, xsdType: '' }))).map((c) => [c.name, c]));
  for (const column of profile.columns) {
    const found = theirs.get(column.name);
    if (found === undefined) warnings.push(`column ${column.name} of the profile is not in the legacy's ${columns === null ? 'header' : 'table'}: ${'const' in column.from ? 'nothing to compare' : 'its value is not imported'}`);
    else if (columns !== null && found.type !== column.type) warnings.push(`column ${column.name} is ${quoteUntrusted(found.xsdType)} in the legacy's table, ${column.type} in the profile`);
  }
  const ours = new Set(profile.columns.map((c) => c.name));
  for (const name of theirs.keys()) if (!ours.has(name)) warnings.push(`the legacy's column ${quoteUntrusted(name, 64)} is not in the profile: its values are not imported`);
  return warnings;
}

async function* csvRows(file: string, delimiter: string): AsyncGenerator<{ header: readonly string[]; cells: ReadonlyMap<string, string> }> {
  let header: string[] = [];
  const parser = parse({
    bom: true, delimiter, skip_empty_lines: true, relax_quotes: false,
    columns: (names: string[]) => {
      header = names.map((h) => h.trim());
      return header;
    },
  });
  pipeline(createReadStream(file), parser, () => undefined);
  try {
    for await (const record of parser as AsyncIterable<Record<string, string>>) {
      // An empty field is how a CSV export writes NULL: DBNull, no element.
      yield { header, cells: new Map(Object.entries(record).filter(([, v]) => v !== '')) };
    }
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new CliError(`cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : (error as Error).message}`);
  }
}

function printReport(io: CliIo, report: NewsImportReport, warnings: readonly string[]): void {
  const skipped = [...report.skipped.values()].reduce((a, b) => a + b, 0);
  io.stdout.write(`Imported ${report.added} news, ${report.alreadyPresent} already present, ${skipped} skipped\n`);
  for (const [reason, n] of report.skipped) io.stdout.write(`  skipped ${n}: ${reason}\n`);
  for (const [note, n] of report.notes) io.stdout.write(`  note (${n}): ${note}\n`);
  for (const warning of warnings) io.stderr.write(`warning: ${warning}\n`);
}

async function runImport(io: CliIo, options: NewsImportOptions): Promise<void> {
  if ((options.fromLegacy === undefined) === (options.csv === undefined)) throw new CliError('give exactly one of --from-legacy <url> and --csv <file>', EXIT_USAGE);
  if (options.csv !== undefined && (options.appVersion !== undefined || options.qty !== undefined || (options.language?.length ?? 0) > 1)) {
    throw new CliError('--app-version, --qty and more than one --language are for --from-legacy (a CSV holds the whole table)', EXIT_USAGE);
  }
  const languages = options.language ?? [];
  for (const l of languages) if (canonicalLanguage(l) === null) throw new CliError(`not a language tag: ${JSON.stringify(l)}`, EXIT_USAGE);
  const config = configFrom(io, options);
  const profile = config.compat.profile.whatsNew;
  const readRow = compileNewsRowReader(profile, config.timeZone);
  const keyedByNewsId = profile.columns.some((c) => 'field' in c.from && c.from.field === 'newsId');
  let store: Store;
  try {
    store = await openStore(config.databaseUrl);
  } catch (error) {
    throw new CliError(`cannot open the database ${redactDatabaseUrl(config.databaseUrl)}: ${(error as Error).message}`);
  }
  const report = emptyNewsImportReport();
  const warnings = new Set<string>();
  let failure: string | null = null;
  try {
    const app: Application | null = await store.getApplication(options.app);
    if (app === null) throw new CliError(`no application with AppID ${options.app} (add it first: svcapi-auth app add)`);
    const now = new Date();
    const ctxFor = (language: string): Parameters<typeof importNewsFacts>[2] => ({
      appId: app.appId, language: canonicalLanguage(language) ?? app.defaultLanguage, keyedByNewsId, now,
    });

    if (options.fromLegacy !== undefined) {
      // The CA serve trusts for the old service (legacy.caFile), for an https --from-legacy too.
      const ca = await readLegacyCa(config);
      const qty = options.qty ?? profile.maxRows ?? 100;
      for (const language of languages.length === 0 ? [''] : languages) {
        const answer = await fetchLegacyWhatsNew(
          { url: options.fromLegacy, ...(options.timeout !== undefined && { timeoutMs: options.timeout }), ...(ca !== undefined && { ca }) },
          { appId: app.appId, language, appVersion: options.appVersion ?? '', qtyNews: qty },
        );
        if (!answer.ok) {
          failure = `WhatsNew for Language ${JSON.stringify(language)}: ${answer.reason}`;
          break;
        }
        for (const w of compareColumns(profile, answer.table.tableName, answer.table.columns, null)) warnings.add(w);
        const rows: NewsFacts[] = answer.table.rows.map(readRow);
        await importNewsFacts(store, rows, ctxFor(language), report);
      }
    } else {
      const file = options.csv ?? '';
      const rows: NewsFacts[] = [];
      let header: readonly string[] | null = null;
      for await (const row of csvRows(file, options.delimiter ?? ',')) {
        header ??= row.header;
        rows.push(readRow(row.cells));
      }
      for (const w of compareColumns(profile, null, null, header ?? [])) warnings.add(w);
      await importNewsFacts(store, rows, ctxFor(languages[0] ?? ''), report);
    }
    if (report.added > 0) {
      await recordCliAudit(store, io, {
        type: 'admin.news.import', appId: app.appId,
        detail: { source: options.csv === undefined ? 'legacy' : 'csv', added: report.added, alreadyPresent: report.alreadyPresent, skipped: [...report.skipped.values()].reduce((a, b) => a + b, 0) },
      });
    }
  } finally {
    await store.close();
  }
  printReport(io, report, [...warnings]);
  if (failure !== null) throw new CliError(`${failure}; stopped (what is listed above was imported; running the command again adds only what is missing)`);
}

export function registerNewsImport(news: Command, io: CliIo): void {
  news.command('import')
    .description('import the legacy service\'s news so WhatsNew answers with the same rows: from its WhatsNew (SOAP 1.1) or from a CSV export of its news table')
    .addOption(new Option('--from-legacy <url>', 'the legacy Authentication.asmx URL to ask WhatsNew').argParser(legacyUrlArg))
    .option('--csv <file>', 'a CSV export of the legacy news table, with a header row naming the profile\'s columns')
    .requiredOption('--app <appId>', 'the application (AppID) the news are for; it must exist here', appIdArg)
    .option('--language <tag>', 'ask WhatsNew in this language (repeat for several; default: the legacy\'s default language)', collectText)
    .option('--app-version <version>', 'AppVersion to ask WhatsNew with (default empty)')
    .option('--qty <n>', 'qtyNews to ask WhatsNew for (default the profile\'s maxRows, else 100)', qtyArg)
    .addOption(new Option('--compat <file>', 'the compatibility profile the legacy\'s table matches (env SVCAPI_COMPAT; docs/compat-profile.md)'))
    .addOption(new Option('--time-zone <zone>', 'IANA zone of DateTimes written without an offset (env SVCAPI_TIME_ZONE; default the machine\'s)'))
    .option('--timeout <duration>', 'the longest a WhatsNew call may take (default 30s)', timeoutArg)
    .option('--delimiter <char>', 'CSV field separator (default ,)')
    .addOption(dbOption())
    .action(async (options: NewsImportOptions) => runImport(io, options));
}
