/** Helpers shared by the legacy-migration tests. */
import { readFileSync } from 'node:fs';
import { runCliCaptured, type RunResult } from '../support/run-cli.js';
export type { RunResult };

export interface Vectors {
  membershipHashed: Array<{ algorithm: string; case: string; salt: string; hash: string; password: string; wrong: string[] }>;
  membershipEncrypted: Array<{ decryption: string; decryptionKey: string; case: string; salt: string; password_enc: string; password: string }>;
  identity: Array<{ version: number; case: string; passwordHash: string; password: string; wrong: string[] }>;
  identityTriplets: Array<{ case: string; passwordHash: string; password: string; wrong: string[] }>;
  phc: Array<{ format: string; case: string; hash: string; password: string; wrong: string[] }>;
}

export const VECTORS = JSON.parse(readFileSync(new URL('../fixtures/legacy/vectors.json', import.meta.url), 'utf8')) as Vectors;

export function vector<T extends { case: string }>(list: readonly T[], pick: (v: T) => boolean): T {
  const found = list.find(pick);
  if (found === undefined) throw new Error('no such vector');
  return found;
}

export { fastHasher } from '../support/fast-hasher.js';

/** A CSV field, quoted as PowerShell's Export-Csv writes every field. */
export function csvField(value: string): string {
  return `"${value.replace(/"/g, '""')}"`;
}

export function csv(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [header, ...rows].map((r) => r.map(csvField).join(',')).join('\r\n') + '\r\n';
}



export async function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  // A forgotten --db must never reach ./data: the default database here is a throw-away one.
  return runCliCaptured(args, { env: { DATABASE_URL: 'sqlite::memory:', ...env } });
}
