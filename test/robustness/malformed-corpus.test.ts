/**
 * Malformed input never crashes and is always answered in the ASMX shape;
 * no entity is ever expanded, no external resource read, deep or huge documents
 * cost bounded work. A generated corpus (corpus.ts; seeded, so every failure reproduces by name)
 * goes through app.inject() and every answer is checked against shape.ts, plus the exact
 * answer where ASMX's is known.
 *
 * Cases that showed a bug of src/ (FINDINGS in corpus.ts, since fixed) run as one regression
 * test per finding.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStack, seedReference, type TestStack } from '../support/start-app.js';
import { buildCorpus, CORPUS_SEED, FINDINGS, type CorpusCase, type FindingId } from './corpus.js';
import { header, shapeProblems, type ObservedResponse } from './shape.js';

/** A request that takes this long is a hang: inject() has no socket that could be slow. */
const HANG_MS = 10_000;
/** A few requests in flight so argon2 (libuv pool) overlaps with parsing on the main thread. */
const CONCURRENCY = 4;

const corpus = buildCorpus();
const families = [...new Set(corpus.map((c) => c.family))];

function preview(bytes: Buffer | undefined, max = 160): string {
  if (bytes === undefined || bytes.length === 0) return '(empty)';
  const text = JSON.stringify(bytes.subarray(0, max).toString('latin1'));
  return bytes.length > max ? `${text}... (${bytes.length} bytes)` : text;
}

/** One line per failing case: enough to replay it (seed + name, or the bytes) and see why. */
function describeFailure(c: CorpusCase, problems: readonly string[], res?: ObservedResponse): string {
  const answer = res ? `${res.status} ${String(header(res, 'content-type'))} ${preview(res.body, 200)}` : 'no answer';
  return `[seed ${CORPUS_SEED}] ${c.family} / ${c.name}\n    request: ${c.method} ${c.url.slice(0, 120)} ${JSON.stringify(c.headers).slice(0, 200)} body ${preview(c.body)}\n    answer: ${answer}\n    problems: ${problems.join('; ')}`;
}

async function send(stack: TestStack, c: CorpusCase): Promise<ObservedResponse> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${HANG_MS} ms`)), HANG_MS);
  });
  try {
    const res = await Promise.race([stack.app.inject({ method: c.method, url: c.url, headers: c.headers, ...(c.body !== undefined ? { payload: c.body } : {}) }), hang]);
    return { status: res.statusCode, headers: res.headers, body: res.rawPayload };
  } finally {
    clearTimeout(timer);
  }
}

/** Status codes seen per family, printed once at the end: what the corpus actually exercised. */
const statusesSeen = new Map<string, Map<number, number>>();

/** Runs the cases (bounded concurrency) and returns one description per case out of shape. */
async function failuresOf(stack: TestStack, cases: readonly CorpusCase[]): Promise<string[]> {
  const failures: string[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < cases.length; i = next++) {
      const c = cases[i];
      if (c === undefined) continue;
      let res: ObservedResponse;
      try {
        res = await send(stack, c);
      } catch (err) {
        failures.push(describeFailure(c, [`request failed: ${(err as Error).message}`]));
        continue;
      }
      const seen = statusesSeen.get(c.family) ?? new Map<number, number>();
      seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
      statusesSeen.set(c.family, seen);
      const problems = [...shapeProblems(c, res), ...(c.expect?.(res) ?? [])];
      if (problems.length > 0) failures.push(describeFailure(c, problems, res));
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return failures;
}

describe('malformed-input corpus through app.inject()', () => {
  let stack: TestStack;

  beforeAll(async () => {
    // Hundreds of failed ValidateUser calls from one address, then a login: brute-force protection (test/security) would refuse it.
    stack = await createTestStack({ timeZone: 'UTC', throttle: false });
    await seedReference(stack.admin);
  });
  afterAll(async () => {
    const summary = [...statusesSeen].map(([family, seen]) => `${family}: ${[...seen].sort(([a], [b]) => a - b).map(([code, n]) => `${code}x${n}`).join(' ')}`);
    console.info(`statuses per family\n  ${summary.join('\n  ')}`);
    await stack.close();
  });

  it('has every family and finding populated', () => {
    const counts = Object.fromEntries(families.map((f) => [f, corpus.filter((c) => c.family === f).length]));
    console.info(`robustness corpus (seed ${CORPUS_SEED}): ${corpus.length} cases`, counts);
    for (const id of Object.keys(FINDINGS)) expect(corpus.some((c) => c.knownBug === id)).toBe(true);
    expect(corpus.length).toBeGreaterThan(2000);
  });

  for (const family of families) {
    const cases = corpus.filter((c) => c.family === family && c.knownBug === undefined);
    it(`${family}: ${cases.length} requests answered in the ASMX shape`, async () => {
      expect(await failuresOf(stack, cases)).toEqual([]);
    });
  }

  for (const [id, title] of Object.entries(FINDINGS) as [FindingId, string][]) {
    const cases = corpus.filter((c) => c.knownBug === id);
    it(`${id} (fixed src/ bug, ${cases.length} cases): ${title}`, async () => {
      expect(await failuresOf(stack, cases)).toEqual([]);
    });
  }

  it('still serves the reference round trip after the whole corpus', async () => {
    const login = await stack.app.inject({ method: 'GET', url: '/Authentication.asmx/ValidateUser?login=demo&password=demo-pass&AppId=2&IPAddress=' });
    expect(login.statusCode).toBe(200);
    const token = /<string xmlns="SVCAPI">([0-9a-f-]{36})<\/string>/.exec(login.body)?.[1];
    expect(token).toBeDefined();
    const check = await stack.app.inject({ method: 'GET', url: `/Authentication.asmx/ValidateUserToken?token=${token ?? ''}` });
    expect(check.body).toContain('<boolean xmlns="SVCAPI">true</boolean>');
  });
});
