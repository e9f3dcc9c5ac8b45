/**
 * servers keep WhatsNew answers in memory, yet news written by another process (the
 * CLI) or through another instance's database connection show on the very next request.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { adminQuery, dropSchemas, newSchemaName, postgresForTests, schemaUrl } from '../support/postgres.js';
import { killAll, requireDist, runCliProcess, startServer, type ServerProcess } from '../support/server-process.js';

const pgAdmin = await postgresForTests();
const schemas: string[] = [];
const dir = mkdtempSync(join(tmpdir(), 'svcapi-news-instances-'));
afterEach(() => killAll());
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  if (pgAdmin !== null) await dropSchemas(schemas);
});

/** WhatsNew over HTTP POST; the titles of the rows, in order. */
async function titles(server: ServerProcess): Promise<string[]> {
  const res = await fetch(`${server.url}/WhatsNew`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'AppToken=&AppID=2&AppVersion=&Language=en&qtyNews=10',
  });
  const body = await res.text();
  expect(res.status, body).toBe(200);
  return [...body.matchAll(/<Title>([^<]*)<\/Title>/g)].map((m) => m[1] ?? '');
}

async function addNews(db: string, title: string): Promise<number> {
  const added = await runCliProcess(['news', 'add', '--app', '2', '--title', title, '--body', 'b', '--db', db]);
  expect(added.status, added.output).toBe(0);
  return Number(/Added news (\d+)/.exec(added.output)?.[1]);
}

describe('WhatsNew across processes', () => {
  it('SQLite: a server answering from memory shows what the CLI adds and removes, on the next request', async () => {
    requireDist();
    const db = `sqlite:${join(dir, 'news.db')}`;
    expect((await runCliProcess(['migrate', '--db', db])).status).toBe(0); // only migrate and serve create a database
    await addNews(db, 'first');
    const server = await startServer(['--db', db]);
    expect(await titles(server)).toEqual(['first']);
    expect(await titles(server)).toEqual(['first']);
    const second = await addNews(db, 'second');
    expect(await titles(server)).toEqual(['second', 'first']);
    const removed = await runCliProcess(['news', 'remove', String(second), '--db', db]);
    expect(removed.status, removed.output).toBe(0);
    expect(await titles(server)).toEqual(['first']);
  });

  it.skipIf(pgAdmin === null)('PostgreSQL: two instances show what the CLI or raw SQL writes, on the next request to either', async () => {
    requireDist();
    const schema = newSchemaName();
    schemas.push(schema);
    const db = schemaUrl(schema);
    expect((await runCliProcess(['migrate', '--db', db])).status).toBe(0);
    await addNews(db, 'first');
    const [a, b] = await Promise.all([startServer(['--db', db]), startServer(['--db', db])]);
    expect([await titles(a), await titles(b)]).toEqual([['first'], ['first']]);
    await addNews(db, 'second');
    expect([await titles(a), await titles(b)]).toEqual([['second', 'first'], ['second', 'first']]);
    await adminQuery(`UPDATE "${schema}".news SET title = 'edited' WHERE title = 'first'`);
    expect([await titles(a), await titles(b)]).toEqual([['second', 'edited'], ['second', 'edited']]);
    await adminQuery(`DELETE FROM "${schema}".news WHERE title = 'second'`);
    expect([await titles(a), await titles(b)]).toEqual([['edited'], ['edited']]);
  });
});
