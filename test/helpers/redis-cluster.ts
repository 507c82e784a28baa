/**
 * A Redis Cluster for tests (issue 13): REDIS_CLUSTER_NODES when set (a cluster someone else runs), else three
 * masters spawned from `redis-server --cluster-enabled yes` on random ports, each in its own temp dir, joined with
 * `redis-cli --cluster create ... --cluster-yes`. Fault tests restart one master (AOF keeps its data).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { freePort } from './redis.js';

export interface ClusterNode {
  port: number;
  url: string;
  kill(): Promise<void>;
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

async function ping(port: number): Promise<boolean> {
  const c = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return (await c.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    c.disconnect();
  }
}

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

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(50);
  }
  throw new Error(`test cluster: ${what} did not happen within ${timeoutMs} ms`);
}

/** Three masters, no replicas, on random ports. */
export async function spawnRedisCluster(options: { masters?: number } = {}): Promise<TestCluster> {
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) {
    throw new Error('redis-server is not installed: apt-get install redis-server (or set REDIS_CLUSTER_NODES)');
  }
  const count = options.masters ?? 3;
  const dir = await mkdtemp(join(tmpdir(), 'cs-cluster-'));
  const masters: ClusterNode[] = [];
  for (let i = 0; i < count; i += 1) {
    const port = await freePort();
    let child: ChildProcess | undefined;
    const start = async (): Promise<void> => {
      const args = [
        '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '',
        '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '2000',
        '--appendonly', 'yes', '--appendfilename', `aof-${port}.aof`, '--appenddirname', `aof-${port}`, '--appendfsync', 'always',
        '--maxmemory-policy', 'noeviction', '--protected-mode', 'no', '--daemonize', 'no', '--loglevel', 'warning',
      ];
      child = spawn('redis-server', args, { stdio: 'ignore' });
      await waitFor(`redis-server on ${port}`, () => ping(port), 10_000);
    };
    const kill = async (): Promise<void> => {
      const proc = child;
      child = undefined;
      if (!proc || proc.exitCode !== null) return;
      await new Promise<void>((resolve) => {
        proc.once('exit', () => resolve());
        proc.kill('SIGKILL');
      });
    };
    await start();
    masters.push({
      port,
      url: `redis://127.0.0.1:${port}`,
      start: async () => {
        await start();
        await waitFor('cluster_state:ok after a restart', () => clusterOk(port));
      },
      kill,
      async restart(downMs = 200) {
        await kill();
        await sleep(downMs);
        await this.start();
      },
    });
  }
  const create = spawnSync('redis-cli', ['--cluster', 'create', ...masters.map((m) => `127.0.0.1:${m.port}`), '--cluster-replicas', '0', '--cluster-yes'], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (create.status !== 0) {
    await Promise.all(masters.map((m) => m.kill()));
    throw new Error(`redis-cli --cluster create failed: ${create.stdout}\n${create.stderr}`);
  }
  for (const m of masters) await waitFor(`cluster_state:ok on ${m.port}`, () => clusterOk(m.port));
  const nodes = masters.map((m) => `127.0.0.1:${m.port}`).join(',');
  return {
    kind: 'spawned',
    nodes,
    masters,
    client: () => quiet(new Cluster(masters.map((m) => ({ host: '127.0.0.1', port: m.port })))),
    async stop() {
      await Promise.all(masters.map((m) => m.kill()));
      await rm(dir, { recursive: true, force: true });
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
