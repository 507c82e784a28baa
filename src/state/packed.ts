/**
 * The store of packed records (their format: src/state/packed-codec.ts; their Lua: src/state/lua/, `packed-*.lua`
 * and the library every packed script includes, `includes/packed.lua`): reading records by id, walking a map,
 * counting, and moving the entries of the hashes versions before kept into packed values.
 */
import type { Redis } from 'ioredis';
import { ENTITIES, type Entity } from '../glossary.js';
import { stateKey } from './keys.js';
import { segmentsOf, type Segments } from './packed-codec.js';
import { stateScript } from './script.js';
import { StateCorruptError } from './stored.js';

const GET = stateScript('state/lua/packed-get');

const SCAN = stateScript('state/lua/packed-scan');

/** The old hashes an entity's records were kept in before packed maps, with the Lua kind letter of each. */
function oldKeys(prefix: string, tenant: string, entity: Entity): [string, string][] {
  const out: [string, string][] = [[stateKey(prefix, 'ids', tenant, entity), 'i']];
  if (entity !== 'payments') out.push([stateKey(prefix, 'mirror', tenant, entity), 'm']);
  if (entity === 'payments') out.push([stateKey(prefix, 'paymentLedger', tenant, 'pay'), 'p']);
  if (entity === 'invoices') out.push([stateKey(prefix, 'paymentLedger', tenant, 'inv'), 'v']);
  return out;
}

/** One packed map's KEYS (its own, then the old hashes) and its spec, numbered from KEYS[first]. */
export interface PackedMapKeys {
  keys: string[];
  spec: string;
}

export function packedKey(prefix: string, tenant: string, entity: Entity): string {
  return stateKey(prefix, 'rec', tenant, entity);
}

export function packedMap(prefix: string, tenant: string, entity: Entity, first = 1): PackedMapKeys {
  const olds = oldKeys(prefix, tenant, entity);
  return {
    keys: [packedKey(prefix, tenant, entity), ...olds.map(([k]) => k)],
    spec: [String(first), ...olds.map(([, kind], i) => `${first + 1 + i}${kind}`)].join(','),
  };
}

function asBuffer(v: unknown): Buffer | undefined {
  return Buffer.isBuffer(v) ? v : typeof v === 'string' ? Buffer.from(v) : undefined;
}

/** Record values of `ids` (one script: old hashes read where an id is not packed yet). Unknown ids are absent. */
export async function getRecords(redis: Redis, prefix: string, tenant: string, entity: Entity, ids: readonly string[]): Promise<Map<string, Segments>> {
  const out = new Map<string, Segments>();
  if (ids.length === 0) return out;
  const map = packedMap(prefix, tenant, entity);
  const reply = await GET.runBuffer(redis, map.keys, [map.spec, ...ids]);
  if (!Array.isArray(reply)) throw new StateCorruptError(map.keys[0] ?? '', undefined, 'packed read did not return a list');
  ids.forEach((id, i) => {
    const v = asBuffer(reply[i]);
    if (v) out.set(id, segmentsOf(v, map.keys[0] ?? '', id));
  });
  return out;
}

/**
 * Every packed record holding `segment`, in batches of buckets (flat memory). A record there from the start to
 * the end of the walk comes exactly once, splits or not (SCAN above). Old hashes are walked by the stores
 * themselves, before this (an entry moves from an old hash into the packed map, never back).
 */
export async function* scanRecords(
  redis: Redis,
  prefix: string,
  tenant: string,
  entity: Entity,
  segment: 1 | 2 | 3,
  count = 500,
): AsyncGenerator<[string, Segments][]> {
  const map = packedMap(prefix, tenant, entity);
  const key = map.keys[0] ?? '';
  let residue = 0;
  let n0 = 0;
  while (residue >= 0) {
    const reply = await SCAN.runBuffer(redis, map.keys, [map.spec, segment, residue, count, n0]);
    if (!Array.isArray(reply)) throw new StateCorruptError(key, undefined, 'packed scan did not return a list');
    residue = Number(String(reply[0]));
    n0 = Number(String(reply[1]));
    const batch: [string, Segments][] = [];
    for (let i = 2; i + 1 < reply.length; i += 2) {
      const id = String(reply[i]);
      const v = asBuffer(reply[i + 1]);
      if (v) batch.push([id, segmentsOf(v, key, id)]);
    }
    if (batch.length > 0) yield batch;
  }
}

const PACK = stateScript('state/lua/packed-pack');

/**
 * Moves a tenant's entries of the hashes versions before packed records kept (`ids`, `cache`, `ledger`) into its
 * packed records, in batches of `batch` ids (HSCAN of each old hash, one script per batch: each id's entries
 * move together and leave the old hashes in the same script). Idempotent and resumable: what moved is gone from
 * the old hashes. With `apply` false, counts the entries instead. Returns the old hashes' entries it found.
 */
export async function packOldEntries(redis: Redis, prefix: string, tenant: string, apply: boolean, batch = 500): Promise<number> {
  let n = 0;
  for (const entity of ENTITIES) {
    const map = packedMap(prefix, tenant, entity);
    for (const [old] of oldKeys(prefix, tenant, entity)) {
      if (!apply) {
        n += await redis.hlen(old);
        continue;
      }
      // Entries leave as they move: scan until the hash is gone (a write of the worker may move some meanwhile).
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

const COUNT = stateScript('state/lua/packed-count');

/** Records holding `segment` (one script): the packed map's count and the old hash's. */
export async function countRecords(redis: Redis, prefix: string, tenant: string, entity: Entity, segment: 1 | 2 | 3, oldKey: string): Promise<number> {
  return Number(await COUNT.run(redis, [packedKey(prefix, tenant, entity), oldKey], [segment]));
}

/** The meta counts of a packed map: records, and records holding each segment. */
export async function packedCounts(redis: Redis, prefix: string, tenant: string, entity: Entity): Promise<{ records: number; segments: [number, number, number] }> {
  const key = packedKey(prefix, tenant, entity);
  const meta = await redis.hget(key, 'm');
  if (meta === null) return { records: 0, segments: [0, 0, 0] };
  const m = /^\d+ \d+ (\d+) (\d+) (\d+) (\d+)$/.exec(meta);
  if (!m) throw new StateCorruptError(key, 'm', 'bad packed-map meta');
  return { records: Number(m[1]), segments: [Number(m[2]), Number(m[3]), Number(m[4])] };
}
