/**
 * Exactly once under crashes: the real worker is killed with SIGKILL at random points of a large sync and
 * restarted; Redis is restarted mid-run; the service injects 5xx, resets, 429s and commit-then-drop.
 * In the end every platform record is in the service once: nothing missing, nothing duplicated.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestSync } from '../../jobs/schedule.js';
import { waitForRun } from '../../jobs/wait.js';
import { writeNdjson } from '../../src/platforms/file/index.js';
import { QUEUES } from '../../src/queues/names.js';
import { sampleData, type SampleData } from '../../src/sample/generate.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { createStateStores } from '../../src/state/index.js';
import { spawnWorker, type ChildWorker } from '../helpers/child-worker.js';
import { spawnRedis, testPrefix, type SpawnedRedis } from '../helpers/redis.js';
import { tenantsJson } from '../helpers/rig.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function expectExactlyOnce(sim: Simulator, clientId: string, data: SampleData): void {
  const stored = sim.data(clientId);
  const contactExt = stored.contacts.map((c) => c.extPlatformId);
  expect(new Set(contactExt).size, 'duplicate contacts').toBe(contactExt.length);
  expect(new Set(contactExt)).toEqual(new Set(data.contacts.map((c) => c.id)));
  const invoiceExt = stored.invoices.map((i) => i.extPlatformId);
  expect(new Set(invoiceExt).size, 'duplicate invoices').toBe(invoiceExt.length);
  expect(new Set(invoiceExt)).toEqual(new Set(data.invoices.filter((i) => i.status !== 'DRAFT').map((i) => i.id)));
  const uuidByExt = new Map(stored.contacts.map((c) => [c.extPlatformId, c.uuid]));
  for (const inv of stored.invoices) {
    const rec = data.invoices.find((i) => i.id === inv.extPlatformId);
    expect(inv.contact.uuid).toBe(uuidByExt.get(rec?.contactId));
  }
}

describe('exactly once under crashes, restarts and service faults', () => {
  let redis: SpawnedRedis;
  let folder: string;
  let sim: Simulator;
  let data: SampleData;
  const prefix = testPrefix('crash');
  let conn: Redis;
  let queue: Queue;
  const workers: ChildWorker[] = [];

  beforeAll(async () => {
    redis = await spawnRedis();
    folder = await mkdtemp(join(tmpdir(), 'cs-crash-'));
    data = sampleData({ contacts: 600, seed: 11, today: new Date('2026-11-20T00:00:00Z'), updatedAt: new Date('2026-11-01T00:00:00Z') });
    await writeNdjson(join(folder, 'contacts.ndjson'), data.contacts);
    await writeNdjson(join(folder, 'invoices.ndjson'), data.invoices);
    await writeNdjson(join(folder, 'payments.ndjson'), data.payments);
    sim = await startSimulator({
      clients: [
        { clientId: 'client-acme', clientSecret: 'secret-acme-x9' },
        { clientId: 'client-beta', clientSecret: 'secret-beta-x9' },
      ],
      faults: { latencyMs: 8, jitterMs: 4 },
    });
    await writeFile(join(folder, 'tenants.json'), tenantsJson([{ id: 'acme', platform: { kind: 'file', path: folder } }]));
    conn = new Redis(redis.url, { maxRetriesPerRequest: null });
    conn.on('error', () => undefined);
    queue = new Queue(QUEUES.sync, { connection: conn, prefix });
  });
  afterAll(async () => {
    for (const w of workers) await w.kill9();
    await queue?.close();
    conn?.disconnect();
    await sim?.close();
    await redis?.stop();
    await rm(folder, { recursive: true, force: true });
  });

  const start = (): ChildWorker => {
    const w = spawnWorker({
      REDIS_URL: redis.url,
      KEY_PREFIX: prefix,
      COLLECTIONS_BASE_URL: sim.baseUrl,
      COLLECTIONS_AUTH_URL: sim.authUrl,
      TENANTS_FILE: join(folder, 'tenants.json'),
      SYNC_CONCURRENCY: '4',
      SYNC_PAGE_SIZE: '50',
      JOB_LOCK_MS: '2000',
      HTTP_REQUEST_TIMEOUT_MS: '8000',
      HTTP_HEADERS_TIMEOUT_MS: '2000',
      SHUTDOWN_TIMEOUT_MS: '10000',
    });
    workers.push(w);
    return w;
  };

  it('survives kill -9 of the worker, a Redis restart and injected faults, and lands every record once', async () => {
    sim.setFaults({ error5xxRate: 0.03, rate429: 0.02, retryAfterS: 1, resetRate: 0.02, dropAfterCommitRate: 0.03 });
    const stores = createStateStores(conn, prefix);
    const { requestedAt } = await requestSync(queue, 'acme', 'full', { trigger: 'test' });
    let worker = start();
    const rand = (() => {
      let s = 12345;
      return () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    })();
    // Four kills at random points, each followed by a restart.
    for (let k = 0; k < 4; k += 1) {
      await sleep(2_500 + rand() * 2_500);
      await worker.kill9();
      worker = start();
    }
    // Redis goes down and comes back (AOF) in the middle of the run.
    await sleep(2_000);
    await redis.restart(500);
    sim.setFaults({ error5xxRate: 0, rate429: 0, resetRate: 0, dropAfterCommitRate: 0 });
    const run = await waitForRun(stores.runs, 'acme', { mode: 'full', requestedAt: requestedAt - 60_000, timeoutMs: 150_000 }).catch(async (err: unknown) => {
      const jobs = await queue.getJobs(['waiting', 'active', 'delayed', 'failed', 'completed']);
      const diag = {
        counts: await queue.getJobCounts(),
        jobs: jobs.map((j) => ({ id: j.id, attempts: j.attemptsMade, stalled: j.stalledCounter, failed: j.failedReason, progress: j.progress })),
        runs: await stores.runs.recent('acme', 5),
        lock: await stores.runLock.holder('acme'),
        output: worker.output().slice(-4000),
      };
      throw new Error(`${String(err)}\n${JSON.stringify(diag, null, 1)}`);
    });
    expect(run.outcome, worker.output()).not.toBe('failed');
    expectExactlyOnce(sim, 'client-acme', data);
    const faults = sim.counters().faultsInjected;
    expect((faults['drop'] ?? 0) + (faults['reset'] ?? 0)).toBeGreaterThan(0);
    await worker.stop();
  }, 240_000);

  it('stops on SIGTERM at a page boundary within the deadline; the next worker finishes the run', async () => {
    const stores = createStateStores(conn, prefix);
    // A new tenant: the worker starts its scheduled first runs and ours; one of them is under way when SIGTERM comes.
    await writeFile(
      join(folder, 'tenants.json'),
      tenantsJson([
        { id: 'acme', platform: { kind: 'file', path: folder } },
        { id: 'beta', platform: { kind: 'file', path: folder } },
      ]),
    );
    const { requestedAt } = await requestSync(queue, 'beta', 'full', { trigger: 'test' });
    const worker = start();
    for (let i = 0; i < 300; i += 1) {
      const r = (await stores.runs.recent('beta', 1))[0];
      if ((r?.counts['created'] ?? 0) > 50) break;
      await sleep(100);
    }
    const stopping = Date.now();
    await worker.stop();
    expect(worker.process.exitCode, worker.output()).toBe(0);
    expect(Date.now() - stopping).toBeLessThan(25_000);
    const unfinished = (await stores.runs.recent('beta', 1))[0];
    expect(unfinished?.outcome, 'the run was interrupted, not finished').toBeUndefined();
    const next = start();
    const run = await waitForRun(stores.runs, 'beta', { mode: 'full', requestedAt, timeoutMs: 120_000 });
    expect(run.outcome).toBe('succeeded');
    expectExactlyOnce(sim, 'client-beta', data);
    await next.stop();
  }, 180_000);
});
