/**
 * The `file` adapter's page token: where the next page starts, as base64url of `{"v":1,"o":<byte offset>,"l":<lines
 * consumed>}`. Opaque to callers and safe to store (no secrets, no record content).
 */
import { decodePageToken, encodePageToken } from '../page-token.js';
import { z } from 'zod';

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
  return encodePageToken({ v: 1, o: pos.offset, l: pos.line });
}

export function decodeFileToken(token: string): FilePosition {
  const t = decodePageToken(token, tokenSchema, 'file');
  return { offset: t.o, line: t.l };
}
