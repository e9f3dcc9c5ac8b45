/**
 * `svcapi-auth audit` and the admin commands' audit events: every change made with the
 * CLI is recorded with the operator (cli:<OS user>), export / import as one summary event each.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';

const root = mkdtempSync(join(tmpdir(), 'svcapi-audit-cli-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function run(args: string[], stdin = ''): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const writer = (append: (t: string) => void): Writable => new Writable({
    write(chunk: Buffer | string, _e, callback) {
      append(chunk.toString());
      callback();
    },
  });
  const code = await runCli(args, {
    stdin: Readable.from([Buffer.from(stdin)]), stdout: writer((t) => (out += t)), stderr: writer((t) => (err += t)), env: {},
  });
  return { code, out, err };
}

interface Row { id: number; at: string; type: string; login: string | null; appId: number | null; detail: Record<string, unknown> | null }
const rows = (text: string): Row[] => text.trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Row);

describe('svcapi-auth audit', () => {
  const db = `sqlite:${join(root, 'auth.db')}`;
  const actor = `cli:${userInfo().username}`;
  // Only migrate and serve create a database.
  beforeAll(async () => {
    for (const name of ['auth.db', 'other.db', 'legacy.db']) expect((await run(['migrate', '--db', `sqlite:${join(root, name)}`])).code).toBe(0);
  });

  it('records each admin change with the operator, and lists the trail newest first', async () => {
    expect((await run(['app', 'add', '7', 'Portal', '--db', db])).code).toBe(0);
    expect((await run(['user', 'add', 'alice', '--app', '2', '--password-stdin', '--db', db], 'pw-audit-canary\n')).code).toBe(0);
    expect((await run(['user', 'passwd', 'alice', '--password-stdin', '--db', db], 'pw-audit-canary-2\n')).code).toBe(0);
    expect((await run(['user', 'grant', 'alice', '--app', '7', '--db', db])).code).toBe(0);
    expect((await run(['user', 'disable', 'alice', '--db', db])).code).toBe(0);
    expect((await run(['user', 'disable', 'nobody', '--db', db])).code).toBe(1); // refused: no event
    expect((await run(['token', 'revoke', '--all', '--db', db])).code).toBe(0);

    const listed = await run(['audit', '--json', '--db', db]);
    expect(listed.code).toBe(0);
    const events = rows(listed.out);
    expect(events.map((e) => e.type)).toEqual(['admin.token.revoke', 'admin.user.disable', 'admin.user.grant', 'admin.user.passwd', 'admin.user.add', 'admin.app.add']);
    expect(events.every((e) => e.detail?.actor === actor)).toBe(true);
    expect(events[2]).toMatchObject({ login: 'alice', appId: 7 });
    expect(events[0]?.detail).toMatchObject({ scope: 'all', revoked: 0 });
    expect(events.map((e) => e.id)).toEqual([...events.map((e) => e.id)].sort((a, b) => b - a));
    expect(listed.out).not.toContain('pw-audit-canary');
  });

  it('filters by login, type (or type prefix), application and time, and pages', async () => {
    const ids = async (...args: string[]): Promise<string[]> => rows((await run(['audit', '--json', '--db', db, ...args])).out).map((e) => e.type);
    expect(await ids('--login', 'ALICE')).toEqual(['admin.user.disable', 'admin.user.grant', 'admin.user.passwd', 'admin.user.add']);
    expect(await ids('--type', 'admin.user.grant')).toEqual(['admin.user.grant']);
    expect(await ids('--type', 'admin.app*')).toEqual(['admin.app.add']);
    expect(await ids('--app', '7')).toEqual(['admin.user.grant', 'admin.app.add']);
    expect(await ids('--since', '2999-01-01')).toEqual([]);
    expect(await ids('--until', '2000-01-01T00:00:00Z')).toEqual([]);
    const first = rows((await run(['audit', '--json', '--limit', '2', '--db', db])).out);
    expect(first).toHaveLength(2);
    const next = rows((await run(['audit', '--json', '--limit', '2', '--before', String(first[1]?.id), '--db', db])).out);
    expect(next.map((e) => e.type)).toEqual(['admin.user.grant', 'admin.user.passwd']);
  });

  it('prints a table by default', async () => {
    const table = await run(['audit', '--type', 'admin.user.add', '--db', db]);
    expect(table.code).toBe(0);
    const [header, line, ...rest] = table.out.trimEnd().split('\n');
    expect(header).toMatch(/^ID\s+TIME \(UTC\)\s+TYPE\s+REASON\s+APPID\s+LOGIN\s+SOURCE\s+CLAIMED-IP\s+TOKEN\s+REQUEST\s+DETAIL$/);
    expect(line).toMatch(/^\d+\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\s+admin\.user\.add\s+-\s+-\s+alice\s+-\s+-\s+-\s+-\s+\{"actor":/);
    expect(rest).toEqual([]);
  });

  it('refuses bad filters as usage errors', async () => {
    expect((await run(['audit', '--type', 'Bad Type', '--db', db])).code).toBe(2);
    expect((await run(['audit', '--since', 'yesterday', '--db', db])).code).toBe(2);
    expect((await run(['audit', '--limit', '0', '--db', db])).code).toBe(2);
  });

  it('records export and import as one summary event each', async () => {
    const file = join(root, 'export.jsonl');
    expect((await run(['export', '-o', file, '--db', db])).code).toBe(0);
    const other = `sqlite:${join(root, 'other.db')}`;
    expect((await run(['import', file, '--db', other])).code).toBe(0);
    const exported = rows((await run(['audit', '--json', '--type', 'admin.export', '--db', db])).out);
    expect(exported).toEqual([expect.objectContaining({ type: 'admin.export', detail: expect.objectContaining({ actor, output: file, counts: expect.objectContaining({ user: 1 }) }) })]);
    const imported = rows((await run(['audit', '--json', '--db', other])).out);
    expect(imported).toEqual([expect.objectContaining({ type: 'admin.import', detail: expect.objectContaining({ actor, input: file, added: expect.objectContaining({ user: 1 }) }) })]);
  });

  it('records a legacy import that wrote users, not a dry run', async () => {
    const file = join(root, 'users.jsonl');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file, `${JSON.stringify({ login: 'legacy1', passwordHash: '$2b$10$abcdefghijklmnopqrstuu5X5gKz6q0RjI0dXQ7mq5bWjJ3oN0pPy', appIds: [2] })}\n`);
    const legacyDb = `sqlite:${join(root, 'legacy.db')}`;
    expect((await run(['import', 'users', file, '--dry-run', '--db', legacyDb])).code).toBe(0);
    expect(rows((await run(['audit', '--json', '--db', legacyDb])).out)).toEqual([]);
    expect((await run(['import', 'users', file, '--db', legacyDb])).code).toBe(0);
    const events = rows((await run(['audit', '--json', '--db', legacyDb])).out);
    expect(events).toEqual([expect.objectContaining({ type: 'admin.import-legacy', detail: expect.objectContaining({ actor, source: 'users', rows: 1 }) })]);
  });
});
