/**
 * Write-ahead intents for contact creation (docs/architecture.md, "Exactly once"):
 * one HASH per tenant, field = platform id, value = JSON `{ name, at, runId }`. An intent is begun before a
 * POST and ended once the id-map entry is written; one left behind tells a retry to look the contact up first.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { stateKey } from './keys.js';
import { stateScript } from './script.js';
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

const BEGIN_MANY = stateScript('state/lua/intents-begin-many');

/**
 * The stored JSON of an intent, its fields in the schema's order (the text zod's parse wrote before). A value
 * the schema accepts (every intent a sync begins) is written without a zod parse per record; any other goes
 * through intentSchema.parse, which refuses it as before.
 */
function intentValue(i: Intent): string {
  if (typeof i.name !== 'string' || typeof i.runId !== 'string' || !Number.isFinite(i.at)) intentSchema.parse(i);
  const value: Intent = { name: i.name, at: i.at, runId: i.runId };
  return JSON.stringify(value);
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
    await this.redis.hset(this.key(tenant), platformId, intentValue(info));
  }

  /**
   * Begins an intent for each entry whose id has none (one atomic script: one round trip for a page of
   * creates). Returns the intents that already existed, untouched: a create interrupted earlier, to be looked
   * up before anything is created again.
   */
  async beginMany(tenant: string, entries: readonly IntentEntry[]): Promise<Map<string, Intent>> {
    const out = new Map<string, Intent>();
    if (entries.length === 0) return out;
    const args: string[] = [];
    for (const e of entries) args.push(e.platformId, intentValue(e));
    const k = this.key(tenant);
    const reply = await BEGIN_MANY.run(this.redis, [k], args);
    if (!Array.isArray(reply)) throw new Error(`intents beginMany: unexpected reply from ${k}`);
    for (let i = 0; i + 1 < reply.length; i += 2) {
      const id = String(reply[i]);
      out.set(id, parseJson(intentSchema, String(reply[i + 1]), k, id));
    }
    return out;
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

  /** Ends intents (one HDEL). Call after the id-map entry is written. */
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
