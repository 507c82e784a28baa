/**
 * `--wait` (sync, backfill, dead-letters retry, calls campaign, calls one) follows the BullMQ job as well as the
 * run or campaign it serves, so every wait ends with an outcome within a bound it states (README "Waiting"). While the caller waits for its record, this watch polls the job and the queue's
 * workers, and ends the wait (aborts its signal with a WaitEnded) when:
 *
 *   the job failed for good            its failedReason                                   exit 1
 *   no worker consumed the queue       for NO_WORKER_GRACE_MS since the wait began        exit 4
 *   the worker vanished                no worker for NO_WORKER_GRACE_MS after one was seen exit 4
 *   the job is gone                    removed without an outcome                         exit 4
 *   --wait-timeout passed              default 24h                                        exit 4
 *
 * With `--keep-waiting`, no worker (at the start or later) is said once and the wait goes on, still bounded by
 * --wait-timeout. Exit 4 means "the wait ended, the job did not": it stays queued (or active until its lock expires,
 * JOB_LOCK_MS) and runs when a worker takes it.
 */
import { jobOfRequest, workersOf, type JobRef, type JobView, type Queues } from '../../queues/index.js';
import { outJson, printable, UsageError, type Runtime } from '../runtime.js';

type Queue = Queues[keyof Queues];

export const NO_WORKER_GRACE_MS = 5_000;
export const DEFAULT_WAIT_TIMEOUT = '24h';
/** The exit code of a wait that ended before its job did. */
export const EXIT_WAIT_ENDED = 4;

export type WaitEndKind = 'failed' | 'no worker' | 'worker vanished' | 'gone' | 'timeout';

export class WaitEnded extends Error {
  readonly code = 'CLI_WAIT_ENDED';
  constructor(
    readonly kind: WaitEndKind,
    message: string,
    /** The job's state when the wait ended. */
    readonly job: JobView | undefined,
  ) {
    super(message);
  }

  get exitCode(): number {
    return this.kind === 'failed' ? 1 : EXIT_WAIT_ENDED;
  }
}

/** `--wait-timeout`: 90s, 30m, 2h (a bare number is minutes). */
export function parseWaitTimeout(value: string | undefined): number {
  const text = (value ?? DEFAULT_WAIT_TIMEOUT).trim();
  const m = /^(\d+)(s|m|h)?$/.exec(text);
  const n = m ? Number(m[1]) : NaN;
  if (!m || !Number.isSafeInteger(n) || n < 1) throw new UsageError(`--wait-timeout must be a duration such as 90s, 30m or 2h (got "${text}")`);
  return n * (m[2] === 's' ? 1_000 : m[2] === 'h' ? 3_600_000 : 60_000);
}

export interface JobWatch {
  /** Aborted with a WaitEnded when the wait must end without the record's outcome. */
  readonly signal: AbortSignal;
  stop(): void;
}

export interface JobWatchOptions {
  /** Where the queue is (Redis address and KEY_PREFIX), for the no-worker message. */
  where: string;
  keepWaiting: boolean;
  timeoutMs: number;
  /** The human name of the timeout's flag and value, for messages. */
  timeoutText: string;
  say: (line: string) => void;
  graceMs?: number;
  pollMs?: number;
}

/** Watches the job of `ref` on `queue` until stopped; states its bounds first. */
export function watchJob(queue: Queue, ref: JobRef, o: JobWatchOptions): JobWatch {
  const controller = new AbortController();
  const graceMs = o.graceMs ?? NO_WORKER_GRACE_MS;
  const started = Date.now();
  const current: JobRef = { ...ref };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let seenWorker = false;
  let noWorkerSince = started;
  let said = false;
  let last: JobView | undefined;
  const end = (kind: WaitEndKind, message: string): void => {
    stopped = true;
    controller.abort(new WaitEnded(kind, message, last));
  };
  const startWorker = 'collections-sync worker, with the same REDIS_URL and KEY_PREFIX';
  o.say(
    `waiting for job ${ref.jobId} on the ${queue.name} queue for at most ${o.timeoutText} (--wait-timeout); sooner if the job fails for good` +
      (o.keepWaiting ? '' : ` or no worker consumes the queue for ${graceMs / 1000} s`),
  );
  const deadline = setTimeout(() => {
    end('timeout', `stopped waiting after ${o.timeoutText} (--wait-timeout): job ${current.jobId} is ${last?.state ?? 'queued'} and goes on without this command`);
  }, o.timeoutMs);
  deadline.unref();

  const check = async (): Promise<void> => {
    let job: JobView | undefined;
    let mine = true;
    let workers: number;
    try {
      const found = await jobOfRequest(queue, current);
      job = found.job;
      mine = found.mine;
      if (mine) current.jobId = job.id;
    } catch {
      job = undefined; // cannot read it now (Redis blip): the next poll tries again
    }
    try {
      workers = await workersOf(queue);
    } catch {
      workers = 1; // cannot tell (no CLIENT LIST): do not claim there is no worker
    }
    if (stopped) return;
    if (job) last = job;
    if (job && mine && job.state === 'failed') return end('failed', `job ${job.id} failed: ${job.failedReason ?? '(no reason given)'}`);
    if (job && mine && job.state === 'gone') return end('gone', `job ${job.id} is no longer in the ${queue.name} queue (removed) and its outcome was not recorded`);
    if (workers > 0) {
      if (said) o.say(`a worker is consuming the ${queue.name} queue now`);
      said = false;
      seenWorker = true;
      noWorkerSince = Date.now();
    } else if (!said && Date.now() - noWorkerSince >= graceMs) {
      const what = seenWorker
        ? `the worker vanished: no worker has consumed the ${queue.name} queue (${o.where}) for ${graceMs / 1000} s; job ${current.jobId} is ${job?.state ?? 'queued'} and runs again when a worker starts (an active job once its lock expires, JOB_LOCK_MS) (${startWorker})`
        : `no worker is consuming the ${queue.name} queue (${o.where}): the job stays queued and runs when a worker starts (${startWorker})`;
      if (!o.keepWaiting) return end(seenWorker ? 'worker vanished' : 'no worker', `${what}. Not waiting; add --keep-waiting to wait for one.`);
      said = true;
      o.say(`${what}; waiting for one (--keep-waiting)`);
    }
    timer = setTimeout(() => void check(), o.pollMs ?? 500);
  };
  void check();
  return {
    signal: controller.signal,
    stop() {
      stopped = true;
      clearTimeout(deadline);
      if (timer) clearTimeout(timer);
    },
  };
}

/** The flags of every waiting command (src/cli/wait-options.ts). */
export interface WaitFlags {
  keepWaiting?: boolean;
  waitTimeout?: string;
}

/**
 * Runs `wait` (a wait for the job's record: its run, its campaign) under a watch of the job: the record, or the
 * WaitEnded that ended the wait first. Messages about the wait go to stderr.
 */
export async function waitUnderWatch<T>(rt: Runtime, queue: Queue, ref: JobRef, o: WaitFlags, wait: (signal: AbortSignal, timeoutMs: number) => Promise<T>): Promise<T | WaitEnded> {
  const timeoutMs = parseWaitTimeout(o.waitTimeout);
  const watch = watchJob(queue, ref, {
    where: `${safeRedisUrl(rt.env.REDIS_URL)}, KEY_PREFIX ${rt.env.KEY_PREFIX}`,
    keepWaiting: o.keepWaiting ?? false,
    timeoutMs,
    timeoutText: (o.waitTimeout ?? DEFAULT_WAIT_TIMEOUT).trim(),
    say: (line) => process.stderr.write(`collections-sync: ${line}\n`),
  });
  try {
    // The record's own wait gets a longer bound: the watch's ends the wait first, with its message.
    return await wait(watch.signal, timeoutMs + 60_000);
  } catch (err) {
    if (watch.signal.aborted && watch.signal.reason instanceof WaitEnded) return watch.signal.reason;
    throw err;
  } finally {
    watch.stop();
  }
}

/** A wait that ended before the job did, or with the job failed: said on stderr (and as JSON with --json). */
export function reportWaitEnded(ended: WaitEnded, json: boolean | undefined, fields: Record<string, unknown>): number {
  process.stderr.write(`collections-sync: ${printable(ended.message)}\n`);
  if (json) outJson({ ...fields, waited: false, waitEnded: ended.kind, jobState: ended.job?.state ?? null, reason: ended.message });
  return ended.exitCode;
}

/** A Redis URL with its password hidden. */
export function safeRedisUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}
