/**
 * Cursors (one HASH per tenant, field = entity, value = JSON) and the run checkpoint (one JSON string per
 * tenant). A cursor only moves forward: `advance` compares in JS with `compareCursor` and writes with a Lua
 * check-and-set on the exact value it read, retrying when another writer got there first.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { ENTITIES, type Entity } from '../glossary.js';
import { compareCursor, type Cursor } from '../platforms/types.js';
import { stateKey } from './keys.js';
import { stateScript } from './script.js';
import { parseJson } from './stored.js';

export const cursorSchema = z.object({
  updatedAt: z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'not a timestamp'),
  id: z.string(),
}) satisfies z.ZodType<Cursor>;

export const cursorStateSchema = z.object({
  /** Where the next incremental read starts (before the lookback). */
  readPosition: cursorSchema.optional(),
  /** The newest position fully pushed. */
  highWater: cursorSchema.optional(),
  updatedAt: z.number(),
});
export type CursorState = z.infer<typeof cursorStateSchema>;

const listingPositionSchema = z.object({
  pageToken: z.string().optional(),
  since: cursorSchema.optional(),
  maxSeen: cursorSchema.optional(),
});

export const checkpointDataSchema = listingPositionSchema.extend({
  /** The entity pushed beside the checkpoint's own (invoices while the last contact pages end): where it resumes. */
  next: listingPositionSchema.extend({ entity: z.enum(ENTITIES) }).optional(),
  counts: z.record(z.string(), z.number()),
});
export type CheckpointData = z.infer<typeof checkpointDataSchema>;

const entitySchema = z.enum(ENTITIES);
export const checkpointSchema = z.object({
  runId: z.string(),
  savedAt: z.number(),
  /** What `saveCheckpoint` was given, with its entity: where the run resumes. */
  data: checkpointDataSchema.extend({ entity: entitySchema }),
});
export type Checkpoint = z.infer<typeof checkpointSchema>;

/**
 * Sets a hash field only if it still holds the value read: the cursors' check-and-set, and the stored tenants'
 * (src/state/tenant-store.ts), whose documents are compare-and-set the same way.
 */
export const CHECK_AND_SET = stateScript('state/lua/cursors-check-and-set');

export type AdvanceWhich = 'both' | 'readPosition' | 'highWater';

export class CursorStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  key(tenant: string): string {
    return stateKey(this.prefix, 'cursors', tenant);
  }

  checkpointKey(tenant: string): string {
    return stateKey(this.prefix, 'checkpoint', tenant);
  }

  async get(tenant: string, entity: Entity): Promise<CursorState | undefined> {
    const k = this.key(tenant);
    const raw = await this.redis.hget(k, entity);
    return raw === null ? undefined : parseJson(cursorStateSchema, raw, k, entity);
  }

  /** Writes a cursor state as given (no forward check: for operators and tests; syncs use `advance`). */
  async set(tenant: string, entity: Entity, state: Omit<CursorState, 'updatedAt'> & { updatedAt?: number }): Promise<void> {
    const value = cursorStateSchema.parse({ ...state, updatedAt: state.updatedAt ?? Date.now() });
    await this.redis.hset(this.key(tenant), entity, JSON.stringify(value));
  }

  /**
   * Moves the read position and/or the high-water mark to `cursor` where it is ahead of what is stored
   * ((updatedAt, id) order; an equal cursor is not a move). `setBackIf`: a stored state it holds for is replaced by
   * `cursor` on both marks, ahead or not (a run's complete listing setting back a cursor from the future), in the same
   * check-and-set (no read of its own before). Returns the state after the call and whether anything moved.
   */
  async advance(
    tenant: string,
    entity: Entity,
    cursor: Cursor,
    which: AdvanceWhich = 'both',
    setBackIf?: (stored: CursorState) => boolean,
  ): Promise<{ moved: boolean; state: CursorState }> {
    const c = cursorSchema.parse(cursor);
    const k = this.key(tenant);
    // Lock-free: a failed check-and-set means another writer moved the cursor, so this loop ends.
    for (let attempt = 0; attempt < 1000; attempt += 1) {
      const raw = await this.redis.hget(k, entity);
      const current: CursorState = raw === null ? { updatedAt: 0 } : parseJson(cursorStateSchema, raw, k, entity);
      const next: CursorState = { ...current };
      let moved = false;
      if (raw !== null && setBackIf?.(current)) {
        next.readPosition = c;
        next.highWater = c;
        moved = true;
      } else {
        if (which !== 'highWater' && (!current.readPosition || compareCursor(c, current.readPosition) > 0)) {
          next.readPosition = c;
          moved = true;
        }
        if (which !== 'readPosition' && (!current.highWater || compareCursor(c, current.highWater) > 0)) {
          next.highWater = c;
          moved = true;
        }
      }
      if (!moved) return { moved, state: current };
      next.updatedAt = Date.now();
      if ((await CHECK_AND_SET.run(this.redis, [k], [entity, raw ?? '', JSON.stringify(next)])) === 1) return { moved, state: next };
    }
    throw new Error(`cursor ${k} ${entity}: too many concurrent writers`);
  }

  /** Forgets one entity's cursor, or all of the tenant's (the next incremental run reads everything). */
  async reset(tenant: string, entity?: Entity): Promise<void> {
    if (entity) await this.redis.hdel(this.key(tenant), entity);
    else await this.redis.unlink(this.key(tenant));
  }

  /** Where a killed run resumes: replaces the tenant's checkpoint (one per tenant: one run at a time). */
  async saveCheckpoint(tenant: string, runId: string, entity: Entity, data: CheckpointData): Promise<void> {
    const value: Checkpoint = checkpointSchema.parse({ runId, savedAt: Date.now(), data: { ...data, entity } });
    await this.redis.set(this.checkpointKey(tenant), JSON.stringify(value));
  }

  async getCheckpoint(tenant: string): Promise<Checkpoint | undefined> {
    const k = this.checkpointKey(tenant);
    const raw = await this.redis.get(k);
    return raw === null ? undefined : parseJson(checkpointSchema, raw, k);
  }

  async clearCheckpoint(tenant: string): Promise<void> {
    await this.redis.unlink(this.checkpointKey(tenant));
  }

  keysOf(tenant: string): string[] {
    return [this.key(tenant), this.checkpointKey(tenant)];
  }
}
