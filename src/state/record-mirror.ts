import type { Redis } from 'ioredis';
import { z } from 'zod';
import { contactRecordSchema, invoiceRecordSchema } from '../platforms/records.js';
import { decodeDay, decodeUuid, encodeDay, encodeUuid } from './compact.js';
import { stateKey } from './keys.js';
import { parseValue, StateCorruptError } from './stored.js';

/**
 * The record mirror: what later work reads of the last canonical contacts and invoices seen, per tenant (one HASH
 * per entity, field = platform id). Durable state, not a cache: a miss is not filled from the platform on demand,
 * and the sync and the calls depend on what it holds (a full run refills it). Its keys keep their first kind,
 * `cache` (`<base>:cache:{<t>}:<entity>`), so deployed data stays readable.
 * Serves what the service cannot answer cheaply: an invoice's balance after a payment changes (the invoice is
 * pushed again from here, so it keeps every field of the push), and the selection of overdue invoices for call
 * campaigns (a contact's names, phone, deleted flag and uuid: nothing else of a contact is read).
 *
 * Values (README decision "lean state values"): a JSON array in a fixed order, absent values null and trailing
 * ones left off, the uuid compact, dates as day numbers, `updatedAt` as milliseconds. A JSON object (what versions
 * before lean state wrote) is read too; such an entry is rewritten in the compact form the next time it is put.
 */
export const mirroredContactSchema = contactRecordSchema
  .pick({ id: true, name: true, nameAr: true, firstName: true, lastName: true, phoneNumber: true, deleted: true })
  .extend({ uuid: z.string().optional() });
export const mirroredInvoiceSchema = invoiceRecordSchema.and(z.object({ uuid: z.string().optional(), pushedOutstanding: z.number().optional() }));

export type MirroredContact = z.infer<typeof mirroredContactSchema>;
export type MirroredInvoice = z.infer<typeof mirroredInvoiceSchema>;

const schemas = { contacts: mirroredContactSchema, invoices: mirroredInvoiceSchema } as const;
type Mirrored = { contacts: MirroredContact; invoices: MirroredInvoice };
type Entity = keyof Mirrored;

type Cell = string | number | null;
const cellsSchema = z.array(z.union([z.string(), z.number(), z.null()]));
const STATUSES = ['DRAFT', 'AUTHORISED', 'PAID', 'VOIDED'] as const;
const TEXTS = ['currencyCode', 'reference', 'notes', 'description', 'purchaseOrder'] as const;

/** Drops trailing nulls and writes the JSON text. */
function pack(cells: Cell[]): string {
  let end = cells.length;
  while (end > 0 && cells[end - 1] === null) end -= 1;
  return JSON.stringify(cells.slice(0, end));
}

const opt = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

/** [uuid, name, deleted, phoneNumber, nameAr, firstName, lastName] */
function packContact(c: MirroredContact): string {
  return pack([c.uuid === undefined ? null : encodeUuid(c.uuid), c.name, c.deleted ? 1 : 0, opt(c.phoneNumber), opt(c.nameAr), opt(c.firstName), opt(c.lastName)]);
}

/** [uuid, contactId, status, deleted, number, date, dueDate, total, updatedAt ms, outstandingAmount, pushedOutstanding, currencyCode, reference, notes, description, purchaseOrder] */
function packInvoice(i: MirroredInvoice): string {
  const cells: Cell[] = [
    i.uuid === undefined ? null : encodeUuid(i.uuid),
    i.contactId,
    STATUSES.indexOf(i.status),
    i.deleted ? 1 : 0,
    i.number,
    encodeDay(i.date),
    encodeDay(i.dueDate),
    i.total,
    Date.parse(i.updatedAt),
    opt(i.outstandingAmount),
    // Left off when it equals the platform's outstanding amount: readers take pushed ?? outstanding ?? total.
    i.pushedOutstanding === undefined || i.pushedOutstanding === i.outstandingAmount ? null : i.pushedOutstanding,
  ];
  for (const f of TEXTS) cells.push(opt(i[f]));
  return pack(cells);
}

/** The object a compact array stands for (not yet checked: the entity's schema does that). */
function unpack(entity: Entity, id: string, cells: Cell[]): Record<string, unknown> {
  const at = (n: number): Cell | undefined => cells[n] ?? undefined;
  const out: Record<string, unknown> = { id };
  const set = (field: string, v: unknown): void => {
    if (v !== undefined && v !== null) out[field] = v;
  };
  const uuid = at(0);
  if (typeof uuid === 'string') out['uuid'] = decodeUuid(uuid);
  if (entity === 'contacts') {
    ['name', 'deleted', 'phoneNumber', 'nameAr', 'firstName', 'lastName'].forEach((f, n) => set(f, f === 'deleted' ? at(n + 1) === 1 : at(n + 1)));
    return out;
  }
  set('contactId', at(1));
  const status = at(2);
  set('status', typeof status === 'number' ? STATUSES[status] : undefined);
  out['deleted'] = at(3) === 1;
  set('number', at(4));
  for (const [field, n] of [['date', 5], ['dueDate', 6]] as const) {
    const day = at(n);
    set(field, typeof day === 'number' ? decodeDay(day) : undefined);
  }
  set('total', at(7));
  const ms = at(8);
  set('updatedAt', typeof ms === 'number' ? new Date(ms).toISOString() : undefined);
  set('outstandingAmount', at(9));
  set('pushedOutstanding', at(10));
  TEXTS.forEach((f, n) => set(f, at(11 + n)));
  return out;
}

export class RecordMirror {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private key(tenant: string, entity: Entity): string {
    return stateKey(this.prefix, 'mirror', tenant, entity);
  }

  async putMany<E extends Entity>(tenant: string, entity: E, items: Mirrored[E][]): Promise<void> {
    if (items.length === 0) return;
    const args: string[] = [];
    for (const item of items) args.push(item.id, entity === 'contacts' ? packContact(item as MirroredContact) : packInvoice(item as MirroredInvoice));
    await this.redis.hset(this.key(tenant, entity), ...args);
  }

  async getMany<E extends Entity>(tenant: string, entity: E, ids: string[]): Promise<Map<string, Mirrored[E]>> {
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
  async *scan<E extends Entity>(tenant: string, entity: E, count = 500): AsyncGenerator<Mirrored[E][]> {
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

  private parse<E extends Entity>(tenant: string, entity: E, id: string, raw: string): Mirrored[E] {
    const key = this.key(tenant, entity);
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      throw new StateCorruptError(key, id, 'not JSON');
    }
    const value = Array.isArray(json) ? unpack(entity, id, parseValue(cellsSchema, json, key, id)) : json;
    return parseValue(schemas[entity] as unknown as z.ZodType<Mirrored[E]>, value, key, id);
  }
}
