/**
 * The run's request pool as it adapts to the service's answers (decision 127): a 429 (or a 503 with Retry-After)
 * halves the requests let out at once, once per round of requests; scattered 503s do not, a burst of them does;
 * Retry-After pauses every take; answers that are fine grow it back by one a round, up to the limit; other faults
 * change nothing. Fake timers stand in for the Retry-After's clock; no assertion is about time measured.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_PAUSE_MS, Pool } from '../../jobs/sync/pool.js';
import { ANSWERED, FAILED, type SlotOutcome } from '../../src/collections/slots.js';

const tooMany = (retryAfterMs?: number): SlotOutcome => ({ kind: 'overloaded', status: 429, retryAfterMs });
const unavailable = (retryAfterMs?: number): SlotOutcome => ({ kind: 'overloaded', status: 503, retryAfterMs });

/** Takes `n` slots at once (each must be free) and returns their tickets. */
async function takeAll(pool: Pool, n: number): Promise<number[]> {
  return Promise.all(Array.from({ length: n }, () => pool.take(undefined, false)));
}

/** Takes one slot and gives it back with `outcome`, `n` times. */
async function answer(pool: Pool, n: number, outcome: SlotOutcome): Promise<void> {
  for (let i = 0; i < n; i += 1) pool.give(await pool.take(undefined, false), outcome);
}

/** Whether a promise has settled, after the callbacks already queued have run. */
async function settledYet(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < 5; i += 1) await Promise.resolve();
  return done;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('the request pool adapts to the service', () => {
  it('halves on a round of 429s once, not once per 429; a 429 to a request sent after the cut halves again', async () => {
    const pool = new Pool(8);
    const round = await takeAll(pool, 8);
    for (const t of round) pool.give(t, tooMany());
    expect(pool.allowed).toBe(4);
    const next = await takeAll(pool, 4);
    pool.give(next[0]!, tooMany());
    expect(pool.allowed).toBe(2);
    for (const t of next.slice(1)) pool.give(t, tooMany());
    expect(pool.allowed).toBe(2);
    expect(pool.running).toBe(0);
  });

  it('lets no more than the number allowed out at once', async () => {
    const pool = new Pool(4);
    pool.give(await pool.take(undefined, false), tooMany());
    expect(pool.allowed).toBe(2);
    const [a, b] = await takeAll(pool, 2);
    const third = pool.take(undefined, false);
    expect(await settledYet(third)).toBe(false);
    pool.give(a!, ANSWERED);
    expect(await settledYet(third)).toBe(true);
    pool.give(b!, ANSWERED);
    pool.give(await third, ANSWERED);
  });

  it('grows back by one per round of answers (as many answers as allowed), up to the limit', async () => {
    const pool = new Pool(8);
    pool.give(await pool.take(undefined, false), tooMany());
    pool.give(await pool.take(undefined, false), tooMany());
    expect(pool.allowed).toBe(2);
    await answer(pool, 1, ANSWERED);
    expect(pool.allowed).toBe(2);
    await answer(pool, 1, ANSWERED);
    expect(pool.allowed).toBe(3);
    await answer(pool, 3, ANSWERED);
    expect(pool.allowed).toBe(4);
    await answer(pool, 4 + 5 + 6 + 7, ANSWERED);
    expect(pool.allowed).toBe(8);
    await answer(pool, 100, ANSWERED);
    expect(pool.allowed).toBe(8);
  });

  it('takes scattered 503s without Retry-After for faults of their requests; a burst of them halves', async () => {
    const pool = new Pool(32);
    for (let i = 0; i < 10; i += 1) {
      await answer(pool, 15, ANSWERED);
      await answer(pool, 1, unavailable());
    }
    expect(pool.allowed).toBe(32);
    await answer(pool, 32, ANSWERED);
    // A quarter of the last 32 answers: a burst.
    await answer(pool, 7, unavailable());
    expect(pool.allowed).toBe(32);
    await answer(pool, 1, unavailable());
    expect(pool.allowed).toBe(16);
  });

  it('halves on a 503 with Retry-After, as on a 429', async () => {
    const pool = new Pool(16);
    await answer(pool, 1, unavailable(0));
    expect(pool.allowed).toBe(8);
  });

  it('changes nothing on 500s, resets and timeouts', async () => {
    const pool = new Pool(8);
    await answer(pool, 50, FAILED);
    expect(pool.allowed).toBe(8);
  });

  it('pauses every take for a Retry-After (capped), the tenant as one', async () => {
    vi.useFakeTimers();
    const pool = new Pool(4);
    const [a, b] = await takeAll(pool, 2);
    pool.give(a!, tooMany(1_000));
    const during = pool.take(undefined, false);
    expect(await settledYet(during)).toBe(false);
    // A slot is free, and the answer of another request changes nothing: the pause holds.
    pool.give(b!, ANSWERED);
    await vi.advanceTimersByTimeAsync(999);
    expect(await settledYet(during)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settledYet(during)).toBe(true);
    pool.give(await during, ANSWERED);

    pool.give(await pool.take(undefined, false), tooMany(3_600_000));
    const capped = pool.take(undefined, false);
    await vi.advanceTimersByTimeAsync(MAX_PAUSE_MS - 1);
    expect(await settledYet(capped)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settledYet(capped)).toBe(true);
  });

  it('rejects a take waiting out a pause when its signal aborts', async () => {
    vi.useFakeTimers();
    const pool = new Pool(4);
    pool.give(await pool.take(undefined, false), tooMany(5_000));
    const stop = new AbortController();
    const waiting = pool.take(stop.signal, false);
    stop.abort(new Error('run stopped'));
    await expect(waiting).rejects.toThrow('run stopped');
    await expect(pool.take(stop.signal, false)).rejects.toThrow('run stopped');
    expect(pool.running).toBe(0);
  });
});
