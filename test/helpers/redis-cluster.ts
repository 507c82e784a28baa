/**
 * A Redis Cluster for tests (issue 13): REDIS_CLUSTER_NODES when set (a cluster someone else runs), else three
 * masters spawned from `redis-server --cluster-enabled yes` on random ports, each in its own temp dir, joined with
 * `redis-cli --cluster create ... --cluster-yes`. Fault tests restart one master (AOF keeps its data).
 */
import { spawnSync } from 'node:child_process';
import { Cluster, Redis } from 'ioredis';
import { spawnRedis } from './redis.js';

export interface ClusterNode {
  port: number;
  url: string;
  kill(): Promise<void>;
  /** Starts the node again (its AOF brings its data back) and waits for cluster_state:ok. */
  start(): Promise<void>;
  restart(downMs?: number): Promise<void>;
}

export interface TestCluster {
  kind: 'env' | 'spawned';
  /** The seed list, as REDIS_CLUSTER_NODES takes it. */
  nodes: string;
  /** The spawned masters (empty for an env cluster). */
  masters: ClusterNode[];
  /** A cluster client for assertions (the caller disconnects it). */
  client(): Cluster;
  stop(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function clusterOk(port: number): Promise<boolean> {
  const c = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
  c.on('error', () => undefined);
  try {
    await c.connect();
    const info = String(await c.call('CLUSTER', 'INFO'));
    return /cluster_state:ok/.test(info);
  } catch {
    return false;
  } finally {
    c.disconnect();
  }
}

async function waitForClusterOk(port: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await clusterOk(port)) return;
    await sleep(50);
  }
  throw new Error(`test cluster: cluster_state:ok on ${port} did not happen within ${timeoutMs} ms`);
}

/** A cluster node's redis-server arguments on top of spawnRedis' own (AOF on, so a restarted master keeps its data). */
const NODE_ARGS = ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000'];

/** Three masters, no replicas, on random ports; AOF on unless `appendonly: false` (the benchmark's, like its single Redis). */
export async function spawnRedisCluster(options: { masters?: number; appendonly?: boolean } = {}): Promise<TestCluster> {
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) {
    throw new Error('redis-server is not installed: apt-get install redis-server (or set REDIS_CLUSTER_NODES)');
  }
  const count = options.masters ?? 3;
  const servers = await Promise.all(Array.from({ length: count }, () => spawnRedis({ appendonly: options.appendonly ?? true, args: NODE_ARGS })));
  const masters: ClusterNode[] = servers.map((server) => ({
    port: server.port,
    url: server.url,
    kill: () => server.kill(),
    async start() {
      await server.start();
      await waitForClusterOk(server.port);
    },
    async restart(downMs = 200) {
      await server.kill();
      await sleep(downMs);
      await this.start();
    },
  }));
  const create = spawnSync('redis-cli', ['--cluster', 'create', ...masters.map((m) => `127.0.0.1:${m.port}`), '--cluster-replicas', '0', '--cluster-yes'], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (create.status !== 0) {
    await Promise.all(servers.map((m) => m.stop()));
    throw new Error(`redis-cli --cluster create failed: ${create.stdout}\n${create.stderr}`);
  }
  for (const m of masters) await waitForClusterOk(m.port);
  const nodes = masters.map((m) => `127.0.0.1:${m.port}`).join(',');
  return {
    kind: 'spawned',
    nodes,
    masters,
    client: () => quiet(new Cluster(masters.map((m) => ({ host: '127.0.0.1', port: m.port })))),
    async stop() {
      await Promise.all(servers.map((m) => m.stop()));
    },
  };
}

/** The cluster a test file uses: REDIS_CLUSTER_NODES when set, else a spawned one. */
export async function startTestCluster(): Promise<TestCluster> {
  const env = process.env['REDIS_CLUSTER_NODES'];
  if (env) {
    const seeds = env.split(',').map((s) => {
      const u = new URL(s.includes('://') ? s : `redis://${s}`);
      return { host: u.hostname, port: Number(u.port || 6379) };
    });
    return { kind: 'env', nodes: env, masters: [], client: () => quiet(new Cluster(seeds)), stop: async () => undefined };
  }
  return spawnRedisCluster();
}

/** Which master (by port) holds each key. */
export async function mastersOf(cluster: Cluster, keys: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const slots = (await cluster.call('CLUSTER', 'SLOTS')) as [number, number, [string, number, ...unknown[]]][];
  for (const key of keys) {
    const slot = Number(await cluster.call('CLUSTER', 'KEYSLOT', key));
    const range = slots.find(([lo, hi]) => slot >= lo && slot <= hi);
    out.set(key, range ? `${range[2][0]}:${range[2][1]}` : 'none');
  }
  return out;
}

/** A test's cluster client outlives the nodes a fault test kills: its errors are expected. */
function quiet(c: Cluster): Cluster {
  c.on('error', () => undefined);
  return c;
}
