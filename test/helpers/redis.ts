/**
 * Redis for tests, one per test file (or per `describe` that asks for its own). Order: REDIS_URL when set; else a
 * spawned `redis-server` on a random port with its own temp dir; else testcontainers when a Docker engine answers
 * (checked with `docker info`, so a client without an engine never reaches testcontainers' fatal runtime probe).
 * Fault tests (restart, kill) always use a spawned server of their own (`useSpawnedRedis()` or `spawnRedis()`).
 * Every test gets its own key prefix from `testPrefix()`.
 *
 * A file takes its Redis with `const redis = useTestRedis()` at the top of the file or of a `describe`: that
 * registers the beforeAll that starts it and the afterAll that stops it. Register it before the file's own hooks:
 * vitest runs after-hooks in reverse order (`sequence.hooks: 'stack'`), so the file's afterAll (closing workers,
 * clients) runs while Redis is still up. A Redis (or anything else) started inside one test is stopped with
 * `onTestFinished`.
 *
 * Why one per file and not one per run (a globalSetup that `provide`s a URL): files use MONITOR, SCRIPT FLUSH,
 * CLIENT PAUSE and CONFIG SET, which would reach every other file on a shared server, and a spawn costs about
 * 0.1 s per file, next to files that take seconds each.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { prefixPattern } from '../../src/redis/keys.js';

export interface TestRedis {
  url: string;
  kind: 'env' | 'spawned' | 'container';
  stop(): Promise<void>;
}

export interface SpawnedRedis extends TestRedis {
  kind: 'spawned';
  port: number;
  dir: string;
  /** SIGKILL the server (AOF keeps what was fsynced). */
  kill(): Promise<void>;
  /** Start it again on the same port and dir. */
  start(): Promise<void>;
  /** kill + start. */
  restart(downMs?: number): Promise<void>;
}

/** A key prefix unique to one test (a hash tag, so Cluster-safe like production's). */
export function testPrefix(name = 't'): string {
  return `{${name}-${randomBytes(4).toString('hex')}}`;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

function hasRedisServer(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** Waits until the server at `url` answers PING (a spawned server, a restarted cluster node). */
export async function waitForPing(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.ping();
      client.disconnect();
      return;
    } catch (err) {
      lastError = err;
      client.disconnect();
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`redis at ${url} did not answer within ${timeoutMs} ms: ${String(lastError)}`);
}

/** A private redis-server: random port, own temp dir, AOF on (so a restart keeps data, like production). */
export async function spawnRedis(options: { appendonly?: boolean; /** More redis-server arguments (a cluster node's). */ args?: readonly string[] } = {}): Promise<SpawnedRedis> {
  if (!hasRedisServer()) {
    throw new Error('redis-server is not installed: apt-get install redis-server (or set REDIS_URL)');
  }
  const dir = await mkdtemp(join(tmpdir(), 'cs-redis-'));
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const appendonly = options.appendonly ?? true;

  const start = async (): Promise<void> => {
    // Already running: a second server on the same port would fail to bind while the first lost its handle (and
    // outlived the test file, as it did when a test started a server it had not stopped).
    if (child && child.exitCode === null && child.signalCode === null) return;
    const args = [
      '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '',
      '--appendonly', appendonly ? 'yes' : 'no', '--appendfsync', 'always',
      '--maxmemory-policy', 'noeviction', '--protected-mode', 'no', '--daemonize', 'no', '--loglevel', 'warning',
      ...(options.args ?? []),
    ];
    const proc = spawn('redis-server', args, { stdio: 'ignore' });
    child = proc;
    await waitForPing(url, 10_000);
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
  return {
    url,
    kind: 'spawned',
    port,
    dir,
    kill,
    start,
    async restart(downMs = 200) {
      await kill();
      await new Promise((r) => setTimeout(r, downMs));
      await start();
    },
    async stop() {
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function dockerAnswers(): Promise<boolean> {
  const res = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { stdio: 'pipe', timeout: 5000 });
  return res.status === 0;
}

async function containerRedis(): Promise<TestRedis> {
  const { RedisContainer } = await import('@testcontainers/redis');
  const container = await new RedisContainer('redis:7-alpine').start();
  return { url: container.getConnectionUrl(), kind: 'container', stop: async () => void (await container.stop()) };
}

/** The Redis a test file uses (see the order above); `useTestRedis()` starts and stops it with the file. */
export async function startTestRedis(): Promise<TestRedis> {
  const envUrl = process.env['REDIS_URL'];
  if (envUrl) return { url: envUrl, kind: 'env', stop: async () => undefined };
  if (hasRedisServer()) return spawnRedis({ appendonly: false });
  if (await dockerAnswers()) return containerRedis();
  throw new Error('no Redis for tests: set REDIS_URL, or install redis-server (apt-get install redis-server), or run a Docker engine');
}

/** Deletes every key under a prefix (for REDIS_URL runs that share a server). */
export async function dropPrefix(url: string, prefix: string): Promise<void> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    const stream = client.scanStream({ match: prefixPattern(prefix), count: 500 });
    for await (const keys of stream as AsyncIterable<string[]>) {
      if (keys.length > 0) await client.unlink(...keys);
    }
  } finally {
    client.disconnect();
  }
}

/** Registers the hooks that start a server before the file's (or describe's) tests and stop it after them. */
function useServer<S extends TestRedis>(start: () => Promise<S>): () => S {
  let server: S | undefined;
  beforeAll(async () => {
    server = await start();
  });
  afterAll(async () => {
    const s = server;
    server = undefined;
    await s?.stop();
  });
  return () => {
    if (!server) throw new Error('test Redis is not running: use it inside a hook or a test, after useTestRedis()');
    return server;
  };
}

/**
 * The file's Redis (see the order above), started in a beforeAll and stopped in an afterAll that this registers.
 * The handle reads the running server, so use it in hooks and tests, not while the file is collected.
 */
export function useTestRedis(): TestRedis {
  const server = useServer(startTestRedis);
  return {
    get url() {
      return server().url;
    },
    get kind() {
      return server().kind;
    },
    stop: () => server().stop(),
  };
}

/** A spawned Redis of the file's own, for fault tests (kill, restart); started and stopped like `useTestRedis()`. */
export function useSpawnedRedis(options: Parameters<typeof spawnRedis>[0] = {}): SpawnedRedis {
  const server = useServer(() => spawnRedis(options));
  return {
    kind: 'spawned',
    get url() {
      return server().url;
    },
    get port() {
      return server().port;
    },
    get dir() {
      return server().dir;
    },
    stop: () => server().stop(),
    kill: () => server().kill(),
    start: () => server().start(),
    restart: (downMs) => server().restart(downMs),
  };
}

/**
 * The file's Redis with one client on it: hands the client (and the server) to `set` once they are up, and
 * disconnects the client before the server stops.
 */
export function useRedisClient(set: (client: Redis, server: TestRedis) => void): void {
  const server = useTestRedis();
  let client: Redis | undefined;
  beforeAll(() => {
    client = new Redis(server.url);
    set(client, server);
  });
  afterAll(() => {
    client?.disconnect();
  });
}
