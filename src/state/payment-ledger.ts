/**
 * What we know of each invoice's payments, to compute its outstanding amount: in the packed records
 * (src/state/packed-codec.ts), a payment's third segment is `deleted|amount|invoiceId`, an invoice's its payment ids.
 * Versions before kept two HASHes per tenant, `ledger:<t>:pay` and `ledger:<t>:inv` (invoice id -> JSON list of
 * payment ids): packed by migrate-keys (src/state/old-hashes.ts), never read here. Amounts travel as the strings JS wrote and
 * are summed in JS, never in Lua floats.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { stateKey } from './keys.js';
import { getRecords, packedKey, packedMap } from './packed.js';
import { idOf } from './packed-codec.js';
import { stateScript } from './script.js';
import { parseValue } from './stored.js';

export const paymentLedgerEntrySchema = z.object({
  invoiceId: z.string().min(1),
  paymentId: z.string().min(1),
  amount: z.number().finite(),
  deleted: z.boolean(),
});
export type PaymentLedgerEntry = z.infer<typeof paymentLedgerEntrySchema>;

const amountSchema = z
  .string()
  .refine((s) => s !== '' && Number.isFinite(Number(s)), 'not an amount')
  .transform(Number);
const payValueSchema = z
  .string()
  .regex(/^[01]\|[^|]+\|./s, 'expected "deleted|amount|invoiceId"')
  .transform((raw) => {
    const second = raw.indexOf('|', 2);
    return { deleted: raw[0] === '1', amount: raw.slice(2, second), invoiceId: raw.slice(second + 1) };
  })
  .pipe(z.object({ deleted: z.boolean(), amount: amountSchema, invoiceId: z.string().min(1) }));

const SET_MANY = stateScript('state/lua/payment-ledger-set-many');
const TOTALS = stateScript('state/lua/payment-ledger-totals');

/** An invoice's payment amounts as TOTALS answers them (made once: a zod schema is dear to build, and this is per invoice). */
const amountsSchema = z.array(amountSchema);

/** Sums decimal amounts without float noise (to a millionth, far below any currency's minor unit). */
function sum(amounts: number[]): number {
  return Math.round(amounts.reduce((a, b) => a + b, 0) * 1e6) / 1e6;
}

export class PaymentLedger {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  /** The ledgers as versions before packed records kept them: never read here, named so `clear` deletes leftovers. */
  private keys(tenant: string): [string, string] {
    return [stateKey(this.prefix, 'paymentLedger', tenant, 'pay'), stateKey(this.prefix, 'paymentLedger', tenant, 'inv')];
  }

  /** KEYS and the two specs of a ledger script: the payments' packed map, then the invoices'. */
  private maps(tenant: string): { keys: string[]; specs: [string, string] } {
    const pay = packedMap(this.prefix, tenant, 'payments');
    const inv = packedMap(this.prefix, tenant, 'invoices', pay.keys.length + 1);
    return { keys: [...pay.keys, ...inv.keys], specs: [pay.spec, inv.spec] };
  }

  /** Records payments (one Lua call). A payment that moved to another invoice leaves the old one. */
  async setMany(tenant: string, entries: readonly PaymentLedgerEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const args: string[] = [];
    for (const input of entries) {
      const e = paymentLedgerEntrySchema.parse(input);
      args.push(e.paymentId, e.invoiceId, String(e.amount), e.deleted ? '1' : '0');
    }
    const { keys, specs } = this.maps(tenant);
    await SET_MANY.run(this.redis, keys, [...specs, ...args]);
  }

  /**
   * Sum of the non-deleted payments of each invoice (one round trip for a page). An invoice with no known
   * payment is absent; one whose payments are all deleted totals 0.
   */
  async totals(tenant: string, invoiceIds: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (invoiceIds.length === 0) return out;
    const { keys, specs } = this.maps(tenant);
    const reply = (await TOTALS.run(this.redis, keys, [...specs, ...invoiceIds])) as unknown[];
    invoiceIds.forEach((id, i) => {
      const amounts = reply[i];
      if (amounts === null || amounts === undefined) return;
      out.set(id, sum(parseValue(amountsSchema, amounts, keys[0] ?? '', `payments of invoice ${id}`)));
    });
    return out;
  }

  /** The ledger's entry of each known payment (one script). */
  async invoicesOf(tenant: string, paymentIds: readonly string[]): Promise<Map<string, { invoiceId: string; amount: number; deleted: boolean }>> {
    const out = new Map<string, { invoiceId: string; amount: number; deleted: boolean }>();
    if (paymentIds.length === 0) return out;
    const pay = packedKey(this.prefix, tenant, 'payments');
    for (const [id, segs] of await getRecords(this.redis, this.prefix, tenant, 'payments', paymentIds)) {
      const seg = segs[2];
      if (!seg) continue;
      // `deleted|amount|` then the invoice id as its bucket key (a GUID in 17 bytes).
      const second = seg.indexOf('|', 2);
      const text = second < 0 ? seg.toString('utf8') : `${seg.subarray(0, second + 1).toString('latin1')}${idOf(seg.subarray(second + 1))}`;
      out.set(id, parseValue(payValueSchema, text, pay, id));
    }
    return out;
  }

  /** The old ledgers (the packed maps are the id maps' keys: RecordStateStore.keysOf). */
  keysOf(tenant: string): string[] {
    return this.keys(tenant);
  }

  async clear(tenant: string): Promise<void> {
    await this.redis.unlink(...this.keys(tenant));
  }
}

