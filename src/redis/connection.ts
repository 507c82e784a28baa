import { Redis, type RedisOptions } from 'ioredis';

/**
 * Redis connections. `worker`: BullMQ workers and long-lived stores (retry forever, `maxRetriesPerRequest: null`).
 * `producer`: the CLI (fail fast with a clear message when Redis is unreachable).
 */
export function createRedis(url: string, role: 'worker' | 'producer', extra: RedisOptions = {}): Redis {
  const options: RedisOptions =
    role === 'worker'
      ? { maxRetriesPerRequest: null, enableReadyCheck: true, ...extra }
      : {
          maxRetriesPerRequest: 1,
          enableOfflineQueue: false,
          connectTimeout: 3_000,
          retryStrategy: (times) => (times > 2 ? null : 200),
          ...extra,
        };
  const client = new Redis(url, { ...options, lazyConnect: true });
  return client;
}

/** Connects, or throws an error that names the address (never a password). */
export async function connectRedis(client: Redis, url: string): Promise<Redis> {
  try {
    await client.connect();
    await client.ping();
    return client;
  } catch (err) {
    client.disconnect();
    const safe = url.replace(/\/\/[^@/]*@/, '//***@');
    throw new Error(`cannot reach Redis at ${safe}: ${(err as Error).message}`, { cause: err });
  }
}
