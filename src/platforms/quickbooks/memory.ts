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
import { SeenRecords } from '../seen-records.js';

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

export class QuickBooksMemory extends SeenRecords<typeof SCHEMAS> {
  constructor(redis: Redis, prefix: string, realmId: string) {
    super(redis, SCHEMAS, (entity) => connectionKey(prefix, realmId, 'quickbooks', 'seen', entity));
  }
}
