/**
 * EXISTS for many groups of keys at once (the worker's start asks it for every tenant: 10,000 tenants, one or two
 * groups each). On one Redis server the groups go in pipelines of `BATCH` (one write and one read a batch; a
 * command each, sent one by one, cost the start seconds of socket writes); on a Redis Cluster each group is its own
 * command, sent together a batch at a time (ioredis routes each to its slot's node; a cluster pipeline must stay on
 * one node). A group with `oneSlot` false (keys of several slots on a cluster) is asked key by key there.
 */
import type { Redis } from 'ioredis';
import { isCluster } from './connection.js';

const BATCH = 1_000;

/** How many keys of each group exist, in the groups' order. */
export async function existsEach(redis: Redis, groups: readonly (readonly string[])[], options: { oneSlot: boolean }): Promise<number[]> {
  const out: number[] = [];
  const cluster = isCluster(redis);
  for (let i = 0; i < groups.length; i += BATCH) {
    const batch = groups.slice(i, i + BATCH);
    if (!cluster) {
      const pipe = redis.pipeline();
      for (const keys of batch) pipe.exists(...keys);
      const replies = (await pipe.exec()) ?? [];
      replies.forEach(([err, n]) => {
        if (err) throw err;
        out.push(Number(n));
      });
      continue;
    }
    const counts = await Promise.all(
      batch.map(async (keys) => (options.oneSlot ? redis.exists(...keys) : (await Promise.all(keys.map((k) => redis.exists(k)))).reduce((s, n) => s + n, 0))),
    );
    out.push(...counts);
  }
  return out;
}
