/**
 * Small helpers the platform adapters share for what comes over the wire: optional text and decimal amounts in
 * zod schemas, one header's value, a short name for a transport error, and the retry policy of a request (Xero,
 * QuickBooks and the OAuth room).
 */
import { z } from 'zod';
import type { RetryPolicy } from '../retry.js';
import { PlatformError, PlatformRateLimitedError } from './types.js';

/** Text that may be absent or null; trimmed, and an empty string counts as absent. */
export const optionalText = z
  .string()
  .nullish()
  .transform((v) => {
    const t = v?.trim();
    return t === undefined || t === '' ? undefined : t;
  });

/** An amount as a JSON number, or a numeric string (`"50.00"`); absent or null is undefined. */
export const optionalDecimal = z
  .union([z.number(), z.string().regex(/^-?\d+(\.\d+)?$/).transform(Number)])
  .nullish()
  .transform((v) => v ?? undefined);

/** One header's (first) value from undici's headers. */
export function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** `ECONNREFUSED`, `UND_ERR_HEADERS_TIMEOUT`, `AbortError`, ...: what failed, without the message (which may hold a URL). */
export function errorName(err: unknown): string {
  if (err instanceof Error) return (err as Error & { code?: string }).code ?? err.name;
  return 'error';
}

/** How a request is retried after a 5xx or a network error. */
export interface RetrySettings {
  /** Retries after the first failure. */
  retries: number;
  /** First backoff; doubles each retry. */
  retryBaseMs: number;
}

/** Whether a retry can help: PLATFORM_UNAVAILABLE (5xx, a transport failure), never a 429 (the sync waits those out). */
export function isTransient(err: unknown): err is PlatformError {
  return err instanceof PlatformError && err.code === 'PLATFORM_UNAVAILABLE' && !(err instanceof PlatformRateLimitedError);
}

/**
 * A platform request's retry policy (src/retry.ts): `retries` retries, waits doubling from `retryBaseMs` with equal
 * jitter (between half and all of it, so processes that failed together do not retry together), capped at the
 * last one the settings allow (so the figures are the ones the settings name). `retryable` says which failures.
 */
export function platformPolicy(settings: RetrySettings, retryable: (err: Error) => boolean): RetryPolicy {
  return {
    retries: settings.retries,
    baseMs: settings.retryBaseMs,
    capMs: settings.retryBaseMs * 2 ** Math.max(0, settings.retries - 1),
    jitter: 'equal',
    retryable,
  };
}
