/**
 * Exactly once under crashes: the real worker is killed with SIGKILL while requests are in flight and
 * restarted; Redis is restarted mid-run; the service injects 5xx, resets, 429s and commit-then-drop.
 * In the end every platform record is in the service once: nothing missing, nothing duplicated.
 *
 * Deterministic by construction: each kill and the Redis restart wait for an observable point (the
 * simulator has committed more writes since the worker started), never for wall-clock time, and the faults
 * the test names are injected by the simulator's script, so they happen in every run.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { writeNdjson } from '../../src/platforms/file/index.js';
import { QUEUES, requestSync } from '../../src/queues/index.js';
import { sampleData, type SampleData } from '../../src/sample/generate.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { createStateStores, waitForRun, type StateStores } from '../../src/state/index.js';
import { spawnWorker, type ChildWorker } from '../helpers/child-worker.js';
import { spawnRedis, testPrefix, type SpawnedRedis } from '../helpers/redis.js';
import { tenantsJson } from '../helpers/rig.js';
import { queuePrefix } from '../../src/redis/keys.js';

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
  let stores: StateStores;
  /** Every worker of the current test, in start order, so a failure shows what each one printed. */
  let workers: ChildWorker[] = [];

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
    conn = new Redis(redis.url, { maxRetriesPerRequest: null });
    conn.on('error', () => undefined);
    queue = new Queue(QUEUES.sync, { connection: conn, prefix: queuePrefix(prefix, QUEUES.sync) });
    queue.on('error', () => undefined); // Redis is restarted on purpose
    stores = createStateStores(conn, prefix);
  });
  afterEach(async () => {
    // A failed test must not leave a worker behind to run the next test's tenant.
    await Promise.all(workers.map((w) => w.kill9()));
    workers = [];
  });
  afterAll(async () => {
    await queue?.close();
    conn?.disconnect();
    await sim?.close();
    await redis?.stop();
    await rm(folder, { recursive: true, force: true });
  });

  const start = (env: Record<string, string> = {}): ChildWorker => {
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
      ...env,
    });
    workers.push(w);
    return w;
  };

  /** What every worker of this test printed, newest last: attached to any failure. */
  const outputs = (): string => workers.map((w, i) => `--- worker ${i + 1} (pid ${w.process.pid}, exit ${w.process.exitCode ?? w.process.signalCode}) ---\n${w.output().slice(-3_000)}`).join('\n');

  /** Polls `cond` until it holds; on timeout fails with `what` and every worker's output. */
  const until = async (what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 90_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!(await cond())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${outputs()}`);
      await sleep(25);
    }
  };

  /** Waits until the service has committed `n` more writes than now (so the worker is mid-run, requests in flight). */
  const writesAhead = async (n: number, what: string): Promise<void> => {
    const target = sim.counters().writesCommitted + n;
    await until(`${what}: ${n} more committed writes`, () => sim.counters().writesCommitted >= target);
  };

  it('survives kill -9 of the worker, a Redis restart and injected faults, and lands every record once', async () => {
    await writeFile(join(folder, 'tenants.json'), tenantsJson([{ id: 'acme', platform: { kind: 'file', path: folder } }]));
    // Scripted faults: contact creates whose answer is lost after the commit (the intent path), resets and 5xx,
    // then random faults at low rates on top. The script is consumed first, so each kind happens in every run.
    sim.setFaults({
      error5xxRate: 0.02,
      rate429: 0.01,
      retryAfterS: 1,
      resetRate: 0.01,
      dropAfterCommitRate: 0.01,
      script: [
        { route: 'POST /contact', fault: 'drop', count: 3 },
        { route: 'POST /contact', fault: 'reset', count: 2 },
        { route: 'POST /contact', fault: '500', count: 2 },
        { route: 'PUT /contact', fault: 'drop', count: 1 },
        { fault: '503', count: 2 },
        { fault: '429', count: 1, retryAfterS: 1 },
      ],
    });
    const { requestedAt, jobId } = await requestSync(queue, 'acme', 'full', { trigger: 'test' });
    let worker = start();
    try {
      const rand = (() => {
        let s = 12345;
        return () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
      })();
      // Four kills, each after the new worker has committed a seeded number of writes (requests are in flight).
      for (let k = 0; k < 4; k += 1) {
        await writesAhead(60 + Math.floor(rand() * 120), `kill ${k + 1}`);
        await worker.kill9();
        // Invoices whose answer is lost after the commit, once the run is into them; more resets.
        if (k === 1) sim.setFaults({ script: [{ route: 'POST /invoice/create-update', fault: 'drop', count: 3 }, { fault: 'reset', count: 2 }] });
        worker = start();
      }
      // Redis goes down and comes back (AOF) in the middle of the run.
      await writesAhead(80, 'the Redis restart');
      await redis.restart(500);
      sim.setFaults({ error5xxRate: 0, rate429: 0, resetRate: 0, dropAfterCommitRate: 0, script: [] });
      const run = await waitForRun(stores.runs, 'acme', { mode: 'full', requestedAt: requestedAt - 60_000, timeoutMs: 150_000 }).catch(async (err: unknown) => {
        const jobs = await queue.getJobs(['waiting', 'active', 'delayed', 'failed', 'completed']);
        const diag = {
          counts: await queue.getJobCounts(),
          jobs: jobs.map((j) => ({ id: j.id, attempts: j.attemptsMade, stalled: j.stalledCounter, failed: j.failedReason, progress: j.progress })),
          runs: await stores.runs.recent('acme', 5),
          lock: await stores.runLock.holder('acme'),
        };
        throw new Error(`${String(err)}\n${JSON.stringify(diag, null, 1)}\n${outputs()}`);
      });
      expect(run.outcome, outputs()).not.toBe('failed');
      expectExactlyOnce(sim, 'client-acme', data);
      // The kills landed mid-run: the job was taken over after a stall (or retried), not run once from start to end.
      const job = await queue.getJob(jobId ?? '');
      expect((job?.stalledCounter ?? 0) + (job?.attemptsMade ?? 0), 'the run was resumed after a kill').toBeGreaterThan(0);
      const faults = sim.counters().faultsInjected;
      expect(faults['drop'] ?? 0, 'writes committed with their answer lost').toBeGreaterThanOrEqual(6);
      expect(faults['reset'] ?? 0, 'connection resets').toBeGreaterThanOrEqual(4);
      expect((faults['500'] ?? 0) + (faults['503'] ?? 0), '5xx answers').toBeGreaterThanOrEqual(4);
      expect(faults['429'] ?? 0, '429 answers').toBeGreaterThanOrEqual(1);
      await worker.stop();
    } catch (err) {
      if (err instanceof Error && !err.message.includes('--- worker 1')) err.message += `\n${outputs()}`;
      throw err;
    }
  }, 240_000);

  it('stops on SIGTERM at a page boundary within the deadline; the next worker finishes the run', async () => {
    // A tenant of its own, in the tenants file before any worker of this test starts.
    await writeFile(join(folder, 'tenants.json'), tenantsJson([{ id: 'beta', platform: { kind: 'file', path: folder } }]));
    const { requestedAt } = await requestSync(queue, 'beta', 'full', { trigger: 'test' });
    const worker = start({ LOG_LEVEL: 'info' });
    try {
      // SIGTERM only once this worker is up and its run of beta is pushing records.
      await until('the worker to start', () => worker.output().includes('"msg":"worker started"'));
      await until('the run of beta to push records', async () => ((await stores.runs.recent('beta', 1))[0]?.counts['created'] ?? 0) > 50);
      const stopping = Date.now();
      await worker.stop();
      expect(worker.process.signalCode, outputs()).toBeNull();
      expect(worker.process.exitCode, outputs()).toBe(0);
      expect(worker.output(), 'one clear last line').toMatch(/"msg":"stopped"/);
      expect(Date.now() - stopping).toBeLessThan(25_000);
      const unfinished = (await stores.runs.recent('beta', 1))[0];
      expect(unfinished?.outcome, 'the run was interrupted, not finished').toBeUndefined();
      const next = start();
      const run = await waitForRun(stores.runs, 'beta', { mode: 'full', requestedAt, timeoutMs: 120_000 });
      expect(run.outcome, outputs()).toBe('succeeded');
      expectExactlyOnce(sim, 'client-beta', data);
      await next.stop();
    } catch (err) {
      if (err instanceof Error && !err.message.includes('--- worker 1')) err.message += `\n${outputs()}`;
      throw err;
    }
  }, 180_000);
});
