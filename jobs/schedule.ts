/**
 * Per-tenant schedules. Job Schedulers on the `schedule` queue produce ticks; a tick enqueues a deduplicated
 * sync job (FIELD-NOTES: never put deduplication in a scheduler's template). Schedulers are upserted from one
 * place at a time (a Redis lock), when a worker starts and when the tenants file changes.
 */
import type { Job, Queue } from 'bullmq';
import type { TenantConfig } from '../src/config/tenants.js';
import type { Logger } from '../src/logger.js';
import { jobId } from '../src/queues/names.js';
import { JOBS, parseJobData, type SyncMode } from './registry.js';

export const DEFAULT_EVERY_MS = 15 * 60_000;

/** Enqueues a sync run. One queued job per (tenant, mode): a repeat request joins it; a run in progress makes it wait. */
export async function requestSync(
  syncQueue: Queue,
  tenantId: string,
  mode: SyncMode,
  options: { since?: string; trigger?: 'schedule' | 'cli' | 'reconcile' | 'api' | 'test' } = {},
): Promise<{ jobId: string | undefined; requestedAt: number }> {
  const requestedAt = Date.now();
  const data = JOBS.sync.schema.parse({
    tenantId,
    mode,
    trigger: options.trigger ?? 'cli',
    requestedAt,
    ...(options.since ? { since: options.since } : {}),
  });
  const job = await syncQueue.add(JOBS.sync.name, data, {
    deduplication: { id: jobId('sync', tenantId, mode, options.since ?? 'all'), keepLastIfActive: true },
  });
  return { jobId: job.id, requestedAt };
}

export async function ensureSchedules(scheduleQueue: Queue, tenants: readonly TenantConfig[], logger: Logger): Promise<void> {
  const wanted = new Set<string>();
  for (const t of tenants) {
    const incId = jobId('tick', t.id, 'incremental');
    const recId = jobId('tick', t.id, 'reconcile');
    wanted.add(incId).add(recId);
    const repeat =
      t.schedule.cron !== undefined
        ? { pattern: t.schedule.cron, ...(t.schedule.tz ? { tz: t.schedule.tz } : {}) }
        : { every: t.schedule.every ?? DEFAULT_EVERY_MS };
    await scheduleQueue.upsertJobScheduler(incId, repeat, { name: JOBS.tick.name, data: { tenantId: t.id, mode: 'incremental' } });
    await scheduleQueue.upsertJobScheduler(
      recId,
      { every: t.schedule.reconcileEvery },
      { name: JOBS.tick.name, data: { tenantId: t.id, mode: 'reconcile' } },
    );
  }
  const existing = await scheduleQueue.getJobSchedulers(0, -1);
  for (const s of existing) {
    const id = s.key;
    if (!wanted.has(id)) {
      await scheduleQueue.removeJobScheduler(id);
      logger.info({ scheduler: id }, 'removed the schedule of a tenant no longer in the tenants file');
    }
  }
}

export function createTickProcessor(deps: { syncQueue: Queue; knows(tenantId: string): boolean; logger: Logger }) {
  return async (job: Job): Promise<{ enqueued: boolean }> => {
    const data = parseJobData(JOBS.tick.schema, job.data, JOBS.tick.name);
    if (!deps.knows(data.tenantId)) {
      deps.logger.warn({ tenant: data.tenantId }, 'schedule tick for a tenant not in the tenants file; ignored');
      return { enqueued: false };
    }
    await requestSync(deps.syncQueue, data.tenantId, data.mode, { trigger: data.mode === 'reconcile' ? 'reconcile' : 'schedule' });
    return { enqueued: true };
  };
}
