/**
 * Id map and content hash: the first segment of each packed record (src/state/packed.ts: one HASH of buckets per
 * (tenant, entity)), a canonical uuid as its 16 bytes and the hash as its 9. The id maps versions before kept (one
 * HASH per (tenant, entity), field = platform id, value = `uuid|hash`, src/state/compact.ts) are packed by
 * migrate-keys (src/state/old-hashes.ts) and never read here. Batch methods cost one round trip per page.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { ENTITIES, type Entity } from '../glossary.js';
import { stateKey } from './keys.js';
import { stateScript } from './script.js';
import { decodeHash, decodeUuid, formatUuid, hashPart, uuidPart } from './compact.js';
import { getRecords, countRecords, packedKey, packedMap, scanRecords } from './packed.js';
import { readVarint } from './packed-codec.js';
import { StateCorruptError } from './stored.js';

/** The stored `uuid|hash` string, decoded. Empty sides are absent. */
export const recordStateSchema = z
  .string()
  .regex(/^[^|]*\|/, 'expected "uuid|hash"')
  .transform((raw) => {
    const bar = raw.indexOf('|');
    const uuid = raw.slice(0, bar);
    const hash = raw.slice(bar + 1);
    const out: { uuid?: string; hash?: string } = {};
    if (uuid !== '') out.uuid = decodeUuid(uuid);
    if (hash !== '') out.hash = decodeHash(hash);
    return out;
  });
export type RecordState = z.output<typeof recordStateSchema>;
export interface RecordStateEntry extends RecordState {
  id: string;
}

/** A write of a record's state; with `mirror`, its mirror segment (RecordMirror.segment) in the same script. */
export interface RecordStateWrite extends RecordStateEntry {
  mirror?: Buffer;
}

const SET_MANY = stateScript('state/lua/record-state-set-many');

const STRIP_HASHES = stateScript('state/lua/record-state-strip-hashes');

/** An id-map segment (src/state/packed-codec.ts) as a RecordState. */
export function decodeIdSegment(seg: Buffer, key: string, id: string): RecordState {
  const r = readVarint(seg, 1);
  if (seg.length < 1 || !r || r[1] + r[0] > seg.length) throw new StateCorruptError(key, id, 'bad id-map segment');
  const flags = seg[0] as number;
  const [ul, at] = r;
  const uuid = seg.subarray(at, at + ul);
  const hash = seg.subarray(at + ul);
  const out: RecordState = {};
  if (ul > 0) {
    if (flags & 1 && ul !== 16) throw new StateCorruptError(key, id, 'bad uuid bytes');
    out.uuid = flags & 1 ? formatUuid(uuid) : decodeUuid(uuid.toString('utf8'));
  }
  if (hash.length > 0) {
    if (flags & 2 && hash.length !== 9) throw new StateCorruptError(key, id, 'bad hash bytes');
    out.hash = flags & 2 ? hash.toString('hex') : decodeHash(hash.toString('utf8'));
  }
  return out;
}

export class RecordStateStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  /** The packed map of a (tenant, entity): id maps, mirror cells and ledger entries (src/state/packed.ts). */
  key(tenant: string, entity: Entity): string {
    return packedKey(this.prefix, tenant, entity);
  }

  /**
   * The id map as versions before packed records kept it: never read here (migrate-keys packs it), named so a
   * tenant's `clear` deletes one a partial upgrade left.
   */
  oldKey(tenant: string, entity: Entity): string {
    return stateKey(this.prefix, 'ids', tenant, entity);
  }

  /** State of each id that has any (one script: one round trip). Unknown ids are absent from the map. */
  async getMany(tenant: string, entity: Entity, ids: readonly string[]): Promise<Map<string, RecordState>> {
    const out = new Map<string, RecordState>();
    const key = this.key(tenant, entity);
    for (const [id, segs] of await getRecords(this.redis, this.prefix, tenant, entity, ids)) {
      if (segs[0]) out.set(id, decodeIdSegment(segs[0], key, id));
    }
    return out;
  }

  async get(tenant: string, entity: Entity, id: string): Promise<RecordState | undefined> {
    return (await this.getMany(tenant, entity, [id])).get(id);
  }

  /**
   * Merging write (Lua, atomic, one round trip): a hash keeps the stored uuid and vice versa. An entry's
   * `mirror` replaces its mirror segment in the same step (a pushed record's id map and mirror: one bucket
   * written once). With `endIntents` (contacts created through the intent protocol), those intents end in the
   * same atomic step, after the id-map entries are written: a crash can never leave an ended intent without its
   * id-map entry.
   */
  async setMany(tenant: string, entity: Entity, entries: readonly RecordStateWrite[], options: { endIntents?: readonly string[] } = {}): Promise<void> {
    const args: (string | Buffer)[] = [];
    for (const e of entries) {
      if (e.uuid === undefined && e.hash === undefined && e.mirror === undefined) continue;
      if (e.uuid === '' || e.hash === '') throw new Error(`empty uuid or hash for ${entity} ${e.id}`);
      if (e.mirror !== undefined && (entity === 'payments' || e.mirror.length === 0)) throw new Error(`no mirror segment for ${entity} ${e.id}`);
      args.push(e.id, e.uuid === undefined ? '' : uuidPart(e.uuid), e.hash === undefined ? '' : hashPart(e.hash), e.mirror ?? '');
    }
    const ending = options.endIntents ?? [];
    if (args.length === 0 && ending.length === 0) return;
    const map = packedMap(this.prefix, tenant, entity);
    await SET_MANY.run(this.redis, [...map.keys, stateKey(this.prefix, 'intents', tenant)], [map.spec, args.length / 4, ...args, ...ending]);
  }

  /** Records with an id-map entry: the packed map's count. */
  async count(tenant: string, entity: Entity): Promise<number> {
    return countRecords(this.redis, this.prefix, tenant, entity, 1);
  }

  /** Every stored entry, in batches: the packed map bucket by bucket. Flat memory over large tenants. */
  async *scan(tenant: string, entity: Entity, count = 500): AsyncGenerator<RecordStateEntry[]> {
    const key = this.key(tenant, entity);
    for await (const records of scanRecords(this.redis, this.prefix, tenant, entity, 1, count)) {
      const batch = records.flatMap(([id, segs]) => (segs[0] ? [{ id, ...decodeIdSegment(segs[0], key, id) }] : []));
      if (batch.length > 0) yield batch;
    }
  }

  /**
   * Forgets content hashes but keeps uuids, so the next sync pushes every record again. Walks the packed map in
   * batches of buckets (never one long script); each batch is rewritten atomically, so a concurrent `setMany` wins.
   */
  async clearHashes(tenant: string, entity?: Entity): Promise<number> {
    const entities: readonly Entity[] = entity ? [entity] : ENTITIES;
    let n = 0;
    for (const e of entities) {
      const map = packedMap(this.prefix, tenant, e);
      let bucket = 0;
      while (bucket >= 0) {
        const reply = (await STRIP_HASHES.run(this.redis, map.keys, [map.spec, bucket, 40])) as [number, number];
        bucket = Number(reply[0]);
        n += Number(reply[1]);
      }
    }
    return n;
  }

  /** Every key this store holds for a tenant. */
  keysOf(tenant: string): string[] {
    return ENTITIES.flatMap((e) => [this.key(tenant, e), this.oldKey(tenant, e)]);
  }

  async clear(tenant: string): Promise<void> {
    await this.redis.unlink(...this.keysOf(tenant));
  }
}
