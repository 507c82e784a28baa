/**
 * Write-ahead intents for contact creation (DESIGN.md "Exactly one service record per platform record"):
 * one HASH per tenant, field = platform id, value = JSON `{ name, at, runId }`. An intent is begun before a
 * POST and ended once the mapping is written; one left behind tells a retry to look the contact up first.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { stateKey } from './keys.js';
import { hgetallPairs, parseJson } from './stored.js';

export const intentSchema = z.object({
  name: z.string(),
  at: z.number(),
  runId: z.string(),
});
export type Intent = z.infer<typeof intentSchema>;
export interface IntentEntry extends Intent {
  platformId: string;
}

export class IntentStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  key(tenant: string): string {
    return stateKey(this.prefix, 'intents', tenant);
  }

  async begin(tenant: string, platformId: string, info: Intent): Promise<void> {
    await this.redis.hset(this.key(tenant), platformId, JSON.stringify(intentSchema.parse(info)));
  }

  async get(tenant: string, platformId: string): Promise<Intent | undefined> {
    const k = this.key(tenant);
    const raw = await this.redis.hget(k, platformId);
    return raw === null ? undefined : parseJson(intentSchema, raw, k, platformId);
  }

  /** Intents of the given ids (one HMGET); ids without one are absent. */
  async getMany(tenant: string, platformIds: readonly string[]): Promise<Map<string, Intent>> {
    const out = new Map<string, Intent>();
    if (platformIds.length === 0) return out;
    const k = this.key(tenant);
    const values = await this.redis.hmget(k, ...platformIds);
    values.forEach((raw, i) => {
      const id = platformIds[i];
      if (raw !== null && id !== undefined) out.set(id, parseJson(intentSchema, raw, k, id));
    });
    return out;
  }

  /** Ends intents (one HDEL). Call after the mapping is written. */
  async end(tenant: string, platformIds: readonly string[]): Promise<void> {
    if (platformIds.length === 0) return;
    await this.redis.hdel(this.key(tenant), ...platformIds);
  }

  /** Every open intent (intents are few: one per contact create in flight or interrupted). */
  async list(tenant: string): Promise<IntentEntry[]> {
    const k = this.key(tenant);
    return (await hgetallPairs(this.redis, k)).map(([platformId, raw]) => ({ platformId, ...parseJson(intentSchema, raw, k, platformId) }));
  }

  async count(tenant: string): Promise<number> {
    return this.redis.hlen(this.key(tenant));
  }

  keysOf(tenant: string): string[] {
    return [this.key(tenant)];
  }

  async clear(tenant: string): Promise<void> {
    await this.redis.unlink(this.key(tenant));
  }
}
