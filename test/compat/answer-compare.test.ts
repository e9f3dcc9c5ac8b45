/**
 * The shadow comparison's byte-equal path (sameWithoutNormalising) against the full comparison
 * (compareAnswers), differentially: on every golden capture as the old service's answer, paired
 * with copies and variants of it as ours, "the same without normalising" must never be said of a
 * pair compareAnswers calls different; and on identical answers that name neither side's host it
 * must be said (else the fast path is never taken and saves nothing).
 */
import { describe, expect, it } from 'vitest';
import { compareAnswers, sameWithoutNormalising, type AnswerSide, type RawAnswer } from '../../src/compat/answer-compare.js';
import { captureNames, readCapturedRequest, readCapturedResponse } from '../support/captures.js';

const side = (origin: string): AnswerSide => {
  const url = new URL(`${origin}/Authentication.asmx`);
  return { url, path: url.pathname };
};

function answerOf(name: string): RawAnswer {
  const r = readCapturedResponse(name);
  return { status: r.status, headers: Object.entries(r.headers), body: r.body };
}

/** Ours as svcapi-auth writes it: its nosniff, its own Date and Content-Length, headers in another order. */
function asOurs(legacy: RawAnswer): RawAnswer {
  const headers = legacy.headers.filter(([n]) => n !== 'date').reverse();
  return { ...legacy, headers: [...headers, ['x-content-type-options', 'nosniff'], ['date', 'Thu, 26 Nov 2026 10:00:00 GMT'], ['connection', 'keep-alive']], body: Buffer.from(legacy.body) };
}

const GUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

/** Variants of our answer: some the full comparison calls the same, most not. */
function variants(legacy: RawAnswer): Array<[string, RawAnswer]> {
  const ours = asOurs(legacy);
  const text = legacy.body.toString('latin1');
  const out: Array<[string, RawAnswer]> = [
    ['identical', ours],
    ['status', { ...ours, status: ours.status === 200 ? 500 : 200 }],
    ['one byte more', { ...ours, body: Buffer.concat([ours.body, Buffer.from(' ')]) }],
    ['a content header', { ...ours, headers: ours.headers.map(([n, v]) => [n, n === 'content-type' ? `${v};x=1` : v] as const) }],
    ['a header more', { ...ours, headers: [...ours.headers, ['expires', '-1']] }],
    ['a header repeated', { ...ours, headers: [...ours.headers, ...ours.headers.filter(([n]) => n === 'cache-control')] }],
    ['no-store', { ...ours, headers: ours.headers.map(([n, v]) => [n, n === 'cache-control' ? 'no-store' : v] as const) }],
  ];
  if (text.length > 0) {
    const flipped = Buffer.from(ours.body);
    flipped[flipped.length >> 1] = (flipped[flipped.length >> 1] ?? 0) ^ 0x20;
    out.push(['a byte changed', { ...ours, body: flipped }]);
  }
  // Another token of the same form: the same after normalising, not byte for byte.
  const token = GUID.exec(text)?.[0];
  if (token !== undefined) out.push(['another token', { ...ours, body: Buffer.from(text.replace(token, token.replace(/[0-9a-f]$/i, (c) => (c === '0' ? '1' : '0'))), 'latin1') }]);
  return out;
}

describe('the byte-equal path of the shadow comparison', () => {
  const names = captureNames();
  // The captures' host (127.0.0.1:8091) as the old service's, as ours, as neither.
  const pairs: Array<[string, [AnswerSide, AnswerSide]]> = [
    ['legacy is the captured host', [side('http://127.0.0.1:8091'), side('http://svcapi.example:8080')]],
    ['ours is the captured host', [side('http://old.example'), side('http://127.0.0.1:8091')]],
    ['neither', [side('http://old.example'), side('https://svcapi.example')]],
  ];

  it('never says "the same" of a pair the full comparison calls different, on every capture and variant', () => {
    let fast = 0;
    let checked = 0;
    for (const name of names) {
      const legacy = answerOf(name);
      const operation = /^(?:ok|f|rt)_\w+?_(\w+?)(?:_|$)/.exec(name)?.[1] ?? (name.startsWith('doc_') ? undefined : readCapturedRequest(name).target.split('/').pop());
      for (const [variant, ours] of variants(legacy)) {
        for (const [where, sides] of pairs) {
          const quick = sameWithoutNormalising(legacy, ours, sides, operation);
          const full = compareAnswers(legacy, ours, sides, operation).same;
          checked += 1;
          if (quick) {
            fast += 1;
            expect({ name, variant, where, full }).toEqual({ name, variant, where, full: true });
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(names.length * 20);
    // At least every identical answer under "neither" took the fast path.
    expect(fast).toBeGreaterThanOrEqual(names.length);
  });

  it('identical answers are "the same" without normalising unless they name a side\'s host or service URL', () => {
    const [neither, legacyHost] = [pairs[2]?.[1], pairs[0]?.[1]];
    if (neither === undefined || legacyHost === undefined) throw new Error('pairs');
    for (const name of names) {
      const legacy = answerOf(name);
      expect({ name, same: sameWithoutNormalising(legacy, asOurs(legacy), neither, undefined) }).toEqual({ name, same: true });
    }
    // The WSDL names the captured host: equal bytes, yet the full comparison sees each side's own host.
    const wsdl = answerOf('doc_wsdl_lower');
    expect(sameWithoutNormalising(wsdl, asOurs(wsdl), legacyHost, undefined)).toBe(false);
    expect(compareAnswers(wsdl, asOurs(wsdl), legacyHost, undefined).same).toBe(false);
    // A header naming a side's host goes to the full comparison too.
    const located: RawAnswer = { status: 302, headers: [['location', 'http://old.example/Authentication.asmx/x']], body: Buffer.alloc(0) };
    expect(sameWithoutNormalising(located, located, neither, undefined)).toBe(false);
    expect(compareAnswers(located, located, neither, undefined).same).toBe(false);
  });

  it('a side decoded from bytes that are not UTF-8 is never looked for in the bytes', () => {
    const answer: RawAnswer = { status: 200, headers: [], body: Buffer.from([0x3c, 0x61, 0xff, 0x3e]) };
    const odd: AnswerSide = { url: { origin: 'http://\uFFFD', host: '\uFFFD' }, path: '/Authentication.asmx' };
    expect(sameWithoutNormalising(answer, answer, [odd, side('http://old.example')], undefined)).toBe(false);
  });
});
