/** `svcapi-auth news add|list|remove`: WhatsNew items through the admin service (`news import` is news-import.ts). */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { NewsRecord } from '../store/store.js';
import { displayText } from '../domain/display-text.js';
import { CliError, EXIT_USAGE, type CliIo } from './cli-io.js';
import { collectAttribute, integerArg } from './cli-args.js';
import { iso, jsonLines, table, yesNo } from './cli-output.js';
import { dbOption } from './cli-store.js';
import { dateArg } from './dates.js';
import { unwrap, withAdmin, type DbOptions } from './with-admin.js';

/** Attributes as one cell of `news list`: key=value pairs, `;`-separated, keys in order. */
function attributesCell(attributes: Readonly<Record<string, string>>): string {
  const pairs = Object.entries(attributes).map(([k, v]) => `${k}=${v}`);
  return pairs.length === 0 ? '-' : pairs.join(';');
}

/** Registers `news` and its commands; returns it for the commands other modules add (import). */
export function registerNewsCommands(program: Command, io: CliIo): Command {
  const news = program.command('news').description('manage WhatsNew items');
  news.command('add')
    .description('add a news item')
    .requiredOption('--app <appId>', 'AppID', integerArg)
    .requiredOption('--title <text>', 'title')
    .option('--body <text>', 'body text')
    .option('--body-file <path>', 'read the body from a UTF-8 file')
    .option('--language <tag>', 'language tag, e.g. pt-BR (default: the application\'s default language)')
    .option('--url <url>', 'link shown with the item')
    .option('--published-at <date>', 'publication time, ISO 8601 (default now; a future time schedules it)', dateArg)
    .option('--expires-at <date>', 'hide it from this time on, ISO 8601', dateArg)
    .option('--min-version <version>', 'only for AppVersion >= this (dotted numbers)')
    .option('--max-version <version>', 'only for AppVersion <= this (dotted numbers)')
    .option('--members-only', 'only shown when AppToken is a valid token for the application')
    .option('--attr <key=value>', 'an extra value for a WhatsNew column of the compatibility profile (repeat for several)', collectAttribute)
    .addOption(dbOption())
    .action(async (options: {
      app: number; title: string; body?: string; bodyFile?: string; language?: string; url?: string; publishedAt?: Date;
      expiresAt?: Date; minVersion?: string; maxVersion?: string; membersOnly?: boolean; attr?: Record<string, string>; db?: string;
    }) => {
      if ((options.body === undefined) === (options.bodyFile === undefined)) throw new CliError('give exactly one of --body and --body-file', EXIT_USAGE);
      const body = options.body ?? await readFile(options.bodyFile ?? '', 'utf8').catch((error: unknown) => {
        throw new CliError(`cannot read --body-file: ${(error as Error).message}`);
      });
      const created = await withAdmin(io, options, async (admin) => unwrap(await admin.addNews({
        appId: options.app, title: options.title, body, language: options.language, url: options.url ?? null,
        publishedAt: options.publishedAt, expiresAt: options.expiresAt ?? null,
        minVersion: options.minVersion ?? null, maxVersion: options.maxVersion ?? null, membersOnly: options.membersOnly === true,
        ...(options.attr !== undefined && { attributes: options.attr }),
      })));
      io.stdout.write(`Added news ${created.newsId} for AppID ${created.appId} (${displayText(created.language)}): ${displayText(created.title)}\n`);
    });
  news.command('list')
    .description('list news items, newest first')
    .option('--app <appId>', 'only this AppID', integerArg)
    .option('--json', 'one JSON object per line')
    .addOption(dbOption())
    .action(async (options: { app?: number; json?: boolean; db?: string }) => {
      const items: readonly NewsRecord[] = await withAdmin(io, options, async (admin) => unwrap(await admin.listNews(options.app === undefined ? {} : { appId: options.app })));
      if (options.json === true) return jsonLines(io, items);
      table(io, ['ID', 'APPID', 'LANG', 'PUBLISHED', 'EXPIRES', 'VERSIONS', 'MEMBERS', 'ATTRIBUTES', 'TITLE'], items.map((n) => [
        String(n.newsId), String(n.appId), n.language, iso(n.publishedAt), iso(n.expiresAt),
        n.minVersion === null && n.maxVersion === null ? 'all' : `${n.minVersion ?? '*'}..${n.maxVersion ?? '*'}`,
        yesNo(n.membersOnly), attributesCell(n.attributes), n.title,
      ]));
    });
  news.command('remove')
    .description('delete a news item')
    .argument('<newsId>', 'id shown by news list', integerArg)
    .addOption(dbOption())
    .action(async (newsId: number, options: DbOptions) => {
      const removed = await withAdmin(io, options, async (admin) => unwrap(await admin.removeNews(newsId)));
      io.stdout.write(`Removed news ${removed.newsId}: ${displayText(removed.title)}\n`);
    });
  return news;
}
