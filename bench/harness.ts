/**
 * The benchmark's fixed parts: one spawned Redis, the simulator in this process, a scratch folder; and
 * deployments on them (a key prefix, a tenants file, N worker processes) with measured sync runs: wall time,
 * the simulator's counters, Redis commands and CPU, the workers' CPU and peak RSS. A deployment runs on the
 * benchmark's Redis, or on another Redis site (`openClusterSite`: a three-master Redis Cluster the bench starts).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { TOKEN_ROUTE } from '../src/collections/token.js';
import { DEFAULT_JOB_OPTIONS, QUEUES, requestSync, type SyncMode } from '../src/queues/index.js';
import { connectRedis, createRedis, redisTargetOf } from '../src/redis/connection.js';
import { queuePrefix } from '../src/redis/keys.js';
import { startSimulator, type Simulator, type SimulatorCounters } from '../src/simulator/index.js';
import { createStateStores, waitForRun, type RunRecord, type StateStores } from '../src/state/index.js';
import { spawnRedis, type SpawnedRedis } from '../test/helpers/redis.js';
import { spawnRedisCluster } from '../test/helpers/redis-cluster.js';
import type { ChildStats } from './child-protocol.js';
import { redisDelta, redisSnapshot, type RedisDelta } from './redis-stats.js';
import { cpuMsBetween, spawnBenchWorker, type BenchWorker } from './workers.js';

/** Where a deployment's Redis is: the workers' environment for it and the benchmark's own connection to it. */
export interface RedisSite {
  readonly label: 'single' | 'cluster';
  /** REDIS_URL or REDIS_CLUSTER_NODES, for the worker processes. */
  readonly env: Record<string, string>;
  /** The benchmark's own connection (enqueueing, waiting, INFO on every master). */
  readonly admin: Redis;
}

export interface Bench {
  readonly quick: boolean;
  readonly redis: SpawnedRedis;
  /** The benchmark's own connection (enqueueing, waiting, INFO). */
  readonly admin: Redis;
  /** The spawned Redis as a site (the default of `deploy` and `measure`). */
  readonly single: RedisSite;
  readonly sim: Simulator;
  readonly root: string;
  log(line: string): void;
  close(): Promise<void>;
}

export async function openBench(options: { quick: boolean; log: (line: string) => void }): Promise<Bench> {
  // AOF off: the figures are about the worker; production's `appendfsync everysec` costs Redis little more.
  const redis = await spawnRedis({ appendonly: false });
  const admin = new Redis(redis.url, { maxRetriesPerRequest: null });
  admin.on('error', () => undefined);
  const sim = await startSimulator({ clients: [] });
  const root = await mkdtemp(join(tmpdir(), 'cs-bench-'));
  return {
    quick: options.quick,
    redis,
    admin,
    single: { label: 'single', env: { REDIS_URL: redis.url }, admin },
    sim,
    root,
    log: options.log,
    async close() {
      await sim.close();
      admin.disconnect();
      await redis.stop();
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** A three-master Redis Cluster (redis-server processes, AOF off like the single Redis) and a connection to it. */
export async function openClusterSite(): Promise<RedisSite & { close(): Promise<void> }> {
  const cluster = await spawnRedisCluster({ appendonly: false });
  const env = { REDIS_CLUSTER_NODES: cluster.nodes };
  const target = redisTargetOf({ REDIS_URL: 'redis://127.0.0.1:6379', ...env });
  const admin = createRedis(target, 'worker');
  admin.on('error', () => undefined);
  await connectRedis(admin, target);
  return {
    label: 'cluster',
    env,
    admin,
    async close() {
      admin.disconnect();
      await cluster.stop();
    },
  };
}

export interface TenantSetup {
  id: string;
  folder: string;
}

export const clientIdOf = (tenant: string): string => `client-${tenant}`;
export const secretOf = (tenant: string): string => `secret-${tenant}-bench`;

export interface Deployment {
  readonly prefix: string;
  readonly workers: BenchWorker[];
  readonly stores: StateStores;
  /** The workers' settings (Redis, KEY_PREFIX, TENANTS_FILE, the simulator's URLs, ...), for a CLI run beside them. */
  readonly env: Record<string, string>;
  /** Enqueues a run (as a schedule tick or the CLI would) and resolves with its record once it ends. */
  sync(tenant: string, mode?: SyncMode, trigger?: 'schedule' | 'cli'): Promise<RunRecord>;
  /** Enqueues a run; `wait()` resolves with its record once it ends. */
  request(tenant: string, mode?: SyncMode, trigger?: 'schedule' | 'cli'): Promise<{ wait(): Promise<RunRecord> }>;
  close(): Promise<void>;
}

let deployments = 0;

/** A key prefix, a tenants file and `processes` worker processes with `env` (SYNC_CONCURRENCY, ...), on `site`'s Redis. */
export async function deploy(bench: Bench, name: string, tenants: TenantSetup[], processes: number, env: Record<string, string>, site: RedisSite = bench.single): Promise<Deployment> {
  deployments += 1;
  const prefix = `{bench-${name}-${deployments}}`;
  const tenantsFile = join(bench.root, `tenants-${name}-${deployments}.json`);
  await writeFile(
    tenantsFile,
    JSON.stringify({
      tenants: tenants.map((t) => ({
        id: t.id,
        collections: { clientId: clientIdOf(t.id), clientSecret: secretOf(t.id) },
        platform: { kind: 'file', path: t.folder },
      })),
    }),
  );
  for (const t of tenants) bench.sim.setClient(clientIdOf(t.id), secretOf(t.id));
  const workerEnv = {
    ...site.env,
    KEY_PREFIX: prefix,
    COLLECTIONS_BASE_URL: bench.sim.baseUrl,
    COLLECTIONS_AUTH_URL: bench.sim.authUrl,
    TENANTS_FILE: tenantsFile,
    ...env,
  };
  const workers = await Promise.all(Array.from({ length: processes }, () => spawnBenchWorker(workerEnv)));
  const queue = new Queue(QUEUES.sync, { connection: site.admin, prefix: queuePrefix(prefix, QUEUES.sync), defaultJobOptions: DEFAULT_JOB_OPTIONS });
  queue.on('error', () => undefined);
  const stores = createStateStores(site.admin, prefix);
  const request: Deployment['request'] = async (tenant, mode = 'incremental', trigger = 'cli') => {
    const { requestedAt } = await requestSync(queue, tenant, mode, { trigger });
    return { wait: () => waitForRun(stores.runs, tenant, { mode, requestedAt, timeoutMs: 900_000, pollMs: 100 }) };
  };
  return {
    prefix,
    workers,
    stores,
    env: workerEnv,
    request,
    async sync(tenant, mode, trigger) {
      return (await request(tenant, mode, trigger)).wait();
    },
    async close() {
      await Promise.all(workers.map((w) => w.stop()));
      await queue.close();
    },
  };
}

/** API requests (the token endpoint left out) and tokens in a counters snapshot. */
export function apiRequests(c: SimulatorCounters): number {
  let n = 0;
  for (const [route, byStatus] of Object.entries(c.requests)) {
    if (route === TOKEN_ROUTE) continue;
    for (const v of Object.values(byStatus)) n += v;
  }
  return n;
}

export interface Measured<T> {
  value: T;
  wallMs: number;
  requests: number;
  writes: number;
  tokens: number;
  unauthorized: number;
  redis: RedisDelta;
  /** CPU of the worker processes, summed. */
  workerCpuMs: number;
  /** CPU of this process (the simulator and the benchmark's polling). */
  simulatorCpuMs: number;
  workerStats: ChildStats[];
}

/** Runs `fn` and measures what the simulator, `site`'s Redis and the worker processes did meanwhile. */
export async function measure<T>(bench: Bench, workers: BenchWorker[], fn: () => Promise<T>, site: RedisSite = bench.single): Promise<Measured<T>> {
  const c0 = bench.sim.counters();
  const r0 = await redisSnapshot(site.admin);
  const w0 = await Promise.all(workers.map((w) => w.stats()));
  const p0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await fn();
  const wallMs = performance.now() - t0;
  const p1 = process.cpuUsage(p0);
  const w1 = await Promise.all(workers.map((w) => w.stats()));
  const r1 = await redisSnapshot(site.admin);
  const c1 = bench.sim.counters();
  const unauthorized = (c: SimulatorCounters): number => Object.values(c.unauthorized).reduce((a, b) => a + b, 0);
  return {
    value,
    wallMs,
    requests: apiRequests(c1) - apiRequests(c0),
    writes: c1.writesCommitted - c0.writesCommitted,
    tokens: c1.tokensIssuedTotal - c0.tokensIssuedTotal,
    unauthorized: unauthorized(c1) - unauthorized(c0),
    redis: redisDelta(r0, r1),
    workerCpuMs: w1.reduce((s, w, i) => s + cpuMsBetween(w0[i]!, w), 0),
    simulatorCpuMs: (p1.user + p1.system) / 1000,
    workerStats: w1,
  };
}

/** Run time as the worker recorded it (start to finish of the run, queueing left out). */
export function runMs(run: RunRecord): number {
  return (run.finishedAt ?? Date.now()) - run.startedAt;
}

export function assertSucceeded(run: RunRecord, what: string): void {
  if (run.outcome !== 'succeeded') throw new Error(`${what}: run ${run.runId} ended ${run.outcome ?? 'unfinished'}: ${JSON.stringify(run.errors?.slice(0, 3))}`);
}
