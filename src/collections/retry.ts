/**
 * The client's one retry layer (p-retry 7). Retried: the transient class (5xx before processing, nothing
 * sent) and 429, waiting at least Retry-After; ambiguous failures only for idempotent operations. Never
 * retried: 422, 404, other 4xx, bad responses, the caller's abort. Bounded by `retries` and by the
 * call's deadline: a wait that would pass the deadline is not started and the last error is thrown.
 */
import pRetry, { AbortError } from 'p-retry';
import { sleep as wait } from '../sleep.js';
import { AbortedError, AmbiguousError, RateLimitedError, TransientError } from './errors.js';

export interface Backoff {
  /** The first retry waits about this long (between half and all of it). */
  baseMs: number;
  /** No wait from the backoff exceeds this (Retry-After may ask for longer). */
  maxMs: number;
}
export const DEFAULT_BACKOFF: Backoff = { baseMs: 200, maxMs: 5_000 };

/** Exponential backoff with "equal jitter": between half and all of min(max, base * 2^(n-1)). */
export function backoffMs(retryNumber: number, b: Backoff): number {
  const ceiling = Math.min(b.maxMs, b.baseMs * 2 ** Math.max(0, retryNumber - 1));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

export function isRetryable(err: unknown, idempotent: boolean): boolean {
  if (err instanceof TransientError || err instanceof RateLimitedError) return true;
  return err instanceof AmbiguousError && idempotent;
}

export interface RetryInfo {
  error: Error;
  attemptNumber: number;
  waitMs: number;
}

export interface RetryOptions {
  route: string;
  idempotent: boolean;
  retries: number;
  backoff: Backoff;
  /** Absolute time (Date.now() clock) after which no new attempt starts. */
  deadlineMs: number;
  signal?: AbortSignal | undefined;
  onRetry?: (info: RetryInfo) => void;
}

export async function withRetries<T>(attempt: (attemptNumber: number) => Promise<T>, o: RetryOptions): Promise<T> {
  // The first attempt runs outside p-retry: nearly every call ends with it, and p-retry's set-up (its options
  // copied and checked, a frozen context per failure) is per call on the hot path. A failure goes on as p-retry
  // would: not retryable or no retries left -> thrown; otherwise the same wait, then p-retry takes the rest.
  try {
    return await attempt(1);
  } catch (err) {
    const error = asError(err);
    if (!isRetryable(error, o.idempotent) || o.retries <= 0) throw error;
    await waitBeforeRetry(error, 1, o);
  }
  return pRetry(
    async (n) => {
      try {
        return await attempt(n + 1);
      } catch (err) {
        const error = asError(err);
        // p-retry's AbortError ends the retries; p-retry throws the error it wraps.
        throw isRetryable(error, o.idempotent) ? error : new AbortError(error);
      }
    },
    {
      retries: o.retries - 1,
      // p-retry's own delay is off: the wait happens in onFailedAttempt, where Retry-After is known.
      minTimeout: 0,
      factor: 1,
      onFailedAttempt: async ({ error, attemptNumber, retriesLeft }) => {
        if (retriesLeft <= 0) return;
        await waitBeforeRetry(error, attemptNumber + 1, o);
      },
    },
  );
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** The wait after failed attempt `attemptNumber`; throws `error` when the wait would pass the deadline. */
async function waitBeforeRetry(error: Error, attemptNumber: number, o: RetryOptions): Promise<void> {
  const retryAfter = error instanceof RateLimitedError ? (error.retryAfterMs ?? 0) : 0;
  const waitMs = Math.max(backoffMs(attemptNumber, o.backoff), retryAfter);
  if (Date.now() + waitMs >= o.deadlineMs) throw error;
  o.onRetry?.({ error, attemptNumber, waitMs });
  await sleep(waitMs, o.route, o.signal);
}

async function sleep(ms: number, route: string, signal?: AbortSignal): Promise<void> {
  if (!(await wait(ms, signal))) throw new AbortedError({ route, cause: signal?.reason });
}
