/**
 * The one retry policy (docs/architecture.md, "How it stays correct"): every retry loop of the app is a `RetryPolicy` (data) run by `retry()` (p-retry 7
 * underneath), with one back-off formula, `backoffMs`. Any room may import it, as it may src/sleep.ts.
 *
 * - Attempt 1 runs outside p-retry: nearly every call ends with it, and p-retry's set-up is per call.
 * - A failure that `retryable` refuses is thrown at once, as it is (p-retry's AbortError carries it out).
 * - After failure n (1-based) the wait is `backoffMs(n, policy)`, which the caller may adjust from the error
 *   (`wait`: a Retry-After floor, a server's hint as a ceiling).
 * - A deadline (`deadlineMs` from the start, or `deadlineAt`) refuses a wait that would reach it: the last error
 *   is thrown instead of sleeping in vain.
 * - The wait is src/sleep.ts: an abort ends it at once with `abortError()` (default: the signal's reason).
 * Nothing here holds anything during a wait: a caller that takes a slot or a lock per attempt does so inside it.
 */
import { sleep } from './sleep.js';

/**
 * How the wait after failure n spreads: `full` anywhere in [0, ceiling]; `equal` in [ceiling / 2, ceiling];
 * `none` exactly the ceiling (only for loops that need to be deterministic).
 */
export type Jitter = 'full' | 'equal' | 'none';

export interface RetryPolicy {
  /** Retries after the first attempt (attempts = retries + 1); Infinity: bounded by the deadline only. */
  readonly retries: number;
  /** The ceiling of the first wait; it doubles each retry. */
  readonly baseMs: number;
  /** No ceiling exceeds this (`baseMs` = `capMs`: a fixed-interval poll). */
  readonly capMs: number;
  readonly jitter: Jitter;
  /** From the start of `retry()`: no wait that would reach it is started. */
  readonly deadlineMs?: number;
  /** Whether a failure is worth another attempt; anything else is thrown at once. */
  readonly retryable: (err: Error) => boolean;
}

/** The ceiling of the wait after failure `n` (1-based): min(cap, base * 2^(n-1)). */
export function ceilingMs(n: number, p: Pick<RetryPolicy, 'baseMs' | 'capMs'>): number {
  return Math.min(p.capMs, p.baseMs * 2 ** Math.max(0, n - 1));
}

/** The wait after failure `n` (1-based): the ceiling, jittered as the policy says, in whole ms. */
export function backoffMs(n: number, p: Pick<RetryPolicy, 'baseMs' | 'capMs' | 'jitter'>, random: () => number = Math.random): number {
  const ceiling = ceilingMs(n, p);
  if (p.jitter === 'none') return ceiling;
  if (p.jitter === 'full') return Math.round(random() * ceiling);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

export interface RetryInfo {
  error: Error;
  /** The attempt that failed (1-based). */
  attemptNumber: number;
  waitMs: number;
}

export interface RetryOptions {
  signal?: AbortSignal | undefined;
  /** Absolute deadline (Date.now() clock); overrides the policy's `deadlineMs`. */
  deadlineAt?: number | undefined;
  /** Adjusts the back-off from the error (e.g. `Math.max(ms, retryAfter)`). */
  wait?: (error: Error, backoffMs: number) => number;
  /** Told before each wait. */
  onRetry?: (info: RetryInfo) => void;
  /** What an abort during a wait throws (default: the signal's reason). */
  abortError?: () => Error;
  /** For tests: the jitter's source. */
  random?: () => number;
}

/** Runs `attempt` (given its 1-based number) under `policy`; resolves with its first success. */
export async function retry<T>(attempt: (attemptNumber: number) => Promise<T>, policy: RetryPolicy, o: RetryOptions = {}): Promise<T> {
  const deadlineAt = o.deadlineAt ?? (policy.deadlineMs === undefined ? Infinity : Date.now() + policy.deadlineMs);
  const between = (error: Error, attemptNumber: number): Promise<void> => waitBeforeRetry(error, attemptNumber, policy, o, deadlineAt);
  try {
    return await attempt(1);
  } catch (err) {
    const error = asError(err);
    if (!policy.retryable(error) || policy.retries <= 0) throw error;
    await between(error, 1);
  }
  // p-retry is loaded on the first retry only: a process whose calls all succeed first time (the CLI's `status`)
  // never loads it.
  const { default: pRetry, AbortError } = await import('p-retry');
  return pRetry(
    async (n) => {
      try {
        return await attempt(n + 1);
      } catch (err) {
        const error = asError(err);
        // p-retry's AbortError ends the retries; p-retry throws the error it wraps.
        throw policy.retryable(error) ? error : new AbortError(error);
      }
    },
    {
      retries: policy.retries - 1,
      // p-retry's own delay is off: the wait happens in onFailedAttempt, where the error is known.
      minTimeout: 0,
      factor: 1,
      onFailedAttempt: async ({ error, attemptNumber, retriesLeft }) => {
        if (retriesLeft <= 0) return;
        await between(error, attemptNumber + 1);
      },
    },
  );
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** The wait after failed attempt `n`; throws `error` when it would reach the deadline, the abort's error when cut short. */
async function waitBeforeRetry(error: Error, n: number, p: RetryPolicy, o: RetryOptions, deadlineAt: number): Promise<void> {
  const backoff = backoffMs(n, p, o.random);
  const waitMs = Math.max(0, o.wait ? o.wait(error, backoff) : backoff);
  if (Date.now() + waitMs >= deadlineAt) throw error;
  o.onRetry?.({ error, attemptNumber: n, waitMs });
  if (!(await sleep(waitMs, o.signal))) throw o.abortError?.() ?? asError(o.signal?.reason ?? new Error('aborted'));
}

/**
 * `Retry-After` in ms (RFC 9110: delta-seconds, or an HTTP date), rounded up to the ms; a fraction of a second is
 * read too. Undefined when absent or unreadable; a date in the past is 0. Both the collections client and the
 * platforms' rate limiter read it here.
 */
export function parseRetryAfter(value: string | readonly string[] | undefined, nowMs = Date.now()): number | undefined {
  const v = (typeof value === 'string' ? value : value?.[0])?.trim();
  if (!v) return undefined;
  if (/^\d+(\.\d+)?$/.test(v)) return Math.ceil(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil(at - nowMs));
}
