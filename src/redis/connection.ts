import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { redisTargetOf, safeRedisUrl, type RedisTarget } from '../config/redis-target.js';
import { retry, type RetryPolicy } from '../retry.js';
import { coalesceClusterCommands, coalesceCommands } from './coalesce.js';

export { redisTargetOf, safeRedisUrl, type RedisTarget } from '../config/redis-target.js';

/**
 * Redis connections: one server (REDIS_URL) or a Redis Cluster (REDIS_CLUSTER_NODES), TLS (`rediss://`) and ACL
 * users in either. `worker`: BullMQ workers and long-lived stores (retry forever, `maxRetriesPerRequest: null`).
 * `producer`: the CLI (fail fast with a clear message when Redis is unreachable).
 *
 * A Cluster client is handed out typed as `Redis`: every store of ours uses the command surface both share
 * (commands, EVALSHA, MULTI on one slot, duplicate), and BullMQ takes either. Code that needs a server-wide
 * command (SCAN, INFO, MONITOR) asks `isCluster` and goes node by node (`nodesOf`).
 */
export function createRedis(target: string | RedisTarget, role: 'worker' | 'producer', extra: RedisOptions = {}): Redis {
  const t = typeof target === 'string' ? redisTargetOf({ REDIS_URL: target }) : target;
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
  if (t.nodes === undefined) {
    const redis = new Redis(t.url ?? 'redis://127.0.0.1:6379', { ...options, lazyConnect: true });
    coalesceCommands(redis);
    return redis;
  }
  const { retryStrategy, enableOfflineQueue, ...nodeOptions } = options;
  const clusterOptions: ClusterOptions = {
    lazyConnect: true,
    enableReadyCheck: true,
    ...(enableOfflineQueue === false ? { enableOfflineQueue: false } : {}),
    ...(retryStrategy ? { clusterRetryStrategy: (times: number) => retryStrategy(times) ?? null } : {}),
    redisOptions: {
      ...nodeOptions,
      ...(t.username !== undefined ? { username: t.username } : {}),
      ...(t.password !== undefined ? { password: t.password } : {}),
      // Managed clusters announce node names their certificates are issued for: verify against those names.
      ...(t.tls ? { tls: {} } : {}),
    },
    ...(t.tls ? { dnsLookup: (address: string, callback: (err: null, address: string) => void) => callback(null, address) } : {}),
    slotsRefreshTimeout: 3_000,
    // A worker rides out a master's failover or restart as it rides out a single Redis's restart (it waits):
    // CLUSTERDOWN, TRYAGAIN and MOVED to a node still loading are retried for about a minute (ioredis' defaults,
    // 16 redirections 100 ms apart, give up within 2 s and fail the command, and with it the run's write).
    ...(role === 'worker' ? { maxRedirections: 300, retryDelayOnClusterDown: 200, retryDelayOnTryAgain: 200, retryDelayOnMoved: 20 } : {}),
  };
  const cluster = new Cluster(t.nodes, clusterOptions);
  coalesceClusterCommands(cluster);
  return cluster as unknown as Redis;
}

export function isCluster(client: Redis): boolean {
  return (client as unknown) instanceof Cluster;
}

/** The servers behind a client: itself, or every master of a cluster. */
export function nodesOf(client: Redis): Redis[] {
  return isCluster(client) ? (client as unknown as Cluster).nodes('master') : [client];
}

/** Redis refused to start talking: raised with a message naming the setting; no stack is worth showing. */
export class RedisConnectError extends Error {
  readonly code = 'REDIS_UNREACHABLE';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RedisConnectError';
  }
}

const CERT_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'ERR_TLS_CERT_ALTNAME_INVALID', 'CERT_UNTRUSTED', 'CERT_SIGNATURE_FAILURE',
]);

/** Errors no amount of waiting fixes: say so at once. */
function fatalReason(err: Error | undefined, t: RedisTarget): string | undefined {
  if (!err) return undefined;
  const code = (err as NodeJS.ErrnoException).code ?? '';
  if (CERT_CODES.has(code) || /certificate/i.test(err.message)) {
    return `the TLS certificate of Redis at ${t.display} was refused (${code || err.message}): use the name the certificate is issued for, or trust its CA (NODE_EXTRA_CA_CERTS)`;
  }
  if (/WRONGPASS|NOAUTH|NOPERM/.test(err.message)) return `Redis at ${t.display} refused the user/password (${err.message.split(' ')[0]}): check the credentials in ${t.setting}`;
  if (/cluster support disabled/i.test(err.message)) return `${t.display} is not a Redis Cluster (cluster support disabled): use REDIS_URL for a single Redis`;
  return undefined;
}

/** `promise`, or the abort's reason as soon as `signal` aborts (the promise is left to settle on its own). */
function orAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort)).catch(() => undefined);
  });
}

/**
 * Connects, or throws a RedisConnectError that names the setting and the address (never a password). With
 * `waitMs`, keeps trying that long first (a worker that starts while Redis restarts waits for it instead of
 * exiting); a refused certificate or password fails at once. An aborted `signal` (a SIGTERM at start) ends the
 * wait at once: the client is disconnected and the abort's reason thrown.
 */
export async function connectRedis(
  client: Redis,
  target: string | RedisTarget,
  options: { waitMs?: number; onRetry?: (err: Error) => void; signal?: AbortSignal } = {},
): Promise<Redis> {
  const t = typeof target === 'string' ? redisTargetOf({ REDIS_URL: target }) : target;
  const deadline = Date.now() + (options.waitMs ?? 0);
  // While connecting, the socket's errors are ours to report (with the address, once): without a listener ioredis
  // prints "[ioredis] Unhandled error event" with a stack. A cluster reports a node's own failure (TLS, auth) as a
  // 'node error' and then only "no startup node". The cause says more than the command's "Connection is closed".
  let nodeError: Error | undefined;
  const onNodeError = (err: Error): void => void (nodeError = err);
  const onError = (err: Error): void => void (nodeError ??= err);
  client.on('node error', onNodeError);
  client.on('error', onError);
  let failed = false;
  const fail = (err: unknown): never => {
    failed = true;
    client.disconnect(); // the listeners stay: a closing socket's last error is not printed either
    throw err;
  };
  try {
    return await retry(
      async () => {
        try {
          options.signal?.throwIfAborted();
          if (client.status === 'wait' || client.status === 'end' || client.status === 'close') await orAbort(client.connect(), options.signal);
          await orAbort(client.ping(), options.signal);
          if (t.nodes === undefined && /cluster_enabled:1/.test(await client.info('cluster'))) {
            client.disconnect();
            throw new RedisConnectError(`REDIS_URL points at a Redis Cluster node (${t.display}): set REDIS_CLUSTER_NODES to the cluster's seed nodes`);
          }
          return client;
        } catch (err) {
          if (err instanceof RedisConnectError) throw err;
          if (options.signal?.aborted) return fail(options.signal.reason);
          const fatal = fatalReason(nodeError, t) ?? fatalReason(err as Error, t);
          if (fatal) return fail(connectError(t, fatal, err));
          throw new Unreachable(nodeError ?? (err as Error), err);
        }
      },
      CONNECT_RETRY,
      {
        deadlineAt: deadline,
        ...(options.signal ? { signal: options.signal } : {}),
        onRetry: ({ error }) => {
          options.onRetry?.((error as Unreachable).reason);
          nodeError = undefined;
        },
      },
    );
  } catch (err) {
    if (failed || err instanceof RedisConnectError) throw err;
    if (options.signal?.aborted) return fail(options.signal.reason);
    const reason = err instanceof Unreachable ? err.reason : (err as Error);
    return fail(connectError(t, `cannot reach Redis at ${t.display}: ${reason.message}`, err instanceof Unreachable ? err.cause : err));
  } finally {
    if (!failed) {
      client.off('node error', onNodeError);
      client.off('error', onError);
    }
  }
}

/**
 * Connecting again while Redis is unreachable: after 200, 400, 800, 1,600 ms, then every 2 s (equal jitter: between
 * half and all of it, so a fleet restarting with its Redis does not knock in step), until `waitMs` would pass.
 */
const CONNECT_RETRY: RetryPolicy = { retries: Infinity, baseMs: 200, capMs: 2_000, jitter: 'equal', retryable: (err) => err instanceof Unreachable };

/** Redis did not answer this time (worth waiting for); `reason` is the most telling error seen. */
class Unreachable extends Error {
  constructor(
    readonly reason: Error,
    cause: unknown,
  ) {
    super(reason.message, { cause });
  }
}

function connectError(t: RedisTarget, why: string, cause: unknown): RedisConnectError {
  return new RedisConnectError(`${t.setting}: ${why.replace(/redis(s?):\/\/[^\s,]*/g, (u) => safeRedisUrl(u))}`, { cause });
}

/**
 * Redis must not evict (locks and the id map live there): a warning per server whose maxmemory-policy is not
 * `noeviction`, or undefined when all are. Read from INFO (CONFIG is often disabled on managed Redis).
 */
export async function evictionWarning(client: Redis): Promise<string | undefined> {
  const bad: string[] = [];
  for (const node of nodesOf(client)) {
    const info = await node.info('memory').catch(() => '');
    const policy = /maxmemory_policy:(\S+)/.exec(info)?.[1];
    if (policy !== undefined && policy !== 'noeviction') bad.push(`${node.options.host ?? '?'}:${node.options.port ?? '?'} has ${policy}`);
  }
  return bad.length === 0 ? undefined : `Redis maxmemory-policy is not noeviction (${bad.join('; ')}): under memory pressure Redis would evict locks and id maps; set maxmemory-policy noeviction`;
}
