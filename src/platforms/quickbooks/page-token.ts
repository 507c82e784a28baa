/**
 * The QuickBooks adapter's page token: base64url JSON `{"v":1,"ph","s","p","n","a","i","h"}`. `ph` is the phase
 * (`d` deletions from the change feed, `c` check of remembered ids, `q` the query listing); `s` the lower bound of
 * the query (epoch ms) or of the change feed; `p`/`n` STARTPOSITION and a narrowed MAXRESULTS; `a`/`i` what was
 * already yielded (records stamped before `a`, and those at `a` with an id in `i`); `h` the HSCAN cursor of the
 * check. Opaque to callers; no secrets, no record content beyond ids.
 */
import { z } from 'zod';
import { decodePageToken, encodePageToken } from '../page-token.js';

export interface QboPosition {
  phase: 'd' | 'c' | 'q';
  since?: number;
  start: number;
  narrowed?: number;
  after?: number;
  ids?: string[];
  scan?: string;
}

const tokenSchema = z.strictObject({
  v: z.literal(1),
  ph: z.enum(['d', 'c', 'q']),
  s: z.number().int().optional(),
  p: z.number().int().min(1),
  n: z.number().int().min(1).optional(),
  a: z.number().int().optional(),
  i: z.array(z.string()).max(100).optional(),
  h: z.string().regex(/^\d+$/).optional(),
});

export function encodeQboToken(pos: QboPosition): string {
  const raw: z.infer<typeof tokenSchema> = { v: 1, ph: pos.phase, p: pos.start };
  if (pos.since !== undefined) raw.s = pos.since;
  if (pos.narrowed !== undefined) raw.n = pos.narrowed;
  if (pos.after !== undefined) raw.a = pos.after;
  if (pos.ids !== undefined && pos.ids.length > 0) raw.i = pos.ids;
  if (pos.scan !== undefined) raw.h = pos.scan;
  return encodePageToken(raw);
}

export function decodeQboToken(token: string): QboPosition {
  const t = decodePageToken(token, tokenSchema, 'quickbooks');
  const pos: QboPosition = { phase: t.ph, start: t.p };
  if (t.s !== undefined) pos.since = t.s;
  if (t.n !== undefined) pos.narrowed = t.n;
  if (t.a !== undefined) pos.after = t.a;
  if (t.i !== undefined) pos.ids = t.i;
  if (t.h !== undefined) pos.scan = t.h;
  return pos;
}
