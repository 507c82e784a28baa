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

/**
 * Connects, or throws an error that names the address (never a password). With `waitMs`, keeps trying that
 * long first (a worker that starts while Redis restarts waits for it instead of exiting).
 */
export async function connectRedis(client: Redis, url: string, options: { waitMs?: number; onRetry?: (err: Error) => void } = {}): Promise<Redis> {
  const deadline = Date.now() + (options.waitMs ?? 0);
  // While connecting, the socket's errors are ours to report (with the address, once): without a listener
  // ioredis prints "[ioredis] Unhandled error event" with a stack before the message. The cause (ECONNREFUSED)
  // says more than the command's "Connection is closed", so the message names it.
  let socketError: Error | undefined;
  const onError = (err: Error): void => {
    socketError = err;
  };
  client.on('error', onError);
  for (let attempt = 1; ; attempt += 1) {
    try {
      if (client.status === 'wait' || client.status === 'end' || client.status === 'close') await client.connect();
      await client.ping();
      client.off('error', onError);
      return client;
    } catch (err) {
      if (Date.now() < deadline) {
        options.onRetry?.(socketError ?? (err as Error));
        socketError = undefined;
        await new Promise((r) => setTimeout(r, Math.min(2_000, 100 * 2 ** attempt)));
        continue;
      }
      client.disconnect(); // the listener stays: a closing socket's last error is not printed either
      const safe = url.replace(/\/\/[^@/]*@/, '//***@');
      throw new Error(`cannot reach Redis at ${safe}: ${(socketError ?? (err as Error)).message}`, { cause: err });
    }
  }
}
