/**
 * The one retry policy (src/retry.ts): attempt counts, the cap, jitter bounds, the deadline, non-retryable errors,
 * abort. No timed assertions: attempts are counted, waits are read from `onRetry`, and the clock is vitest's.
 */
import fc from 'fast-check';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { backoffMs, ceilingMs, retry, type RetryInfo, type RetryPolicy } from '../src/retry.js';

class Flaky extends Error {}
class Fatal extends Error {}

const policy = (p: Partial<RetryPolicy> = {}): RetryPolicy => ({ retries: 3, baseMs: 10, capMs: 40, jitter: 'none', retryable: (err) => err instanceof Flaky, ...p });

/** An attempt that fails with `errors[n - 1]` (Flaky past the list) until attempt `okAt`. */
function attempts(okAt = Infinity, errors: Error[] = []): { fn: (n: number) => Promise<string>; calls: number[] } {
  const calls: number[] = [];
  return {
    calls,
    fn: async (n) => {
      calls.push(n);
      if (n >= okAt) return `ok at ${n}`;
      throw errors[n - 1] ?? new Flaky(`attempt ${n}`);
    },
  };
}

/** Runs `p` to its end on vitest's clock; resolves with its value or its error. */
async function settle<T>(p: Promise<T>): Promise<T | Error> {
  const outcome = p.then(
    (v) => v,
    (err: unknown) => err as Error,
  );
  await vi.runAllTimersAsync();
  return outcome;
}

// retry() loads p-retry at its first retry: loaded here, on the real clock, so the fake clock runs only the waits.
beforeAll(async () => {
  await import('p-retry');
});

beforeEach(() => {
  vi.useFakeTimers({ now: Date.parse('2026-11-27T00:00:00Z') });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('backoffMs: one formula', () => {
  it('doubles from baseMs and stops at capMs', () => {
    const p = { baseMs: 100, capMs: 1_000, jitter: 'none' as const };
    expect([1, 2, 3, 4, 5, 6, 30].map((n) => backoffMs(n, p))).toEqual([100, 200, 400, 800, 1_000, 1_000, 1_000]);
    expect(ceilingMs(0, p)).toBe(100);
  });

  it('baseMs = capMs is a fixed-interval poll', () => {
    expect([1, 2, 9].map((n) => backoffMs(n, { baseMs: 50, capMs: 50, jitter: 'none' }))).toEqual([50, 50, 50]);
  });

  it('keeps full jitter in [0, ceiling] and equal jitter in [ceiling / 2, ceiling]', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 0, max: 60_000 }), fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), (n, baseMs, capMs, r) => {
        const ceiling = ceilingMs(n, { baseMs, capMs });
        const full = backoffMs(n, { baseMs, capMs, jitter: 'full' }, () => r);
        const equal = backoffMs(n, { baseMs, capMs, jitter: 'equal' }, () => r);
        expect(ceiling).toBeLessThanOrEqual(capMs);
        expect(full).toBeGreaterThanOrEqual(0);
        expect(full).toBeLessThanOrEqual(ceiling);
        expect(equal).toBeGreaterThanOrEqual(Math.floor(ceiling / 2));
        expect(equal).toBeLessThanOrEqual(ceiling);
        expect(Number.isInteger(full) && Number.isInteger(equal)).toBe(true);
      }),
    );
  });

  it('spans the whole range: the extremes of the random source reach both ends', () => {
    const p = { baseMs: 200, capMs: 5_000 };
    expect(backoffMs(1, { ...p, jitter: 'full' }, () => 0)).toBe(0);
    expect(backoffMs(1, { ...p, jitter: 'full' }, () => 1)).toBe(200);
    expect(backoffMs(1, { ...p, jitter: 'equal' }, () => 0)).toBe(100);
    expect(backoffMs(1, { ...p, jitter: 'equal' }, () => 1)).toBe(200);
  });
});

describe('retry', () => {
  it('makes retries + 1 attempts and throws the last error', async () => {
    const a = attempts();
    const err = await settle(retry(a.fn, policy({ retries: 3 })));
    expect(a.calls).toEqual([1, 2, 3, 4]);
    expect(err).toBeInstanceOf(Flaky);
    expect((err as Error).message).toBe('attempt 4');
  });

  it('returns the first success', async () => {
    const a = attempts(3);
    expect(await settle(retry(a.fn, policy()))).toBe('ok at 3');
    expect(a.calls).toEqual([1, 2, 3]);
  });

  it('retries 0: one attempt', async () => {
    const a = attempts();
    expect(await settle(retry(a.fn, policy({ retries: 0 })))).toBeInstanceOf(Flaky);
    expect(a.calls).toEqual([1]);
  });

  it('waits the back-off between attempts, capped', async () => {
    const waits: RetryInfo[] = [];
    const a = attempts();
    await settle(retry(a.fn, policy({ retries: 5, baseMs: 10, capMs: 40 }), { onRetry: (i) => waits.push(i) }));
    expect(waits.map((w) => [w.attemptNumber, w.waitMs])).toEqual([[1, 10], [2, 20], [3, 40], [4, 40], [5, 40]]);
  });

  it('keeps every jittered wait within its bounds', async () => {
    const waits: number[] = [];
    await settle(retry(attempts().fn, policy({ retries: 6, baseMs: 8, capMs: 64, jitter: 'equal' }), { onRetry: (i) => waits.push(i.waitMs) }));
    expect(waits).toHaveLength(6);
    waits.forEach((w, i) => {
      const ceiling = Math.min(64, 8 * 2 ** i);
      expect(w).toBeGreaterThanOrEqual(ceiling / 2);
      expect(w).toBeLessThanOrEqual(ceiling);
    });
  });

  it('lets the caller floor a wait (Retry-After) or cap it (a server hint)', async () => {
    const floored: number[] = [];
    await settle(retry(attempts().fn, policy({ retries: 2 }), { wait: (_e, ms) => Math.max(ms, 1_500), onRetry: (i) => floored.push(i.waitMs) }));
    expect(floored).toEqual([1_500, 1_500]);
    const capped: number[] = [];
    await settle(retry(attempts().fn, policy({ retries: 2, baseMs: 100, capMs: 100 }), { wait: (_e, ms) => Math.min(ms, 3), onRetry: (i) => capped.push(i.waitMs) }));
    expect(capped).toEqual([3, 3]);
  });

  it('ends at once on a non-retryable error, at the first attempt or a later one, throwing it as it is', async () => {
    const fatal = new Fatal('no');
    const first = attempts(Infinity, [fatal]);
    expect(await settle(retry(first.fn, policy()))).toBe(fatal);
    expect(first.calls).toEqual([1]);
    const later = attempts(Infinity, [new Flaky('a'), new Flaky('b'), fatal]);
    expect(await settle(retry(later.fn, policy({ retries: 9 })))).toBe(fatal);
    expect(later.calls).toEqual([1, 2, 3]);
  });

  it('refuses a wait that would reach the deadline and throws the last error instead', async () => {
    // Waits of 10 ms, a deadline 25 ms on: attempts at 0, 10 and 20; the next wait would end at 30.
    const a = attempts();
    const err = await settle(retry(a.fn, policy({ retries: Infinity, baseMs: 10, capMs: 10, deadlineMs: 25 })));
    expect(a.calls).toEqual([1, 2, 3]);
    expect((err as Error).message).toBe('attempt 3');
  });

  it('takes an absolute deadline too; a first wait past it means one attempt', async () => {
    const a = attempts();
    await settle(retry(a.fn, policy({ baseMs: 1_000, capMs: 1_000 }), { deadlineAt: Date.now() + 999 }));
    expect(a.calls).toEqual([1]);
  });

  it('an abort during a wait ends it at once, with the abort error', async () => {
    const controller = new AbortController();
    const a = attempts();
    const p = retry(a.fn, policy({ baseMs: 60_000, capMs: 60_000 }), { signal: controller.signal });
    const outcome = p.catch((err: unknown) => err as Error);
    await vi.advanceTimersByTimeAsync(1_000);
    controller.abort(new Error('stop'));
    expect(((await outcome) as Error).message).toBe('stop');
    expect(a.calls).toEqual([1]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('an abort before a wait: no wait, the abort error from `abortError`', async () => {
    const controller = new AbortController();
    controller.abort();
    const a = attempts();
    const err = await settle(retry(a.fn, policy(), { signal: controller.signal, abortError: () => new Fatal('aborted') }));
    expect(err).toBeInstanceOf(Fatal);
    expect(a.calls).toEqual([1]);
  });
});
