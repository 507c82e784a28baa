/**
 * The hashes versions before packed records kept a tenant's records in (`ids`, `cache`, `ledger`): packing them
 * into packed records (`collections-sync migrate-keys`), and telling whether any is left (the worker's start).
 * Nothing else reads them: the worker's scripts read packed records only (docs/decisions/0180-packed-includes.md),
 * so a record still in an old hash would look unknown to them (a contact created again, a mirror or ledger
 * entry missed). Hence the worker refuses to start while `tenantsWithOldHashes` names a tenant.
 */
import type { Redis } from 'ioredis';
import { ENTITIES, type Entity } from '../glossary.js';
import { existsEach } from '../redis/exists.js';
import { stateKey } from './keys.js';
import { packedKey } from './packed.js';
import { stateScript } from './script.js';

/** The old hashes an entity's records were kept in, with the kind letter includes/packed-old.lua reads each by. */
export function oldHashes(prefix: string, tenant: string, entity: Entity): [string, 'i' | 'm' | 'p' | 'v'][] {
  const out: [string, 'i' | 'm' | 'p' | 'v'][] = [[stateKey(prefix, 'ids', tenant, entity), 'i']];
  if (entity !== 'payments') out.push([stateKey(prefix, 'mirror', tenant, entity), 'm']);
  if (entity === 'payments') out.push([stateKey(prefix, 'paymentLedger', tenant, 'pay'), 'p']);
  if (entity === 'invoices') out.push([stateKey(prefix, 'paymentLedger', tenant, 'inv'), 'v']);
  return out;
}

/** The keys and spec of packed-pack: the packed map first, then each old hash with its kind (`1,2i,3m,4v`). */
function oldMap(prefix: string, tenant: string, entity: Entity): { keys: string[]; spec: string } {
  const olds = oldHashes(prefix, tenant, entity);
  return {
    keys: [packedKey(prefix, tenant, entity), ...olds.map(([k]) => k)],
    spec: ['1', ...olds.map(([, kind], i) => `${2 + i}${kind}`)].join(','),
  };
}

const PACK = stateScript('state/lua/packed-pack');

/**
 * Moves a tenant's entries of the old hashes into its packed records, in batches of `batch` ids (HSCAN of each
 * old hash, one script per batch: each id's entries move together and leave the old hashes in the same script).
 * Idempotent and resumable: what moved is gone from the old hashes. With `apply` false, counts the entries
 * instead. Returns the old hashes' entries it found.
 */
export async function packOldEntries(redis: Redis, prefix: string, tenant: string, apply: boolean, batch = 500): Promise<number> {
  let n = 0;
  for (const entity of ENTITIES) {
    const map = oldMap(prefix, tenant, entity);
    for (const [old] of oldHashes(prefix, tenant, entity)) {
      if (!apply) {
        n += await redis.hlen(old);
        continue;
      }
      // Entries leave as they move: scan until the hash is gone (an old version's worker still running may write).
      for (let pass = 0; pass < 100 && (await redis.exists(old)) === 1; pass += 1) {
        let cursor = '0';
        do {
          const [next, flat] = await redis.hscan(old, cursor, 'COUNT', batch);
          cursor = next;
          const ids = flat.filter((_, i) => i % 2 === 0);
          if (ids.length === 0) continue;
          n += ids.length;
          await PACK.run(redis, map.keys, [map.spec, ...ids]);
        } while (cursor !== '0');
      }
    }
  }
  return n;
}

/**
 * The tenants (of `tenants`) with an old hash left. One EXISTS per tenant over its seven old hash
 * names, pipelined a batch at a time (src/redis/exists.ts): a round trip per 1,000 tenants, whatever the size of
 * the state (no SCAN; the names are known, as the tenants are). EXISTS over several keys is one command on a Redis Cluster too: a
 * tenant's keys share its hash tag. A packed old hash is deleted by Redis with its last field, so an empty
 * answer means every record is in packed records.
 */
export async function tenantsWithOldHashes(redis: Redis, prefix: string, tenants: readonly string[]): Promise<string[]> {
  const left = await existsEach(redis, tenants.map((tenant) => ENTITIES.flatMap((e) => oldHashes(prefix, tenant, e).map(([k]) => k))), { oneSlot: true });
  return tenants.filter((_, i) => (left[i] ?? 0) > 0);
}
