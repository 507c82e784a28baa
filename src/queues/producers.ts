/**
 * The producers: what the CLI, the demo, auth and the schedule ticks call to start work. Each is a thin,
 * typed call of `addJob` (src/queues/jobs.ts), which parses the data and gives the job its id and options.
 */
import type { Queue } from 'bullmq';
import type { RefreshJobs, RefreshRequest } from '../auth/refresh-request.js';
import type { CampaignStore } from '../calls/campaign-store.js';
import type { CampaignMeta, Target } from '../calls/types.js';
import type { Logger } from '../logger.js';
import type { EventSink, NotifyEvent } from '../notify/events.js';
import { addJob, dedupeOf, jobKind, parseJobData, type CampaignJobData, type JobData, type JobInput, type SingleCallJobData, type SyncJobData, type SyncMode } from './jobs.js';
import { ensureRefreshSchedules } from './schedulers.js';

/**
 * Enqueues a sync run. One queued job per (tenant, mode): a repeat request joins it; a run in progress makes it wait.
 * `delayMs`: the run starts no sooner, and requests meanwhile join it (a debounce).
 */
export async function requestSync(
  syncQueue: Queue,
  tenantId: string,
  mode: SyncMode,
  options: { since?: string; trigger?: SyncJobData['trigger']; delayMs?: number } = {},
): Promise<{ jobId: string | undefined; requestedAt: number; dedupeId: string }> {
  const requestedAt = Date.now();
  const { job, data } = await addJob(
    syncQueue,
    'sync',
    {
      tenantId,
      mode,
      trigger: options.trigger ?? 'cli',
      requestedAt,
      ...(options.since ? { since: options.since } : {}),
    },
    options.delayMs,
  );
  // The deduplication id lets a wait find the job that serves this request (src/queues/job-watch.ts).
  return { jobId: job.id, requestedAt, dedupeId: dedupeOf(jobKind('sync').dedupe ?? [], data).id };
}

/** Enqueues the delivery of a run-webhook event (job id = event id: the same event twice adds nothing). */
export async function enqueueNotify(notifyQueue: Queue, event: NotifyEvent, attempts?: number): Promise<string | undefined> {
  return (await addJob(notifyQueue, 'notify', event, undefined, attempts)).job.id;
}

/**
 * Queues a delivery of an event again (`POST /v1/events/{id}/redeliver`), under the same job id and so the same
 * `webhook-id`: a job of it delayed (waiting its back-off) is moved to now; one finished (delivered, or given up) is
 * removed and added again, with `attempts` attempts of its own; one waiting or under way is left as it is (that
 * delivery is the new one). Says which it was.
 */
export async function redeliverNotify(notifyQueue: Queue, event: NotifyEvent, attempts?: number): Promise<'queued' | 'promoted' | 'already queued'> {
  const id = jobKind('notify').jobId?.(event);
  const job = id === undefined ? undefined : await notifyQueue.getJob(id);
  const state = job === undefined ? undefined : await job.getState();
  if (job !== undefined && state === 'delayed') {
    await job.promote();
    return 'promoted';
  }
  if (job !== undefined && state !== 'completed' && state !== 'failed' && state !== 'unknown') return 'already queued';
  await job?.remove();
  await enqueueNotify(notifyQueue, event, attempts);
  return 'queued';
}

/**
 * The notify queue as the emitters' port (the sync processor, connect, revocations): an event of a tenant with a
 * receiver (`wanted`) is enqueued; any other is dropped. Never throws: a failed enqueue is logged at warn, and the
 * run or connection change it was about goes on (events are at least once while Redis takes them).
 */
export function notifyJobs(queue: Queue, o: { attempts: number; wanted(tenantId: string): boolean; logger: Logger }): EventSink {
  return {
    async emit(event) {
      if (!o.wanted(event.data.tenantId)) return;
      try {
        await enqueueNotify(queue, event, o.attempts);
      } catch (err) {
        o.logger.warn({ tenant: event.data.tenantId, eventId: event.id, type: event.type, err: (err as Error).message }, 'run webhook not enqueued');
      }
    },
  };
}

/** Enqueues the work of a kept call webhook event (one job per tenant and event id: a redelivery adds nothing). */
export async function enqueueWebhookEvent(callsQueue: Queue, tenantId: string, eventId: string, receivedAt = Date.now()): Promise<string | undefined> {
  return (await addJob(callsQueue, 'webhookEvent', { tenantId, eventId, receivedAt })).job.id;
}

/**
 * Enqueues an on-demand rotation. Deduplicated per client: while one waits, more adds are dropped; while one
 * runs, the latest add is kept as the single next job (`keepLastIfActive`), so a burst of 401s or missing-token
 * waits yields at most one queued job, and one that arrives during a rotation is not lost. (No custom job id:
 * BullMQ checks a custom id before deduplication and would drop the "next" job.) Returns the id of the job
 * that will run (the existing one when deduplicated).
 */
export async function enqueueRefresh(queue: Queue, request: RefreshRequest): Promise<string | undefined> {
  return (await addJob(queue, 'refresh', request)).job.id;
}

/** The refresh-token queue as auth's port (createAuth takes it; auth never imports the queue layer). */
export function refreshJobs(queue: Queue, logger?: Logger): RefreshJobs {
  return {
    request: (request) => enqueueRefresh(queue, request),
    plan: async (request, delayMs) => (await addJob(queue, 'refreshPlanned', request, delayMs)).job.id,
    schedule: (clients, everyMs) => ensureRefreshSchedules(queue, clients, everyMs, logger),
  };
}

/** The stored record of a campaign that a job starts (written by its producer, or by the job when missing). */
export function campaignMetaOf(data: CampaignJobData | SingleCallJobData): CampaignMeta {
  const base = { id: data.campaignId, tenant: data.tenantId, createdAt: data.requestedAt, status: 'queued' as const };
  if (!('source' in data)) return { ...base, source: 'single', dryRun: false };
  return { ...base, source: data.source.kind, dryRun: data.dryRun, ...(data.source.kind === 'overdue' ? { criteria: data.source.criteria } : {}) };
}

/** Stores the campaign (with an explicit list's targets) and enqueues its job; the job id is the campaign id. */
export async function enqueueCampaign(queue: Queue, store: CampaignStore, input: JobInput<'campaign'>, targets?: Target[]): Promise<CampaignJobData> {
  return enqueueCalls(queue, store, 'campaign', input, targets);
}

/** Stores a campaign of one call to a stored contact and enqueues its job. */
export async function enqueueSingleCall(queue: Queue, store: CampaignStore, input: JobInput<'single'>): Promise<SingleCallJobData> {
  return enqueueCalls(queue, store, 'single', input);
}

async function enqueueCalls<K extends 'campaign' | 'single'>(queue: Queue, store: CampaignStore, key: K, input: JobInput<K>, targets?: Target[]): Promise<JobData<K>> {
  const data = parseJobData(key, input);
  if ('source' in data && data.source.kind === 'list' && !targets) throw new Error('a list campaign needs its targets');
  if (!(await store.create(campaignMetaOf(data), targets))) throw new Error(`campaign ${data.campaignId} exists already`);
  await addJob(queue, key, input);
  return data;
}
