/**
 * One sync run of one tenant: contacts, then invoices (an invoice needs its contact's uuid), then payments.
 * Pages stream from the adapter into a window of records under way (RecordWindow): a page is pushed as soon
 * as its records fit, so the run's request pool stays full across page boundaries. The invoices start once the
 * contact listing is read, while its last pages are still being pushed (an invoice whose contact is under way
 * waits for it; one whose contact is not mapped waits in the pending store, as before), and the payments once
 * the invoice listing is read and the contacts are done (a payment whose invoice is under way waits for it
 * before the invoice's balance is pushed again). A checkpoint is saved when a page and every page before it of
 * its entity are done (never past a record still under way), and an entity's cursor advances only when its
 * whole listing is pushed or dead-lettered.
 */
import { ENTITIES, type Entity } from '../../src/glossary.js';
import { checkRecord } from '../../src/platforms/records.js';
import { compareCursor, PlatformRateLimitedError, type BadRecord, type Cursor, type Page } from '../../src/platforms/types.js';
import type { DeadLetterEntry } from '../../src/state/index.js';
import { retry, type RetryPolicy } from '../../src/retry.js';
import { readFrom } from '../../src/sync/read-from.js';
import type { RunContext } from './context.js';
import { pushContacts } from './contacts.js';
import { reportBad, UNSETTLED } from './dead-letters.js';
import { drainPending, pushInvoices } from './invoices.js';
import { adoptExisting } from './adopt.js';
import { pushPayments } from './payments.js';
import { maxPagesOf, RecordWindow, windowSize } from './window.js';

/** Where an entity's listing resumes: the page after the last one done with every page before it. */
export interface ListingPosition {
  pageToken?: string;
  since?: Cursor;
  maxSeen?: Cursor;
}

/** A checkpoint: where a killed run resumes (the first entity not done; `next`, the one pushed beside it). */
export interface RunCheckpoint extends ListingPosition {
  entity: Entity;
  next?: ListingPosition & { entity: Entity };
  counts: Record<string, number>;
}

export interface RunOptions {
  /** Backfill from this date (full mode). */
  sinceDate?: string;
  resumeFrom?: RunCheckpoint;
  onProgress?: (p: { entity: Entity; pages: number; records: number; counts: Record<string, number> }) => Promise<void>;
}

/**
 * A record stamped more than this ahead of the run's start has a wrong clock or a wrong stamp: it is pushed,
 * but the cursor does not follow it past the run's start (it would skip every real change until that date).
 */
export const MAX_CLOCK_SKEW_MS = 5 * 60_000;

/** Whether a stamp is further ahead of `now` than the clock skew allows. */
export function inTheFuture(updatedAt: string, now: number): boolean {
  return Date.parse(updatedAt) > now + MAX_CLOCK_SKEW_MS;
}

/** A platform minute limit shorter than this is waited out in place; longer ones reschedule the run. */
const MAX_INLINE_WAIT_MS = 5_000;

/**
 * A page read that hit a short platform rate limit (not the daily one, at most MAX_INLINE_WAIT_MS) is read again once
 * the platform's wait is over, as often as it comes. No back-off of ours and no jitter: the platform said when (its
 * limiter already spreads processes), so the wait is exactly its Retry-After.
 */
const SHORT_RATE_LIMIT: RetryPolicy = {
  retries: Infinity,
  baseMs: 0,
  capMs: 0,
  jitter: 'none',
  retryable: (err) => err instanceof PlatformRateLimitedError && err.scope !== 'day' && err.retryAfterMs <= MAX_INLINE_WAIT_MS,
};

export function entitiesOf(mode: RunContext['mode']): Entity[] {
  return mode === 'reconcile' ? ['invoices'] : [...ENTITIES];
}

/** What the entities of one run share: the window, where each listing stands, the checkpoint writes. */
class RunStreams {
  readonly window: RecordWindow;
  /** Entities under way, in run order, with the position a checkpoint resumes them from. */
  private readonly positions = new Map<Entity, ListingPosition>();
  private saving: Promise<void> = Promise.resolve();
  /** The first failure of any entity: the others stop reading pages, and the run throws it. */
  failure: { err: unknown } | undefined;

  get failed(): boolean {
    return this.failure !== undefined;
  }

  fail(err: unknown): void {
    this.failure ??= { err };
  }

  constructor(
    private readonly ctx: RunContext,
    readonly order: Entity[],
  ) {
    const { pageSize } = ctx.services.settings;
    const size = windowSize(pageSize, ctx.services.pool.limit);
    const window = new RecordWindow(size, maxPagesOf(size, pageSize));
    this.window = window;
    ctx.progress.window = () => ({ records: window.underWay, pages: window.pagesUnderWay, waiting: window.pagesWaiting });
  }

  begin(entity: Entity, at: ListingPosition): void {
    this.positions.set(entity, at);
  }

  /** The entity's pages up to `at` are done: saves the checkpoint (in order: a later save never lands first). */
  async moved(entity: Entity, at: ListingPosition): Promise<void> {
    this.positions.set(entity, at);
    await this.save();
  }

  /** The entity is done (cursor advanced); the checkpoint moves on to the entities still under way. */
  async ended(entity: Entity): Promise<void> {
    this.positions.delete(entity);
    if (this.positions.size > 0) await this.save();
  }

  private save(): Promise<void> {
    const under = this.order.filter((e) => this.positions.has(e));
    const [first, second] = under;
    if (first === undefined) return this.saving;
    const checkpoint: RunCheckpoint = { entity: first, ...this.positions.get(first), counts: { ...this.ctx.counts } };
    if (second !== undefined) checkpoint.next = { entity: second, ...this.positions.get(second) };
    const { cursors } = this.ctx.services.stores;
    const { progress } = this.ctx;
    this.saving = this.saving.then(() => progress.during('checkpoint', cursors.saveCheckpoint(this.ctx.tenant, this.ctx.runId, first, checkpoint)));
    return this.saving;
  }
}

export async function runSync(ctx: RunContext, options: RunOptions = {}): Promise<void> {
  const resume = options.resumeFrom;
  if (resume) Object.assign(ctx.counts, resume.counts);
  // A tenant's first sync adopts the service's existing contacts (a listing) while the first pages are read: no
  // record is pushed before the adoption has ended (runEntity waits for it), and the run never ends before it.
  const adopted = ctx.mode === 'reconcile' ? Promise.resolve() : ctx.progress.during('adoption', adoptExisting(ctx));
  adopted.catch(() => undefined); // awaited below
  try {
    await runAdopting(ctx, options, adopted);
    await adopted;
  } finally {
    await adopted.catch(() => undefined);
  }
}

async function runAdopting(ctx: RunContext, options: RunOptions, adopted: Promise<void>): Promise<void> {
  const resume = options.resumeFrom;
  const entities = entitiesOf(ctx.mode);
  if (ctx.mode === 'replay') {
    ctx.progress.phase = 'adopting';
    await adopted;
    for (const entity of entities) {
      ctx.progress.phase = `replay ${entity}`;
      await replayEntity(ctx, entity);
      if (entity === 'invoices') await drainPending(ctx);
    }
    return;
  }
  const order = entities.slice(resume ? Math.max(0, entities.indexOf(resume.entity)) : 0);
  const streams = new RunStreams(ctx, order);
  const startOf = async (entity: Entity): Promise<ListingPosition> => {
    const saved = resume?.entity === entity ? resume : resume?.next?.entity === entity ? resume.next : undefined;
    if (saved) {
      return {
        ...(saved.pageToken === undefined ? {} : { pageToken: saved.pageToken }),
        ...(saved.since ? { since: saved.since } : {}),
        ...(saved.maxSeen ? { maxSeen: saved.maxSeen } : {}),
      };
    }
    const since = await sinceFor(ctx, entity, options.sinceDate);
    return since ? { since } : {};
  };
  // Each entity starts once the listing before it is read (its last pages are still being pushed) and the one
  // before that has ended: at most two entities are under way, the checkpoint's `entity` and `next`. An invoice
  // whose contact is on a contact page under way waits for that page; a payment whose invoice is on an invoice
  // page under way waits for that page before the invoice's balance is pushed again (pushPayments).
  const running: Promise<void>[] = [];
  let before: Promise<void> = Promise.resolve();
  for (const entity of order) {
    if (streams.failed) break;
    let listed!: () => void;
    const isListed = new Promise<void>((resolve) => (listed = resolve));
    const run = runEntity(ctx, streams, entity, await startOf(entity), options, adopted, listed);
    running.push(run);
    // A failure stops the others reading pages (they let their pages under way end), and no later entity starts.
    const ended = run.then(
      () => undefined,
      (err: unknown) => streams.fail(err),
    );
    await Promise.race([Promise.all([isListed, before]), ended]);
    before = ended;
  }
  await Promise.allSettled(running);
  for (const run of running) await run;
  // Invoices that waited for their contact, once every payment of the run is in the ledger (their balance is right).
  ctx.progress.phase = 'pending invoices';
  if (order.includes('invoices')) await drainPending(ctx);
  ctx.progress.phase = 'set-aside records';
  await retrySetAside(ctx, entities);
}

/**
 * The run's last step: records set aside (this run's, and earlier runs' still unsettled) are pushed once more,
 * from the dead letters; invoices that waited for a contact pushed now go too.
 */
async function retrySetAside(ctx: RunContext, entities: Entity[]): Promise<void> {
  ctx.lastChance = true;
  try {
    let retried = 0;
    for (const entity of entities) retried += await replayEntity(ctx, entity, (e) => e.code === UNSETTLED);
    if (retried > 0 && entities.includes('invoices')) await drainPending(ctx);
  } finally {
    ctx.lastChance = false;
  }
}

async function sinceFor(ctx: RunContext, entity: Entity, sinceDate: string | undefined): Promise<Cursor | undefined> {
  if (ctx.mode === 'reconcile') return undefined;
  if (ctx.mode === 'full') return sinceDate ? { updatedAt: `${sinceDate}T00:00:00.000Z`, id: '' } : undefined;
  const state = await ctx.services.stores.cursors.get(ctx.tenant, entity);
  if (state?.highWater && inTheFuture(state.highWater.updatedAt, ctx.startedAt)) {
    // Left there by an earlier version that followed a future stamp: read everything (the hashes make it cheap);
    // the cursor is set back once this listing is complete.
    ctx.note(`${entity}: the cursor ${state.highWater.updatedAt} is in the future; this run reads everything and sets it back`);
    ctx.services.logger.warn({ entity, cursor: state.highWater }, 'cursor in the future: reading everything');
    return undefined;
  }
  return readFrom(state?.highWater, ctx.services.settings.lookbackMs);
}

/**
 * Reads an entity's listing from `start` and pushes its pages through the run's window, none before `adopted`
 * (the first sync's adoption of existing contacts) has ended. `onListed` is called
 * once the last page is read (its records may still be under way). Resolves when every page is done and the
 * cursor has moved; on a failure, lets the pages under way end (their writes are idempotent), then throws.
 */
async function runEntity(
  ctx: RunContext,
  streams: RunStreams,
  entity: Entity,
  start: ListingPosition,
  options: RunOptions,
  adopted: Promise<void>,
  onListed?: () => void,
): Promise<void> {
  const { stores, settings } = ctx.services;
  const { window } = streams;
  const since = start.since;
  let pageToken = start.pageToken;
  let maxSeen = start.maxSeen;
  let pages = 0;
  let read = 0;
  let records = 0;
  const fail = (err: unknown): void => streams.fail(err);
  const underWay = new Set<Promise<void>>();
  // Pages end in any order; this chain takes them in listing order, so a checkpoint never passes a page under way.
  let settled: Promise<void> = Promise.resolve();
  streams.begin(entity, start);
  ctx.progress.phase = entity;

  try {
    for (;;) {
      ctx.throwIfAborted();
      if (streams.failed) break;
      const page = await ctx.progress.during('platform', readPage(ctx, entity, { since, pageToken, pageSize: settings.pageSize }));
      ctx.progress.step();
      read += 1;
      const size = page.records.length + page.bad.length;
      records += size;
      for (const r of page.records) {
        let c = { updatedAt: r.updatedAt, id: r.id };
        if (inTheFuture(r.updatedAt, ctx.startedAt)) {
          ctx.note(`${entity} ${r.id} (page ${read} of this run's listing): updatedAt ${r.updatedAt} is in the future; the cursor stops at the run's start`);
          ctx.services.logger.warn({ entity, platformId: r.id, updatedAt: r.updatedAt }, 'record stamped in the future: the cursor does not follow it');
          c = { updatedAt: new Date(ctx.startedAt).toISOString(), id: '' };
        }
        if (!maxSeen || compareCursor(c, maxSeen) > 0) maxSeen = c;
      }
      await adopted;
      await ctx.progress.during('window', window.acquire(size));
      if (streams.failed || ctx.signal.aborted) {
        window.release(size);
        window.endPage();
        break;
      }
      // Each record leaves the window as its push ends; what is left (bad records, repeats) when the page ends.
      let held = size;
      const leave = (): void => {
        if (held <= 0) return;
        held -= 1;
        window.release(1);
      };
      const ids = page.records.map((r) => r.id);
      ctx.holdInWindow(entity, ids, leave);
      const done = push(ctx, entity, page);
      underWay.add(done);
      // Records a later entity may need (an invoice's contact, a payment's invoice) wait for their page to end.
      if (entity !== 'payments') ctx.markUnderWay(entity, ids, done);
      const ended = (): void => {
        ctx.leaveWindow(entity, ids, leave);
        window.release(held);
        held = 0;
        window.endPage();
        underWay.delete(done);
      };
      done.then(ended, (err: unknown) => (ended(), fail(err)));
      const at: ListingPosition = { ...(page.nextPageToken === undefined ? {} : { pageToken: page.nextPageToken }), ...(since ? { since } : {}), ...(maxSeen ? { maxSeen } : {}) };
      const last = page.nextPageToken === undefined;
      settled = settled.then(async () => {
        await done;
        pages += 1;
        // The last page is not a place to resume from: the entity ends next (the earlier checkpoint holds till then).
        if (!last) await streams.moved(entity, at);
        await ctx.progress.during('checkpoint', options.onProgress?.({ entity, pages, records, counts: ctx.counts }) ?? Promise.resolve());
      });
      settled.catch(fail);
      if (last) break;
      pageToken = page.nextPageToken;
    }
  } catch (err) {
    fail(err);
  }
  if (!streams.failed && !ctx.signal.aborted) onListed?.();
  await Promise.allSettled([...underWay]);
  await settled.catch(() => undefined);
  if (streams.failure) throw streams.failure.err;
  ctx.throwIfAborted();
  if (maxSeen && (ctx.mode === 'incremental' || ctx.mode === 'full')) {
    // A cursor in the future (an earlier version followed a future stamp) is set back: the listing is complete.
    await stores.cursors.advance(ctx.tenant, entity, maxSeen, 'both', (stored) => stored.highWater !== undefined && inTheFuture(stored.highWater.updatedAt, ctx.startedAt));
  }
  await clearFixedLines(ctx, entity);
  await streams.ended(entity);
}

/**
 * A bad line with no readable id (not JSON, say) is dead-lettered by its place and reported again by every
 * complete listing. So once a listing is complete, such an entry not reported again during this run has been
 * fixed or removed at the source: it leaves the dead letters.
 */
async function clearFixedLines(ctx: RunContext, entity: Entity): Promise<void> {
  if (!ctx.deadLettersHeld) return;
  const { deadLetters } = ctx.services.stores;
  let after: string | undefined;
  const stale: string[] = [];
  do {
    const batch = await deadLetters.take(ctx.tenant, { entity, limit: 500, until: ctx.startedAt - 1, ...(after ? { after } : {}) });
    after = batch.next;
    for (const e of batch.entries) if (e.platformId === undefined && e.place !== undefined) stale.push(e.key);
  } while (after !== undefined);
  if (stale.length > 0) await deadLetters.remove(ctx.tenant, stale);
}

/**
 * Pushes the records kept with an entity's dead letters again (`dead-letters retry`; with `only`, the entries it
 * picks). A record pushed now leaves the store; one that fails again is updated there; entries without a record
 * (lines that were not valid JSON) stay until the source is fixed, counted `needsSourceFix` (the run is then partial, as
 * `dead-letters retry` says: decision 0232). Returns how many records were pushed.
 */
async function replayEntity(ctx: RunContext, entity: Entity, only?: (e: DeadLetterEntry) => boolean): Promise<number> {
  if (!ctx.deadLettersHeld) return 0;
  const { stores } = ctx.services;
  const until = Date.now();
  let after: string | undefined;
  let pages = 0;
  let pushed = 0;
  do {
    ctx.throwIfAborted();
    const batch = await stores.deadLetters.take(ctx.tenant, { entity, limit: ctx.services.settings.pageSize, until, ...(after ? { after } : {}) });
    after = batch.next;
    const records: unknown[] = [];
    const bad: BadRecord[] = [];
    for (const entry of batch.entries) {
      if (only && !only(entry)) continue;
      // Kept without its record (a line that was not valid JSON): the replay cannot push it, the source needs fixing.
      if (entry.record === undefined) {
        ctx.count(entity, 'needsSourceFix');
        continue;
      }
      const checked = checkRecord(entity, entry.record);
      if (checked.ok) records.push(checked.record);
      else bad.push({ entity, place: entry.place ?? `dead letter ${entry.key}`, reason: checked.reason, ...(entry.platformId ? { platformId: entry.platformId } : {}) });
    }
    if (records.length + bad.length === 0) continue;
    await push(ctx, entity, { records, bad, ordered: false } as Page<Entity>);
    pushed += records.length;
    pages += 1;
  } while (after !== undefined);
  if (pages > 0) ctx.services.logger.info({ entity, pages, records: pushed }, only ? 'set-aside records pushed again' : 'dead letters replayed');
  return pushed;
}

async function push(ctx: RunContext, entity: Entity, page: Page<Entity>): Promise<void> {
  await reportBad(ctx, page.bad);
  if (entity === 'contacts') await pushContacts(ctx, (page as Page<'contacts'>).records);
  else if (entity === 'invoices') await pushInvoices(ctx, (page as Page<'invoices'>).records);
  else await pushPayments(ctx, (page as Page<'payments'>).records);
}

async function readPage(
  ctx: RunContext,
  entity: Entity,
  req: { since: Cursor | undefined; pageToken: string | undefined; pageSize: number },
): Promise<Page<Entity>> {
  return retry(
    () =>
      ctx.services.adapter.readPage(entity, {
        pageSize: req.pageSize,
        signal: ctx.signal,
        ...(req.since ? { since: req.since } : {}),
        ...(req.pageToken !== undefined ? { pageToken: req.pageToken } : {}),
      }),
    SHORT_RATE_LIMIT,
    {
      signal: ctx.signal,
      wait: (err) => (err as PlatformRateLimitedError).retryAfterMs,
      onRetry: ({ error }) => {
        const limited = error as PlatformRateLimitedError;
        ctx.services.logger.info({ entity, waitMs: limited.retryAfterMs, scope: limited.scope }, 'platform rate limit: waiting');
      },
    },
  );
}
