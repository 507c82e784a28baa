/**
 * Job counts of a queue read straight from BullMQ's keys, without loading BullMQ (issue 14: `status` starts in a
 * fraction of the time a Queue object costs to import). The same numbers as `Queue.getJobCounts('waiting',
 * 'active', 'delayed', 'failed', 'completed', 'prioritized')`, which runs BullMQ's getCounts script over the same
 * keys: lists for wait and active, sorted sets for the rest. test/queues/counts.test.ts holds the two side by side,
 * so a BullMQ upgrade that moves a key fails there, not in an operator's terminal.
 */
import type { Redis } from 'ioredis';
import { queuePrefix } from '../redis/keys.js';
import type { QueueName } from './names.js';

export const COUNTED_STATES = ['waiting', 'active', 'delayed', 'failed', 'completed', 'prioritized'] as const;
export type CountedState = (typeof COUNTED_STATES)[number];
export type JobCounts = Record<CountedState, number>;

/** One pipeline per queue: a queue's keys share its hash tag (one slot on a Redis Cluster). */
export async function queueJobCounts(redis: Redis, prefix: string, queue: QueueName): Promise<JobCounts> {
  const key = (state: string): string => `${queuePrefix(prefix, queue)}:${queue}:${state}`;
  const replies = await redis
    .pipeline()
    .llen(key('wait'))
    .lindex(key('wait'), -1)
    .llen(key('active'))
    .zcard(key('delayed'))
    .zcard(key('failed'))
    .zcard(key('completed'))
    .zcard(key('prioritized'))
    .exec();
  const n = (i: number): number => {
    const [err, value] = replies?.[i] ?? [new Error('no reply')];
    if (err) throw err;
    return Number(value);
  };
  // A "0:" marker at the tail of the wait list is not a job (BullMQ before 5 wrote them; its script skips it too).
  const [, last] = replies?.[1] ?? [];
  const marker = typeof last === 'string' && last.startsWith('0:') ? 1 : 0;
  return { waiting: Math.max(0, n(0) - marker), active: n(2), delayed: n(3), failed: n(4), completed: n(5), prioritized: n(6) };
}
