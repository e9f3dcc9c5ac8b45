/**
 * The revision gate (src/domain/revision-gate.ts) over a store whose reads answer when told to:
 * one read per turn, sent after the turn's callers asked, never shared with a caller that asked
 * after it was sent; the tokens riding on it; one read at a time when asked.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createRevisionGate } from '../../src/domain/revision-gate.js';
import type { RevisionStore, RevisionsWithTokens, StoreRevisions, TokenRecord } from '../../src/store/store.js';

interface Sent {
  readonly hashes: readonly string[] | null;
  answer(access: number, tokens?: readonly string[]): void;
  fail(error: Error): void;
}

/** A store whose reads wait until the test answers them, in the order they were sent. */
function scriptedStore(): { store: RevisionStore; sent: Sent[] } {
  const sent: Sent[] = [];
  const record = (tokenHash: string): TokenRecord => ({
    tokenHash, kind: 'session', userId: 1, appId: 2, clientIp: null, sourceIp: null, issuedAt: new Date(0), expiresAt: new Date(1e13),
    lastUsedAt: new Date(0), usedAt: null, revokedAt: null, userEnabled: true, appEnabled: true, granted: true, idleTimeoutSeconds: null, login: 'u',
  });
  const read = (hashes: readonly string[] | null): Promise<RevisionsWithTokens> => new Promise((resolve, reject) => {
    sent.push({
      hashes,
      answer: (access, tokens = []) => resolve({ revisions: { news: 1, access }, tokens: new Map(tokens.map((h) => [h, record(h)])) }),
      fail: reject,
    });
  });
  return {
    sent,
    store: {
      revisions: async (): Promise<StoreRevisions> => (await read(null)).revisions,
      revisionsWithTokens: (hashes) => read(hashes),
    },
  };
}

const settleToken = ({ token }: { readonly token: TokenRecord | null }): TokenRecord | null => token;

describe('revision gate', () => {
  it('sends one read per turn after its callers asked, with the tokens they asked for, each once', async () => {
    const { store, sent } = scriptedStore();
    const gate = createRevisionGate(store);
    const a = gate.current();
    const t1 = gate.currentWithToken('h1', settleToken);
    const t1again = gate.currentWithToken('h1', settleToken);
    const t2 = gate.currentWithToken('h2', settleToken);
    expect(t1again).toBe(t1);
    expect(sent).toHaveLength(0); // not before the check phase
    await nextTurn();
    expect(sent.map((s) => s.hashes)).toEqual([['h1', 'h2']]);
    sent[0]?.answer(7, ['h1']);
    expect((await a).access).toBe(7);
    expect((await t1)?.tokenHash).toBe('h1');
    expect(await t2).toBeNull();
  });

  it('never gives a caller a read sent before it asked: it waits for the next one', async () => {
    const { store, sent } = scriptedStore();
    const gate = createRevisionGate(store);
    const first = gate.current();
    await nextTurn();
    const second = gate.currentWithToken('h', settleToken); // the first read is under way
    await nextTurn();
    expect(sent).toHaveLength(2); // sent at once, beside the first
    sent[1]?.answer(2, ['h']);
    sent[0]?.answer(1);
    expect((await first).access).toBe(1);
    expect((await second)?.tokenHash).toBe('h');
  });

  it('one at a time: callers arriving while a read is under way wait for the next, sent when it returns', async () => {
    const { store, sent } = scriptedStore();
    const gate = createRevisionGate(store, { oneAtATime: true });
    const first = gate.current();
    await nextTurn();
    expect(sent).toHaveLength(1);
    const second = gate.current();
    const third = gate.currentWithToken('h', settleToken);
    await nextTurn();
    await nextTurn();
    expect(sent).toHaveLength(1); // the first is still under way
    sent[0]?.answer(1);
    expect((await first).access).toBe(1);
    await nextTurn();
    expect(sent.map((s) => s.hashes)).toEqual([null, ['h']]); // one read for both later callers
    sent[1]?.answer(2, ['h']);
    expect((await second).access).toBe(2);
    expect((await third)?.tokenHash).toBe('h');
    // A failed read fails its callers, and the next read is sent all the same.
    const fourth = gate.current();
    await nextTurn();
    const fifth = gate.current();
    sent[2]?.fail(new Error('database unavailable'));
    await expect(fourth).rejects.toThrow('database unavailable');
    await nextTurn();
    expect(sent).toHaveLength(4);
    sent[3]?.answer(3);
    expect((await fifth).access).toBe(3);
  });
});
