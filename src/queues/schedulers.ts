/**
 * Job schedulers (BullMQ 6; legacy repeatable jobs are gone), kept in step with the tenants file: one
 * upsert-and-prune for every scheduled job: the sync ticks of each tenant, the token refreshes of each client and the
 * fleet's one housekeeping scheduler.
 * Call it from ONE place at a time (the worker, under its schedules lock, at start and on a tenants-file change):
 * concurrent upserts have made duplicates and stopped schedulers (bullmq #2876, #3381). No deduplication in a
 * scheduler's template (bullmq #2954): a tick enqueues a deduplicated job instead.
 */
import { createHash } from 'node:crypto';
import type { JobSchedulerJson, Queue, RepeatOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { canonicalJson } from '../canonical-json.js';
import type { ScheduledClient } from '../auth/refresh-request.js';
import type { TenantConfig } from '../config/tenants.js';
import type { Logger } from '../logger.js';
import { jobKind, parseJobData, type JobData, type JobInput } from './jobs.js';

/** How often a tenant without a `schedule.every` or `cron` is synced. */
export const DEFAULT_EVERY_MS = 15 * 60_000;

/** How often the fleet runs a housekeeping pass (one pass per interval, whatever the number of workers). */
export const HOUSEKEEPING_EVERY_MS = 3_600_000;

type ScheduledJob = 'tick' | 'refresh' | 'housekeeping';

export interface WantedScheduler<K extends ScheduledJob> {
  /** The data of every job it makes; its id comes from the job table (`schedulerId`). */
  data: JobInput<K>;
  repeat: Omit<RepeatOptions, 'key'>;
}

/**
 * Upserts and removals sent at once, per batch: one process putting 30,000 schedulers in place (10,000 tenants) sent
 * them one round trip after another, most of a start; distinct schedulers may be written side by side (the lock of
 * src/worker/schedules.ts keeps other processes out), a batch bounds what waits in Redis's input at once.
 */
const WRITES_AT_ONCE = 256;

async function inBatches<T>(items: readonly T[], fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += WRITES_AT_ONCE) await Promise.all(items.slice(i, i + WRITES_AT_ONCE).map(fn));
}

/** Whether a scheduler in place already makes what is wanted (and still has its next job: a live one). */
function inPlace(s: JobSchedulerJson, want: { data: unknown; repeat: WantedScheduler<ScheduledJob>['repeat'] }, opts: Record<string, unknown> | undefined): boolean {
  if (typeof s.next !== 'number') return false;
  if (s.every !== want.repeat.every || s.pattern !== want.repeat.pattern || (s.tz ?? undefined) !== (want.repeat.tz ?? undefined)) return false;
  // BullMQ keeps no data for an empty one (the housekeeping scheduler's {}): read as {}, else it was written at every start.
  if (canonicalJson(s.template?.data ?? {}) !== canonicalJson(want.data)) return false;
  const had = (s.template?.opts ?? {}) as Record<string, unknown>;
  return Object.entries(opts ?? {}).every(([k, v]) => canonicalJson(had[k]) === canonicalJson(v));
}

/**
 * Upserts one scheduler per wanted entry (the first of two with one id wins) unless one in place makes the same
 * jobs already, then removes this job's schedulers that are no longer wanted: a start or a change with nothing new
 * writes nothing (an upsert of an unchanged scheduler would start nothing either, but it costs a round trip and a
 * write each, 20,000 of them at 10,000 tenants). When the wanted set is the one last put in place in full (a digest
 * kept in the queue's keys), nothing is read back but each scheduler's next time and whether its next job is there:
 * a restart of 40,000 tenants read 120,000 schedulers and parsed their templates, under the schedules lock.
 */
export async function ensureSchedulers<K extends ScheduledJob>(
  queue: Queue,
  key: K,
  wanted: readonly WantedScheduler<K>[],
  logger?: Logger,
): Promise<{ upserted: string[]; removed: string[]; unchanged: number }> {
  const job = jobKind(key);
  // Every entry is checked before the queue is touched.
  const schedulers = new Map<string, { data: JobData<K>; repeat: WantedScheduler<K>['repeat'] }>();
  for (const w of wanted) {
    const data = parseJobData(key, w.data);
    const id = job.schedulerId?.(data);
    if (id === undefined) throw new Error(`${job.name} jobs have no scheduler id in the job table`);
    if (!schedulers.has(id)) schedulers.set(id, { data, repeat: w.repeat });
  }
  // ioredis (a Redis or a Cluster: both pipeline alike); BullMQ types it narrower.
  const client = (await queue.backend.client) as unknown as Redis;
  // The wanted set's digest, kept once it was all in place: a start with the same set reads no scheduler back.
  const digestKey = queue.toKey(`schedulers-digest:${job.name}`);
  const digest = digestOf(schedulers, job.scheduledOptions);
  if ((await client.get(digestKey)) === digest) return ensureLive(queue, client, job.name, job.scheduledOptions, schedulers, logger);
  // Gone before the first write, written after the last: a start that dies half-way leaves none, and the next one
  // reads everything back.
  await client.del(digestKey);
  // BullMQ 6 gives a scheduler's id as `key` (what upsert and remove take); `id` is a leftover of v5's
  // repeatable jobs and is never set (test/queues/schedulers.test.ts holds this).
  const existing = new Map((await queue.getJobSchedulers(0, -1)).filter((s) => s.name === job.name).map((s) => [s.key, s]));
  // A scheduler in place whose next job is gone has stopped (bullmq #3381): it is upserted again. Whether the job is
  // there is one EXISTS of its hash, pipelined (getJobState looked through the wait list, O(waiting jobs) each: a
  // restart of 10,000 tenants with their first syncs queued spent seconds there). A queue's keys share one hash tag.
  const candidates = [...schedulers].filter(([id, want]) => {
    const had = existing.get(id);
    return had !== undefined && inPlace(had, want, job.scheduledOptions as Record<string, unknown> | undefined);
  });
  const live = await liveOf(queue, client, candidates.map(([id]) => [id, existing.get(id)?.next]));
  const upserted = [...schedulers.keys()].filter((id) => !live.has(id));
  const unchanged = schedulers.size - upserted.length;
  await upsertAll(queue, job.name, job.scheduledOptions, schedulers, upserted);
  const removed = [...existing.keys()].filter((id) => !schedulers.has(id));
  await inBatches(removed, async (id) => {
    await queue.removeJobScheduler(id);
  });
  await client.set(digestKey, digest);
  logger?.info({ job: job.name, upserted: upserted.length, unchanged, removed: removed.slice(0, 20), removedCount: removed.length }, 'schedulers in place');
  return { upserted, removed, unchanged };
}

type Wanted = Map<string, { data: unknown; repeat: WantedScheduler<ScheduledJob>['repeat'] }>;

/** The wanted set (ids, data, repeat options and the job's scheduled options), as one digest. */
function digestOf(schedulers: Wanted, opts: unknown): string {
  const entries = [...schedulers].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([id, w]) => [id, w.data, w.repeat]);
  return createHash('sha256').update(canonicalJson({ opts: opts ?? null, entries })).digest('hex');
}

/**
 * The schedulers among `ids` that are there and live: their next job (`repeat:<id>:<next>`) exists. A stopped one
 * (bullmq #3381) has a next time and no job. One EXISTS each, pipelined (a queue's keys share one hash tag).
 */
async function liveOf(queue: Queue, client: Redis, ids: readonly (readonly [string, number | undefined])[]): Promise<Set<string>> {
  const live = new Set<string>();
  const known = ids.filter(([, next]) => next !== undefined);
  if (known.length === 0) return live;
  const pipe = client.pipeline();
  for (const [id, next] of known) pipe.exists(queue.toKey(`repeat:${id}:${String(next)}`));
  const replies = (await pipe.exec()) ?? [];
  known.forEach(([id], i) => {
    if (replies[i]?.[1] === 1) live.add(id);
  });
  return live;
}

async function upsertAll(queue: Queue, name: string, opts: unknown, schedulers: Wanted, ids: readonly string[]): Promise<void> {
  await inBatches(ids, async (id) => {
    const want = schedulers.get(id)!;
    try {
      await queue.upsertJobScheduler(id, want.repeat, { name, data: want.data, ...(opts ? { opts } : {}) });
    } catch (err) {
      throw new Error(`scheduler ${id}: ${(err as Error).message}`, { cause: err });
    }
  });
}

/**
 * The wanted set is the one last put in place in full (its digest is kept): each wanted scheduler's next time is
 * read from the queue's scheduler index (one ZRANGE, no scheduler hash, no template parsed), and those missing or
 * stopped are upserted again. Nothing is removed: the set in place is the wanted one, less what went missing.
 */
async function ensureLive(queue: Queue, client: Redis, name: string, opts: unknown, schedulers: Wanted, logger: Logger | undefined): Promise<{ upserted: string[]; removed: string[]; unchanged: number }> {
  const flat = await client.zrange(queue.toKey('repeat'), 0, -1, 'WITHSCORES');
  const next = new Map<string, number>();
  for (let i = 0; i + 1 < flat.length; i += 2) next.set(flat[i]!, Number(flat[i + 1]));
  const live = await liveOf(queue, client, [...schedulers.keys()].map((id) => [id, next.get(id)] as const));
  const upserted = [...schedulers.keys()].filter((id) => !live.has(id));
  await upsertAll(queue, name, opts, schedulers, upserted);
  const unchanged = schedulers.size - upserted.length;
  logger?.info({ job: name, upserted: upserted.length, unchanged, removed: [], removedCount: 0, unchangedSet: true }, 'schedulers in place');
  return { upserted, removed: [], unchanged };
}

/**
 * Where in its interval a tenant's reconcile pass falls (ms): a digest of its id, so 10,000 tenants' passes spread over
 * the interval instead of all coming at once, and the first does not come at the start when the tenant's first
 * incremental run (at once, on `every`) reads everything already.
 */
export function reconcileOffsetMs(tenantId: string, everyMs: number): number {
  return 1 + (createHash('sha256').update(tenantId).digest().readUInt32BE(0) % Math.max(1, everyMs - 1));
}

/** Two schedulers per tenant: incremental runs (`every` or `cron`) and the reconcile pass (`reconcileEvery`). */
export async function ensureTickSchedules(scheduleQueue: Queue, tenants: readonly TenantConfig[], logger?: Logger): Promise<{ upserted: string[]; removed: string[]; unchanged: number }> {
  const wanted = tenants.flatMap((t): WantedScheduler<'tick'>[] => [
    {
      data: { tenantId: t.id, mode: 'incremental' },
      repeat: t.schedule.cron !== undefined ? { pattern: t.schedule.cron, ...(t.schedule.tz ? { tz: t.schedule.tz } : {}) } : { every: t.schedule.every ?? DEFAULT_EVERY_MS },
    },
    // A tenant on `every` runs its first incremental at once (a full read): its reconcile pass falls at its offset.
    // One on `cron` waits for its pattern: its reconcile pass comes at once, as its first run.
    {
      data: { tenantId: t.id, mode: 'reconcile' },
      repeat: t.schedule.cron !== undefined ? { every: t.schedule.reconcileEvery } : { every: t.schedule.reconcileEvery, offset: reconcileOffsetMs(t.id, t.schedule.reconcileEvery) },
    },
  ]);
  return ensureSchedulers(scheduleQueue, 'tick', wanted, logger);
}

/**
 * One scheduler per client on the refresh-token queue (`every` = `everyMs`), each at an offset of its own in the
 * interval (a digest of the client key): 10,000 clients' checks came all at once at a start and every `everyMs`
 * after, a burst in the refresh queue that an on-demand rotation (a run's first token) waited behind. The schedulers
 * of clients no longer listed are removed. The scheduled job rotates only when the token is within its margin of
 * expiry (a client with no token yet is left to its first request).
 */
export async function ensureRefreshSchedules(
  queue: Queue,
  clients: readonly ScheduledClient[],
  everyMs: number,
  logger?: Logger,
): Promise<{ upserted: string[]; removed: string[]; unchanged: number }> {
  const wanted = clients.map((c): WantedScheduler<'refresh'> => ({
    data: { clientKey: c.clientKey, tenantId: c.tenantId, reason: 'scheduled' },
    repeat: { every: everyMs, offset: reconcileOffsetMs(c.clientKey, everyMs) },
  }));
  return ensureSchedulers(queue, 'refresh', wanted, logger);
}

/**
 * The fleet's one housekeeping scheduler (`every` = `everyMs`). A new or changed scheduler runs its first pass at
 * once (BullMQ: an `every` scheduler starts immediately); re-upserting it unchanged starts nothing.
 */
export async function ensureHousekeepingSchedule(scheduleQueue: Queue, everyMs = HOUSEKEEPING_EVERY_MS, logger?: Logger): Promise<{ upserted: string[]; removed: string[]; unchanged: number }> {
  return ensureSchedulers(scheduleQueue, 'housekeeping', [{ data: {}, repeat: { every: everyMs } }], logger);
}
