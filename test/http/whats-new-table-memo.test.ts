/**
 * WhatsNew's tables rendered once per answer (src/wire/table-memo.ts): the handler maps a frozen
 * answer of the news cache once and hands the same frozen table while the answer is the same, so
 * the wire layer's memo finds it; `performance.tableMemo: false` maps and renders every answer.
 */
import { describe, expect, it } from 'vitest';
import type { AuthService, NewsItem } from '../../src/domain/auth-service.js';
import { createOperationHandlers, type RequestFacts } from '../../src/http/operation-handlers.js';
import { compileContract } from '../../src/wire/compiled-contract.js';
import type { Row } from '../../src/wire/datatable.js';
import { FormCollection } from '../../src/wire/http-form.js';
import { writeSoapResultBody } from '../../src/wire/soap-result.js';

const item = (newsId: number): NewsItem => Object.freeze({
  newsId, appId: 2, title: `T${newsId} <&>`, body: 'b', language: 'en', url: '', publishedAt: new Date(Date.UTC(2020, 0, newsId)),
  expiresAt: null, minVersion: null, maxVersion: null, membersOnly: false, attributes: Object.freeze({}),
});

/** A service whose whatsNew answers `answer()` (only WhatsNew is called). */
const serviceAnswering = (answer: () => readonly NewsItem[]): AuthService => ({ whatsNew: async () => answer() }) as unknown as AuthService;

const facts: RequestFacts = { ctx: { sourceIp: '127.0.0.1', requestId: 'r' }, query: FormCollection.EMPTY, form: FormCollection.EMPTY, headers: {} };
const args = ['', 2, '', 'en', 10];
const contract = compileContract({ timeZone: 'UTC' });
const op = contract.byName.get('WhatsNew');
if (op === undefined) throw new Error('no WhatsNew');
const body = (rows: unknown): Buffer | string => writeSoapResultBody(contract, op, '1.1', rows as readonly Row[]);

describe('WhatsNew tables (performance.tableMemo)', () => {
  it('on (default): the same frozen answer gives the same frozen table, rendered once', async () => {
    const answer = Object.freeze([item(1), item(2)]);
    const handlers = createOperationHandlers(serviceAnswering(() => answer));
    const first = await handlers.WhatsNew(args, facts);
    const second = await handlers.WhatsNew(args, facts);
    expect(second).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(body(second)).toBe(body(first));
  });

  it('on: an answer that could still change (no news cache) is mapped and rendered every time', async () => {
    const handlers = createOperationHandlers(serviceAnswering(() => [item(1), item(2)]));
    const first = await handlers.WhatsNew(args, facts);
    const second = await handlers.WhatsNew(args, facts);
    expect(second).not.toBe(first);
    expect(body(second)).not.toBe(body(first));
  });

  it('off: every answer is mapped and rendered anew, to the same bytes', async () => {
    const answer = Object.freeze([item(1), item(2)]);
    const on = createOperationHandlers(serviceAnswering(() => answer));
    const off = createOperationHandlers(serviceAnswering(() => answer), undefined, { tableMemo: false });
    const first = await off.WhatsNew(args, facts);
    const second = await off.WhatsNew(args, facts);
    expect(second).not.toBe(first);
    const bytes = body(first);
    expect(body(second)).not.toBe(bytes);
    expect(Buffer.from(body(second))).toEqual(Buffer.from(bytes));
    expect(Buffer.from(bytes)).toEqual(Buffer.from(body(await on.WhatsNew(args, facts))));
  });
});
