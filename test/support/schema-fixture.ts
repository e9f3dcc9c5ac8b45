/**
 * The schema fixture of the store migrations (test/fixtures/store-schema.json), shared by the
 * SQLite test (test/store/schema-fixture.test.ts) and the PostgreSQL one
 * (test/store/postgres-schema-fixture.test.ts): what it holds, how a dialect's dumps are checked
 * against it, and, with SVCAPI_WRITE_SCHEMA_FIXTURE=1, written into it instead.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { expect } from 'vitest';
import { dumpDigest, type SchemaDump } from './schema-dump.js';

const FIXTURE_PATH = new URL('../fixtures/store-schema.json', import.meta.url);
export const FIXTURE_VERSION = 16;
const WRITE = process.env.SVCAPI_WRITE_SCHEMA_FIXTURE === '1';

interface DialectFixture {
  /** dumpDigest of the schema after each version 1..FIXTURE_VERSION. */
  readonly digests: Record<string, string>;
  /** The whole schema at FIXTURE_VERSION. */
  readonly final: SchemaDump;
}
interface Fixture {
  readonly version: number;
  readonly sqlite?: DialectFixture;
  readonly postgres?: DialectFixture;
}

export const FIXTURE_VERSIONS: readonly number[] = Array.from({ length: FIXTURE_VERSION }, (_, i) => i + 1);
const readFixture = (): Fixture => JSON.parse(readFileSync(FIXTURE_PATH, 'utf8')) as Fixture;

/**
 * Checks one dialect's dumps (version -> schema) against the fixture; in write mode, replaces
 * that dialect's part of the fixture with them instead (the other dialect's part is kept).
 */
export function checkSchemaFixture(dialect: 'sqlite' | 'postgres', dumps: ReadonlyMap<number, SchemaDump>): void {
  const digests = Object.fromEntries([...dumps].map(([v, d]) => [String(v), dumpDigest(d)]));
  const final = dumps.get(FIXTURE_VERSION);
  if (final === undefined) throw new Error('no dump of the last version');
  if (WRITE) {
    let previous: Fixture = { version: FIXTURE_VERSION };
    try {
      previous = readFixture();
    } catch {
      // first write
    }
    writeFileSync(FIXTURE_PATH, `${JSON.stringify({ ...previous, [dialect]: { digests, final }, version: FIXTURE_VERSION }, null, 1)}\n`);
    return;
  }
  const expected = readFixture()[dialect];
  if (expected === undefined) throw new Error(`the fixture has no ${dialect} schema`);
  expect(final).toEqual(expected.final);
  expect(digests).toEqual(expected.digests);
}
