/** Migration 18 on SQLite (older-version-probes-contract.ts); PostgreSQL: postgres-older-version-probes.test.ts. */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { openStore } from '../../src/store/open-store.js';
import { applySqliteMigrations, SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations/sqlite-migrations.js';
import { describeOlderVersionProbes, OLD_PROBE } from './older-version-probes-contract.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-older-probes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
describeOlderVersionProbes('SQLite', () => {
  const file = join(dir, `auth-${(files += 1)}.db`);
  const raw = <T>(fn: (db: Database.Database) => T): T => {
    const db = new Database(file);
    try {
      return fn(db);
    } finally {
      db.close();
    }
  };
  return {
    migrateTo17: async () => {
      raw((db) => applySqliteMigrations(db, SQLITE_MIGRATIONS.filter((m) => m.version <= 17)));
    },
    oldProbe: async (at) => {
      raw((db) => db.prepare(OLD_PROBE).run(at.getTime()));
    },
    olderProbedAt: async () => raw((db) => (db.prepare('SELECT older_probed_at AS t FROM health_probe').get() as { t: number | null }).t),
    open: () => openStore(`sqlite:${file}`),
  };
});
