/**
 * Record state written in batches. A pushed record's id-map entry, content hash and mirror cells (and, for a
 * contact created through the intent protocol, the end of its intent) join a batch per entity that is written in
 * one round trip (one atomic script) when it holds `maxBatch` entries, `maxDelayMs` after its first entry, or as
 * soon as the current turn of the event loop ends when no request of the run is in flight (nothing else would
 * join it soon; records decided without a request in the same turn still share the write).
 *
 * `set` resolves only once its batch is in Redis, so a record's task still ends after its state is stored (a
 * later task for the same record reads it) and an intent ends in the same script that writes its id-map entry,
 * never before. A crash loses at most the unwritten batches: their contacts keep their intents and are
 * looked up, not created again; their invoices and payments are pushed again (idempotent writes).
 */
import type { Entity } from '../../src/glossary.js';
import type { RecordStateStore, RecordStateWrite } from '../../src/state/index.js';

export interface StateWriterOptions {
  maxBatch: number;
  maxDelayMs: number;
  /** Requests of the run in flight; 0 = write when the current turn of the event loop ends. */
  inFlight: () => number;
  /** Told of each write waited for (the run's progress: a stalled run says it waits on Redis). */
  waits?: { enter(kind: 'redis'): void; leave(kind: 'redis'): void };
}

export const DEFAULT_STATE_WRITER: Omit<StateWriterOptions, 'inFlight'> = { maxBatch: 100, maxDelayMs: 20 };

interface Batch {
  entries: RecordStateWrite[];
  endIntents: string[];
  waiters: { resolve: () => void; reject: (err: unknown) => void }[];
  timer: NodeJS.Timeout | undefined;
  immediate: NodeJS.Immediate | undefined;
}

export class StateWriter {
  private readonly batches = new Map<Entity, Batch>();

  constructor(
    private readonly store: RecordStateStore,
    private readonly tenant: string,
    private readonly options: StateWriterOptions,
  ) {}

  /**
   * Stores a record's state (merged as `RecordStateStore.setMany` does; with its `mirror` segment, the mirror
   * too); with `endIntent`, ends the record's intent in the same step. Resolves once written.
   */
  set(entity: Entity, entry: RecordStateWrite, options: { endIntent?: boolean } = {}): Promise<void> {
    let batch = this.batches.get(entity);
    if (!batch) {
      batch = { entries: [], endIntents: [], waiters: [], timer: undefined, immediate: undefined };
      this.batches.set(entity, batch);
    }
    batch.entries.push(entry);
    if (options.endIntent) batch.endIntents.push(entry.id);
    const waits = this.options.waits;
    waits?.enter('redis');
    const done = new Promise<void>((resolve, reject) =>
      batch.waiters.push({
        resolve: () => (waits?.leave('redis'), resolve()),
        reject: (err) => {
          waits?.leave('redis');
          reject(err instanceof Error ? err : new Error(String(err)));
        },
      }),
    );
    if (batch.entries.length >= this.options.maxBatch) this.write(entity);
    else if (this.options.inFlight() === 0) batch.immediate ??= setImmediate(() => this.write(entity));
    else batch.timer ??= setTimeout(() => this.write(entity), this.options.maxDelayMs);
    return done;
  }

  private write(entity: Entity): void {
    const batch = this.batches.get(entity);
    if (!batch) return;
    this.batches.delete(entity);
    if (batch.timer) clearTimeout(batch.timer);
    if (batch.immediate) clearImmediate(batch.immediate);
    const endIntents = batch.endIntents.length > 0 ? { endIntents: batch.endIntents } : {};
    this.store.setMany(this.tenant, entity, batch.entries, endIntents).then(
      () => {
        for (const w of batch.waiters) w.resolve();
      },
      (err: unknown) => {
        for (const w of batch.waiters) w.reject(err);
      },
    );
  }
}
