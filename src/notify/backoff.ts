/**
 * The notify job's back-off: the one retry policy's shape (src/retry.ts `backoffMs`: the wait after failure n is
 * min(cap, base * 2^(n-1)), equal jitter), with NOTIFY_BACKOFF_MS and NOTIFY_BACKOFF_MAX_MS. BullMQ runs it (the
 * notify queue's worker takes it as its `backoffStrategy`, and notify jobs name it as their backoff type), so a
 * failed delivery waits as a delayed job and holds no slot. Defaults: 12 attempts, waits of about 1, 2, 4, ... 256
 * minutes, then 6 hours twice: the last attempt comes 10 to 21 hours after the first (decision 0152).
 */
import { backoffMs, type RetryPolicy } from '../retry.js';

/** The backoff type notify jobs carry (`backoff: { type: NOTIFY_BACKOFF }`). */
export const NOTIFY_BACKOFF = 'notify';

export type NotifyBackoff = Pick<RetryPolicy, 'baseMs' | 'capMs' | 'jitter'>;

export function notifyBackoffOf(env: { NOTIFY_BACKOFF_MS: number; NOTIFY_BACKOFF_MAX_MS: number }): NotifyBackoff {
  return { baseMs: env.NOTIFY_BACKOFF_MS, capMs: env.NOTIFY_BACKOFF_MAX_MS, jitter: 'equal' };
}

/** BullMQ's custom backoff strategy: the wait after `attemptsMade` failed attempts. */
export function notifyBackoffStrategy(policy: NotifyBackoff): (attemptsMade: number) => number {
  return (attemptsMade) => backoffMs(Math.max(1, attemptsMade), policy);
}
