import type { Redis } from 'ioredis';
import { z } from 'zod';
import { contactRecordSchema, invoiceRecordSchema } from '../platforms/records.js';
import { stateKey } from './keys.js';

/**
 * The record mirror: the last canonical contacts and invoices seen, per tenant (one HASH per entity, field =
 * platform id). Durable state, not a cache: a miss is not filled from the platform on demand, and the sync and
 * the calls depend on what it holds (a full run refills it). Its keys keep their first kind, `cache`
 * (`<prefix>:cache:<t>:<entity>`), so deployed data stays readable.
 * Serves what the service cannot answer cheaply: an invoice's balance after a payment changes, and the
 * selection of overdue invoices for call campaigns. Contacts are kept as a projection (names and phone).
 */
export const mirroredContactSchema = contactRecordSchema
  .pick({ id: true, name: true, nameAr: true, firstName: true, firstNameAr: true, lastName: true, lastNameAr: true, phoneNumber: true, deleted: true, updatedAt: true })
  .extend({ uuid: z.string().optional() });
export const mirroredInvoiceSchema = invoiceRecordSchema.and(z.object({ uuid: z.string().optional(), pushedOutstanding: z.number().optional() }));

export type MirroredContact = z.infer<typeof mirroredContactSchema>;
export type MirroredInvoice = z.infer<typeof mirroredInvoiceSchema>;

const schemas = { contacts: mirroredContactSchema, invoices: mirroredInvoiceSchema } as const;
type Mirrored = { contacts: MirroredContact; invoices: MirroredInvoice };

export class RecordMirror {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private key(tenant: string, entity: 'contacts' | 'invoices'): string {
    return stateKey(this.prefix, 'mirror', tenant, entity);
  }

  async putMany<E extends 'contacts' | 'invoices'>(tenant: string, entity: E, items: Mirrored[E][]): Promise<void> {
    if (items.length === 0) return;
    const args: string[] = [];
    for (const item of items) args.push(item.id, JSON.stringify(item));
    await this.redis.hset(this.key(tenant, entity), ...args);
  }

  async getMany<E extends 'contacts' | 'invoices'>(tenant: string, entity: E, ids: string[]): Promise<Map<string, Mirrored[E]>> {
    const out = new Map<string, Mirrored[E]>();
    if (ids.length === 0) return out;
    const values = await this.redis.hmget(this.key(tenant, entity), ...ids);
    values.forEach((raw, i) => {
      const id = ids[i];
      if (raw === null || id === undefined) return;
      out.set(id, this.parse(tenant, entity, id, raw));
    });
    return out;
  }

  /** Every mirrored item, in batches (HSCAN): flat memory over large tenants. */
  async *scan<E extends 'contacts' | 'invoices'>(tenant: string, entity: E, count = 500): AsyncGenerator<Mirrored[E][]> {
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscan(this.key(tenant, entity), cursor, 'COUNT', count);
      cursor = next;
      const batch: Mirrored[E][] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) batch.push(this.parse(tenant, entity, flat[i] ?? '', flat[i + 1] ?? ''));
      if (batch.length > 0) yield batch;
    } while (cursor !== '0');
  }

  async clear(tenant: string): Promise<void> {
    await this.redis.unlink(this.key(tenant, 'contacts'), this.key(tenant, 'invoices'));
  }

  private parse<E extends 'contacts' | 'invoices'>(tenant: string, entity: E, id: string, raw: string): Mirrored[E] {
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      throw new Error(`corrupt value in ${this.key(tenant, entity)} field ${id}: not JSON`);
    }
    const parsed = schemas[entity].safeParse(json);
    if (!parsed.success) throw new Error(`corrupt value in ${this.key(tenant, entity)} field ${id}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    return parsed.data as Mirrored[E];
  }
}
