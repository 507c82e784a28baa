/**
 * Many commands at once, each on a key of its own owner (a tenant's: keys of many hash tags), such as one read per
 * tenant of a page or of a scan: one pipeline on one server (one write, the replies read together), side by side on
 * a Redis Cluster, where a pipeline keeps to one slot and each command goes to its key's node.
 */
import type { Redis } from 'ioredis';
import { isCluster } from './connection.js';

export type RedisCommand = readonly [name: string, key: string, ...args: (string | number)[]];

/** The replies of `commands`, in their order; the first error thrown. */
export async function sendAll(client: Redis, commands: readonly RedisCommand[]): Promise<unknown[]> {
  if (commands.length === 0) return [];
  if (isCluster(client)) return Promise.all(commands.map(([name, ...args]) => client.call(name, ...args)));
  const pipe = client.pipeline();
  for (const [name, ...args] of commands) pipe.call(name, ...args);
  const replies = (await pipe.exec()) ?? [];
  return commands.map((_, i) => {
    const [err, value] = replies[i] ?? [new Error('no reply')];
    if (err) throw err;
    return value;
  });
}
