/** A page's records are started a few per turn of the event loop, so answers in flight are read in between. */
import { describe, expect, it } from 'vitest';
import { inTurns, mapInTurns } from '../../jobs/sync/turns.js';

describe('inTurns', () => {
  it('starts `perTurn` tasks per turn of the event loop, and resolves with every result in order', async () => {
    const started: number[] = [];
    const turnOf: number[] = [];
    let turn = 0;
    const ticking = setInterval(() => undefined, 1);
    const counter = (): void => void setImmediate(() => ((turn += 1), turn < 50 && counter()));
    counter();
    const items = Array.from({ length: 40 }, (_, i) => i);
    const done = inTurns(items, async (i) => (started.push(i), turnOf.push(turn), i * 2), 16);
    // Only the first group starts in this turn.
    expect(started).toEqual(items.slice(0, 16));
    expect(await done).toEqual(items.map((i) => i * 2));
    clearInterval(ticking);
    expect(new Set(turnOf.slice(0, 16)).size).toBe(1);
    expect(turnOf[16]).toBeGreaterThan(turnOf[15]!);
    expect(turnOf[32]).toBeGreaterThan(turnOf[31]!);
  });

  it('rejects with the first failure once every task started, and every task still starts', async () => {
    const started: number[] = [];
    const err = await inTurns([0, 1, 2, 3, 4], async (i) => {
      started.push(i);
      if (i === 0) throw new Error('first');
      if (i === 3) throw new Error('later');
      return i;
    }, 2).catch((e: unknown) => e);
    expect((err as Error).message).toBe('first');
    expect(started).toEqual([0, 1, 2, 3, 4]);
  });

  it('maps `perTurn` items per turn of the event loop, in order', async () => {
    let turn = 0;
    const counter = (): void => void setImmediate(() => ((turn += 1), turn < 20 && counter()));
    counter();
    const turns = await mapInTurns(Array.from({ length: 10 }, (_, i) => i), () => turn, 4);
    expect(turns.slice(0, 4).every((t) => t === turns[0])).toBe(true);
    expect(turns[4]).toBeGreaterThan(turns[3]!);
    expect(turns[8]).toBeGreaterThan(turns[7]!);
  });
});
