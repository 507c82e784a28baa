/**
 * The call ledger: one Redis key per (tenant, E.164 number) while the number may not be called again.
 *
 * A request reserves its numbers before it is sent (SET NX with a TTL, one Lua script for the whole request:
 * each number is held by exactly one campaign request, across campaigns and processes). The holder then marks
 * them `called` (the TTL restarts at the cooldown), `unknown` (kept until an operator confirms or releases, or
 * until the hold lapses) or releases them (a definite failure: the numbers may be called by a later campaign).
 * Reserving again a number one already holds as `reserved` succeeds, so a re-run of a campaign job that
 * stopped between reserving and sending picks its reservations up again.
 *
 * Keyed per tenant, not per number globally (docs/decisions): tenants are separate creditors on separate
 * service accounts. A number shared by two tenants' customers (a group's accounts office) owes each of them;
 * a global key would let one tenant's campaign silently suppress another's and tell it that someone else
 * called. The cooldown protects a debtor from one creditor's repeated calls.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { tenantKey } from '../redis/keys.js';
import { LuaScript } from '../redis/script.js';

export const holdSchema = z.object({
  campaign: z.string(),
  request: z.coerce.number().int(),
  state: z.enum(['reserved', 'called', 'unknown']),
  at: z.coerce.number(),
});
export type CallLedgerHold = z.infer<typeof holdSchema>;

export type ReserveResult = { number: string; ok: true } | { number: string; ok: false; holder: CallLedgerHold | undefined };

export interface CallLedgerOptions {
  /** A number is refused this long after it was called (CALL_COOLDOWN_HOURS). 0: only concurrent calls are refused. */
  cooldownMs: number;
  /** How long a reservation (and an unknown outcome) holds at least. Default 10 minutes. */
  minHoldMs?: number;
}

const RESERVE = new LuaScript('calls/lua/ledger-reserve');
const MARK = new LuaScript('calls/lua/ledger-mark');

function parseHold(raw: string | null | undefined): CallLedgerHold | undefined {
  if (!raw) return undefined;
  try {
    const parsed = holdSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export class CallLedger {
  readonly cooldownMs: number;
  readonly holdMs: number;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    options: CallLedgerOptions,
  ) {
    this.cooldownMs = Math.max(0, Math.round(options.cooldownMs));
    this.holdMs = Math.max(this.cooldownMs, options.minHoldMs ?? 600_000);
  }

  key(tenant: string, number: string): string {
    return tenantKey(this.prefix, tenant, ['calls', 'ledger'], number);
  }

  /** Reserves every number it can for (campaign, request); the others come back with their holder. */
  async reserve(tenant: string, campaign: string, request: number, numbers: readonly string[], now = Date.now()): Promise<ReserveResult[]> {
    if (numbers.length === 0) return [];
    const value = JSON.stringify({ campaign, request: String(request), state: 'reserved', at: String(now) });
    const keys = numbers.map((n) => this.key(tenant, n));
    const out = (await RESERVE.run(this.redis, keys, [campaign, String(request), value, String(this.holdMs)])) as string[];
    return numbers.map((number, i) => {
      const held = out[i];
      return held === '' || held === undefined ? { number, ok: true as const } : { number, ok: false as const, holder: parseHold(held) };
    });
  }

  /** The request's numbers were called: refused for the cooldown from now. */
  async called(tenant: string, campaign: string, request: number | undefined, numbers: readonly string[], now = Date.now()): Promise<number> {
    return this.#mark(tenant, campaign, request, numbers, 'called', this.cooldownMs === 0 ? '0' : String(this.cooldownMs), now, '');
  }

  /** The request's outcome is unknown: the numbers stay held (the hold's TTL is kept) for an operator. */
  async unknown(tenant: string, campaign: string, request: number | undefined, numbers: readonly string[], now = Date.now()): Promise<number> {
    return this.#mark(tenant, campaign, request, numbers, 'unknown', '', now, '');
  }

  /** An operator says an unknown call happened: it counts as called (the cooldown runs from now). */
  async confirm(tenant: string, campaign: string, numbers: readonly string[], now = Date.now()): Promise<number> {
    return this.#mark(tenant, campaign, undefined, numbers, 'called', this.cooldownMs === 0 ? '0' : String(this.cooldownMs), now, 'unknown');
  }

  /** Frees the numbers this campaign (request) holds, whatever their state. */
  async release(tenant: string, campaign: string, request: number | undefined, numbers: readonly string[]): Promise<number> {
    return this.#mark(tenant, campaign, request, numbers, '', '', Date.now(), '');
  }

  /** Who holds each number now (read only: for previews and reports). */
  async peek(tenant: string, numbers: readonly string[]): Promise<Map<string, CallLedgerHold>> {
    const out = new Map<string, CallLedgerHold>();
    for (let i = 0; i < numbers.length; i += 500) {
      const slice = numbers.slice(i, i + 500);
      const values = await this.redis.mget(...slice.map((n) => this.key(tenant, n)));
      slice.forEach((n, j) => {
        const hold = parseHold(values[j]);
        if (hold) out.set(n, hold);
      });
    }
    return out;
  }

  async #mark(tenant: string, campaign: string, request: number | undefined, numbers: readonly string[], state: string, ttl: string, now: number, from: string): Promise<number> {
    if (numbers.length === 0) return 0;
    const keys = numbers.map((n) => this.key(tenant, n));
    const n = await MARK.run(this.redis, keys, [campaign, request === undefined ? '' : String(request), state, ttl, String(now), from]);
    return Number(n);
  }
}

/** A holder in words, for reports: `called by campaign X at <time>`. */
export function describeHold(hold: CallLedgerHold | undefined): string {
  if (!hold) return 'held by another campaign';
  const when = new Date(hold.at).toISOString();
  const what = hold.state === 'called' ? 'called' : hold.state === 'unknown' ? 'called with an unknown outcome' : 'being called';
  return `${what} by campaign ${hold.campaign} at ${when}`;
}
