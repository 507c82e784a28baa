/**
 * The demo's Redis: the one in REDIS_URL when given, else a private `redis-server` on a random port with its own
 * temp dir (no persistence), stopped and removed when the demo ends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { sleep } from '../sleep.js';

export const REDIS_SERVER_MISSING =
  'redis-server is not installed. Install it with `apt-get install redis-server` (Debian/Ubuntu) or `brew install redis`, or set REDIS_URL to a Redis you have.';

export class DemoRedisError extends Error {
  readonly code = 'DEMO_REDIS';
}

export interface DemoRedis {
  url: string;
  /** `spawned`: a private redis-server the demo started; `given`: REDIS_URL. */
  kind: 'spawned' | 'given';
  /** Stops a spawned server and removes its dir (nothing for a given one). Safe to call twice. */
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no free port'))));
    });
  });
}

async function answers(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null, connectTimeout: 1_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 3_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Starts one redis-server; rejects with REDIS_SERVER_MISSING when the binary is absent. */
async function spawnOnce(dir: string, port: number): Promise<ChildProcess> {
  const args = [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no',
    '--maxmemory-policy', 'noeviction', '--protected-mode', 'no', '--daemonize', 'no', '--loglevel', 'warning',
  ];
  const child = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (s: string) => (stderr = (stderr + s).slice(-2_000)));
  const url = `redis://127.0.0.1:${port}`;
  let failed: Error | undefined;
  child.once('error', (err) => (failed = err));
  child.once('exit', (code) => (failed ??= new Error(`redis-server exited (${code ?? 'signal'}): ${stderr.trim()}`)));
  const deadline = Date.now() + 10_000;
  for (;;) {
    await sleep(50);
    if (failed) {
      if ((failed as NodeJS.ErrnoException).code === 'ENOENT') throw new DemoRedisError(REDIS_SERVER_MISSING);
      throw failed;
    }
    if (await answers(url)) return child;
    if (Date.now() > deadline) {
      await stopChild(child);
      throw new DemoRedisError(`redis-server on port ${port} did not answer within 10 s: ${stderr.trim()}`);
    }
  }
}

/** The demo's Redis (see the module comment). */
export async function demoRedis(options: { url?: string | undefined } = {}): Promise<DemoRedis> {
  if (options.url) {
    if (!(await answers(options.url))) throw new DemoRedisError(`REDIS_URL is set but that Redis does not answer (${options.url.replace(/\/\/[^@/]*@/, '//***@')})`);
    return { url: options.url, kind: 'given', stop: async () => undefined };
  }
  const dir = await mkdtemp(join(tmpdir(), 'collections-sync-demo-redis-'));
  let child: ChildProcess | undefined;
  let port = 0;
  try {
    for (let attempt = 1; child === undefined; attempt += 1) {
      port = await freePort();
      try {
        child = await spawnOnce(dir, port);
      } catch (err) {
        // A port taken between the probe and the spawn: try another; anything else is final.
        if (err instanceof DemoRedisError || attempt >= 3) throw err;
      }
    }
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const running = child;
  let stopped: Promise<void> | undefined;
  return {
    url: `redis://127.0.0.1:${port}`,
    kind: 'spawned',
    stop() {
      stopped ??= (async () => {
        await stopChild(running);
        await rm(dir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}
