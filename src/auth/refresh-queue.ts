import type { Queue } from 'bullmq';
import type { Logger } from '../logger.js';
import { jobId } from '../queues/names.js';
import type { RotationReason } from './metrics.js';

/** The data of a refresh-token job (jobs/refresh-token.ts holds its zod schema). Ids only: never a secret. */
export interface RefreshRequest {
  clientKey: string;
  /** Whose tenants-file entry holds the credentials (any tenant of the client). */
  tenantId: string;
  reason: RotationReason;
  /** For '401': the version the request used (compare-and-refresh). */
  seenVersion?: number | undefined;
}

export const REFRESH_JOB_NAME = 'refresh-token';

/** The scheduler id (and deduplication id) of a client's refresh jobs. */
export function refreshId(clientKey: string): string {
  return jobId('refresh', clientKey);
}

/**
 * Enqueues an on-demand rotation. Deduplicated per client: while one waits, more adds are dropped; while one
 * runs, the latest add is kept as the single next job (`keepLastIfActive`), so a burst of 401s or missing-token
 * waits yields at most one queued job, and one that arrives during a rotation is not lost. (No custom job id:
 * BullMQ checks a custom id before deduplication and would drop the "next" job.) Returns the id of the job
 * that will run (the existing one when deduplicated).
 */
export async function enqueueRefresh(queue: Queue, request: RefreshRequest): Promise<string | undefined> {
  const job = await queue.add(REFRESH_JOB_NAME, request, {
    deduplication: { id: refreshId(request.clientKey), keepLastIfActive: true },
    attempts: 8,
    backoff: { type: 'exponential', delay: 500 },
    removeOnComplete: true,
    removeOnFail: { count: 100 },
  });
  return job.id;
}

/** One client whose token is rotated proactively (any tenant of it gives the credentials). */
export interface ScheduledClient {
  clientKey: string;
  tenantId: string;
}

/**
 * Upserts one job scheduler per client on the refresh-token queue (`every` = `everyMs`) and removes the
 * schedulers of clients no longer listed. Call it from ONE place: the worker's start and a tenants-file change
 * (concurrent upserts have made duplicates: bullmq #2876). The scheduled job rotates only when the token is
 * within its margin of expiry. No deduplication in the template (bullmq #2954).
 */
export async function ensureRefreshSchedules(
  queue: Queue,
  clients: readonly ScheduledClient[],
  everyMs: number,
  logger?: Logger,
): Promise<{ upserted: string[]; removed: string[] }> {
  const wanted = new Map<string, ScheduledClient>();
  for (const c of clients) if (!wanted.has(c.clientKey)) wanted.set(c.clientKey, c);
  const upserted: string[] = [];
  for (const c of wanted.values()) {
    const id = refreshId(c.clientKey);
    const data: RefreshRequest = { clientKey: c.clientKey, tenantId: c.tenantId, reason: 'scheduled' };
    await queue.upsertJobScheduler(id, { every: everyMs }, {
      name: REFRESH_JOB_NAME,
      data,
      opts: { attempts: 1, removeOnComplete: true, removeOnFail: { count: 20 } },
    });
    upserted.push(id);
  }
  const keep = new Set(upserted);
  const removed: string[] = [];
  const existing = await queue.getJobSchedulers(0, -1);
  for (const s of existing) {
    const id = s.id ?? s.key;
    if (id.startsWith('refresh.') && !keep.has(id)) {
      await queue.removeJobScheduler(id);
      removed.push(id);
    }
  }
  logger?.info({ upserted: upserted.length, removed: removed.length, everyMs }, 'auth: refresh schedules in place');
  return { upserted, removed };
}
