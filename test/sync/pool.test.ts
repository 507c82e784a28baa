/**
 * The run's request pool as it adapts to the service's answers (decisions 127 and 155): scattered 429s and 503s are
 * their own requests' (no cut, no pause); a burst of them (a quarter of the last 32) halves the requests let out at
 * once, once per round of requests; a Retry-After pauses every take only when most of the last 32 were refused;
 * answers that are fine grow it back by one a round, up to the limit; other faults change nothing. Fake timers stand
 * in for the Retry-After's clock; no assertion is about time measured.
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
  it('takes scattered 429s for their own requests: no cut, no pause (a service shedding a few percent of its load)', async () => {
    vi.useFakeTimers();
    const pool = new Pool(32);
    // 3 in 100 answers refused, each with Retry-After: never a quarter of the last 32, never a pause.
    for (let i = 0; i < 10; i += 1) {
      await answer(pool, 31, ANSWERED);
      await answer(pool, 1, tooMany(1_000));
    }
    expect(pool.allowed).toBe(32);
    expect(await settledYet(pool.take(undefined, false)), 'no pause holds the next take').toBe(true);
    expect(pool.snapshot().pausedForMs).toBe(0);
  });

  it('halves on a burst (a quarter of the last 32 answers overloaded, 429s and 503s alike), once per round', async () => {
    const pool = new Pool(32);
    await answer(pool, 32, ANSWERED);
    await answer(pool, 4, tooMany());
    await answer(pool, 3, unavailable());
    expect(pool.allowed).toBe(32);
    await answer(pool, 1, tooMany());
    expect(pool.allowed).toBe(16);
    // Answers to requests sent before the cut do not cut again; one sent after it does, while the burst lasts.
    const round = await takeAll(pool, 16);
    for (const t of round) pool.give(t, tooMany());
    expect(pool.allowed).toBe(8);
    expect(pool.running).toBe(0);
  });

  it('a round of 429s answering one round of requests halves once, not once per 429', async () => {
    const pool = new Pool(8);
    await answer(pool, 32, ANSWERED);
    const round = await takeAll(pool, 8);
    for (const t of round) pool.give(t, tooMany());
    expect(pool.allowed).toBe(4);
    const next = await takeAll(pool, 4);
    pool.give(next[0]!, tooMany());
    expect(pool.allowed).toBe(2);
    for (const t of next.slice(1)) pool.give(t, tooMany());
    expect(pool.allowed).toBe(2);
  });

  it('lets no more than the number allowed out at once', async () => {
    const pool = new Pool(4);
    await answer(pool, 8, tooMany());
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
    await answer(pool, 8, tooMany());
    await answer(pool, 1, tooMany());
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

  it('changes nothing on 500s, resets and timeouts', async () => {
    const pool = new Pool(8);
    await answer(pool, 50, FAILED);
    expect(pool.allowed).toBe(8);
  });

  it('pauses every take for a Retry-After (capped) once most recent answers are refused, the tenant as one', async () => {
    vi.useFakeTimers();
    const pool = new Pool(4);
    // 16 of the last 32 refused: a burst (the pool is cut), not yet most.
    await answer(pool, 16, ANSWERED);
    await answer(pool, 16, tooMany(1_000));
    expect(pool.snapshot().pausedForMs).toBe(0);
    // The 17th of 32: most are refused, and this one's Retry-After pauses the pool.
    pool.give(await pool.take(undefined, false), tooMany(1_000));
    const during = pool.take(undefined, false);
    expect(await settledYet(during)).toBe(false);
    await vi.advanceTimersByTimeAsync(999);
    expect(await settledYet(during)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settledYet(during)).toBe(true);
    pool.give(await during, tooMany(3_600_000));
    const capped = pool.take(undefined, false);
    await vi.advanceTimersByTimeAsync(MAX_PAUSE_MS - 1);
    expect(await settledYet(capped)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settledYet(capped)).toBe(true);
  });

  it('says what it holds: slots by stage (token lease, sent), takes waiting, a pause', async () => {
    vi.useFakeTimers();
    const pool = new Pool(2);
    const [a, b] = await takeAll(pool, 2);
    pool.sending(b!);
    const waiting = pool.take(undefined, false);
    await vi.advanceTimersByTimeAsync(1_500);
    expect(pool.snapshot()).toMatchObject({ limit: 2, allowed: 2, held: { token: 1, sent: 1, oldestMs: 1_500 }, waiting: { count: 1, oldestMs: 1_500 }, pausedForMs: 0 });
    pool.give(a!, ANSWERED);
    pool.give(b!, ANSWERED);
    pool.give(await waiting, ANSWERED);
    // A ticket given back twice frees one slot, not two.
    pool.give(a!, ANSWERED);
    expect(pool.running).toBe(0);
    expect(pool.snapshot().held).toEqual({ token: 0, sent: 0, oldestMs: 0 });
  });

  it('wakes its waiters when a pause ends although its timer fires a tick early and nothing is in flight (issue 35: the run that stalled for good)', async () => {
    vi.useFakeTimers();
    // A clock moved by hand; with `drift`, every reading moves it a millisecond on (time passing between two readings).
    let t = 1_000_000;
    let drift = false;
    const clock = (): number => {
      const now = t;
      if (drift) t += 1;
      return now;
    };
    const pool = new Pool(4, {}, clock);
    await answer(pool, 16, ANSWERED);
    await answer(pool, 16, tooMany(100));
    // The 17th refused of the last 32: a pause of 100 ms, with no request in flight.
    pool.give(await pool.take(undefined, false), tooMany(100));
    const pausedUntil = t + 100;
    expect(pool.snapshot().pausedForMs).toBe(100);
    const held = pool.take(undefined, false);
    // The timer fires when this process's clock reads a millisecond before the pause's end (Node fires timers by
    // libuv's loop time; Date.now() may still be a millisecond short), and the clock moves on as it is read.
    t = pausedUntil - 1;
    drift = true;
    await vi.advanceTimersByTimeAsync(100);
    await vi.advanceTimersByTimeAsync(5);
    expect(await settledYet(held), 'the waiter was let go at the end of the pause').toBe(true);
    drift = false;
    pool.give(await held, ANSWERED);
    expect(pool.running).toBe(0);
  });

  it('rejects a take waiting out a pause when its signal aborts', async () => {
    vi.useFakeTimers();
    const pool = new Pool(4);
    await answer(pool, 17, tooMany(5_000));
    expect(pool.snapshot().pausedForMs).toBeGreaterThan(0);
    const stop = new AbortController();
    const waiting = pool.take(stop.signal, false);
    stop.abort(new Error('run stopped'));
    await expect(waiting).rejects.toThrow('run stopped');
    await expect(pool.take(stop.signal, false)).rejects.toThrow('run stopped');
    expect(pool.running).toBe(0);
  });
});
