/**
 * What we know of each invoice's payments, to compute its outstanding amount. Per tenant, two HASHes:
 * `ledger:<t>:pay` (payment id -> `deleted|amount|invoiceId`) and `ledger:<t>:inv` (invoice id -> JSON list
 * of its payment ids). Amounts travel as the strings JS wrote and are summed in JS, never in Lua floats.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { stateKey } from './keys.js';
import { LUA_HELPERS, stateScript } from './script.js';
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

const LUA_LISTS = `${LUA_HELPERS}
local function parse(k, v)
  local d, a, inv = string.match(v, '^([01])|([^|]+)|(.+)$')
  if not d then corrupt(KEYS[1], k) end
  return d, a, inv
end
local function list(inv)
  local raw = redis.call('HGET', KEYS[2], inv)
  if not raw then return {} end
  local ok, l = pcall(cjson.decode, raw)
  if not ok or type(l) ~= 'table' then corrupt(KEYS[2], inv) end
  return l
end
`;

/** KEYS: pay, inv. ARGV: (paymentId, invoiceId, amount, deleted) quads. */
const SET_MANY = stateScript(`${LUA_LISTS}
for i = 1, #ARGV, 4 do
  local pid, inv, amount, deleted = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local old = redis.call('HGET', KEYS[1], pid)
  if old then
    local _, _, oldInv = parse(pid, old)
    if oldInv ~= inv then
      local kept = {}
      for _, p in ipairs(list(oldInv)) do if p ~= pid then kept[#kept + 1] = p end end
      if #kept == 0 then redis.call('HDEL', KEYS[2], oldInv) else redis.call('HSET', KEYS[2], oldInv, cjson.encode(kept)) end
    end
  end
  redis.call('HSET', KEYS[1], pid, deleted .. '|' .. amount .. '|' .. inv)
  local l = list(inv)
  local found = false
  for _, p in ipairs(l) do if p == pid then found = true break end end
  if not found then
    l[#l + 1] = pid
    redis.call('HSET', KEYS[2], inv, cjson.encode(l))
  end
end
return #ARGV / 4
`);

/** KEYS: pay, inv. ARGV: invoice ids. Per invoice: false (no payments known) or the live amounts. */
const TOTALS = stateScript(`${LUA_LISTS}
local out = {}
for i, inv in ipairs(ARGV) do
  local raw = redis.call('HGET', KEYS[2], inv)
  if raw then
    local amounts = {}
    for _, pid in ipairs(list(inv)) do
      local v = redis.call('HGET', KEYS[1], pid)
      if v then
        local d, a = parse(pid, v)
        if d == '0' then amounts[#amounts + 1] = a end
      end
    end
    out[i] = amounts
  else
    out[i] = false
  end
end
return out
`);

/** Sums decimal amounts without float noise (to a millionth, far below any currency's minor unit). */
function sum(amounts: number[]): number {
  return Math.round(amounts.reduce((a, b) => a + b, 0) * 1e6) / 1e6;
}

export class PaymentLedger {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private keys(tenant: string): [string, string] {
    return [stateKey(this.prefix, 'paymentLedger', tenant, 'pay'), stateKey(this.prefix, 'paymentLedger', tenant, 'inv')];
  }

  /** Records payments (one Lua call). A payment that moved to another invoice leaves the old one. */
  async setMany(tenant: string, entries: readonly PaymentLedgerEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const args: string[] = [];
    for (const input of entries) {
      const e = paymentLedgerEntrySchema.parse(input);
      args.push(e.paymentId, e.invoiceId, String(e.amount), e.deleted ? '1' : '0');
    }
    await SET_MANY.run(this.redis, this.keys(tenant), args);
  }

  /**
   * Sum of the non-deleted payments of each invoice (one round trip for a page). An invoice with no known
   * payment is absent; one whose payments are all deleted totals 0.
   */
  async totals(tenant: string, invoiceIds: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (invoiceIds.length === 0) return out;
    const keys = this.keys(tenant);
    const reply = (await TOTALS.run(this.redis, keys, [...invoiceIds])) as unknown[];
    invoiceIds.forEach((id, i) => {
      const amounts = reply[i];
      if (amounts === null || amounts === undefined) return;
      out.set(id, sum(parseValue(z.array(amountSchema), amounts, keys[0], `payments of invoice ${id}`)));
    });
    return out;
  }

  /** The ledger's entry of each known payment (one HMGET). */
  async invoicesOf(tenant: string, paymentIds: readonly string[]): Promise<Map<string, { invoiceId: string; amount: number; deleted: boolean }>> {
    const out = new Map<string, { invoiceId: string; amount: number; deleted: boolean }>();
    if (paymentIds.length === 0) return out;
    const [pay] = this.keys(tenant);
    const values = await this.redis.hmget(pay, ...paymentIds);
    values.forEach((raw, i) => {
      const id = paymentIds[i];
      if (raw !== null && id !== undefined) out.set(id, parseValue(payValueSchema, raw, pay, id));
    });
    return out;
  }

  keysOf(tenant: string): string[] {
    return this.keys(tenant);
  }

  async clear(tenant: string): Promise<void> {
    await this.redis.unlink(...this.keys(tenant));
  }
}

