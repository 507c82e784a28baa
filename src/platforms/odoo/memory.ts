/**
 * What the adapter remembers per database and company, in Redis (one hash tag: `<base>:odoo:{<connection>}:...`):
 * `seen:payments`, the invoice each yielded payment paid (and its amount and date), so that a payment cancelled or
 * unreconciled later (it then names no invoice) is yielded as that record deleted (decision 0211).
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { connectionKey } from '../../redis/keys.js';
import { SeenRecords } from '../seen-records.js';

export const seenPaymentSchema = z.object({ invoiceId: z.number().int(), amount: z.number(), date: z.string() });
const SCHEMAS = { payments: seenPaymentSchema } as const;
export type SeenPayment = z.infer<typeof seenPaymentSchema>;

/** The connection's id in keys: a digest of the server, database and company (no address in a key name). */
export function odooConnection(url: string, database: string, companyId: number): string {
  return createHash('sha256').update(`${new URL(url).origin}\n${database}\n${companyId}`).digest('hex').slice(0, 24);
}

export class OdooMemory extends SeenRecords<typeof SCHEMAS> {
  constructor(redis: Redis, prefix: string, connection: string) {
    super(redis, SCHEMAS, (kind) => connectionKey(prefix, connection, 'odoo', 'seen', kind));
  }
}
