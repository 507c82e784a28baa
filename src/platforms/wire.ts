/**
 * Small helpers the platform adapters share for what comes over the wire: optional text and decimal amounts in
 * zod schemas, one header's value, and a short name for a transport error (Xero, QuickBooks and the OAuth room).
 */
import { z } from 'zod';

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
