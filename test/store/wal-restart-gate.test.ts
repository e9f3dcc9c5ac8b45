/**
 * The catch-up before a commit that lets the WAL start over (src/store/sqlite/wal-restart-gate.ts):
 * asked for once per look of the thread's at a WAL past the threshold, shared by the commits
 * that arrive meanwhile, never holding them longer than its timeout or past its failure, and the
 * serving connection's own checkpoints switched on past the runaway size and off again once the
 * WAL has started over.
 */
import { describe, expect, it } from 'vitest';
import { createWalRestartGate, WAL_STATE_FRAMES, WAL_STATE_LENGTH, WAL_STATE_LOOKS, type WalRestartGateOptions } from '../../src/store/sqlite/wal-restart-gate.js';

function gateWith(overrides: Partial<WalRestartGateOptions> = {}): {
  gate: ReturnType<typeof createWalRestartGate>;
  look(frames: number): void;
  catchUps: { settle(ok: boolean): void }[];
  runaway: boolean[];
} {
  const state = new Int32Array(new SharedArrayBuffer(WAL_STATE_LENGTH * 4));
  const catchUps: { settle(ok: boolean): void }[] = [];
  const runaway: boolean[] = [];
  const gate = createWalRestartGate({
    state, restartFrames: 100, runawayFrames: 400, timeoutMs: 10_000,
    catchUp: () => new Promise((resolve, reject) => catchUps.push({ settle: (ok) => (ok ? resolve(0) : reject(new Error('busy'))) })),
    onRunaway: (on) => runaway.push(on),
    ...overrides,
  });
  const look = (frames: number): void => {
    Atomics.store(state, WAL_STATE_FRAMES, frames);
    Atomics.add(state, WAL_STATE_LOOKS, 1);
  };
  return { gate, look, catchUps, runaway };
}

const settled = async (p: Promise<unknown>): Promise<boolean> => {
  let done = false;
  void p.then(() => { done = true; });
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  return done;
};

describe('WAL restart gate', () => {
  it('lets commits through while the WAL is under the threshold, without asking the thread', () => {
    const { gate, look, catchUps } = gateWith();
    expect(gate.beforeCommit()).toBeNull();
    look(99);
    expect(gate.beforeCommit()).toBeNull();
    expect(catchUps).toHaveLength(0);
  });

  it('holds the commits past the threshold until the thread has caught up, once per look of the thread\'s', async () => {
    const { gate, look, catchUps } = gateWith();
    look(150);
    const first = gate.beforeCommit();
    const second = gate.beforeCommit();
    expect(first).not.toBeNull();
    expect(second).toBe(first); // the commits of the meantime wait for the same catch-up
    expect(catchUps).toHaveLength(1);
    expect(await settled(first as Promise<void>)).toBe(false);
    catchUps[0]?.settle(true);
    await first;
    // The next commit starts the WAL over; until the thread looks again, nothing more is asked.
    expect(gate.beforeCommit()).toBeNull();
    expect(catchUps).toHaveLength(1);
    // Another look still past the threshold (another process committed meanwhile): asked again.
    look(180);
    const again = gate.beforeCommit();
    expect(catchUps).toHaveLength(2);
    catchUps[1]?.settle(true);
    await again;
  });

  it('releases the commits when the catch-up fails, and after the timeout when it does not answer', async () => {
    const failing = gateWith();
    failing.look(150);
    const wait = failing.gate.beforeCommit();
    failing.catchUps[0]?.settle(false);
    await expect(wait).resolves.toBeUndefined();

    const silent = gateWith({ timeoutMs: 20 });
    silent.look(150);
    const held = silent.gate.beforeCommit();
    expect(await settled(held as Promise<void>)).toBe(false);
    await expect(held).resolves.toBeUndefined();
    expect(silent.gate.beforeCommit()).toBeNull();
  });

  it('switches the serving connection\'s own checkpoints on past the runaway size, and off once the WAL has started over', async () => {
    const { gate, look, catchUps, runaway } = gateWith();
    look(399);
    void gate.beforeCommit();
    catchUps[0]?.settle(true);
    expect(runaway).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    look(400);
    void gate.beforeCommit();
    expect(runaway).toEqual([true]);
    catchUps[1]?.settle(true);
    await new Promise((resolve) => setImmediate(resolve));
    look(900);
    void gate.beforeCommit();
    expect(runaway).toEqual([true]);
    catchUps[2]?.settle(true);
    await new Promise((resolve) => setImmediate(resolve));
    look(10);
    expect(gate.beforeCommit()).toBeNull();
    expect(gate.beforeCommit()).toBeNull();
    expect(runaway).toEqual([true, false]);
  });
});
