/**
 * Job schedulers (BullMQ 6; legacy repeatable jobs are gone), kept in step with the tenants file: one
 * upsert-and-prune for every scheduled job: the sync ticks of each tenant, the token refreshes of each client and the
 * fleet's one housekeeping scheduler.
 * Call it from ONE place at a time (the worker, under its schedules lock, at start and on a tenants-file change):
 * concurrent upserts have made duplicates and stopped schedulers (bullmq #2876, #3381). No deduplication in a
 * scheduler's template (bullmq #2954): a tick enqueues a deduplicated job instead.
 */
import type { Queue, RepeatOptions } from 'bullmq';
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
 * Upserts one scheduler per wanted entry (the first of two with one id wins), then removes this job's
 * schedulers that are no longer wanted. Re-upserting an unchanged scheduler starts nothing.
 */
export async function ensureSchedulers<K extends ScheduledJob>(
  queue: Queue,
  key: K,
  wanted: readonly WantedScheduler<K>[],
  logger?: Logger,
): Promise<{ upserted: string[]; removed: string[] }> {
  const job = jobKind(key);
  // Every entry is checked before the queue is touched.
  const schedulers = new Map<string, { data: JobData<K>; repeat: WantedScheduler<K>['repeat'] }>();
  for (const w of wanted) {
    const data = parseJobData(key, w.data);
    const id = job.schedulerId?.(data);
    if (id === undefined) throw new Error(`${job.name} jobs have no scheduler id in the job table`);
    if (!schedulers.has(id)) schedulers.set(id, { data, repeat: w.repeat });
  }
  const upserted: string[] = [];
  for (const [id, { data, repeat }] of schedulers) {
    try {
      await queue.upsertJobScheduler(id, repeat, { name: job.name, data, ...(job.scheduledOptions ? { opts: job.scheduledOptions } : {}) });
    } catch (err) {
      throw new Error(`scheduler ${id}: ${(err as Error).message}`, { cause: err });
    }
    upserted.push(id);
  }
  const removed: string[] = [];
  for (const s of await queue.getJobSchedulers(0, -1)) {
    // BullMQ 6 gives a scheduler's id as `key` (what upsert and remove take); `id` is a leftover of v5's
    // repeatable jobs and is never set (test/queues/schedulers.test.ts holds this).
    if (s.name === job.name && !upserted.includes(s.key)) {
      await queue.removeJobScheduler(s.key);
      removed.push(s.key);
    }
  }
  logger?.info({ job: job.name, upserted: upserted.length, removed }, 'schedulers in place');
  return { upserted, removed };
}

/** Two schedulers per tenant: incremental runs (`every` or `cron`) and the reconcile pass (`reconcileEvery`). */
export async function ensureTickSchedules(scheduleQueue: Queue, tenants: readonly TenantConfig[], logger?: Logger): Promise<{ upserted: string[]; removed: string[] }> {
  const wanted = tenants.flatMap((t): WantedScheduler<'tick'>[] => [
    {
      data: { tenantId: t.id, mode: 'incremental' },
      repeat: t.schedule.cron !== undefined ? { pattern: t.schedule.cron, ...(t.schedule.tz ? { tz: t.schedule.tz } : {}) } : { every: t.schedule.every ?? DEFAULT_EVERY_MS },
    },
    { data: { tenantId: t.id, mode: 'reconcile' }, repeat: { every: t.schedule.reconcileEvery } },
  ]);
  return ensureSchedulers(scheduleQueue, 'tick', wanted, logger);
}

/**
 * One scheduler per client on the refresh-token queue (`every` = `everyMs`); the schedulers of clients no
 * longer listed are removed. The scheduled job rotates only when the token is within its margin of expiry.
 */
export async function ensureRefreshSchedules(
  queue: Queue,
  clients: readonly ScheduledClient[],
  everyMs: number,
  logger?: Logger,
): Promise<{ upserted: string[]; removed: string[] }> {
  const wanted = clients.map((c): WantedScheduler<'refresh'> => ({
    data: { clientKey: c.clientKey, tenantId: c.tenantId, reason: 'scheduled' },
    repeat: { every: everyMs },
  }));
  return ensureSchedulers(queue, 'refresh', wanted, logger);
}

/**
 * The fleet's one housekeeping scheduler (`every` = `everyMs`). A new or changed scheduler runs its first pass at
 * once (BullMQ: an `every` scheduler starts immediately); re-upserting it unchanged starts nothing.
 */
export async function ensureHousekeepingSchedule(scheduleQueue: Queue, everyMs = HOUSEKEEPING_EVERY_MS, logger?: Logger): Promise<{ upserted: string[]; removed: string[] }> {
  return ensureSchedulers(scheduleQueue, 'housekeeping', [{ data: {}, repeat: { every: everyMs } }], logger);
}
