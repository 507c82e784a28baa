/**
 * The `file` adapter's page token: where the next page starts, as base64url of `{"v":1,"o":<byte offset>,"l":<lines
 * consumed>}`. Opaque to callers and safe to store (no secrets, no record content).
 */
import { z } from 'zod';
import { PlatformError } from '../types.js';

export interface FilePosition {
  /** Byte offset of the first unread line (always just after a `\n`, or 0). */
  offset: number;
  /** Lines consumed before `offset` (blank ones too), so the next line is `line + 1`. */
  line: number;
}

const tokenSchema = z.strictObject({
  v: z.literal(1),
  o: z.number().int().min(0),
  l: z.number().int().min(0),
});

export function encodeFileToken(pos: FilePosition): string {
  return Buffer.from(JSON.stringify({ v: 1, o: pos.offset, l: pos.line }), 'utf8').toString('base64url');
}

export function decodeFileToken(token: string): FilePosition {
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    raw = undefined;
  }
  const parsed = tokenSchema.safeParse(raw);
  if (!parsed.success) {
    throw new PlatformError('PLATFORM_BAD_RESPONSE', 'file adapter: the page token is not one this adapter issued', false);
  }
  return { offset: parsed.data.o, line: parsed.data.l };
}
