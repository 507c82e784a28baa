/**
 * What a waiting producer (CLI `--wait`) may know of the job that serves its request, read from BullMQ: the job's
 * state and why it failed, and whether any worker consumes its queue. Read-only; one call per poll.
 *
 * Which job serves a request: the one its producer was given, unless that job was already running when the request
 * came (a sync request made during a run is kept as the next job of its deduplication id, `keepLastIfActive`, and
 * `add` answers with the running job's id). Then the request's job is the one the deduplication id names next.
 */
import type { Job, Queue } from 'bullmq';

/** A job as a wait sees it. `gone`: no such job (removed by its age or count limit, or never added). */
export interface JobView {
  id: string;
  state: 'waiting' | 'active' | 'delayed' | 'prioritized' | 'waiting-children' | 'completed' | 'failed' | 'gone';
  /** Why it failed for good (state `failed` only: a failed attempt that will be retried waits as `delayed`). */
  failedReason?: string;
  /** When its current or last attempt started. */
  processedOn?: number;
  attemptsMade: number;
}

/** The job of a request, as its producer returned it (requestSync, enqueueCampaign). */
export interface JobRef {
  jobId: string;
  /** When the request was made (the job must have started after it to be the request's). */
  requestedAt: number;
  /** The job's deduplication id, when repeats of it join one job. */
  dedupeId?: string;
}

const STATES = new Set<JobView['state']>(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed']);

/** Clocks of the producer and the worker may differ a little (as in waitForRun). */
const CLOCK_SLACK_MS = 50;

async function view(queue: Queue, id: string): Promise<JobView> {
  // The state first, then the job's fields: a job that fails between the two reads is seen failed with its reason
  // (BullMQ writes both in one script), never failed with the fields of before (no reason yet).
  const raw = await queue.getJobState(id);
  const state: JobView['state'] = STATES.has(raw as JobView['state']) ? (raw as JobView['state']) : 'gone';
  const job = state === 'gone' ? undefined : ((await queue.getJob(id)) as Job | undefined);
  if (!job) return { id, state: 'gone', attemptsMade: 0 };
  return {
    id,
    state,
    attemptsMade: job.attemptsMade,
    ...(job.processedOn ? { processedOn: job.processedOn } : {}),
    ...(state === 'failed' ? { failedReason: job.failedReason || '(no reason given)' } : {}),
  };
}

/**
 * The job that serves `ref` now, and whether it is the request's own yet (`mine: false`: the job named is a run that
 * started before the request; its end is not the request's outcome, and the request's job comes after it).
 */
export async function jobOfRequest(queue: Queue, ref: JobRef): Promise<{ job: JobView; mine: boolean }> {
  const job = await view(queue, ref.jobId);
  const startedBefore = job.processedOn !== undefined && job.processedOn < ref.requestedAt - CLOCK_SLACK_MS;
  if (!startedBefore || ref.dedupeId === undefined) return { job, mine: true };
  const next = await queue.getDeduplicationJobId(ref.dedupeId);
  if (next && next !== ref.jobId) return { job: await view(queue, next), mine: true };
  return { job, mine: false };
}

/** How many workers consume the queue (BullMQ names its connections; CLIENT LIST). */
export async function workersOf(queue: Queue): Promise<number> {
  return queue.getWorkersCount();
}
