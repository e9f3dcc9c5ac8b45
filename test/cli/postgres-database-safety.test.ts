/**
 * The CLI and a PostgreSQL database (the system suite: npm run test:system): the rules of
 * test/cli/database-safety.test.ts for a schema: only `migrate` and `serve` create one, and a
 * schema holding another application's tables is refused untouched.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { adminQuery, dropSchemas, newSchemaName, postgresForTests, schemaUrl } from '../support/postgres.js';
import { expectOneLine, runCliCaptured as run } from '../support/run-cli.js';

const pgAdmin = await postgresForTests();

describe.skipIf(pgAdmin === null)('the same rules on PostgreSQL', () => {
  const schemas: string[] = [];
  afterAll(() => dropSchemas(schemas));
  const tablesOf = async (schema: string): Promise<string[]> =>
    (await adminQuery<{ t: string }>('SELECT table_name AS t FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1', [schema])).map((r) => r.t);

  it('a schema that does not exist is refused by everything but migrate and serve (exit 3), and not created', async () => {
    const schema = newSchemaName();
    schemas.push(schema);
    for (const command of [['user', 'list'], ['app', 'add', '7', 'Portal'], ['audit'], ['export']]) {
      expectOneLine(await run([...command, '--db', schemaUrl(schema)]), 3, new RegExp(`\\(schema ${schema}\\) holds no svcapi-auth database yet; create it with "svcapi-auth migrate"`));
    }
    expect(await adminQuery('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).toEqual([]);
    expect((await run(['migrate', '--db', schemaUrl(schema)])).code).toBe(0);
    expect((await run(['app', 'list', '--db', schemaUrl(schema)])).code).toBe(0);
  });

  it('a schema holding another application\'s tables is refused untouched (exit 4), migrate included', async () => {
    const schema = newSchemaName();
    schemas.push(schema);
    await adminQuery(`CREATE SCHEMA "${schema}"`);
    await adminQuery(`CREATE TABLE "${schema}".users (id serial PRIMARY KEY, email text)`);
    await adminQuery(`INSERT INTO "${schema}".users (email) VALUES ('a@example.com')`);
    for (const command of [['user', 'list'], ['migrate']]) {
      expectOneLine(await run([...command, '--db', schemaUrl(schema)]), 4, /is not an svcapi-auth database: it has tables svcapi-auth did not create \(users\).*left untouched/);
    }
    expect(await tablesOf(schema)).toEqual(['users']);
  });
});
