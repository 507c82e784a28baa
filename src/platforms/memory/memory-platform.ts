/**
 * An in-process platform for tests, the demo and the benchmark: raw records per entity (possibly bad ones, to
 * exercise bad-record handling), mutable between pages, and a one-shot failure to simulate a rate limit.
 */
import type { Entity } from '../../glossary.js';
import { ENTITIES } from '../../glossary.js';
import { checkRecord, rawCursor, type RecordCheck } from '../records.js';
import { compareCursor, type Cursor } from '../types.js';

/** A raw record as stored: any fields, keyed by its `id`. */
export type RawRecord = Readonly<Record<string, unknown>> & { readonly id: string };

/** One stored record, checked: `cursor` is absent when its `updatedAt` is unreadable. */
export interface StoredEntry<E extends Entity> {
  id: string;
  cursor: Cursor | undefined;
  check: RecordCheck<E>;
}

/** The entries of one entity as of one version: placed ones in (updatedAt, id) order, unplaced ones apart. */
export interface EntitySnapshot<E extends Entity> {
  ordered: (StoredEntry<E> & { cursor: Cursor })[];
  unplaced: StoredEntry<E>[];
}

export class MemoryPlatform {
  private readonly data = new Map<Entity, Map<string, RawRecord>>(ENTITIES.map((e) => [e, new Map()]));
  private readonly failures = new Map<Entity, unknown[]>();
  private readonly holds = new Map<Entity, Promise<void>[]>();
  private readonly versions = new Map<Entity, number>();
  private readonly snapshots = new Map<Entity, { version: number; snapshot: EntitySnapshot<Entity> }>();

  constructor(readonly name = 'default') {}

  /** Inserts or replaces a record by its `id` (a copy is stored; later changes to `record` do not leak in). */
  upsert(entity: Entity, record: RawRecord): void {
    this.map(entity).set(record.id, structuredClone(record));
    this.touch(entity);
  }

  upsertMany(entity: Entity, records: Iterable<RawRecord>): void {
    const map = this.map(entity);
    for (const record of records) map.set(record.id, structuredClone(record));
    this.touch(entity);
  }

  /** Removes a record; true when it was there. (A platform's soft delete is an upsert with `deleted: true`.) */
  remove(entity: Entity, id: string): boolean {
    const removed = this.map(entity).delete(id);
    if (removed) this.touch(entity);
    return removed;
  }

  get(entity: Entity, id: string): RawRecord | undefined {
    const record = this.map(entity).get(id);
    return record === undefined ? undefined : structuredClone(record);
  }

  /** Copies of every stored record of `entity`, in insertion order. */
  all(entity: Entity): RawRecord[] {
    return [...this.map(entity).values()].map((r) => structuredClone(r));
  }

  size(entity: Entity): number {
    return this.map(entity).size;
  }

  clear(): void {
    for (const entity of ENTITIES) {
      this.map(entity).clear();
      this.touch(entity);
    }
    this.failures.clear();
    this.holds.clear();
  }

  /** The next `readPage` of `entity` throws `error` (once; several calls queue several failures). */
  failNext(entity: Entity, error: unknown): void {
    const queue = this.failures.get(entity) ?? [];
    queue.push(error);
    this.failures.set(entity, queue);
  }

  /**
   * The next `readPage` of `entity` waits until `release` is called (a platform that takes the request and never
   * answers; the run's stall watchdog must end such a wait). Several calls hold several reads.
   */
  holdNext(entity: Entity): { release: () => void } {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    this.holds.set(entity, [...(this.holds.get(entity) ?? []), held]);
    return { release };
  }

  /** Takes the next hold of `entity`, if any (the adapter waits for it). */
  takeHold(entity: Entity): Promise<void> | undefined {
    return this.holds.get(entity)?.shift();
  }

  /** Takes the next queued failure of `entity`, if any. Used by the adapter. */
  takeFailure(entity: Entity): { error: unknown } | undefined {
    const queue = this.failures.get(entity);
    if (queue === undefined || queue.length === 0) return undefined;
    return { error: queue.shift() };
  }

  /** The checked, sorted entries of `entity`; rebuilt only after a change. */
  snapshot<E extends Entity>(entity: E): EntitySnapshot<E> {
    const version = this.versions.get(entity) ?? 0;
    const cached = this.snapshots.get(entity);
    if (cached !== undefined && cached.version === version) return cached.snapshot as EntitySnapshot<E>;
    const ordered: (StoredEntry<E> & { cursor: Cursor })[] = [];
    const unplaced: StoredEntry<E>[] = [];
    for (const [id, raw] of this.map(entity)) {
      const check = checkRecord(entity, raw);
      const cursor = check.ok ? { updatedAt: check.record.updatedAt, id: check.record.id } : rawCursor(raw);
      if (cursor === undefined) unplaced.push({ id, cursor, check });
      else ordered.push({ id, cursor, check });
    }
    ordered.sort((a, b) => compareCursor(a.cursor, b.cursor));
    const snapshot: EntitySnapshot<E> = { ordered, unplaced };
    this.snapshots.set(entity, { version, snapshot: snapshot });
    return snapshot;
  }

  private map(entity: Entity): Map<string, RawRecord> {
    const map = this.data.get(entity);
    if (map === undefined) throw new Error(`unknown entity ${String(entity)}`);
    return map;
  }

  private touch(entity: Entity): void {
    this.versions.set(entity, (this.versions.get(entity) ?? 0) + 1);
  }
}

/** Process-local stores by name, so a tenants file's `{"kind":"memory","name":"x"}` finds the store tests fill. */
export class MemoryPlatformRegistry {
  private readonly stores = new Map<string, MemoryPlatform>();

  /** The store called `name`, created empty on first use. */
  get(name: string): MemoryPlatform {
    let store = this.stores.get(name);
    if (store === undefined) {
      store = new MemoryPlatform(name);
      this.stores.set(name, store);
    }
    return store;
  }

  has(name: string): boolean {
    return this.stores.has(name);
  }

  delete(name: string): boolean {
    return this.stores.delete(name);
  }

  clear(): void {
    this.stores.clear();
  }
}

/** The process's registry (holds nothing until used; no I/O). */
export const memoryPlatforms = new MemoryPlatformRegistry();
