/**
 * The BullMQ workers of a worker process, one slot per queue it works: the slot's current BullMQ worker (replaced
 * when wedged, decision 46: src/worker/wedge.ts decides when), the jobs its processor is running, and when it last
 * started or ended one. Every worker gets the same listeners (errors to the outage log, job outcomes to the metrics
 * and `lastActivity`, which readiness reads).
 */
import { Worker, type Job, type Processor } from 'bullmq';
import type { App } from '../app.js';
import { notifyBackoffOf, notifyBackoffStrategy } from '../notify/backoff.js';
import { QUEUES, workerOptions } from '../queues/index.js';
import { queuePrefix } from '../redis/keys.js';

export type QueueKey = keyof typeof QUEUES;
export const ALL_QUEUES: readonly QueueKey[] = ['sync', 'schedule', 'refreshToken', 'calls', 'notify'];

/** The processor of each queue, built when the queue is worked (jobs/processors.ts makes them). */
export type QueueProcessors = Record<QueueKey, () => Processor>;

/** A queue this process works: its current BullMQ worker, the jobs it runs, when it last started or ended one. */
export interface Slot {
  readonly queue: QueueKey;
  worker: Worker;
  inFlight: number;
  progressAt: number;
  /** Since when jobs have waited (or been due) at every check, while this worker had a free slot. */
  backlogSince?: number | undefined;
}

/**
 * Queues whose jobs may stall many times without harm: a job killed with its worker is picked up again once its lock
 * lapses (JOB_LOCK_MS). A sync run resumes from its checkpoint with idempotent writes; a campaign re-run never
 * sends a request twice (it is `unknown` instead); a run webhook is sent again under the same `webhook-id` (at least
 * once: receivers dedupe on it), never given up because its workers died.
 */
const RESUMABLE: ReadonlySet<QueueKey> = new Set(['sync', 'calls', 'notify']);

export class QueueWorkers {
  readonly slots: Slot[] = [];
  /** The current BullMQ workers (a replaced one leaves this list). */
  readonly workers: Worker[] = [];
  /** When a job last started or ended on any queue of this process. */
  lastActivity = Date.now();
  /** Set once the BullMQ workers exist (readiness says "starting" until then). */
  started = false;
  private readonly concurrency: Record<QueueKey, number>;

  constructor(
    private readonly app: App,
    private readonly processors: QueueProcessors,
    syncConcurrency: number,
  ) {
    this.concurrency = { sync: syncConcurrency, schedule: 4, refreshToken: 8, calls: 4, notify: app.env.NOTIFY_CONCURRENCY };
  }

  /** Registers one BullMQ worker per queue wanted, in the order of ALL_QUEUES. */
  open(queues: readonly QueueKey[] = ALL_QUEUES): void {
    const want = new Set(queues);
    for (const queue of ALL_QUEUES) {
      if (!want.has(queue)) continue;
      const slot: Slot = { queue, worker: undefined as unknown as Worker, inFlight: 0, progressAt: Date.now() };
      slot.worker = this.startBullWorker(slot);
      this.slots.push(slot);
    }
    this.started = true;
  }

  concurrencyOf(queue: QueueKey): number {
    return this.concurrency[queue];
  }

  /**
   * A new BullMQ worker with the same processor takes the slot. The old one is closed with force (its jobs in flight
   * keep their run locks and finish or are taken over, as after a kill) and not waited for: closing a wedged worker
   * may itself hang on its blocking connection.
   */
  replace(slot: Slot): void {
    const old = slot.worker;
    void old.close(true).catch(() => undefined);
    slot.worker = this.startBullWorker(slot);
    slot.progressAt = Date.now();
    const i = this.workers.indexOf(old);
    if (i >= 0) this.workers.splice(i, 1);
  }

  /** Closes every worker: waiting for their jobs, or with `force` at once (their jobs are picked up again). */
  async close(force = false): Promise<void> {
    await Promise.allSettled(this.workers.map((w) => w.close(force)));
  }

  private startBullWorker(slot: Slot): Worker {
    const { env } = this.app;
    const settings = RESUMABLE.has(slot.queue)
      ? { connection: this.app.redis, lockDuration: env.JOB_LOCK_MS, stalledInterval: Math.max(1_000, Math.floor(env.JOB_LOCK_MS / 2)), maxStalledCount: 20 }
      : { connection: this.app.redis };
    // Notify jobs wait the notify back-off between attempts (the one retry policy's shape: src/notify/backoff.ts).
    const backoff = slot.queue === 'notify' ? { settings: { backoffStrategy: notifyBackoffStrategy(notifyBackoffOf(env)) } } : {};
    const run = this.processors[slot.queue]();
    const counted = async (job: Job, token?: string, signal?: AbortSignal): Promise<unknown> => {
      slot.inFlight += 1;
      slot.progressAt = Date.now();
      try {
        return await run(job, token, signal);
      } finally {
        slot.inFlight -= 1;
        slot.progressAt = Date.now();
      }
    };
    const name = QUEUES[slot.queue];
    const worker = new Worker(name, counted, { ...settings, ...backoff, ...workerOptions(slot.queue), prefix: queuePrefix(env.KEY_PREFIX, name), concurrency: this.concurrency[slot.queue] });
    this.track(worker, name);
    return worker;
  }

  private track(worker: Worker, queue: string): void {
    const { logger, metrics, outage } = this.app;
    worker.on('error', (err) => {
      if (!outage.report(queue, err)) logger.error({ queue, err: err.message }, 'worker error');
    });
    worker.on('active', () => (this.lastActivity = Date.now()));
    worker.on('completed', () => {
      this.lastActivity = Date.now();
      metrics?.jobs.inc({ queue, outcome: 'completed' });
    });
    worker.on('failed', (job: Job | undefined, err: Error) => {
      this.lastActivity = Date.now();
      metrics?.jobs.inc({ queue, outcome: 'failed' });
      logger.warn({ queue, jobId: job?.id, err: err.message }, 'job failed');
    });
    this.workers.push(worker);
  }
}
