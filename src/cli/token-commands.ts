/** `svcapi-auth token list|revoke`: issued tokens through the admin service (never a token itself: fingerprints). */
import type { Command } from 'commander';
import { quoted } from '../domain/display-text.js';
import { CliError, EXIT_USAGE, type CliIo } from './cli-io.js';
import { iso, jsonLines, table } from './cli-output.js';
import { dbOption } from './cli-store.js';
import { unwrap, withAdmin } from './with-admin.js';

export function registerTokenCommands(program: Command, io: CliIo): void {
  const token = program.command('token').description('manage issued tokens');
  token.command('list')
    .description('list a user\'s live sessions (the ID is a fingerprint of the token, never the token; ORIGIN: ours, or legacy if `import tokens` brought it or token adoption stored it)')
    .requiredOption('--user <login>', 'the user')
    .option('--json', 'one JSON object per line')
    .addOption(dbOption())
    .action(async (options: { user: string; json?: boolean; db?: string }) => {
      const sessions = await withAdmin(io, options, async (admin) => unwrap(await admin.listSessions(options.user)));
      if (options.json === true) return jsonLines(io, sessions);
      table(io, ['ID', 'APP', 'ISSUED', 'LAST-USED', 'EXPIRES', 'SOURCE', 'CLIENT-IP', 'ORIGIN'], sessions.map((t) => [
        t.id, String(t.appId), iso(t.issuedAt), iso(t.lastUsedAt), iso(t.expiresAt), t.sourceIp ?? '-', t.clientIp ?? '-', t.origin,
      ]));
    });
  token.command('revoke')
    .description('revoke tokens at once: one session by its ID (token list), one user\'s, or everybody\'s')
    .argument('[id]', 'the session\'s ID as `token list` shows it (with --user: only if it is that user\'s)')
    .option('--user <login>', 'revoke this user\'s tokens (with an ID: the user the session must belong to)')
    .option('--all', 'revoke every token')
    .addOption(dbOption())
    .action(async (id: string | undefined, options: { user?: string; all?: boolean; db?: string }) => {
      if (id !== undefined) {
        if (options.all === true) throw new CliError('give an ID or --all, not both', EXIT_USAGE);
        const revoked = await withAdmin(io, options, async (admin) => unwrap(await admin.revokeSession(id, options.user)));
        io.stdout.write(`Revoked session ${revoked.id} of ${revoked.login === null ? `user id ${revoked.userId}` : quoted(revoked.login)} (AppID ${revoked.appId})\n`);
        return;
      }
      if ((options.user === undefined) === (options.all !== true)) throw new CliError('give a session ID, or exactly one of --user <login> and --all', EXIT_USAGE);
      const count = await withAdmin(io, options, async (admin) => unwrap(await admin.revokeTokens(options.all === true ? { all: true } : { login: options.user ?? '' })));
      io.stdout.write(`Revoked ${count} token(s)\n`);
    });
}
