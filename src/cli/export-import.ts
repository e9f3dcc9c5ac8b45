/**
 * `svcapi-auth export` / `svcapi-auth import`: the data of one database as JSON lines, and back
 * into another (see domain/data-transfer.ts for the format and the rules).
 */
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import { exportData, importData, ImportError, RECORD_TYPES, type TransferCounts } from '../domain/data-transfer.js';
import { CliError, type CliIo } from './cli-io.js';
import { recordCliAudit } from './audit-command.js';
import { dbOption, withStore } from './cli-store.js';

/** Writes respecting back-pressure, so a large export does not pile up in memory. */
function lineWriter(stream: NodeJS.WritableStream): (line: string) => Promise<void> {
  return async (line) => {
    if (!stream.write(`${line}\n`)) await once(stream, 'drain');
  };
}

const summary = (counts: TransferCounts): string => RECORD_TYPES.map((t) => `${counts[t]} ${t === 'news' ? 'news' : `${t}s`}`).join(', ');

/** Registers `export` and `import`; returns `import`, under which the legacy sources go (import-legacy.ts). */
export function registerExportImport(program: Command, io: CliIo): Command {

  program.command('export')
    .description('write applications, users (with password hashes), news and live tokens (as hashes) as JSON lines')
    .option('-o, --output <file>', 'write to this file (created readable by its owner only) instead of standard output')
    .addOption(dbOption())
    .action(async (options: { output?: string; db?: string }) => {
      const counts = await withStore(io, options.db, async (store) => {
        let file: WriteStream | undefined;
        if (options.output !== undefined) {
          file = createWriteStream(options.output, { mode: 0o600, flags: 'wx' });
          await once(file, 'open').catch((error: unknown) => {
            throw new CliError(`cannot create ${options.output}: ${(error as Error).message}`);
          });
        }
        try {
          const exported = await exportData(store, lineWriter(file ?? io.stdout), new Date());
          // Audit: an export carries password hashes; who took one is recorded.
          await recordCliAudit(store, io, { type: 'admin.export', detail: { output: options.output ?? 'stdout', counts: exported } });
          return exported;
        } finally {
          if (file !== undefined) {
            file.end();
            await once(file, 'close');
          }
        }
      });
      io.stderr.write(`Exported ${summary(counts)}\n`);
    });

  return program.command('import')
    .description('add the records of an export to this database; records that exist already are skipped')
    .argument('[file]', 'the export to read (default: standard input)')
    .option('--update-applications', 'overwrite the settings of applications that exist already')
    .addOption(dbOption())
    .action(async (file: string | undefined, options: { updateApplications?: boolean; db?: string }) => {
      const report = await withStore(io, options.db, async (store) => {
        // Opened only once the database is: a file opened before a refused database would have
        // nobody listening for its own error (no such file) and end the process with a stack.
        const input = file === undefined || file === '-' ? io.stdin : createReadStream(file, { encoding: 'utf8' });
        const lines = createInterface({ input, crlfDelay: Infinity });
        try {
          const imported = await importData(store, lines, { updateApplications: options.updateApplications === true }, new Date());
          await recordCliAudit(store, io, {
            type: 'admin.import',
            detail: { input: file ?? 'stdin', added: imported.added, skipped: imported.skipped, updatedApplications: imported.updatedApplications },
          });
          return imported;
        } catch (error) {
          if (error instanceof ImportError) throw new CliError(`import stopped at ${error.message} (records before it were imported; running the import again skips them)`);
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new CliError(`cannot read ${file}: no such file`);
          throw error;
        } finally {
          lines.close();
        }
      });
      io.stdout.write(`Imported ${summary(report.added)}\n`);
      io.stdout.write(`Skipped (already present or not importable) ${summary(report.skipped)}\n`);
      if (report.updatedApplications > 0) io.stdout.write(`Updated ${report.updatedApplications} existing application(s)\n`);
      for (const text of report.notes) io.stderr.write(`note: ${text}\n`);
    });
}
