/**
 * The worker process while its Redis is down (issue 12): SIGTERM still ends it, with one clear last line.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnWorker, type ChildWorker } from '../helpers/child-worker.js';
import { freePort, spawnRedis, testPrefix, type SpawnedRedis } from '../helpers/redis.js';
import { tenantsJson } from '../helpers/rig.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` until it holds (the test's own timeout bounds the wait). */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await sleep(25);
}

function lines(output: string): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('worker with Redis down', () => {
  let redis: SpawnedRedis;
  let folder: string;
  let worker: ChildWorker | undefined;

  beforeAll(async () => {
    redis = await spawnRedis({ appendonly: false });
    folder = await mkdtemp(join(tmpdir(), 'cs-outage-'));
    await writeFile(join(folder, 'tenants.json'), tenantsJson([{ id: 'acme', platform: { kind: 'memory' } }]));
  });
  afterAll(async () => {
    await worker?.kill9();
    await redis?.stop();
    await rm(folder, { recursive: true, force: true });
  });

  it('an outage is logged once when it starts and once when it ends; /readyz says 503 meanwhile', async () => {
    const port = await freePort();
    const w = spawnWorker({
      OPS_PORT: String(port),
      REDIS_URL: redis.url,
      KEY_PREFIX: testPrefix('outage'),
      TENANTS_FILE: join(folder, 'tenants.json'),
      LOG_LEVEL: 'info',
      SHUTDOWN_TIMEOUT_MS: '2000',
    });
    worker = w;
    await until(() => w.output().includes('"worker started"'));
    const readyz = async (): Promise<number> => (await fetch(`http://127.0.0.1:${port}/readyz`)).status;
    expect(await readyz()).toBe(200);
    const before = lines(w.output()).length;
    await redis.kill();
    // Let the outage last: three readiness probes (each waits up to 1 s for Redis) that answer 503.
    for (let seen = 0; seen < 3; ) if ((await readyz()) === 503) seen += 1;
    await redis.start();
    await until(() => w.output().includes('"Redis reachable again"'));
    while ((await readyz()) !== 200) await sleep(100);
    await w.stop();
    const during = lines(w.output()).slice(before);
    const msgs = during.map((l) => String(l['msg']));
    const report = msgs.join('\n');
    expect(msgs.filter((m) => m.startsWith('Redis unreachable')), report).toHaveLength(1);
    expect(msgs.filter((m) => m === 'Redis reachable again'), report).toHaveLength(1);
    // Nothing per error: no 'worker error', 'queue error', 'redis connection error', 'auth: subscriber connection
    // error' for the outage, and no line about it twice (a part may say once what it does meanwhile).
    const about = during.filter((l) => new RegExp(`:${redis.port}\\b|Connection is closed`).test(JSON.stringify(l['err'] ?? ''))).map((l) => String(l['msg']));
    expect(about.filter((m) => /^(worker error|queue error|redis connection error|auth: subscriber connection error)$/.test(m)), report).toEqual([]);
    expect(new Set(about).size, report).toBe(about.length);
    expect(about.length, report).toBeLessThanOrEqual(3);
    const up = during.find((l) => l['msg'] === 'Redis reachable again');
    expect(up?.['errors']).toBeGreaterThan(0);
  }, 120_000);

  it('SIGTERM while Redis is unreachable ends the process, and the last line says how it stopped', async () => {
    await redis.start();
    const w = spawnWorker({
      REDIS_URL: redis.url,
      KEY_PREFIX: testPrefix('outage'),
      TENANTS_FILE: join(folder, 'tenants.json'),
      LOG_LEVEL: 'info',
      SHUTDOWN_TIMEOUT_MS: '2000',
    });
    worker = w;
    const exited = new Promise<number | null>((resolve) => w.process.once('exit', (code) => resolve(code)));
    await until(() => w.output().includes('"worker started"'));
    await redis.kill();
    await until(() => /ECONNREFUSED|redis (connection|unreachable)|Redis is down/i.test(w.output()));
    w.process.kill('SIGTERM');
    const code = await exited;
    const last = lines(w.output()).at(-1);
    expect(last?.['msg'], w.output().slice(-3000)).toMatch(/^stopped/);
    expect(code).not.toBeNull();
  }, 120_000);

  it('SIGTERM while the worker waits for Redis at start ends the process too', async () => {
    const w = spawnWorker({
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      KEY_PREFIX: testPrefix('outage'),
      TENANTS_FILE: join(folder, 'tenants.json'),
      LOG_LEVEL: 'info',
      SHUTDOWN_TIMEOUT_MS: '1000',
    });
    worker = w;
    const exited = new Promise<number | null>((resolve) => w.process.once('exit', (code) => resolve(code)));
    await until(() => w.output().includes('"waiting for Redis"'));
    w.process.kill('SIGTERM');
    const code = await exited;
    expect(lines(w.output()).at(-1)?.['msg'], w.output().slice(-3000)).toMatch(/^stopped: SIGTERM came while the worker was starting/);
    // Nothing had started: the wait for Redis ends at once and the stop is clean (issue 28, decision 101).
    expect(code).toBe(0);
    expect(w.output()).not.toContain('Unhandled error event');
  }, 120_000);
});
