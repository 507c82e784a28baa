/**
 * Wiring for the auth tests and the child processes they spawn: the same pieces the worker's composition root
 * uses (Redis connections, the refresh-token queue and a Worker running the real processor, createAuth).
 */
import { Queue, Worker, type WorkerOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { createRefreshTokenProcessor } from '../../jobs/refresh-token.js';
import { createAuth, type Auth, type AuthMetrics, type ClientCredentials, type CreateAuthOptions } from '../../src/auth/index.js';
import type { AuthSettingsInput } from '../../src/auth/settings.js';
import { createLogger, type Logger } from '../../src/logger.js';
import { QUEUES, refreshJobs } from '../../src/queues/index.js';
import { connectRedis, createRedis, redisTargetOf } from '../../src/redis/connection.js';

export function quietLogger(level = process.env['AUTH_TEST_LOG'] ?? 'silent'): Logger {
  return createLogger({ level });
}

/** A worker connection to the server at `url`, or to the Redis Cluster of `clusterNodes` (REDIS_CLUSTER_NODES) when given. */
export async function redisAt(url: string, clusterNodes?: string): Promise<Redis> {
  const target = redisTargetOf({ REDIS_URL: url, ...(clusterNodes === undefined ? {} : { REDIS_CLUSTER_NODES: clusterNodes }) });
  const r = createRedis(target, 'worker');
  r.on('error', () => undefined);
  return connectRedis(r, target);
}

export interface AuthRig {
  redis: Redis;
  queue: Queue;
  auth: Auth;
  worker: Worker | undefined;
  close(): Promise<void>;
}

/** The token endpoint's address in tests that never call it (no simulator). */
export const NO_AUTH_URL = 'http://127.0.0.1:1';

/** The fingerprint key of every process of a test (TOKEN_FINGERPRINT_KEY): they must agree. */
export const TEST_FINGERPRINT_KEY = Buffer.from('test-fingerprint-key-0123456789');

export interface RigOptions {
  url: string;
  /** A Redis Cluster's seed nodes (REDIS_CLUSTER_NODES): the rig runs on it, `url` only lends its credentials. */
  clusterNodes?: string;
  prefix: string;
  /** The default token endpoint of tenants (default NO_AUTH_URL); it is part of every client key. */
  authUrl?: string;
  settings: AuthSettingsInput;
  logger?: Logger;
  metrics?: AuthMetrics;
  requestToken?: CreateAuthOptions['requestToken'];
  hooks?: CreateAuthOptions['hooks'];
  /** Seals the stored token (PLATFORM_TOKEN_KEY's cipher); absent: plain text. */
  tokenBox?: CreateAuthOptions['tokenBox'];
  /** Run a refresh-token Worker with the real processor (omit for a process that only sends requests). */
  credentials?: (tenantId: string) => ClientCredentials | undefined;
  worker?: Partial<WorkerOptions>;
}

/** One process's auth: connections, queue, createAuth, and optionally a refresh-token worker. */
export async function buildRig(o: RigOptions): Promise<AuthRig> {
  const logger = o.logger ?? quietLogger();
  const redis = await redisAt(o.url, o.clusterNodes);
  const queue = new Queue(QUEUES.refreshToken, { connection: redis, prefix: o.prefix });
  queue.on('error', () => undefined);
  const auth = createAuth({
    redis,
    prefix: o.prefix,
    authUrl: o.authUrl ?? NO_AUTH_URL,
    fingerprintKey: TEST_FINGERPRINT_KEY,
    jobs: refreshJobs(queue, logger),
    logger,
    settings: o.settings,
    ...(o.metrics ? { metrics: o.metrics } : {}),
    ...(o.requestToken ? { requestToken: o.requestToken } : {}),
    ...(o.hooks ? { hooks: o.hooks } : {}),
    ...(o.tokenBox ? { tokenBox: o.tokenBox } : {}),
  });
  let worker: Worker | undefined;
  let workerRedis: Redis | undefined;
  if (o.credentials) {
    workerRedis = await redisAt(o.url, o.clusterNodes);
    worker = new Worker(QUEUES.refreshToken, createRefreshTokenProcessor({ refresher: auth.refresher, resolveCredentials: o.credentials, logger }), {
      connection: workerRedis,
      prefix: o.prefix,
      concurrency: 4,
      ...o.worker,
    });
    worker.on('error', () => undefined);
    await worker.waitUntilReady();
  }
  return {
    redis,
    queue,
    auth,
    worker,
    async close() {
      await worker?.close();
      await auth.close();
      await queue.close();
      workerRedis?.disconnect();
      redis.disconnect();
    },
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns a value other than undefined, or throws after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs: number, what: string, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
