/**
 * The last run-webhook delivery attempt of each tenant (docs/run-webhooks.md): one STRING `notify:<t>` holding a
 * JSON record, written by the notify job after every attempt (so it says `retrying` between attempts, and
 * `delivered` or `failed` at the end). The control API (`GET /v1/tenants`) and `status` read it. It holds the
 * event's id and type, never its address or secret. Attempts of two events may interleave: the record is the last
 * attempt made, whichever event it was. Beside it, `notify:<t>:lock` while an attempt is under way: one delivery at a
 * time per tenant, so a receiver that never answers holds one notify slot, not every one (decision 0154).
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { NOTIFY_EVENT_TYPES } from '../notify/event-types.js';
import { RedisLock } from '../redis/lock.js';
import { stateKey } from './keys.js';
import { parseJson } from './stored.js';

export const lastDeliverySchema = z.object({
  eventId: z.string().min(1),
  type: z.enum(NOTIFY_EVENT_TYPES),
  /** delivered: a 2xx answer; retrying: failed, another attempt is planned; failed: the last attempt failed. */
  state: z.enum(['delivered', 'retrying', 'failed']),
  /** Attempts made for this event so far (1 on the first). */
  attempts: z.number().int().positive(),
  /** The receiver's answer, when there was one. */
  statusCode: z.number().int().optional(),
  /** Why the attempt failed (no address, no secret). */
  error: z.string().optional(),
  /** When the attempt ended (epoch ms). */
  at: z.number().int(),
});
export type LastDelivery = z.infer<typeof lastDeliverySchema>;

export class DeliveryStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  /** The tenant's last delivery attempt, or undefined before the first. */
  async last(tenant: string): Promise<LastDelivery | undefined> {
    const key = stateKey(this.prefix, 'deliveries', tenant);
    const raw = await this.redis.get(key);
    return raw === null ? undefined : parseJson(lastDeliverySchema, raw, key);
  }

  async record(tenant: string, delivery: LastDelivery): Promise<void> {
    await this.redis.set(stateKey(this.prefix, 'deliveries', tenant), JSON.stringify(delivery));
  }

  /** The tenant's delivery lock for `owner` (nothing is written until `acquire`). */
  lock(tenant: string, owner: string, ttlMs: number): RedisLock {
    return new RedisLock(this.redis, stateKey(this.prefix, 'deliveries', tenant, 'lock'), ttlMs, owner);
  }

  keysOf(tenant: string): string[] {
    return [stateKey(this.prefix, 'deliveries', tenant)];
  }
}
