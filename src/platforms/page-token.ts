/**
 * Opaque page tokens shared by the adapters: JSON in base64url, read back through the adapter's own zod
 * schema. A token that was not issued by that adapter is a non-retryable error naming the adapter.
 */
import type { z } from 'zod';
import { PlatformError } from './types.js';

export function encodePageToken(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

export function decodePageToken<S extends z.ZodType>(token: string, schema: S, adapter: string): z.infer<S> {
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    raw = undefined;
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new PlatformError('PLATFORM_BAD_RESPONSE', `${adapter} adapter: the page token is not one this adapter issued`, false);
  return parsed.data;
}
