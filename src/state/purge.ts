/**
 * Purging a tenant's state (a tenant removed from the store, after its retention period or on request): every key
 * whose owner is the tenant (`<base>:<kind...>:{<tenant>}[:<part>...]`: cursors, id maps, mirrors, intents, dead
 * letters, runs, flags, deliveries, its call ledger and webhook events), scanned master by master (a cluster keeps
 * them on the tenant's one slot). Never the queues' keys (`<base>:{<queue>}:...`), nor the store's own
 * (`<base>:tenant:{<id>}`, `<base>:tenants:{tenants}:...`), whatever the tenant is called.
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.js';
import { nodesOf } from '../redis/connection.js';
import { keyBase } from '../redis/keys.js';
import { STATE_KINDS } from './keys.js';
import type { TenantStore } from './tenant-store.js';

const SPARED = new Set<string>([STATE_KINDS.tenant, 'tenants']);

/** Deletes every key of `tenant`'s state; the number deleted. */
export async function purgeTenantState(redis: Redis, prefix: string, tenant: string): Promise<number> {
  if (!/^[a-z][a-z0-9_-]{0,62}$/.test(tenant)) throw new Error(`not a tenant id: ${JSON.stringify(tenant)}`);
  const base = keyBase(prefix);
  const head = `${base}:`;
  const tag = `{${tenant}}`;
  const escaped = base.replace(/([*?[\]\\])/g, '\\$1');
  let deleted = 0;
  for (const node of nodesOf(redis)) {
    const stream = node.scanStream({ match: `${escaped}:*:${tag}*`, count: 1000 });
    for await (const batch of stream as AsyncIterable<string[]>) {
      const ours = batch.filter((key) => {
        if (!key.startsWith(head)) return false;
        const at = key.indexOf(`:${tag}`, head.length);
        if (at < 0 || (key.length > at + tag.length + 1 && key[at + tag.length + 1] !== ':')) return false;
        const kind = key.slice(head.length, at);
        // A kind is words, not a tag: `<base>:{sync}:...` is a queue's key.
        return /^[a-z][a-z0-9-]*(:[a-z][a-z0-9-]*)*$/.test(kind) && !SPARED.has(kind);
      });
      // One slot (the tenant's tag): one UNLINK per batch, even on a cluster.
      if (ours.length > 0) deleted += await node.unlink(...ours);
    }
  }
  return deleted;
}

/**
 * Purges the state of the tenants removed from the store before `before` (epoch ms) and not stored again since: how
 * many. A tenant created again under its id keeps its state (its removal was forgotten when it came back).
 */
export async function purgeRemovedTenants(o: { redis: Redis; env: { KEY_PREFIX: string }; tenantStore: TenantStore; tenant(id: string): unknown; logger: Logger }, before: number): Promise<number> {
  let n = 0;
  for (const { id, at } of await o.tenantStore.removedBefore(before)) {
    if (o.tenant(id) !== undefined) {
      // In force again (the file names it, or it was stored again): nothing to purge.
      await o.tenantStore.purged(id, at);
      continue;
    }
    const keys = await purgeTenantState(o.redis, o.env.KEY_PREFIX, id);
    await o.tenantStore.purged(id, at);
    o.logger.info({ tenant: id, keys, removedAt: new Date(at).toISOString() }, 'housekeeping: purged the state of a tenant removed from the store');
    n += 1;
  }
  return n;
}
