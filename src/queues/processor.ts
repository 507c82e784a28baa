/**
 * The one wrapper from a job's handler to a BullMQ processor (data validated on arrival,
 * errors say whether to retry, job code never spells out BullMQ's idioms). `defineProcessor(key, handler)`:
 *
 *   check job.name (the job table's)          a job of another name fails at once, never retried (decision 114)
 *   parse job.data (the job table's schema)   data that does not parse fails the job at once, never retried
 *   hold `options.lock` while the job runs    held elsewhere (a stalled copy of this job, another run of the
 *                                             tenant): the job waits as delayed; kept alive by `keepAlive`, whose
 *                                             signal (`attempt.lockLost`) aborts once the lock is lost or an
 *                                             extend hangs; released at the end (BullMQ's job lock is no mutex)
 *   the handler returns a value               the job completes with it
 *   the handler throws `reschedule(ms)`       the job moves to delayed for `ms`; no attempt is used
 *   the handler throws `hopeless(reason)`     the job fails for good (UnrecoverableError)
 *   the handler throws anything else          BullMQ retries the job with backoff, until its last attempt
 *
 * Before a job fails for good (hopeless, or its last attempt failed), the hooks the handler gave to
 * `attempt.onLastAttempt` run, still under the lock; a hook may return a result, and the job completes with it.
 */
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { Logger } from '../logger.js';
import { keepAlive, type RedisLock } from '../redis/lock.js';
import { jobKind, parseJobData, type JobData, type JobKey } from './jobs.js';
import { QUEUES } from './names.js';

/** How long a job whose lock is held elsewhere waits before it tries again. */
const LOCK_BUSY_DELAY_MS = 2_000;

/** One attempt of a job, as its handler sees it. */
export interface JobAttempt<R> {
  readonly job: Job;
  /** The worker's token for the job (BullMQ's job lock). */
  readonly token: string | undefined;
  /** Aborted when BullMQ cancels the job. */
  readonly cancelled: AbortSignal | undefined;
  /** Aborted (reason: LockLostError) once the processor's lock is lost; never without a lock. */
  readonly lockLost: AbortSignal;
  /** 1 on the first attempt. */
  readonly number: number;
  /** Runs before the job fails for good; a result returned completes the job with it instead. */
  onLastAttempt(hook: (err: unknown) => Promise<R | undefined>): void;
}

export type JobHandler<K extends JobKey, R> = (data: JobData<K>, attempt: JobAttempt<R>) => Promise<R>;

export interface ProcessorOptions<K extends JobKey> {
  /** A lock held for the whole job (its owner should name the job and token). */
  lock?: (data: JobData<K>, job: Job, token: string | undefined) => RedisLock;
  logger?: Logger;
}

/** A BullMQ processor for one job of the table. */
export interface JobProcessor<R> {
  (job: Job, token?: string, signal?: AbortSignal): Promise<R>;
  readonly jobName: string;
}

class Rescheduled extends Error {
  constructor(
    readonly delayMs: number,
    message: string,
  ) {
    super(message);
    this.name = 'Rescheduled';
  }
}

class Hopeless extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'Hopeless';
  }
}

/** `throw reschedule(ms)`: the job runs again in `ms` (delayed), without using an attempt. */
export function reschedule(delayMs: number, why = 'rescheduled'): Error {
  return new Rescheduled(delayMs, why);
}

/** `throw hopeless(reason)`: retrying cannot help; the job fails for good. */
export function hopeless(reason: string, cause?: unknown): Error {
  return new Hopeless(reason, cause === undefined ? undefined : { cause });
}

export function defineProcessor<K extends JobKey, R>(key: K, handler: JobHandler<K, R>, options: ProcessorOptions<K> = {}): JobProcessor<R> {
  const name = jobKind(key).name;
  const queue = QUEUES[jobKind(key).queue];
  const processor = async (job: Job, token?: string, signal?: AbortSignal): Promise<R> => {
    // A name this processor does not run (`backfill` for `sync-run`) is a producer's mistake: it never runs as another job.
    if (job.name !== name) {
      throw new UnrecoverableError(`job ${job.id ?? '?'}: the ${queue} queue runs jobs named "${name}", not ${JSON.stringify(job.name ?? null)} (collections-sync jobs contract prints the jobs outside code may add)`);
    }
    let data: JobData<K>;
    try {
      data = parseJobData(key, job.data);
    } catch (err) {
      throw new UnrecoverableError(`job ${job.id ?? '?'}: ${(err as Error).message}`);
    }
    const lock = options.lock?.(data, job, token);
    if (lock && !(await lock.acquire())) {
      options.logger?.info({ job: name, jobId: job.id, lock: lock.key }, 'its lock is held elsewhere (another copy or run); waiting');
      return delay(job, token, LOCK_BUSY_DELAY_MS);
    }
    const held = lock ? keepAlive(lock, Math.max(10, Math.floor(lock.ttlMs / 3))) : undefined;
    const hooks: ((err: unknown) => Promise<R | undefined>)[] = [];
    const attempt: JobAttempt<R> = {
      job,
      token,
      cancelled: signal,
      lockLost: held?.signal ?? new AbortController().signal,
      number: job.attemptsMade + 1,
      onLastAttempt: (hook) => void hooks.push(hook),
    };
    try {
      return await handler(data, attempt);
    } catch (err) {
      if (err instanceof Rescheduled) return await delay(job, token, err.delayMs);
      const forGood = err instanceof Hopeless || err instanceof UnrecoverableError;
      if (forGood || (hooks.length > 0 && attempt.number >= (job.opts.attempts ?? 1))) {
        for (const hook of hooks) {
          const result = await hook(err);
          if (result !== undefined) return result;
        }
      }
      if (err instanceof Hopeless) throw new UnrecoverableError(err.message);
      throw err;
    } finally {
      held?.stop();
      await lock?.release().catch(() => undefined);
    }
  };
  return Object.assign(processor, { jobName: name });
}

/** One processor for a queue that holds several jobs: each job goes to its own by name. */
export function byJobName<R>(...processors: JobProcessor<R>[]): JobProcessor<R> {
  const byName = new Map(processors.map((p) => [p.jobName, p]));
  const route = async (job: Job, token?: string, signal?: AbortSignal): Promise<R> => {
    const processor = byName.get(job.name);
    if (!processor) throw new UnrecoverableError(`job ${job.id ?? '?'}: no processor for jobs named "${job.name}" on this queue`);
    return processor(job, token, signal);
  };
  return Object.assign(route, { jobName: [...byName.keys()].join('|') });
}

/** BullMQ's way to run a job later without using an attempt: move it to delayed, then throw DelayedError. */
async function delay(job: Job, token: string | undefined, ms: number): Promise<never> {
  await job.moveToDelayed(Date.now() + ms, token);
  throw new DelayedError();
}
