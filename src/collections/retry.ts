/**
 * The client's one retry layer, a policy of src/retry.ts. Retried: the transient class (5xx before processing,
 * nothing sent) and 429, waiting at least Retry-After; ambiguous failures only for idempotent operations. Never
 * retried: 422, 404, other 4xx, bad responses, the caller's abort. Bounded by `retries` and by the call's deadline:
 * a wait that would pass the deadline is not started and the last error is thrown. The wait holds no request slot
 * (a call takes its slot inside each attempt: slots.ts).
 */
import { retry, type RetryInfo, type RetryPolicy } from '../retry.js';
import { AbortedError, AmbiguousError, RateLimitedError, TransientError } from './errors.js';

export type { RetryInfo } from '../retry.js';

export interface Backoff {
  /** The first retry waits about this long (between half and all of it: equal jitter). */
  baseMs: number;
  /** No wait from the backoff exceeds this (Retry-After may ask for longer). */
  maxMs: number;
}
export const DEFAULT_BACKOFF: Backoff = { baseMs: 200, maxMs: 5_000 };

export function isRetryable(err: unknown, idempotent: boolean): boolean {
  if (err instanceof TransientError || err instanceof RateLimitedError) return true;
  return err instanceof AmbiguousError && idempotent;
}

/** The client's policy for one call: `retries` retries, equal jitter from `backoff`. */
export function collectionsPolicy(retries: number, backoff: Backoff, idempotent: boolean): RetryPolicy {
  return { retries, baseMs: backoff.baseMs, capMs: backoff.maxMs, jitter: 'equal', retryable: (err) => isRetryable(err, idempotent) };
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

export function withRetries<T>(attempt: (attemptNumber: number) => Promise<T>, o: RetryOptions): Promise<T> {
  return retry(attempt, collectionsPolicy(o.retries, o.backoff, o.idempotent), {
    deadlineAt: o.deadlineMs,
    signal: o.signal,
    // Retry-After is a floor: the back-off never asks the service sooner than it said.
    wait: (error, backoffMs) => Math.max(backoffMs, error instanceof RateLimitedError ? (error.retryAfterMs ?? 0) : 0),
    ...(o.onRetry ? { onRetry: o.onRetry } : {}),
    abortError: () => new AbortedError({ route: o.route, cause: o.signal?.reason }),
  });
}
