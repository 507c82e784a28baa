/**
 * Start and stop are total (issue 28): a worker that cannot start exits non-zero with one line naming the setting
 * and leaves no BullMQ worker registered; a signal while it waits for Redis at start ends it at once. The real
 * `collections-sync worker` as a child process, on a spawned Redis.
 */
import { createServer, type Server } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUES } from '../../src/queues/index.js';
import { queuePrefix } from '../../src/redis/keys.js';
import { startWorker } from '../../src/worker.js';
import { StartAborted, StartError } from '../../src/worker/start-guard.js';
import { spawnWorker, type ChildWorker } from '../helpers/child-worker.js';
import { freePort, spawnRedis, testPrefix, type SpawnedRedis } from '../helpers/redis.js';
import { startRig, tenantsJson, type Rig } from '../helpers/rig.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` until it holds (the test's own timeout bounds the wait). */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await sleep(25);
}

/** A port held by this test process, on 127.0.0.1 (as the worker binds its servers there in these tests). */
async function takePort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return { port: address.port, server };
}

/** The exit code of a child worker (null if a signal ended it). */
function exitOf(w: ChildWorker): Promise<number | null> {
  return new Promise((resolve) => {
    if (w.process.exitCode !== null || w.process.signalCode !== null) resolve(w.process.exitCode);
    else w.process.once('exit', (code) => resolve(code));
  });
}

/** Lines that are not pino's JSON log lines: what the CLI itself wrote. */
const plainLines = (output: string): string[] => output.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('{'));

describe('a worker that cannot start', () => {
  let redis: SpawnedRedis;
  let folder: string;
  let held: Server | undefined;
  const workers: ChildWorker[] = [];

  beforeAll(async () => {
    redis = await spawnRedis({ appendonly: false });
    folder = await mkdtemp(join(tmpdir(), 'cs-start-stop-'));
    await writeFile(join(folder, 'tenants.json'), tenantsJson([{ id: 'acme', platform: { kind: 'memory' } }]));
  });
  afterAll(async () => {
    for (const w of workers) await w.kill9();
    held?.close();
    await redis?.stop();
    await rm(folder, { recursive: true, force: true });
  });

  /** The BullMQ workers registered on each of our queues under `prefix` (CLIENT LIST names). */
  async function registered(prefix: string): Promise<Record<string, number>> {
    const seen: Record<string, number> = {};
    for (const name of Object.values(QUEUES)) {
      const queue = new Queue(name, { connection: { url: redis.url }, prefix: queuePrefix(prefix, name) });
      try {
        seen[name] = (await queue.getWorkers()).length;
      } finally {
        await queue.close();
      }
    }
    return seen;
  }
  const none = Object.fromEntries(Object.values(QUEUES).map((name) => [name, 0]));

  async function startWith(env: Record<string, string>): Promise<{ code: number | null; output: string; prefix: string }> {
    const prefix = testPrefix('start');
    const w = spawnWorker({ REDIS_URL: redis.url, KEY_PREFIX: prefix, TENANTS_FILE: join(folder, 'tenants.json'), ...env });
    workers.push(w);
    const code = await exitOf(w);
    return { code, output: w.output(), prefix };
  }

  it('exits 2 when OPS_PORT is taken, with one line naming it, and no BullMQ worker left registered', async () => {
    const taken = await takePort();
    held = taken.server;
    try {
      const { code, output, prefix } = await startWith({ OPS_PORT: String(taken.port) });
      expect(code, output).toBe(2);
      expect(plainLines(output), output).toEqual([
        `collections-sync: OPS_PORT=${taken.port} is taken by another process; set OPS_PORT to a free port or 0 to turn the ops server off`,
      ]);
      expect(await registered(prefix)).toEqual(none);
    } finally {
      taken.server.close();
      held = undefined;
    }
  }, 60_000);

  it('exits 2 when WEBHOOK_PORT is taken, with one line naming it, and no BullMQ worker left registered', async () => {
    const taken = await takePort();
    held = taken.server;
    try {
      const { code, output, prefix } = await startWith({ OPS_PORT: '0', WEBHOOK_PORT: String(taken.port), WEBHOOK_HOST: '127.0.0.1' });
      expect(code, output).toBe(2);
      expect(plainLines(output), output).toEqual([
        `collections-sync: WEBHOOK_PORT=${taken.port} is taken by another process; set WEBHOOK_PORT to a free port, or unset it to turn the webhook receiver off`,
      ]);
      expect(await registered(prefix)).toEqual(none);
    } finally {
      taken.server.close();
      held = undefined;
    }
  }, 60_000);
});

describe('a signal while the worker waits for Redis at start', () => {
  let folder: string;
  let w: ChildWorker | undefined;

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'cs-start-stop-'));
    await writeFile(join(folder, 'tenants.json'), tenantsJson([{ id: 'acme', platform: { kind: 'memory' } }]));
    // Nothing listens on this port: the worker waits for Redis (up to a minute) and says so.
    w = spawnWorker({
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      KEY_PREFIX: testPrefix('start'),
      TENANTS_FILE: join(folder, 'tenants.json'),
      LOG_LEVEL: 'info',
      SHUTDOWN_TIMEOUT_MS: '25000',
    });
    const started = w;
    await until(() => started.output().includes('"waiting for Redis"'));
  }, 60_000);
  afterAll(async () => {
    await w?.kill9();
    await rm(folder, { recursive: true, force: true });
  });

  // This test's timeout starts at the signal: well before the 30 s bound of a stop (SHUTDOWN_TIMEOUT_MS + 5 s).
  it('ends the process at once, exit 0, saying nothing had started', async () => {
    const child = w!;
    const exited = exitOf(child);
    child.process.kill('SIGTERM');
    const code = await exited;
    expect(code, child.output().slice(-3000)).toBe(0);
    const last = child.output().split('\n').filter((l) => l.startsWith('{')).at(-1) ?? '';
    expect((JSON.parse(last) as { msg?: string }).msg).toMatch(/^stopped: SIGTERM came while the worker was starting/);
    expect(child.output()).not.toContain('Unhandled error event');
  }, 15_000);
});

describe('startWorker in this process', () => {
  let redis: SpawnedRedis;
  let rig: Rig;

  beforeAll(async () => {
    redis = await spawnRedis({ appendonly: false });
    rig = await startRig({ redisUrl: redis.url, tenants: [{ id: 'acme', platform: { kind: 'memory', name: 'acme' } }], env: { OPS_PORT: '0' }, worker: false });
  });
  afterAll(async () => {
    await rig?.close();
    await redis?.stop();
  });

  const workersOn = async (): Promise<number> => (await Promise.all(Object.values(rig.app.queues).map((q) => q.getWorkers()))).flat().length;

  /** Whether a port on 127.0.0.1 is free again (binds it, then lets it go). */
  async function isFree(port: number): Promise<boolean> {
    const server = createServer();
    return new Promise((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
  }

  it('a webhook port taken after the ops server is bound: the ops server is closed again, no BullMQ worker is made', async () => {
    const taken = await takePort();
    try {
      const opsPort = await freePort();
      const start = startWorker(rig.app, { schedules: false, opsPort, webhookPort: taken.port, webhookHost: '127.0.0.1' });
      await expect(start).rejects.toThrow(StartError);
      await expect(start).rejects.toThrow(`WEBHOOK_PORT=${taken.port} is taken by another process`);
      expect(await isFree(opsPort)).toBe(true);
      expect(await workersOn()).toBe(0);
    } finally {
      taken.server.close();
    }
  });

  it('PUBLIC_URL without WEBHOOK_PORT: a start error naming both, nothing bound, no BullMQ worker', async () => {
    const other = await startRig({ redisUrl: redis.url, tenants: [{ id: 'acme', platform: { kind: 'memory', name: 'acme' } }], env: { OPS_PORT: '0', PUBLIC_URL: 'https://hooks.example.com' }, worker: false });
    try {
      const opsPort = await freePort();
      const start = startWorker(other.app, { schedules: false, opsPort });
      await expect(start).rejects.toThrow(StartError);
      await expect(start).rejects.toThrow('PUBLIC_URL=https://hooks.example.com is set but WEBHOOK_PORT is not');
      expect(await isFree(opsPort)).toBe(true);
      expect(await workersOn()).toBe(0);
    } finally {
      await other.close();
    }
  });

  it('API_KEYS without WEBHOOK_PORT: a start error naming both, before anything is written, bound or registered', async () => {
    const key = 'app:Yk3wQz8TnR2vLs6HdJ4mXc9PfA7uGe5B';
    const other = await startRig({ redisUrl: redis.url, tenants: [{ id: 'acme', platform: { kind: 'memory', name: 'acme' } }], env: { OPS_PORT: '0', API_KEYS: key }, worker: false });
    try {
      const opsPort = await freePort();
      // With schedules on: the setting is checked before the start writes its schedulers (the housekeeping one at least).
      const start = startWorker(other.app, { opsPort });
      await expect(start).rejects.toThrow(StartError);
      await expect(start).rejects.toThrow('API_KEYS is set but WEBHOOK_PORT is not');
      await expect(start).rejects.not.toThrow(key.slice(4));
      expect(await other.app.queues.schedule.getJobSchedulers()).toEqual([]);
      expect(await isFree(opsPort)).toBe(true);
      expect(await workersOn()).toBe(0);
    } finally {
      await other.close();
    }
  });

  it('an aborted start opens nothing and throws the abort\'s reason', async () => {
    const abort = new AbortController();
    abort.abort(new StartAborted('SIGTERM'));
    const opsPort = await freePort();
    await expect(startWorker(rig.app, { schedules: false, opsPort, signal: abort.signal })).rejects.toThrow(StartAborted);
    expect(await isFree(opsPort)).toBe(true);
    expect(await workersOn()).toBe(0);
  });
});
