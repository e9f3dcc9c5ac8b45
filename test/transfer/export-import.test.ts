/**
 * `svcapi-auth export` / `import` on SQLite: a malformed line stops the import naming it, and
 * where tokens were issued travels with them. Between SQLite and PostgreSQL:
 * postgres-export-import.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { createAdminService } from '../../src/domain/admin-service.js';
import { createArgon2Hasher } from '../../src/domain/password-hasher.js';
import { createAuthService } from '../../src/domain/create-auth-service.js';
import { hashToken } from '../../src/domain/tokens.js';
import { openStore } from '../../src/store/open-store.js';
import { ctx } from '../support/domain-fakes.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-transfer-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const sink = (append: (s: string) => void): Writable => new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      append(chunk.toString());
      callback();
    },
  });
  const code = await runCli(args, { stdin: Readable.from([]), stdout: sink((s) => (out += s)), stderr: sink((s) => (err += s)), env: {} });
  return { code, out, err };
}

const hasher = createArgon2Hasher();
const must = <T>(r: { ok: true; value: T } | { ok: false; message: string }): T => {
  if (!r.ok) throw new Error(r.message);
  return r.value;
};

describe('import refuses bad lines', () => {
  it('stops at a malformed line, naming it', async () => {
    const file = join(dir, 'bad.jsonl');
    writeFileSync(file, '{"type":"header","format":"svcapi-auth-export","version":1}\n{"type":"user","login":"x"}\n');
    expect((await cli(['migrate', '--db', `sqlite:${join(dir, 'bad.db')}`])).code).toBe(0);
    const r = await cli(['import', file, '--db', `sqlite:${join(dir, 'bad.db')}`]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/import stopped at line 2: "appIds" must be a list of whole numbers/);
  });

  it('refuses news attributes that are not an object of acceptable text values, naming the line', async () => {
    const news = (attributes: string): string => `{"type":"news","appId":2,"language":"en","title":"t","body":"b","url":null,"publishedAt":"2024-01-01T00:00:00Z","expiresAt":null,"minVersion":null,"maxVersion":null,"membersOnly":false,"createdAt":"2024-01-01T00:00:00Z","attributes":${attributes}}`;
    for (const [attributes, message] of [
      ['["a"]', /"attributes" must be an object of text values/],
      ['{"a":1}', /"attributes" must be an object of text values/],
      ['{"bad key":"x"}', /"attributes": bad attribute name "bad key"/],
    ] as const) {
      expect((await cli(['migrate', '--db', `sqlite:${join(dir, 'bad-attributes.db')}`])).code).toBe(0);
      const file = join(dir, 'bad-attributes.jsonl');
      writeFileSync(file, `{"type":"header","format":"svcapi-auth-export","version":1}\n${news(attributes)}\n`);
      const r = await cli(['import', file, '--db', `sqlite:${join(dir, 'bad-attributes.db')}`]);
      expect(r.code, attributes).toBe(1);
      expect(r.err, attributes).toMatch(/import stopped at line 2: /);
      expect(r.err, attributes).toMatch(message);
    }
  });
});

describe('export / import of where tokens were issued', () => {
  it('keeps legacy and ours; a token record without origin (an export made before it) is ours; a bad one names the line', async () => {
    const sourceUrl = `sqlite:${join(dir, 'origin-source.db')}`;
    const source = await openStore(sourceUrl);
    const legacyHash = 'a'.repeat(64);
    let oursHash = '';
    try {
      const alice = must(await createAdminService({ store: source, hasher }).addUser({ login: 'alice', password: 'alice-pw', appIds: [2] }));
      const r = await createAuthService({ store: source, hasher }).validateUser({ login: 'alice', password: 'alice-pw', appId: 2, ipAddress: null }, ctx);
      if (!r.ok) throw new Error('login failed');
      oursHash = hashToken(r.token);
      const now = Date.now();
      expect(await source.importToken({
        tokenHash: legacyHash, kind: 'session', userId: alice.userId, appId: 2, clientIp: null, sourceIp: null,
        issuedAt: new Date(now), expiresAt: new Date(now + 3_600_000), lastUsedAt: new Date(now), usedAt: null, revokedAt: null, origin: 'legacy',
      })).toBe(true);
    } finally {
      await source.close();
    }
    const exported = await cli(['export', '--db', sourceUrl]);
    expect(exported.code, exported.err).toBe(0);
    const tokens = exported.out.trimEnd().split('\n').map((l) => JSON.parse(l) as { type: string; tokenHash?: string; origin?: string }).filter((t) => t.type === 'token');
    expect(Object.fromEntries(tokens.map((t) => [t.tokenHash, t.origin]))).toEqual({ [legacyHash]: 'legacy', [oursHash]: 'ours' });

    const originsAfterImport = async (name: string, lines: string): Promise<Record<string, string>> => {
      const url = `sqlite:${join(dir, `${name}.db`)}`;
      const file = join(dir, `${name}.jsonl`);
      writeFileSync(file, lines);
      expect((await cli(['migrate', '--db', url])).code).toBe(0);
      const imported = await cli(['import', file, '--db', url]);
      expect(imported.code, imported.err).toBe(0);
      const target = await openStore(url);
      try {
        const user = await target.findUserByLoginKey('alice');
        const sessions = await target.listUserSessions(user?.userId ?? -1, new Date(), 10);
        return Object.fromEntries(sessions.map((t) => [t.tokenHash, t.origin]));
      } finally {
        await target.close();
      }
    };
    expect(await originsAfterImport('origin-kept', exported.out)).toEqual({ [legacyHash]: 'legacy', [oursHash]: 'ours' });
    const withoutOrigin = exported.out.replace(/,"origin":"(ours|legacy)"/g, '');
    expect(withoutOrigin).not.toContain('"origin"');
    expect(await originsAfterImport('origin-absent', withoutOrigin)).toEqual({ [legacyHash]: 'ours', [oursHash]: 'ours' });

    const badFile = join(dir, 'origin-bad.jsonl');
    writeFileSync(badFile, exported.out.replace('"origin":"legacy"', '"origin":"theirs"'));
    expect((await cli(['migrate', '--db', `sqlite:${join(dir, 'origin-bad.db')}`])).code).toBe(0);
    const bad = await cli(['import', badFile, '--db', `sqlite:${join(dir, 'origin-bad.db')}`]);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/import stopped at line \d+: "origin" must be "ours" or "legacy"/);
  });
});
