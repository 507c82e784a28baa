/**
 * `status` counts jobs from BullMQ's keys without loading BullMQ (src/queues/counts.ts). Here the two readings sit
 * side by side on a real Redis, with jobs in every state `status` shows: a BullMQ upgrade that moves a key or
 * changes a state's container fails this test.
 */
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { COUNTED_STATES, queueJobCounts } from '../../src/queues/counts.js';
import { QUEUES } from '../../src/queues/names.js';
import { queuePrefix } from '../../src/redis/keys.js';
import { testPrefix, useRedisClient } from '../helpers/redis.js';

describe('queueJobCounts', () => {
  let redis!: Redis;
  useRedisClient((client) => (redis = client));

  it('reads the counts getJobCounts reads, state by state', async () => {
    const prefix = testPrefix('counts');
    const name = QUEUES.sync;
    const queue = new Queue(name, { connection: redis, prefix: queuePrefix(prefix, name) });
    onTestFinished(async () => {
      await queue.obliterate({ force: true });
      await queue.close();
    });
    expect(await queueJobCounts(redis, prefix, name)).toEqual({ waiting: 0, active: 0, delayed: 0, failed: 0, completed: 0, prioritized: 0 });

    // Two that end (one completes, one fails), one that stays active until released.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let processed = 0;
    const workerConnection = redis.duplicate({ maxRetriesPerRequest: null });
    onTestFinished(async () => void (await workerConnection.quit()));
    const ended = new Promise<void>((resolve) => {
      const worker = new Worker(
        name,
        async (job: Job<{ outcome: string }>) => {
          processed += 1;
          if (processed === 2) resolve();
          if (job.data.outcome === 'fail') throw new Error('planned failure');
          if (job.data.outcome === 'hold') await held;
        },
        { connection: workerConnection, prefix: queuePrefix(prefix, name), concurrency: 1 },
      );
      onTestFinished(() => worker.close());
    });
    await queue.add('x', { outcome: 'ok' }, { attempts: 1 });
    await queue.add('x', { outcome: 'fail' }, { attempts: 1 });
    await ended;
    await queue.add('x', { outcome: 'hold' });
    await expect.poll(async () => (await queue.getJobCounts('active')).active, { timeout: 10_000 }).toBe(1);
    // Behind the held job: plain waiting jobs, delayed ones and prioritized ones.
    for (let i = 0; i < 3; i += 1) await queue.add('x', { outcome: 'ok' });
    for (let i = 0; i < 2; i += 1) await queue.add('x', { outcome: 'ok' }, { delay: 60_000 });
    for (let i = 0; i < 4; i += 1) await queue.add('x', { outcome: 'ok' }, { priority: 5 });

    const bullmq = await queue.getJobCounts(...COUNTED_STATES);
    const ours = await queueJobCounts(redis, prefix, name);
    expect(ours).toEqual(bullmq);
    expect(ours).toEqual({ waiting: 3, active: 1, delayed: 2, failed: 1, completed: 1, prioritized: 4 });
    release();
  });
});
