/**
 * The store of packed records (their format: src/state/packed-codec.ts; their Lua: src/state/lua/, `packed-*.lua`
 * and the includes `includes/packed-*.lua`): reading records by id, walking a map, counting. The hashes versions
 * before packed records kept are no business of this module: migrate-keys packs them (src/state/old-hashes.ts),
 * and the worker does not start while one is left.
 */
import type { Redis } from 'ioredis';
import type { Entity } from '../glossary.js';
import { stateKey } from './keys.js';
import { segmentsOf, type Segments } from './packed-codec.js';
import { stateScript } from './script.js';
import { StateCorruptError } from './stored.js';

const GET = stateScript('state/lua/packed-get');

const SCAN = stateScript('state/lua/packed-scan');

/** One packed map's KEYS and its spec (its index in KEYS: a script may open two maps), numbered from KEYS[first]. */
export interface PackedMapKeys {
  keys: string[];
  spec: string;
}

export function packedKey(prefix: string, tenant: string, entity: Entity): string {
  return stateKey(prefix, 'rec', tenant, entity);
}

export function packedMap(prefix: string, tenant: string, entity: Entity, first = 1): PackedMapKeys {
  return { keys: [packedKey(prefix, tenant, entity)], spec: String(first) };
}

function asBuffer(v: unknown): Buffer | undefined {
  return Buffer.isBuffer(v) ? v : typeof v === 'string' ? Buffer.from(v) : undefined;
}

/** Record values of `ids` (one script). Unknown ids are absent. */
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
 * the end of the walk comes exactly once, splits or not (SCAN above).
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

/** Records holding `segment`: the packed map's count of that segment (its meta: one read, no walk). */
export async function countRecords(redis: Redis, prefix: string, tenant: string, entity: Entity, segment: 1 | 2 | 3): Promise<number> {
  return (await packedCounts(redis, prefix, tenant, entity)).segments[segment - 1] ?? 0;
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
