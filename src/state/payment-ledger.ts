/**
 * What we know of each invoice's payments, to compute its outstanding amount: in the packed records
 * (src/state/packed.ts), a payment's third segment is `deleted|amount|invoiceId`, an invoice's its payment ids.
 * Versions before kept two HASHes per tenant, `ledger:<t>:pay` and `ledger:<t>:inv` (invoice id -> JSON list of
 * payment ids): read where an id is not packed yet, moved on write. Amounts travel as the strings JS wrote and
 * are summed in JS, never in Lua floats.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { stateKey } from './keys.js';
import { getRecords, idOf, PACKED_PRELUDE, packedKey, packedMap } from './packed.js';
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

/**
 * The ledger is the third segment of packed records (src/state/packed.ts): a payment's `deleted|amount|invoiceId`,
 * an invoice's payment ids. KEYS: the payments' packed map and its old hashes, then the invoices'. ARGV[1], ARGV[2]:
 * their specs.
 */
const LUA_LEDGER = `${PACKED_PRELUDE}
local P = pmap(ARGV[1])
local I = pmap(ARGV[2])
local function parse(id, v)
  local d, a, inv = string.match(v, '^([01])|([^|]+)|(.+)$')
  if not d then corrupt(P.key, id) end
  return d, a, unpk(inv)
end
`;

/** ARGV[3..]: (paymentId, invoiceId, amount, deleted) quads. */
const SET_MANY = stateScript(`${LUA_LEDGER}
for i = 3, #ARGV, 4 do
  local pid, inv, amount, deleted = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local hp = redit(P, pid)
  if hp.t[3] then
    local _, _, oldInv = parse(pid, hp.t[3])
    if oldInv ~= inv then
      local ho = redit(I, oldInv)
      local kept = {}
      for _, p in ipairs(ldec(I.key, oldInv, ho.t[3] or '')) do if p ~= pid then kept[#kept + 1] = p end end
      ho.t[3] = #kept > 0 and lenc(kept) or false
      rsave(I, ho)
    end
  end
  hp.t[3] = deleted .. '|' .. amount .. '|' .. pk(inv)
  rsave(P, hp)
  local hi = redit(I, inv)
  local l = ldec(I.key, inv, hi.t[3] or '')
  local found = false
  for _, p in ipairs(l) do if p == pid then found = true break end end
  if not found then
    l[#l + 1] = pid
    hi.t[3] = lenc(l)
    rsave(I, hi)
  end
end
pflush(P)
pflush(I)
return (#ARGV - 2) / 4
`);

/**
 * ARGV[3..]: invoice ids. Per invoice: false (no payments known) or the live amounts; an empty list when no invoice
 * of the tenant has a payment (the map's count of ledger segments is 0 and no old ledger is left: a first sync's
 * invoices, before its payments, cost no walk of their buckets).
 */
const TOTALS = stateScript(`${LUA_LEDGER}
if I.c[3] == 0 and #I.olds == 0 then return {} end
local out = {}
for i = 3, #ARGV do
  local inv = ARGV[i]
  local t = rget(I, inv)
  if t and t[3] then
    local amounts = {}
    for _, pid in ipairs(ldec(I.key, inv, t[3])) do
      local p = rget(P, pid)
      if p and p[3] then
        local d, a = parse(pid, p[3])
        if d == '0' then amounts[#amounts + 1] = a end
      end
    end
    out[i - 2] = amounts
  else
    out[i - 2] = false
  end
end
return out
`);

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

  /** The ledgers as versions before packed records kept them (read, and moved on write). */
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

