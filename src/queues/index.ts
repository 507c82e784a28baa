/**
 * The queue layer: queues and their default options (here), the table of every job (jobs.ts), the producers
 * (producers.ts), the schedulers (schedulers.ts) and the one wrapper that makes a BullMQ processor of a job's
 * handler (processor.ts). Each queue has a BullMQ `prefix` of its own (`queuePrefix`: KEY_PREFIX's base and the
 * queue as a hash tag, so the queues spread over a Redis Cluster), never the ioredis keyPrefix. Completed and failed jobs are trimmed so Redis does not grow for months (options.ts), whoever added them.
 */
import { Queue, type ConnectionOptions } from 'bullmq';
import type { Logger } from '../logger.js';
import { queuePrefix } from '../redis/keys.js';
import { QUEUES, type QueueName } from './names.js';
import { DEFAULT_JOB_OPTIONS } from './options.js';

export { QUEUES, jobId, type QueueName } from './names.js';
export { addJob, campaignJobId, JOBS } from './jobs.js';
export type { CampaignJobData, JobData, JobInput, JobKey, NotifyJobData, SingleCallJobData, SyncJobData, SyncMode, WebhookEventJobData } from './jobs.js';
export { campaignMetaOf, enqueueCampaign, enqueueNotify, enqueueRefresh, enqueueSingleCall, enqueueWebhookEvent, notifyJobs, redeliverNotify, refreshJobs, requestSync } from './producers.js';
export { jobOfRequest, workersOf, type JobRef, type JobView } from './job-watch.js';
export { ensureHousekeepingSchedule, ensureRefreshSchedules, ensureSchedulers, ensureTickSchedules, HOUSEKEEPING_EVERY_MS, type WantedScheduler } from './schedulers.js';
export { DEFAULT_JOB_OPTIONS, KEEP_COMPLETED, KEEP_FAILED, workerOptions } from './options.js';
export { byJobName, defineProcessor, hopeless, reschedule, type JobAttempt, type JobHandler, type JobProcessor, type ProcessorOptions } from './processor.js';

export type Queues = Record<keyof typeof QUEUES, Queue>;

/**
 * The queues. `onError` sees each queue error first and returns true when it has dealt with it (the process's
 * Redis outage log takes connection errors); the rest are logged here. `eventsKept` (QUEUE_EVENTS_KEPT): entries of
 * each queue's event stream (BullMQ keeps 10,000 by default, a few MB per queue that a quiet fleet fills too).
 */
export function createQueues(connection: ConnectionOptions, prefix: string, logger: Logger, onError?: (queue: string, err: Error) => boolean, eventsKept?: number): Queues {
  const make = (name: QueueName): Queue => {
    const queue = new Queue(name, { connection, prefix: queuePrefix(prefix, name), defaultJobOptions: DEFAULT_JOB_OPTIONS, ...(eventsKept !== undefined ? { streams: { events: { maxLen: eventsKept } } } : {}) });
    queue.on('error', (err) => {
      if (!onError?.(name, err)) logger.error({ queue: name, err: err.message }, 'queue error');
    });
    return queue;
  };
  return {
    sync: make(QUEUES.sync),
    refreshToken: make(QUEUES.refreshToken),
    calls: make(QUEUES.calls),
    schedule: make(QUEUES.schedule),
    notify: make(QUEUES.notify),
  };
}

export async function closeQueues(queues: Queues): Promise<void> {
  await Promise.allSettled(Object.values(queues).map((q) => q.close()));
}
