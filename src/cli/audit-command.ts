/**
 * The audit trail on the command line:
 *
 *   svcapi-auth audit [--login L] [--type T] [--app N] [--since D] [--until D] [--limit 100] [--before ID] [--json]
 *
 * newest first, a table by default. Also the CLI's own audit recorder: admin commands run in a
 * short-lived process, so their events go straight to the database (no buffer), with the
 * operator (`cli:<OS user>`) in detail.actor.
 */
import { userInfo } from 'node:os';
import { InvalidArgumentError, type Command } from 'commander';
import { isLoginFingerprint, loginFingerprint, toAuditEvent, type AuditRecorder } from '../domain/audit.js';
import { displayText, safeJson } from '../domain/display-text.js';
import { loadLoginFingerprintKey } from '../ops/audit-trail.js';
import type { AuditQuery, AuditRecord, Store } from '../store/store.js';
import type { CliIo } from './cli-io.js';
import { dbOption, withStore } from './cli-store.js';
import { dateArg } from './dates.js';

/** Who runs this command, for the audit trail: `cli:<OS user>`, or `cli` when the OS will not say. */
export function cliActor(): string {
  try {
    const name = userInfo().username;
    return name === '' ? 'cli' : `cli:${name}`;
  } catch {
    return 'cli';
  }
}

/**
 * Records an admin event at once in the database. A failure is reported on stderr and does not
 * fail the command: the change it describes has already been made.
 */
export function storeAuditRecorder(store: Pick<Store, 'appendAudit'>, io: CliIo): AuditRecorder {
  return async (input) => {
    try {
      await store.appendAudit([toAuditEvent(input)]);
    } catch (error) {
      io.stderr.write(`warning: the change was made, but its audit event (${input.type}) could not be recorded: ${(error as Error).message}\n`);
    }
  };
}

/** Records one admin event with the operator as actor (summary events of export / import). */
export async function recordCliAudit(store: Pick<Store, 'appendAudit'>, io: CliIo, input: Parameters<AuditRecorder>[0]): Promise<void> {
  await storeAuditRecorder(store, io)({ ...input, detail: { actor: cliActor(), ...input.detail } });
}

function positiveArg(max: number): (text: string) => number {
  return (text) => {
    if (!/^\d+$/.test(text.trim()) || Number(text) < 1 || Number(text) > max) throw new InvalidArgumentError(`expected a whole number from 1 to ${max}.`);
    return Number(text.trim());
  };
}

function typeArg(text: string): string {
  if (!/^[a-z][a-z.-]*\*?$/.test(text.trim())) throw new InvalidArgumentError('expected an event type like login.failure, or a prefix ending in * like admin.*');
  return text.trim();
}

const cell = (value: string | number | null): string => (value === null ? '-' : String(value));

function printTable(io: CliIo, rows: readonly AuditRecord[]): void {
  const headers = ['ID', 'TIME (UTC)', 'TYPE', 'REASON', 'APPID', 'LOGIN', 'SOURCE', 'CLAIMED-IP', 'TOKEN', 'REQUEST', 'DETAIL'];
  // Request text was escaped when it was recorded; displayText also covers rows written otherwise (admin details).
  const cells = rows.map((r) => [
    String(r.id), r.at.toISOString(), r.type, cell(r.reason), cell(r.appId), cell(r.login), cell(r.sourceIp), cell(r.claimedIp),
    cell(r.tokenFp), cell(r.requestId), r.detail === null ? '-' : JSON.stringify(r.detail),
  ].map(displayText));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] ?? '').length)));
  const line = (values: readonly string[]): string => values.map((v, i) => v.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  io.stdout.write(`${line(headers)}\n`);
  for (const row of cells) io.stdout.write(`${line(row)}\n`);
}

interface AuditOptions {
  login?: string;
  type?: string;
  app?: number;
  since?: Date;
  until?: Date;
  limit: number;
  before?: number;
  json?: boolean;
  db?: string;
}

export function registerAuditCommand(program: Command, io: CliIo): void {
  program.command('audit')
    .description('show the audit trail, newest first: logins, tokens and tickets issued, tickets used, admin changes')
    .option('--login <login>', 'only events about this login (case-insensitive): a user\'s login, the text of an unknown login, or its fingerprint (unknown:...)')
    .option('--type <type>', 'only this event type (login.failure, admin.user.disable...), or a prefix ending in * (admin.*)', typeArg)
    .option('--app <appId>', 'only events about this AppID', positiveArg(2147483647))
    .option('--since <date>', 'events at or after this time, ISO 8601 (a bare date is UTC midnight)', dateArg)
    .option('--until <date>', 'events before this time, ISO 8601', dateArg)
    .option('--limit <n>', 'at most this many events (default 100)', positiveArg(100_000), 100)
    .option('--before <id>', 'only events older than this id (the next page)', positiveArg(Number.MAX_SAFE_INTEGER))
    .option('--json', 'one JSON object per line')
    .addOption(dbOption())
    .action(async (options: AuditOptions) => {
      let query: AuditQuery = {
        limit: options.limit,
        ...(options.login !== undefined && { login: isLoginFingerprint(options.login) ? options.login.trim().toLowerCase() : options.login }),
        ...(options.type !== undefined && (options.type.endsWith('*') ? { typePrefix: options.type.slice(0, -1) } : { type: options.type })),
        ...(options.app !== undefined && { appId: options.app }),
        ...(options.since !== undefined && { since: options.since }),
        ...(options.until !== undefined && { until: options.until }),
        ...(options.before !== undefined && { beforeId: options.before }),
      };
      const rows = await withStore(io, options.db, async (store) => {
        // An unknown login is recorded only as its keyed fingerprint: look for that as well.
        if (options.login !== undefined && !isLoginFingerprint(options.login)) {
          query = { ...query, loginFp: loginFingerprint(await loadLoginFingerprintKey(store), options.login) };
        }
        return store.queryAudit(query);
      });
      if (options.json === true) {
        for (const r of rows) io.stdout.write(`${safeJson({ ...r, at: r.at.toISOString() })}\n`);
        return;
      }
      printTable(io, rows);
    });
}
