/**
 * Invoices waiting for their contact's id-map entry: one HASH per tenant, field = invoice platform id, value =
 * `firstSeenAt|json`. Adding an invoice that already waits keeps its earliest firstSeenAt (the wait bound
 * counts from the first sighting) and its latest record.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { stateKey } from './keys.js';
import { stateScript } from './script.js';
import { hgetallPairs, parseJson, StateCorruptError } from './stored.js';

const bodySchema = z.object({ waitingFor: z.string(), record: z.unknown() });

export const pendingEntrySchema = z.object({
  id: z.string().min(1),
  record: z.unknown(),
  firstSeenAt: z.number().int().nonnegative(),
  /** The platform id of the contact whose id-map entry it needs. */
  waitingFor: z.string().min(1),
});
export type PendingEntry = z.infer<typeof pendingEntrySchema>;

const ADD = stateScript('state/lua/pending-add');

export class PendingStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  key(tenant: string): string {
    return stateKey(this.prefix, 'pending', tenant);
  }

  /** Adds or refreshes waiting invoices (one Lua call). */
  async add(tenant: string, entries: readonly PendingEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const args: string[] = [];
    for (const input of entries) {
      const e = pendingEntrySchema.parse(input);
      args.push(e.id, String(e.firstSeenAt), JSON.stringify({ waitingFor: e.waitingFor, record: e.record }));
    }
    await ADD.run(this.redis, [this.key(tenant)], args);
  }

  /** Every waiting invoice (the store is bounded by the wait limit). */
  async list(tenant: string): Promise<PendingEntry[]> {
    const k = this.key(tenant);
    return (await hgetallPairs(this.redis, k)).map(([id, raw]) => {
      const m = /^(\d+)\|/.exec(raw);
      if (!m) throw new StateCorruptError(k, id, 'expected "firstSeenAt|json"');
      const body = parseJson(bodySchema, raw.slice(m[0].length), k, id);
      return { id, record: body.record, firstSeenAt: Number(m[1]), waitingFor: body.waitingFor };
    });
  }

  async remove(tenant: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.redis.hdel(this.key(tenant), ...ids);
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
