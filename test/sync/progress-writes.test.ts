/**
 * A run's progress is written at most once every `everyMs`, the latest state last; a run shorter than that writes
 * none, and nothing is written once the run has stopped its progress (its finish comes after). The clock is
 * vitest's fake one: what is held is the order and count of writes, not how long anything took.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ProgressWrites } from '../../jobs/sync/progress-writes.js';

describe('ProgressWrites', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes nothing for a run that ends within the interval', async () => {
    const written: number[] = [];
    const w = new ProgressWrites<number>(async (p) => void written.push(p), 1_000);
    w.push(1);
    w.push(2);
    await vi.advanceTimersByTimeAsync(500);
    await w.stop();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(written).toEqual([]);
  });

  it('writes the latest state once an interval, in order', async () => {
    const written: number[] = [];
    const w = new ProgressWrites<number>(async (p) => void written.push(p), 1_000);
    w.push(1);
    w.push(2);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(written).toEqual([2]);
    w.push(3);
    await vi.advanceTimersByTimeAsync(400);
    w.push(4);
    await vi.advanceTimersByTimeAsync(599);
    expect(written).toEqual([2]);
    await vi.advanceTimersByTimeAsync(1);
    expect(written).toEqual([2, 4]);
    // Quiet for a while: the next push is written at once (its interval has passed).
    await vi.advanceTimersByTimeAsync(3_000);
    w.push(5);
    await vi.advanceTimersByTimeAsync(0);
    expect(written).toEqual([2, 4, 5]);
    await w.stop();
  });

  it('stop waits for a write under way and drops what is pending', async () => {
    const written: number[] = [];
    let release: () => void = () => undefined;
    const w = new ProgressWrites<number>(
      (p) =>
        new Promise<void>((resolve) => {
          release = () => (written.push(p), resolve());
        }),
      1_000,
    );
    w.push(1);
    await vi.advanceTimersByTimeAsync(1_000);
    w.push(2);
    let stopped = false;
    const stopping = w.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    release();
    await stopping;
    w.push(3);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(written).toEqual([1]);
  });

  it('a failed write leaves the next one to go', async () => {
    const written: number[] = [];
    const w = new ProgressWrites<number>(async (p) => {
      if (p === 1) throw new Error('redis down');
      written.push(p);
    }, 1_000);
    w.push(1);
    await vi.advanceTimersByTimeAsync(1_000);
    w.push(2);
    await vi.advanceTimersByTimeAsync(1_000);
    await w.stop();
    expect(written).toEqual([2]);
  });
});
