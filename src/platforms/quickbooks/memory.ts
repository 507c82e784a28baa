/**
 * What the adapter remembers of each record it yielded, per company (realm), so that a deletion can be yielded
 * as a whole record: QuickBooks' change feed names a deleted entity by Id only, and a payment edited to settle
 * fewer invoices no longer names the ones it left. One HASH per entity,
 * `<base>:quickbooks:{<realmId>}:seen:<entity>` (under the company's tag, beside its tokens and limits): record
 * id -> compact JSON. Payments keep every invoice they ever
 * settled (a union), so the lines they left are yielded as deleted on every later read (idempotent after a crash).
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { Entity } from '../../glossary.js';
import { connectionKey } from '../../redis/keys.js';

export const seenContactSchema = z.object({ name: z.string().min(1) });
export const seenInvoiceSchema = z.object({
  contactId: z.string().min(1),
  number: z.string().min(1),
  date: z.string(),
  dueDate: z.string(),
  total: z.number(),
  currencyCode: z.string().optional(),
});
export const seenPaymentSchema = z.object({ date: z.string(), reference: z.string().optional(), lines: z.record(z.string(), z.number()) });

const SCHEMAS = { contacts: seenContactSchema, invoices: seenInvoiceSchema, payments: seenPaymentSchema } as const;
export type Seen = { [E in Entity]: z.infer<(typeof SCHEMAS)[E]> };

export class QuickBooksMemory {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly realmId: string,
  ) {}

  key(entity: Entity): string {
    return connectionKey(this.prefix, this.realmId, 'quickbooks', 'seen', entity);
  }

  async get<E extends Entity>(entity: E, ids: readonly string[]): Promise<Map<string, Seen[E]>> {
    const out = new Map<string, Seen[E]>();
    if (ids.length === 0) return out;
    const values = await this.redis.hmget(this.key(entity), ...ids);
    values.forEach((raw, i) => {
      const id = ids[i];
      if (raw === null || id === undefined) return;
      let json: unknown;
      try {
        json = JSON.parse(raw);
      } catch {
        json = undefined;
      }
      const parsed = SCHEMAS[entity].safeParse(json);
      if (parsed.success) out.set(id, parsed.data as Seen[E]);
    });
    return out;
  }

  async put<E extends Entity>(entity: E, entries: ReadonlyMap<string, Seen[E]>): Promise<void> {
    if (entries.size === 0) return;
    const args: string[] = [];
    for (const [id, value] of entries) args.push(id, JSON.stringify(value));
    await this.redis.hset(this.key(entity), ...args);
  }

  async forget(entity: Entity, ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.redis.hdel(this.key(entity), ...ids);
  }

  /** One HSCAN step over the remembered ids of `entity`: the next cursor (`'0'` at the end) and ids. */
  async scan(entity: Entity, cursor: string, count: number): Promise<{ cursor: string; ids: string[] }> {
    const [next, flat] = await this.redis.hscan(this.key(entity), cursor, 'COUNT', count);
    return { cursor: next, ids: flat.filter((_, i) => i % 2 === 0) };
  }
}
