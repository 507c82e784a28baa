/**
 * The queue layer's one wrapper (src/queues/processor.ts) on a real BullMQ queue and worker: data that does not
 * parse fails at once, `reschedule` delays without using an attempt, `hopeless` fails for good, other errors are
 * retried until the last attempt, whose hooks run once (and may complete the job), and a lock is held with its
 * keep-alive (a second copy waits; a stolen lock aborts `lockLost`).
 */
import { Queue, UnrecoverableError, Worker, type Job, type Processor } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createTickProcessor } from '../../jobs/schedule-tick.js';
import { createLogger } from '../../src/logger.js';
import { addJob, defineProcessor, hopeless, QUEUES, reschedule, requestSync, type JobInput } from '../../src/queues/index.js';
import { connectRedis, createRedis } from '../../src/redis/connection.js';
import { LockLostError, RedisLock } from '../../src/redis/lock.js';
import { dropPrefix, testPrefix, useTestRedis } from '../helpers/redis.js';

const logger = createLogger({ level: 'silent' });
const server = useTestRedis();
let redis: Redis;

beforeAll(async () => {
  redis = await connectRedis(createRedis(server.url, 'worker'), server.url);
});
afterAll(async () => {
  redis.disconnect();
});

/** A schedule queue with a worker running `processor` (tick data is the simplest of the table's). */
function scheduleQueue(processor: Processor): Queue {
  const prefix = testPrefix('q');
  onTestFinished(() => dropPrefix(server.url, prefix));
  const queue = new Queue(QUEUES.schedule, { connection: redis, prefix });
  const worker = new Worker(QUEUES.schedule, processor, { connection: redis, prefix, concurrency: 2 });
  worker.on('error', () => undefined);
  onTestFinished(() => queue.close());
  onTestFinished(() => worker.close());
  return queue;
}

const tick: JobInput<'tick'> = { tenantId: 'acme', mode: 'incremental' };

async function until<T>(check: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The job once it has finished (completed or failed for good). */
async function finished(queue: Queue, id: string | undefined): Promise<Job> {
  return until(async () => {
    if (id === undefined) return undefined;
    const state = await queue.getJobState(id);
    // Read the job after its state is final: a copy read before may be of the job still active (no return value).
    return state === 'completed' || state === 'failed' ? queue.getJob(id) : undefined;
  }, `job ${id ?? '?'} to finish`);
}

const retried = { attempts: 3, backoff: { type: 'fixed', delay: 10 } };

describe('defineProcessor', () => {
  it('fails a tick whose data does not parse at once, without a retry (jobs/schedule-tick.ts)', async () => {
    const sync = new Queue(QUEUES.sync, { connection: redis, prefix: testPrefix('unused') });
    onTestFinished(() => sync.close());
    const queue = scheduleQueue(createTickProcessor({ syncQueue: sync, knows: () => true, logger }));
    const added = await queue.add('schedule-tick', { tenantId: 'acme', mode: 'hourly' }, retried);
    const job = await finished(queue, added.id);
    expect(await job.getState()).toBe('failed');
    expect(job.attemptsMade).toBe(1);
    expect(job.failedReason).toMatch(/invalid schedule-tick job data: mode/);
  });

  it('reschedules without using an attempt, then completes', async () => {
    const runs: number[] = [];
    const queue = scheduleQueue(
      defineProcessor('tick', async (_data, attempt) => {
        runs.push(attempt.number);
        if (runs.length === 1) throw reschedule(50, 'not yet');
        return 'done';
      }),
    );
    const { job: added } = await addJob(queue, 'tick', tick);
    const job = await finished(queue, added.id);
    expect(job.returnvalue).toBe('done');
    // Both runs were the first attempt: the one that completed is the only one counted.
    expect(runs).toEqual([1, 1]);
    expect(job.attemptsMade).toBe(1);
  });

  it('fails a hopeless job for good at its first attempt, running its last-attempt hooks once', async () => {
    const seen: unknown[] = [];
    const queue = scheduleQueue(
      defineProcessor('tick', async (_data, attempt) => {
        attempt.onLastAttempt(async (err) => void seen.push(err));
        throw hopeless('the connection was revoked');
      }),
    );
    const added = await queue.add('schedule-tick', tick, retried);
    const job = await finished(queue, added.id);
    expect(await job.getState()).toBe('failed');
    expect(job.attemptsMade).toBe(1);
    expect(job.failedReason).toBe('the connection was revoked');
    expect(seen).toHaveLength(1);
  });

  it('retries other errors; the hooks run on the last attempt only, and a result they return completes the job', async () => {
    const attempts: number[] = [];
    const hooked: number[] = [];
    const make = (giveUpWith: string | undefined) =>
      defineProcessor<'tick', string>('tick', async (_data, attempt) => {
        attempts.push(attempt.number);
        attempt.onLastAttempt(async () => {
          hooked.push(attempt.number);
          return giveUpWith;
        });
        throw new Error(`attempt ${attempt.number} failed`);
      });
    const failing = scheduleQueue(make(undefined));
    let job = await finished(failing, (await failing.add('schedule-tick', tick, retried)).id);
    expect(await job.getState()).toBe('failed');
    expect(job.failedReason).toBe('attempt 3 failed');
    expect(attempts).toEqual([1, 2, 3]);
    expect(hooked).toEqual([3]);

    attempts.length = 0;
    hooked.length = 0;
    const givingUp = scheduleQueue(make('gave up'));
    job = await finished(givingUp, (await givingUp.add('schedule-tick', tick, retried)).id);
    expect(await job.getState()).toBe('completed');
    expect(job.returnvalue).toBe('gave up');
    expect(hooked).toEqual([3]);
  });

  it('holds its lock: a second job waits (delayed) until the first ends, and a stolen lock aborts lockLost', async () => {
    const lockKey = `${testPrefix('lock')}:lock`;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const order: string[] = [];
    const queue = scheduleQueue(
      defineProcessor(
        'tick',
        async (data, attempt) => {
          order.push(`start ${attempt.job.id ?? '?'}`);
          if (data.mode === 'incremental') await held;
          else {
            // The lock is taken over behind the job's back: the keep-alive notices and aborts lockLost.
            await redis.set(lockKey, 'someone else');
            const reason = await new Promise<unknown>((r) => attempt.lockLost.addEventListener('abort', () => r(attempt.lockLost.reason), { once: true }));
            expect(reason).toBeInstanceOf(LockLostError);
          }
          order.push(`end ${attempt.job.id ?? '?'}`);
          return data.mode;
        },
        { lock: (_data, job, token) => new RedisLock(redis, lockKey, 600, `${job.id ?? '?'}.${token ?? 'x'}`) },
      ),
    );
    const first = await queue.add('schedule-tick', tick, { jobId: 'first' });
    await until(async () => (order.includes('start first') ? true : undefined), 'the first job to start');
    const second = await queue.add('schedule-tick', tick, { jobId: 'second' });
    await until(async () => ((await second.getState()) === 'delayed' ? true : undefined), 'the second job to wait for the lock');
    expect(order).toEqual(['start first']);
    release();
    await finished(queue, first.id);
    expect((await finished(queue, second.id)).returnvalue).toBe('incremental');
    expect(order).toEqual(['start first', 'end first', 'start second', 'end second']);
    expect(await redis.exists(lockKey)).toBe(0);

    const stolen = await queue.add('schedule-tick', { tenantId: 'acme', mode: 'reconcile' }, { jobId: 'stolen' });
    expect((await finished(queue, stolen.id)).returnvalue).toBe('reconcile');
    // Its release is owner-checked: the lock stays with whoever took it.
    expect(await redis.get(lockKey)).toBe('someone else');
  });
});

describe('the job table', () => {
  it('producers parse their data before Redis sees it, and put a job only on its own queue', async () => {
    const sync = new Queue(QUEUES.sync, { connection: redis, prefix: testPrefix('p') });
    const schedule = new Queue(QUEUES.schedule, { connection: redis, prefix: testPrefix('p') });
    onTestFinished(() => sync.close());
    onTestFinished(() => schedule.close());
    await expect(requestSync(sync, 'Not A Tenant!', 'full')).rejects.toThrow(/invalid sync-run job data: tenantId/);
    await expect(addJob(schedule, 'sync', { tenantId: 'acme', mode: 'full', trigger: 'cli', requestedAt: Date.now() })).rejects.toThrow(/belongs on the sync queue, not schedule/);
    expect(await sync.count()).toBe(0);
    expect(await schedule.count()).toBe(0);
  });

  it('a bad payload handed to a processor outside a worker is unrecoverable too', async () => {
    const processor = defineProcessor('tick', async () => 'ran');
    await expect(processor({ id: 'x', data: { tenantId: 'acme' } } as unknown as Job)).rejects.toBeInstanceOf(UnrecoverableError);
  });
});
