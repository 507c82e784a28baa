/**
 * One sync run of one tenant: contacts, then invoices (an invoice needs its contact's uuid), then payments.
 * Pages stream from the adapter; two pages are pushed at once through the run's request pool so the pool
 * stays full across page boundaries; a checkpoint is saved when a page and every page before it are done,
 * and the cursor advances only when the whole listing of an entity is pushed or dead-lettered.
 */
import { ENTITIES, type Entity } from '../../src/glossary.js';
import { checkRecord } from '../../src/platforms/records.js';
import { compareCursor, PlatformRateLimitedError, type BadRecord, type Cursor, type Page } from '../../src/platforms/types.js';
import { readFrom } from '../../src/sync/read-from.js';
import type { RunContext } from './context.js';
import { pushContacts } from './contacts.js';
import { reportBad } from './dead-letters.js';
import { drainPending, pushInvoices } from './invoices.js';
import { pushPayments } from './payments.js';

/** A checkpoint: where a killed run resumes (the last page fully pushed). */
export interface RunCheckpoint {
  entity: Entity;
  pageToken?: string;
  since?: Cursor;
  maxSeen?: Cursor;
  counts: Record<string, number>;
}

export interface RunOptions {
  /** Backfill from this date (full mode). */
  sinceDate?: string;
  resumeFrom?: RunCheckpoint;
  onProgress?: (p: { entity: Entity; pages: number; records: number; counts: Record<string, number> }) => Promise<void>;
}

/** How many pages are pushed at once (their requests share the run's pool). */
const PAGES_IN_FLIGHT = 2;
/** A platform minute limit shorter than this is waited out in place; longer ones reschedule the run. */
const MAX_INLINE_WAIT_MS = 5_000;

export function entitiesOf(mode: RunContext['mode']): Entity[] {
  return mode === 'reconcile' ? ['invoices'] : [...ENTITIES];
}

export async function runSync(ctx: RunContext, options: RunOptions = {}): Promise<void> {
  if (options.resumeFrom) Object.assign(ctx.counts, options.resumeFrom.counts);
  if (ctx.mode !== 'reconcile') await adoptExisting(ctx);
  const entities = entitiesOf(ctx.mode);
  const startAt = options.resumeFrom ? Math.max(0, entities.indexOf(options.resumeFrom.entity)) : 0;
  if (ctx.mode === 'replay') {
    for (const entity of entities) {
      await replayEntity(ctx, entity);
      if (entity === 'invoices') await drainPending(ctx);
    }
    return;
  }
  for (const entity of entities.slice(startAt)) {
    const resume = options.resumeFrom?.entity === entity ? options.resumeFrom : undefined;
    await runEntity(ctx, entity, resume, options);
    if (entity === 'invoices') await drainPending(ctx);
  }
}

async function sinceFor(ctx: RunContext, entity: Entity, sinceDate: string | undefined): Promise<Cursor | undefined> {
  if (ctx.mode === 'reconcile') return undefined;
  if (ctx.mode === 'full') return sinceDate ? { updatedAt: `${sinceDate}T00:00:00.000Z`, id: '' } : undefined;
  const state = await ctx.services.stores.cursors.get(ctx.tenant, entity);
  return readFrom(state?.highWater, ctx.services.settings.lookbackMs);
}

async function runEntity(ctx: RunContext, entity: Entity, resume: RunCheckpoint | undefined, options: RunOptions): Promise<void> {
  const { stores, settings } = ctx.services;
  const since = resume ? resume.since : await sinceFor(ctx, entity, options.sinceDate);
  let pageToken = resume?.pageToken;
  let maxSeen = resume?.maxSeen;
  let pages = 0;
  let records = 0;
  const inFlight: { done: Promise<void>; nextToken: string | undefined; maxSeen: Cursor | undefined }[] = [];

  const settle = async (): Promise<void> => {
    const head = inFlight.shift();
    if (!head) return;
    await head.done;
    pages += 1;
    const checkpoint: RunCheckpoint = { entity, counts: { ...ctx.counts } };
    if (head.nextToken !== undefined) checkpoint.pageToken = head.nextToken;
    if (since) checkpoint.since = since;
    if (head.maxSeen) checkpoint.maxSeen = head.maxSeen;
    if (head.nextToken !== undefined) await stores.cursors.saveCheckpoint(ctx.tenant, ctx.runId, entity, checkpoint);
    await options.onProgress?.({ entity, pages, records, counts: ctx.counts });
  };

  try {
    for (;;) {
      ctx.throwIfAborted();
      const page = await readPage(ctx, entity, { since, pageToken, pageSize: settings.pageSize });
      records += page.records.length + page.bad.length;
      for (const r of page.records) {
        const c = { updatedAt: r.updatedAt, id: r.id };
        if (!maxSeen || compareCursor(c, maxSeen) > 0) maxSeen = c;
      }
      const done = push(ctx, entity, page);
      done.catch(() => undefined); // awaited in order below; never left unhandled
      inFlight.push({ done, nextToken: page.nextPageToken, maxSeen });
      while (inFlight.length >= PAGES_IN_FLIGHT) await settle();
      if (page.nextPageToken === undefined) break;
      pageToken = page.nextPageToken;
    }
    while (inFlight.length > 0) await settle();
  } catch (err) {
    // Let the pages already under way end (their writes are idempotent) before the error leaves the run.
    await Promise.allSettled(inFlight.map((p) => p.done));
    throw err;
  }
  if (maxSeen && (ctx.mode === 'incremental' || ctx.mode === 'full')) {
    await stores.cursors.advance(ctx.tenant, entity, maxSeen);
  }
  await clearFixedLines(ctx, entity);
}

/**
 * A bad line with no readable id (not JSON, say) is dead-lettered by its place and reported again by every
 * complete listing. So once a listing is complete, such an entry not reported again during this run has been
 * fixed or removed at the source: it leaves the dead letters.
 */
async function clearFixedLines(ctx: RunContext, entity: Entity): Promise<void> {
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
 * Pushes the records kept with an entity's dead letters again (`dead-letters retry`). A record pushed now
 * leaves the store; one that fails again is updated there; entries without a record (lines that were not
 * valid JSON) stay until the source is fixed.
 */
async function replayEntity(ctx: RunContext, entity: Entity): Promise<void> {
  const { stores } = ctx.services;
  const until = Date.now();
  let after: string | undefined;
  let pages = 0;
  do {
    ctx.throwIfAborted();
    const batch = await stores.deadLetters.take(ctx.tenant, { entity, limit: ctx.services.settings.pageSize, until, ...(after ? { after } : {}) });
    after = batch.next;
    const records: unknown[] = [];
    const bad: BadRecord[] = [];
    for (const entry of batch.entries) {
      if (entry.record === undefined) continue;
      const checked = checkRecord(entity, entry.record);
      if (checked.ok) records.push(checked.record);
      else bad.push({ entity, place: entry.place ?? `dead letter ${entry.key}`, reason: checked.reason, ...(entry.platformId ? { platformId: entry.platformId } : {}) });
    }
    await push(ctx, entity, { records, bad, ordered: false } as Page<Entity>);
    pages += 1;
  } while (after !== undefined);
  ctx.services.logger.info({ tenant: ctx.tenant, entity, pages }, 'dead letters replayed');
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
  for (;;) {
    try {
      return await ctx.services.adapter.readPage(entity, {
        pageSize: req.pageSize,
        signal: ctx.signal,
        ...(req.since ? { since: req.since } : {}),
        ...(req.pageToken !== undefined ? { pageToken: req.pageToken } : {}),
      });
    } catch (err) {
      if (err instanceof PlatformRateLimitedError && err.scope !== 'day' && err.retryAfterMs <= MAX_INLINE_WAIT_MS) {
        ctx.services.logger.info({ tenant: ctx.tenant, entity, waitMs: err.retryAfterMs, scope: err.scope }, 'platform rate limit: waiting');
        await new Promise((r) => setTimeout(r, err.retryAfterMs));
        continue;
      }
      throw err;
    }
  }
}

/**
 * A tenant's first sync adopts the contacts that already exist in the service (a full GET /contact listing,
 * matched on extPlatformId), so nothing that is already there is created twice.
 */
async function adoptExisting(ctx: RunContext): Promise<void> {
  const { flags, stores, client } = ctx.services;
  if ((await flags.get(ctx.tenant, 'adopted')) !== null) return;
  const seen = new Set<string>();
  let batch: { id: string; uuid: string }[] = [];
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const known = await stores.records.getMany(ctx.tenant, 'contacts', batch.map((b) => b.id));
    const fresh = batch.filter((b) => known.get(b.id)?.uuid === undefined);
    await stores.records.setMany(ctx.tenant, 'contacts', fresh);
    ctx.count('contacts', 'adopted', fresh.length);
    batch = [];
  };
  await ctx.request(async () => {
    for await (const contact of client.listAllContacts({}, { signal: ctx.requestSignal })) {
      const ext = contact.extPlatformId;
      if (ext === null || ext === undefined || ext === '' || seen.has(ext)) continue;
      seen.add(ext);
      batch.push({ id: ext, uuid: contact.uuid });
      if (batch.length >= 500) await flush();
    }
  });
  await flush();
  await flags.set(ctx.tenant, 'adopted', new Date().toISOString());
}
