/**
 * What the adapter remembers per organization, in Redis beside its tokens and limits (one hash tag:
 * `<base>:zoho-books:{<org>}:...`):
 * - `seen:invoices`: each yielded invoice's fields a deleted record needs (a deleted invoice answers 404 only), and
 *   `seen:payments`: every invoice each payment was ever applied to (a union), so a line it drops is yielded deleted.
 * - `listing:<id>`: the invoice ids one since-less listing saw (a day at most), for the reconcile check after it.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { connectionKey } from '../../redis/keys.js';
import { SeenRecords } from '../seen-records.js';

export const seenInvoiceSchema = z.object({ contactId: z.string().min(1), number: z.string().min(1), date: z.string(), dueDate: z.string(), total: z.number(), currencyCode: z.string().optional() });
export const seenPaymentSchema = z.object({ date: z.string(), lines: z.record(z.string(), z.number()) });
const SCHEMAS = { invoices: seenInvoiceSchema, payments: seenPaymentSchema } as const;
export type Seen = { invoices: z.infer<typeof seenInvoiceSchema>; payments: z.infer<typeof seenPaymentSchema> };

const LISTING_TTL_S = 86_400;

export class ZohoMemory extends SeenRecords<typeof SCHEMAS> {
  constructor(
    private readonly redis_: Redis,
    private readonly prefix: string,
    private readonly organizationId: string,
  ) {
    super(redis_, SCHEMAS, (kind) => connectionKey(prefix, organizationId, 'zoho-books', 'seen', kind));
  }

  listingKey(id: string): string {
    return connectionKey(this.prefix, this.organizationId, 'zoho-books', 'listing', id);
  }

  async saw(listing: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const key = this.listingKey(listing);
    await this.redis_.multi().sadd(key, ...ids).expire(key, LISTING_TTL_S).exec();
  }

  /** Which of `ids` the listing saw. */
  async sawOf(listing: string, ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const flags = await this.redis_.smismember(this.listingKey(listing), ...ids);
    return new Set(ids.filter((_, i) => flags[i] === 1));
  }

  async endListing(listing: string): Promise<void> {
    await this.redis_.del(this.listingKey(listing));
  }
}
