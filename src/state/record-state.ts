/**
 * Id map and content hash, one Redis HASH per (tenant, entity): field = platform id, value = `uuid|hash`
 * (either side may be empty), each side in its compact form (src/state/compact.ts: a uuid in 22 characters, the
 * hash in 12); the longer forms older versions wrote are read as well. Batch methods cost one round trip per page.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { ENTITIES, type Entity } from '../glossary.js';
import { stateKey } from './keys.js';
import { LUA_HELPERS, stateScript } from './script.js';
import { decodeHash, decodeUuid, encodeHash, encodeUuid } from './compact.js';
import { pairs, parseValue } from './stored.js';

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

/**
 * Merges each entry into what is stored: a given uuid or hash replaces that side, an absent one keeps it.
 * Entries for the same id within one call apply in order. ARGV: id, uuid, hash triples ('' = keep), then (with
 * KEYS[2], the tenant's intents) the ids whose intents end once the id-map entry is written.
 */
const setManySource = (endIntents: boolean): string => `${LUA_HELPERS}
local triples = ${endIntents ? 'tonumber(ARGV[1])' : '#ARGV / 3'}
local base = ${endIntents ? '1' : '0'}
local fields = {}
for i = 1, triples do fields[#fields + 1] = ARGV[base + 3 * i - 2] end
local merged, order = {}, {}
if #fields > 0 then
  local current = chunked('HMGET', KEYS[1], fields)
  for i = 1, #fields do
    local id = fields[i]
    local old = merged[id]
    if old == nil then
      old = current[i] or '|'
      order[#order + 1] = id
    end
    local bar = string.find(old, '|', 1, true)
    if not bar then corrupt(KEYS[1], id) end
    local uuid, hash = string.sub(old, 1, bar - 1), string.sub(old, bar + 1)
    local newUuid, newHash = ARGV[base + 3 * i - 1], ARGV[base + 3 * i]
    if newUuid ~= '' then uuid = newUuid end
    if newHash ~= '' then hash = newHash end
    merged[id] = uuid .. '|' .. hash
  end
  local flat = {}
  for _, id in ipairs(order) do
    flat[#flat + 1] = id
    flat[#flat + 1] = merged[id]
  end
  chunked('HSET', KEYS[1], flat, 2)
end
${
  endIntents
    ? `local ended = {}
for i = base + 3 * triples + 1, #ARGV do ended[#ended + 1] = ARGV[i] end
if #ended > 0 then chunked('HDEL', KEYS[2], ended) end`
    : ''
}
return #order
`;
const SET_MANY = stateScript(setManySource(false));
/** The same, and then the given intents end: in one atomic step, so an intent never ends before its id-map entry. */
const SET_MANY_END_INTENTS = stateScript(setManySource(true));

/** Drops the hash side of the given fields, keeping the uuid; a field left empty is deleted. */
const STRIP_HASHES = stateScript(`${LUA_HELPERS}
for _, id in ipairs(ARGV) do
  local old = redis.call('HGET', KEYS[1], id)
  if old then
    local bar = string.find(old, '|', 1, true)
    if not bar then corrupt(KEYS[1], id) end
    local uuid = string.sub(old, 1, bar - 1)
    if uuid == '' then redis.call('HDEL', KEYS[1], id) else redis.call('HSET', KEYS[1], id, uuid .. '|') end
  end
end
return #ARGV
`);

export class RecordStateStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  key(tenant: string, entity: Entity): string {
    return stateKey(this.prefix, 'ids', tenant, entity);
  }

  /** State of each id that has any (HMGET: one round trip). Unknown ids are absent from the map. */
  async getMany(tenant: string, entity: Entity, ids: readonly string[]): Promise<Map<string, RecordState>> {
    const out = new Map<string, RecordState>();
    if (ids.length === 0) return out;
    const k = this.key(tenant, entity);
    const values = await this.redis.hmget(k, ...ids);
    values.forEach((raw, i) => {
      const id = ids[i];
      if (raw === null || id === undefined) return;
      out.set(id, parseValue(recordStateSchema, raw, k, id));
    });
    return out;
  }

  async get(tenant: string, entity: Entity, id: string): Promise<RecordState | undefined> {
    const k = this.key(tenant, entity);
    const raw = await this.redis.hget(k, id);
    return raw === null ? undefined : parseValue(recordStateSchema, raw, k, id);
  }

  /**
   * Merging write (Lua, atomic, one round trip): a hash keeps the stored uuid and vice versa. With
   * `endIntents` (contacts created through the intent protocol), those intents end in the same atomic step,
   * after the id-map entries are written: a crash can never leave an ended intent without its id-map entry.
   */
  async setMany(tenant: string, entity: Entity, entries: readonly RecordStateEntry[], options: { endIntents?: readonly string[] } = {}): Promise<void> {
    const args: string[] = [];
    for (const e of entries) {
      if (e.uuid === undefined && e.hash === undefined) continue;
      if (e.uuid?.includes('|')) throw new Error(`uuid of ${entity} ${e.id} contains "|"`);
      if (e.uuid === '' || e.hash === '') throw new Error(`empty uuid or hash for ${entity} ${e.id}`);
      args.push(e.id, e.uuid === undefined ? '' : encodeUuid(e.uuid), e.hash === undefined ? '' : encodeHash(e.hash));
    }
    const ending = options.endIntents ?? [];
    if (ending.length > 0) {
      await SET_MANY_END_INTENTS.run(this.redis, [this.key(tenant, entity), stateKey(this.prefix, 'intents', tenant)], [args.length / 3, ...args, ...ending]);
      return;
    }
    if (args.length === 0) return;
    await SET_MANY.run(this.redis, [this.key(tenant, entity)], args);
  }

  async count(tenant: string, entity: Entity): Promise<number> {
    return this.redis.hlen(this.key(tenant, entity));
  }

  /** Every stored entry, in batches (HSCAN): flat memory over large tenants. Order is Redis's. */
  async *scan(tenant: string, entity: Entity, count = 500): AsyncGenerator<RecordStateEntry[]> {
    const k = this.key(tenant, entity);
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscan(k, cursor, 'COUNT', count);
      cursor = next;
      const batch = pairs(flat).map(([id, raw]) => ({ id, ...parseValue(recordStateSchema, raw, k, id) }));
      if (batch.length > 0) yield batch;
    } while (cursor !== '0');
  }

  /**
   * Forgets content hashes but keeps uuids, so the next sync pushes every record again. Walks the hash in
   * HSCAN batches (never one long script); each field is rewritten atomically, so a concurrent `setMany` wins.
   */
  async clearHashes(tenant: string, entity?: Entity): Promise<number> {
    const entities: readonly Entity[] = entity ? [entity] : ENTITIES;
    let n = 0;
    for (const e of entities) {
      const k = this.key(tenant, e);
      let cursor = '0';
      do {
        const [next, flat] = await this.redis.hscan(k, cursor, 'COUNT', 1000);
        cursor = next;
        const ids = pairs(flat)
          .filter(([, raw]) => !raw.endsWith('|'))
          .map(([id]) => id);
        if (ids.length > 0) n += Number(await STRIP_HASHES.run(this.redis, [k], ids));
      } while (cursor !== '0');
    }
    return n;
  }

  /** Every key this store holds for a tenant. */
  keysOf(tenant: string): string[] {
    return ENTITIES.map((e) => this.key(tenant, e));
  }

  async clear(tenant: string): Promise<void> {
    await this.redis.unlink(...this.keysOf(tenant));
  }
}
