import type { StoreMigration } from './store-migrations.js';

/**
 * Lets an instance tell that one of an older version is serving from the same database, so that
 * a rolling upgrade to schema 17 needs no manual step (docs/operations.md, "Migrations").
 *
 * An instance older than schema 17 looks for a login ticket in `tokens` only: while one is still
 * serving, a ticket kept in `tickets` (in issue order, migration 17) by a new instance would not
 * redeem through it. Every version since schema 8 rewrites the health_probe row every 5 seconds
 * (the readiness write probe) with the same statement, `INSERT ... ON CONFLICT (id) DO UPDATE
 * SET probed_at = excluded.probed_at`. From this version on, the probe also adds one to
 * `probe_generation`; a trigger stamps `older_probed_at` whenever the row's probed_at is
 * rewritten without that, which only an older version does. A new instance's probe reads the
 * stamp back (Store.probeWrite) and, while it is recent, issues its tickets into `tokens`, which
 * every version reads (create-auth-service.ts `olderVersionServing`).
 *
 * The time stamped is the database's own clock: on PostgreSQL the server's now(), so instances
 * whose clocks differ still agree; on SQLite the writing process's probed_at, all of them on one
 * machine. Every probe written before this migration came from an older version, so the last
 * one is taken as the first stamp: instances already running are seen from the start.
 */
export const olderVersionProbes: StoreMigration = {
  version: 18,
  name: 'older version probes',
  sql: (d) => `
ALTER TABLE health_probe ADD COLUMN probe_generation ${d.bigint} NOT NULL DEFAULT 0;
ALTER TABLE health_probe ADD COLUMN older_probed_at ${d.time};
UPDATE health_probe SET older_probed_at = probed_at WHERE probed_at > ${d.pick({ sqlite: '0', postgres: "'epoch'" })};
${d.pick({
    sqlite: `CREATE TRIGGER health_probe_older_version AFTER UPDATE OF probed_at ON health_probe
  WHEN NEW.probe_generation = OLD.probe_generation
  BEGIN UPDATE health_probe SET older_probed_at = NEW.probed_at WHERE id = NEW.id; END;`,
    postgres: `CREATE FUNCTION health_probe_older_version() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  NEW.older_probed_at := now();
  RETURN NEW;
END
$$;
CREATE TRIGGER health_probe_older_version BEFORE UPDATE OF probed_at ON health_probe
  FOR EACH ROW WHEN (NEW.probe_generation = OLD.probe_generation) EXECUTE FUNCTION health_probe_older_version();`,
  })}
`,
};
