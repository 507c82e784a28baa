/**
 * The zoho-books adapter's page tokens (opaque to the engine, JSON in base64url):
 *   l  the listing: `page` of the query from `since` (epoch ms, second precision), skipping what an earlier page of
 *      the same listing yielded (`after`, the last stamp, and `ids` at it); `seen`: the Redis set of ids a since-less
 *      invoice listing collects for its reconcile check.
 *   c  the reconcile check after a since-less invoice listing: `scan`, the HSCAN cursor over the remembered invoices.
 */
import { z } from 'zod';
import { decodePageToken, encodePageToken } from '../page-token.js';

export const zohoPositionSchema = z.object({
  phase: z.enum(['l', 'c']),
  page: z.number().int().min(1),
  since: z.number().int().optional(),
  after: z.number().int().optional(),
  ids: z.array(z.string()).optional(),
  seen: z.string().regex(/^[a-f0-9]{16,64}$/).optional(),
  scan: z.string().regex(/^\d+$/).optional(),
});
export type ZohoPosition = z.infer<typeof zohoPositionSchema>;

export const encodeZohoToken = (p: ZohoPosition): string => encodePageToken(p);
export const decodeZohoToken = (token: string): ZohoPosition => decodePageToken(token, zohoPositionSchema, 'zoho-books');
