/**
 * The admin service (domain/admin-service.ts) for one command: the database opened by withStore
 * (cli-store.ts), the CLI's audit recorder and actor, the configured brute-force policy.
 */
import type { Config } from '../config/config.js';
import { createAdminService, type AdminResult, type AdminService } from '../domain/admin-service.js';
import { createArgon2Hasher } from '../domain/password-hasher.js';
import { cliActor, storeAuditRecorder } from './audit-command.js';
import { CliError, type CliIo } from './cli-io.js';
import { withStore } from './cli-store.js';

export interface DbOptions {
  readonly db?: string;
}

/** Opens the existing database named by --db / DATABASE_URL, runs `fn` with an admin service (and the configuration), closes it. */
export async function withAdmin<T>(io: CliIo, options: DbOptions, fn: (admin: AdminService, config: Config) => Promise<T>): Promise<T> {
  return withStore(io, options.db, (store, config) => fn(createAdminService({
    store, hasher: createArgon2Hasher(), audit: storeAuditRecorder(store, io), actor: cliActor(), throttle: config.bruteForce,
  }), config));
}

/** The value of an admin result, or a CliError carrying its message. */
export function unwrap<T>(result: AdminResult<T>): T {
  if (!result.ok) throw new CliError(result.message);
  return result.value;
}
