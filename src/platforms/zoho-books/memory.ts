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

export const seenInvoiceSchema = z.object({ contactId: z.string().min(1), number: z.string().min(1), date: z.string(), dueDate: z.string(), total: z.number(), currencyCode: z.string().optional() });
export const seenPaymentSchema = z.object({ date: z.string(), lines: z.record(z.string(), z.number()) });
const SCHEMAS = { invoices: seenInvoiceSchema, payments: seenPaymentSchema } as const;
export type Seen = { invoices: z.infer<typeof seenInvoiceSchema>; payments: z.infer<typeof seenPaymentSchema> };
type Kind = keyof Seen;

const LISTING_TTL_S = 86_400;

export class ZohoMemory {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly organizationId: string,
  ) {}

  key(kind: Kind): string {
    return connectionKey(this.prefix, this.organizationId, 'zoho-books', 'seen', kind);
  }

  listingKey(id: string): string {
    return connectionKey(this.prefix, this.organizationId, 'zoho-books', 'listing', id);
  }

  async get<K extends Kind>(kind: K, ids: readonly string[]): Promise<Map<string, Seen[K]>> {
    const out = new Map<string, Seen[K]>();
    if (ids.length === 0) return out;
    const values = await this.redis.hmget(this.key(kind), ...ids);
    values.forEach((raw, i) => {
      const id = ids[i];
      if (raw === null || id === undefined) return;
      let json: unknown;
      try {
        json = JSON.parse(raw);
      } catch {
        return;
      }
      const parsed = SCHEMAS[kind].safeParse(json);
      if (parsed.success) out.set(id, parsed.data as Seen[K]);
    });
    return out;
  }

  async put<K extends Kind>(kind: K, entries: ReadonlyMap<string, Seen[K]>): Promise<void> {
    if (entries.size === 0) return;
    const args: string[] = [];
    for (const [id, value] of entries) args.push(id, JSON.stringify(value));
    await this.redis.hset(this.key(kind), ...args);
  }

  async forget(kind: Kind, ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.redis.hdel(this.key(kind), ...ids);
  }

  /** One HSCAN step over the remembered invoices: the next cursor (`'0'` at the end) and ids. */
  async scan(cursor: string, count: number): Promise<{ cursor: string; ids: string[] }> {
    const [next, flat] = await this.redis.hscan(this.key('invoices'), cursor, 'COUNT', count);
    return { cursor: next, ids: flat.filter((_, i) => i % 2 === 0) };
  }

  async saw(listing: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const key = this.listingKey(listing);
    await this.redis.multi().sadd(key, ...ids).expire(key, LISTING_TTL_S).exec();
  }

  /** Which of `ids` the listing saw. */
  async sawOf(listing: string, ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const flags = await this.redis.smismember(this.listingKey(listing), ...ids);
    return new Set(ids.filter((_, i) => flags[i] === 1));
  }

  async endListing(listing: string): Promise<void> {
    await this.redis.del(this.listingKey(listing));
  }
}
