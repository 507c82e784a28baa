/**
 * What one sync run carries through its phases: the tenant's client, adapter and stores, the pool that
 * bounds requests in flight, the batched writer of record state, the counts, and the per-record serializer
 * that stops two pages from pushing the same platform record at once.
 */
import { setMaxListeners } from 'node:events';
import type { CallOptions, CollectionsClient } from '../../src/collections/client.js';
import type { Entity } from '../../src/glossary.js';
import type { Logger } from '../../src/logger.js';
import type { DroppedField } from '../../src/mapping/index.js';
import type { PlatformAdapter } from '../../src/platforms/types.js';
import type { StateStores } from '../../src/state/index.js';
import type { RecordMirror } from '../../src/state/record-mirror.js';
import type { TenantFlags } from '../../src/state/flags.js';
import type { SyncMode } from '../../src/queues/index.js';
import type { Pool } from './pool.js';
import { RunProgress } from './progress.js';
import { DEFAULT_STATE_WRITER, StateWriter } from './state-writer.js';
import { windowSize } from './window.js';

export interface SyncSettings {
  /** Records asked of the adapter per page. */
  pageSize: number;
  /** Incremental reads start this far before the cursor. */
  lookbackMs: number;
  /** How long an invoice waits for its contact's id-map entry before it is dead-lettered. */
  pendingMaxWaitMs: number;
  /** After an ambiguous contact create, wait this long before looking the contact up. */
  ambiguousRecheckMs: number;
  /** Runs kept in the tenant's run history (RUNS_KEPT; default 50). */
  runsKept?: number;
  /** Of those, kept in full (RUNS_DETAILED), and the age limit of the rest (RUNS_MAX_AGE_DAYS, in ms; 0: none). */
  runsDetailed?: number;
  runsMaxAgeMs?: number;
  /** No request answered for this long: the service is down, and a failing record ends the run (default 60 s). */
  serviceDownMs?: number;
}

export interface SyncMetrics {
  record(tenant: string, entity: Entity, outcome: RecordOutcome, n?: number): void;
}
/** `fieldsDropped`: records pushed with an optional field left out or cut (also counted as created or updated). */
/** `setAside`: records whose write was unsettled after its retries, pushed again at the end of the run. */
/**
 * `resolved`: records whose dead letter left the store: their content is in the service now, pushed by this run
 * or found unchanged with an id-map entry (for a payment, also one with nothing to update: unlinked, deleted). Also
 * counted as created, updated, skipped or unlinked.
 */
export type RecordOutcome =
  | 'created'
  | 'updated'
  | 'skipped'
  | 'deadLettered'
  | 'adopted'
  | 'pending'
  | 'unlinked'
  | 'badRecords'
  | 'fieldsDropped'
  | 'setAside'
  | 'resolved'
  /** A replay's dead letters kept without their record (a line that was not JSON): left, the source needs fixing. */
  | 'needsSourceFix';

export interface RunServices {
  logger: Logger;
  client: CollectionsClient;
  adapter: PlatformAdapter;
  stores: StateStores;
  mirror: RecordMirror;
  flags: TenantFlags;
  pool: Pool;
  settings: SyncSettings;
  metrics?: SyncMetrics;
}

/** What a run reports per outcome: `<entity>.<outcome>` and the outcome over every entity, kept equal. */
export type CountKey = RecordOutcome | `${Entity}.${RecordOutcome}`;
export type RunCounts = { [K in CountKey]?: number };

export interface RunContextOptions {
  tenant: string;
  runId: string;
  mode: SyncMode;
  services: RunServices;
  /** Stop: no new record or request starts once it is aborted (shutdown, lost run lock, cancelled job). */
  stop: AbortSignal;
  /**
   * Cancels requests already in flight: only when another worker may take the run over (the run lock was
   * lost) or the job is cancelled. A shutdown lets requests in flight finish, so their answers (and new uuids)
   * are not lost. Default: `stop`.
   */
  cancelRequests?: AbortSignal;
  /** When the run began (the first attempt's start, for a resumed run). Default: now. */
  startedAt?: number;
  /**
   * Whether the tenant had dead letters when the run opened (false: the run's dead-letter reads are skipped until it
   * writes one). Default: true (read them).
   */
  deadLetters?: boolean;
}

export class RunContext {
  readonly counts: RunCounts = {};
  readonly errors: string[] = [];
  readonly unlinkedPayments: string[] = [];
  /** Record state (id-map entries, hashes, ends of intents) written in batches; see StateWriter. */
  readonly writer: StateWriter;
  /** The run's phase, its steps and its waits (progress.ts), read by the stall watchdog. */
  readonly progress = new RunProgress();
  private readonly inFlight = new Map<string, Promise<unknown>>();
  private readonly ended = new Map<string, number>();
  /** Records of pages under way (platform id -> the page's end), so a record that needs one can wait for it. */
  private readonly pagesUnderWay = new Map<string, Promise<void>>();
  /** Records holding a place in the run's window (entity and id -> what frees it), freed as each one's task ends. */
  private readonly inWindow = new Map<string, () => void>();
  private seq = 0;
  /** When a request of the run last got an answer (a set-aside record counts on the service being up). */
  lastAnsweredAt = Date.now();
  /** The run's last step: records pushed again after being set aside; unsettled now, they stay dead letters. */
  lastChance = false;
  /**
   * Whether the tenant may hold dead letters: it had some when the run opened, or the run wrote one (only the run,
   * under the tenant's run lock, writes them). False: nothing to replay, clear or resolve, and no read for it (a
   * tenant with none saved about ten Redis calls a run: issue 40).
   */
  deadLettersHeld: boolean;

  readonly tenant: string;
  readonly runId: string;
  readonly mode: SyncMode;
  readonly services: RunServices;
  /** Stop: no new record or request starts once it is aborted (shutdown, lost run lock, cancelled job). */
  readonly signal: AbortSignal;
  /** Cancels requests already in flight (see RunContextOptions.cancelRequests). */
  readonly requestSignal: AbortSignal;
  /** When the run began (the first attempt's start, for a resumed run). */
  readonly startedAt: number;
  /** What every request of the run is sent with: the cancel signal, and the pool's slots taken under `signal`. */
  readonly call: CallOptions;

  constructor(o: RunContextOptions) {
    const { services } = o;
    this.tenant = o.tenant;
    this.runId = o.runId;
    this.mode = o.mode;
    this.services = services;
    this.signal = o.stop;
    this.requestSignal = o.cancelRequests ?? o.stop;
    this.startedAt = o.startedAt ?? Date.now();
    this.deadLettersHeld = o.deadLetters ?? true;
    const { signal, requestSignal, tenant } = this;
    // Each record under way may wait on the run's signals at once (the wait before an ambiguous create's
    // lookup, a request): as many listeners as records in the window, each removed when its wait ends.
    const waiters = windowSize(services.settings.pageSize, services.pool.limit) + services.pool.limit + 16;
    setMaxListeners(waiters, ...new Set([signal, requestSignal]));
    this.writer = new StateWriter(services.stores.records, tenant, { ...DEFAULT_STATE_WRITER, inFlight: () => services.pool.running, waits: this.progress });
    const { pool } = services;
    // Slots are waited for under the run's stop (no request, nor a retry after its back-off, starts once the run is
    // stopped), whatever signal the client passes (the cancel signal, which stop includes).
    this.call = {
      signal: requestSignal,
      slots: { take: (_signal, again) => pool.take(signal, again), sending: (ticket) => pool.sending(ticket), give: (ticket, outcome) => pool.give(ticket, outcome) },
    };
  }

  count(entity: Entity, outcome: RecordOutcome, n = 1): void {
    if (n === 0) return;
    this.progress.step();
    const k: CountKey = `${entity}.${outcome}`;
    this.counts[k] = (this.counts[k] ?? 0) + n;
    this.counts[outcome] = (this.counts[outcome] ?? 0) + n;
    this.services.metrics?.record(this.tenant, entity, outcome, n);
  }

  /** Takes `n` back from an outcome that was provisional (invoices no longer pending), both keys alike. */
  uncount(entity: Entity, outcome: RecordOutcome, n: number): void {
    const k: CountKey = `${entity}.${outcome}`;
    const taken = Math.min(n, this.counts[k] ?? 0);
    if (taken <= 0) return;
    this.counts[k] = (this.counts[k] ?? 0) - taken;
    this.counts[outcome] = Math.max(0, (this.counts[outcome] ?? 0) - taken);
  }

  /** The count of one outcome of one entity, or over every entity. */
  counted(outcome: RecordOutcome, entity?: Entity): number {
    return (entity ? this.counts[`${entity}.${outcome}`] : this.counts[outcome]) ?? 0;
  }

  note(error: string): void {
    if (this.errors.length < 200) this.errors.push(error);
  }

  /**
   * A record was pushed without some of its optional fields, or with some cut to fit (the mapper's `dropped`):
   * counted, and each field named with the record in the run's report (`invoices INV-7: notes cut (300
   * characters, the limit is 255)`).
   */
  noteDropped(entity: Entity, platformId: string, dropped: readonly DroppedField[]): void {
    if (dropped.length === 0) return;
    this.count(entity, 'fieldsDropped');
    for (const d of dropped) this.note(`${entity} ${platformId}: ${d.field} ${d.cut ? 'cut' : 'left out'} (${d.reason})`);
  }

  /** A point in the run's sequence: take it before reading records' state, pass it to `serialized`. */
  snapshot(): number {
    this.seq += 1;
    return this.seq;
  }

  /**
   * Runs `task` for one platform record after any earlier task for the same record has ended, so a record
   * that appears twice in one listing (an export with an updated line appended) is never pushed twice at
   * once. `waited` tells the task that the state it read in a batch at `snapshot` may be stale (an earlier
   * task for this record was under way, or ended after the snapshot): it must read that record's state again.
   */
  async serialized<T>(entity: Entity, id: string, snapshot: number, task: (waited: boolean) => Promise<T>): Promise<T> {
    const k = `${entity}\u0000${id}`;
    const before = this.inFlight.get(k);
    const endedAfterSnapshot = (this.ended.get(k) ?? 0) > snapshot;
    const run = (async () => {
      if (before) await this.progress.during('record', before.catch(() => undefined));
      return task(before !== undefined || endedAfterSnapshot);
    })();
    this.inFlight.set(k, run);
    try {
      return await run;
    } finally {
      const leave = this.inWindow.get(k);
      if (leave !== undefined) {
        this.inWindow.delete(k);
        leave();
      }
      if (this.inFlight.get(k) === run) this.inFlight.delete(k);
      // Remember when it ended; only the run's window of records under way matters (far fewer than kept here).
      this.ended.delete(k);
      this.ended.set(k, this.snapshot());
      if (this.ended.size > 20_000) {
        const oldest = this.ended.keys().next();
        if (!oldest.done) this.ended.delete(oldest.value);
      }
    }
  }

  /**
   * The records `ids` of a page hold places in the run's window: the first task of each (`serialized`) calls `leave`
   * as it ends, so a record done leaves the window before its page (decision 129).
   */
  holdInWindow(entity: Entity, ids: readonly string[], leave: () => void): void {
    for (const id of ids) this.inWindow.set(`${entity}\u0000${id}`, leave);
  }

  /** The page of `ids` ended: its records' places still held are forgotten (the page frees them at once). */
  leaveWindow(entity: Entity, ids: readonly string[], leave: () => void): void {
    for (const id of ids) {
      const k = `${entity}\u0000${id}`;
      if (this.inWindow.get(k) === leave) this.inWindow.delete(k);
    }
  }

  /**
   * The records `ids` are being pushed by a page that ends with `done`: an invoice whose contact is one of them
   * waits for it (`whenPushed`) instead of being set aside as waiting for an unmapped contact.
   */
  markUnderWay(entity: Entity, ids: readonly string[], done: Promise<void>): void {
    for (const id of ids) this.pagesUnderWay.set(`${entity}\u0000${id}`, done);
    const forget = (): void => {
      for (const id of ids) {
        const k = `${entity}\u0000${id}`;
        if (this.pagesUnderWay.get(k) === done) this.pagesUnderWay.delete(k);
      }
    };
    done.then(forget, forget);
  }

  /** Resolves once no page under way holds any of `ids` (at once when none does). */
  async whenPushed(entity: Entity, ids: Iterable<string>): Promise<void> {
    const waits = new Set<Promise<void>>();
    for (const id of ids) {
      const p = this.pagesUnderWay.get(`${entity}\u0000${id}`);
      if (p) waits.add(p);
    }
    if (waits.size > 0) await this.progress.during('page', Promise.allSettled([...waits]));
  }

  /**
   * A call to the service with the run's call options (`fn(ctx.call)`): its attempts take slots of the run's pool,
   * one per send, none while a back-off is waited out. Nothing starts once the run is stopped.
   */
  async request<T>(fn: (call: CallOptions) => Promise<T>): Promise<T> {
    this.signal.throwIfAborted();
    const out = await fn(this.call);
    this.lastAnsweredAt = Date.now();
    this.progress.step();
    return out;
  }

  throwIfAborted(): void {
    this.signal.throwIfAborted();
  }
}
