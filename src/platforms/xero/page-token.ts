/**
 * The Xero adapter's page token: base64url of `{"v":1,"p":<page>,"s":<If-Modified-Since ms>,"a":<ms>,"i":[ids]}`.
 * `s` and `p` say what to ask Xero; `a` and `i` say what was already yielded (records older than `a`, and those
 * at exactly `a` with an id in `i`), so the overlap of a keyset step is not yielded twice. Opaque to callers;
 * safe to store (no secrets, no record content beyond ids).
 */
import { decodePageToken, encodePageToken } from '../page-token.js';
import { z } from 'zod';

export interface XeroPosition {
  /** Xero page number (1-based) of the query below. */
  page: number;
  /** The If-Modified-Since of the query (epoch ms, whole seconds); absent: everything. */
  since?: number;
  /** Records updated before this (epoch ms) were already yielded. */
  after?: number;
  /** Ids of records updated exactly at `after` that were already yielded. */
  ids?: string[];
}

const tokenSchema = z.strictObject({
  v: z.literal(1),
  p: z.number().int().min(1),
  s: z.number().int().optional(),
  a: z.number().int().optional(),
  i: z.array(z.string()).max(100).optional(),
});

export function encodeXeroToken(pos: XeroPosition): string {
  const raw: z.infer<typeof tokenSchema> = { v: 1, p: pos.page };
  if (pos.since !== undefined) raw.s = pos.since;
  if (pos.after !== undefined) raw.a = pos.after;
  if (pos.ids !== undefined && pos.ids.length > 0) raw.i = pos.ids;
  return encodePageToken(raw);
}

export function decodeXeroToken(token: string): XeroPosition {
  const t = decodePageToken(token, tokenSchema, 'xero');
  const pos: XeroPosition = { page: t.p };
  if (t.s !== undefined) pos.since = t.s;
  if (t.a !== undefined) pos.after = t.a;
  if (t.i !== undefined) pos.ids = t.i;
  return pos;
}
