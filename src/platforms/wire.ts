/**
 * Small helpers the platform adapters share for what comes over the wire: optional text and decimal amounts in
 * zod schemas, one header's value, a short name for a transport error, and the bounded retry of a request
 * (Xero, QuickBooks and the OAuth room).
 */
import { z } from 'zod';
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

/** What a failed attempt threw, if a retry can help (PLATFORM_UNAVAILABLE, not a 429); anything else is thrown on. */
export function retryable(err: unknown): PlatformError {
  if (!(err instanceof PlatformError) || err.code !== 'PLATFORM_UNAVAILABLE' || err instanceof PlatformRateLimitedError) throw err;
  return err;
}

/**
 * One more failure: past `settings.retries`, `reason` is thrown; else `warn` is told (with the new count) and the
 * doubling backoff waited out. Returns the new count of failures.
 */
export async function backOff(failures: number, reason: PlatformError, settings: RetrySettings, warn?: (failures: number) => void): Promise<number> {
  const n = failures + 1;
  if (n > settings.retries) throw reason;
  warn?.(n);
  await new Promise((r) => setTimeout(r, settings.retryBaseMs * 2 ** (n - 1)));
  return n;
}
