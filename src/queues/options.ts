/**
 * Retry and removal of jobs, by queue: what a job added through `addJob` gets (DEFAULT_JOB_OPTIONS, the queues'
 * `defaultJobOptions`, under the job table's own `options`), and what the worker applies to a job that was added
 * without removal options (`workerOptions`: code outside collections-sync adding a job with a bare `Queue.add`).
 * The worker's bounds are the CLI's jobs' bounds, so a job is trimmed alike whoever added it (decision 111).
 */
import type { DefaultJobOptions, KeepJobs, WorkerOptions } from 'bullmq';
import type { QUEUES } from './names.js';

/** Completed jobs: the newest 500 are kept, none older than 7 days. */
export const KEEP_COMPLETED: KeepJobs = { count: 500, age: 7 * 24 * 3600 };
/** Failed jobs: the newest 2,000 are kept, none older than 30 days (long enough to read why). */
export const KEEP_FAILED: KeepJobs = { count: 2_000, age: 30 * 24 * 3600 };

export const DEFAULT_JOB_OPTIONS: DefaultJobOptions = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 2_000 },
  removeOnComplete: KEEP_COMPLETED,
  removeOnFail: KEEP_FAILED,
};

/**
 * What a queue's BullMQ Worker adds to its settings: the removal bounds of a job that carries none of its own (a
 * job's own `removeOnComplete`/`removeOnFail` win; BullMQ keeps a job without either forever). Every queue has the
 * same bounds today; the queue is the argument so one may differ without touching the worker.
 */
export function workerOptions(_queue: keyof typeof QUEUES): Pick<WorkerOptions, 'removeOnComplete' | 'removeOnFail'> {
  return { removeOnComplete: KEEP_COMPLETED, removeOnFail: KEEP_FAILED };
}
