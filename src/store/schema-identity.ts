/**
 * Is this database ours? Both adapters answer with the same rule, from what they read before
 * writing anything:
 *
 * - no tables at all (a new or empty file, an empty schema): empty, may be initialised by
 *   `migrate` / `serve` and nothing else;
 * - a schema_migrations table whose rows are svcapi-auth's migrations (same version, same name),
 *   and every table those migrations create: ours;
 * - anything else (another application's tables, a schema_migrations table of another tool, a
 *   layout with our tables missing): foreign, refused untouched.
 */

export interface MigrationIdentity {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export interface SchemaInspection {
  /** The tables (and views) of the database or schema, schema_migrations included. */
  readonly tables: readonly string[];
  /** The rows of schema_migrations; null when there is no such table. */
  readonly applied: readonly { readonly version: number; readonly name: string }[] | null;
}

export type SchemaVerdict =
  | { readonly kind: 'empty' }
  | { readonly kind: 'ours' }
  | { readonly kind: 'foreign'; readonly reason: string };

/** The tables a migration creates, read from its SQL (every migration creates tables with a plain CREATE TABLE). */
function createdTables(sql: string): string[] {
  return [...sql.matchAll(/\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"?([A-Za-z_][A-Za-z0-9_]*)"?/gi)].map((m) => (m[1] ?? '').toLowerCase());
}

const list = (names: readonly string[], max = 5): string =>
  names.length <= max ? names.join(', ') : `${names.slice(0, max).join(', ')} and ${names.length - max} more`;

export function judgeSchema(inspection: SchemaInspection, migrations: readonly MigrationIdentity[]): SchemaVerdict {
  const tables = inspection.tables.map((t) => t.toLowerCase());
  const others = tables.filter((t) => t !== 'schema_migrations');
  if (inspection.applied === null) {
    if (tables.length === 0) return { kind: 'empty' };
    return { kind: 'foreign', reason: `it has tables svcapi-auth did not create (${list(others)}) and no svcapi-auth migrations table` };
  }
  // Left by a first start that stopped between creating schema_migrations and migrating.
  if (inspection.applied.length === 0 && others.length === 0) return { kind: 'empty' };
  const known = new Map(migrations.map((m) => [m.version, m]));
  const latest = migrations.reduce((max, m) => Math.max(max, m.version), 0);
  let matched = 0;
  for (const row of [...inspection.applied].sort((a, b) => a.version - b.version)) {
    const ours = known.get(row.version);
    // A version above ours is a newer svcapi-auth's (refused later, with its own message); one
    // at or below it must be exactly ours.
    if (ours === undefined && row.version > latest && matched > 0) continue;
    if (ours === undefined || ours.name !== row.name) {
      return { kind: 'foreign', reason: `its schema_migrations table records a migration svcapi-auth does not know (version ${row.version}, ${JSON.stringify(row.name)})` };
    }
    matched += 1;
  }
  if (matched === 0) return { kind: 'foreign', reason: `it has tables svcapi-auth did not create (${list(others)}) beside an empty schema_migrations table` };
  const appliedVersions = new Set(inspection.applied.map((r) => r.version));
  const expected = migrations.filter((m) => appliedVersions.has(m.version)).flatMap((m) => createdTables(m.sql));
  const missing = expected.filter((t) => !tables.includes(t));
  if (missing.length > 0) return { kind: 'foreign', reason: `its table layout is not svcapi-auth's (missing ${list(missing)})` };
  return { kind: 'ours' };
}
