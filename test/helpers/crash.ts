/**
 * The crash scenario of test/sync/crash.test.ts, shared by the single-Redis and the Redis Cluster runs (issue 13
 * item 5): a sample data set in files, the simulator, real worker processes (child-worker.ts) killed with SIGKILL
 * mid-run, Redis (or one cluster master) restarted mid-run, faults injected by the simulator's script; in the end
 * every platform record is in the service once.
 *
 * Deterministic by construction: each kill and the Redis restart wait for an observable point (the simulator has
 * committed more writes since the worker started), never for wall-clock time, and the faults the scenario names
 * are injected by the simulator's script, so they happen in every run.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { expect } from 'vitest';
import { writeNdjson } from '../../src/platforms/file/index.js';
import { QUEUES, requestSync } from '../../src/queues/index.js';
import { queuePrefix } from '../../src/redis/keys.js';
import { sampleData, type SampleData } from '../../src/sample/generate.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { createStateStores, waitForRun, type StateStores } from '../../src/state/index.js';
import { spawnWorker, type ChildWorker } from './child-worker.js';
import { tenantsJson } from './rig.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function expectExactlyOnce(sim: Simulator, clientId: string, data: SampleData): void {
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

export interface CrashRig {
  readonly sim: Simulator;
  readonly data: SampleData;
  readonly folder: string;
  readonly queue: Queue;
  readonly stores: StateStores;
  /** Starts a worker process on this rig's Redis, tenants file and simulator (`env` on top). */
  start(env?: Record<string, string>): ChildWorker;
  /** What every worker of the current test printed, newest last: attached to any failure. */
  outputs(): string;
  /** Polls `cond` until it holds; on timeout fails with `what` and every worker's output. */
  until(what: string, cond: () => Promise<boolean> | boolean, timeoutMs?: number): Promise<void>;
  /** Waits until the service has committed `n` more writes than now (so the worker is mid-run, requests in flight). */
  writesAhead(n: number, what: string): Promise<void>;
  /** Kills every worker of the current test (afterEach: a failed test must not leave one to run the next test's tenant). */
  killWorkers(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The rig: `redisEnv` points the workers at Redis (REDIS_URL or REDIS_CLUSTER_NODES), `conn` is this process's
 * connection to the same Redis (queue, stores).
 */
export async function openCrashRig(o: { redisEnv: Record<string, string>; conn: Redis; prefix: string }): Promise<CrashRig> {
  const folder = await mkdtemp(join(tmpdir(), 'cs-crash-'));
  const data = sampleData({ contacts: 600, seed: 11, today: new Date('2026-11-20T00:00:00Z'), updatedAt: new Date('2026-11-01T00:00:00Z') });
  await writeNdjson(join(folder, 'contacts.ndjson'), data.contacts);
  await writeNdjson(join(folder, 'invoices.ndjson'), data.invoices);
  await writeNdjson(join(folder, 'payments.ndjson'), data.payments);
  const sim = await startSimulator({
    clients: [
      { clientId: 'client-acme', clientSecret: 'secret-acme-x9' },
      { clientId: 'client-beta', clientSecret: 'secret-beta-x9' },
    ],
    faults: { latencyMs: 8, jitterMs: 4 },
  });
  const queue = new Queue(QUEUES.sync, { connection: o.conn, prefix: queuePrefix(o.prefix, QUEUES.sync) });
  queue.on('error', () => undefined); // Redis is restarted on purpose
  const stores = createStateStores(o.conn, o.prefix);
  let workers: ChildWorker[] = [];
  const outputs = (): string =>
    workers.map((w, i) => `--- worker ${i + 1} (pid ${w.process.pid}, exit ${w.process.exitCode ?? w.process.signalCode}) ---\n${w.output().slice(-3_000)}`).join('\n');
  const until: CrashRig['until'] = async (what, cond, timeoutMs = 90_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await cond())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${outputs()}`);
      await sleep(25);
    }
  };
  return {
    sim,
    data,
    folder,
    queue,
    stores,
    start(env = {}) {
      const w = spawnWorker({
        ...o.redisEnv,
        KEY_PREFIX: o.prefix,
        COLLECTIONS_BASE_URL: sim.baseUrl,
        COLLECTIONS_AUTH_URL: sim.authUrl,
        TENANTS_FILE: join(folder, 'tenants.json'),
        SYNC_CONCURRENCY: '4',
        SYNC_PAGE_SIZE: '50',
        JOB_LOCK_MS: '2000',
        HTTP_REQUEST_TIMEOUT_MS: '8000',
        HTTP_HEADERS_TIMEOUT_MS: '2000',
        SHUTDOWN_TIMEOUT_MS: '10000',
        WORKER_WEDGE_S: '10',
        ...env,
      });
      workers.push(w);
      return w;
    },
    outputs,
    until,
    async writesAhead(n, what) {
      const target = sim.counters().writesCommitted + n;
      await until(`${what}: ${n} more committed writes`, () => sim.counters().writesCommitted >= target);
    },
    async killWorkers() {
      await Promise.all(workers.map((w) => w.kill9()));
      // CRASH_LOG_DIR: every worker's whole output is kept there after each test (to study a wedge or a heal).
      if (process.env['CRASH_LOG_DIR']) {
        await writeFile(join(process.env['CRASH_LOG_DIR'], `run-${process.pid}-${Date.now()}.log`), workers.map((w, i) => `--- worker ${i + 1} ---\n${w.output()}`).join('\n'));
      }
      workers = [];
    },
    async close() {
      await queue.close();
      await sim.close();
      await rm(folder, { recursive: true, force: true });
    },
  };
}

/** Appends every worker's output to a failure that does not carry it yet. */
export function withOutputs(rig: CrashRig, err: unknown): unknown {
  if (err instanceof Error && !err.message.includes('--- worker 1')) err.message += `\n${rig.outputs()}`;
  return err;
}

/**
 * Tenant acme's full run under four kill -9 of the worker (each after a seeded number of committed writes), one
 * restart of Redis (`restartRedis`: the server, or one master of a cluster) and scripted service faults: every
 * record lands once, the run was resumed after a kill, each scripted fault happened.
 */
export async function killsAndRestartLandEveryRecordOnce(
  rig: CrashRig,
  restartRedis: () => Promise<void>,
): Promise<void> {
  const { sim, queue, stores } = rig;
  await writeFile(join(rig.folder, 'tenants.json'), tenantsJson([{ id: 'acme', platform: { kind: 'file', path: rig.folder } }]));
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
  let worker = rig.start();
  try {
    const rand = (() => {
      let s = 12345;
      return () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    })();
    // Four kills, each after the new worker has committed a seeded number of writes (requests are in flight).
    for (let k = 0; k < 4; k += 1) {
      await rig.writesAhead(60 + Math.floor(rand() * 120), `kill ${k + 1}`);
      await worker.kill9();
      // Invoices whose answer is lost after the commit, once the run is into them; more resets.
      if (k === 1) sim.setFaults({ script: [{ route: 'POST /invoice/create-update', fault: 'drop', count: 3 }, { fault: 'reset', count: 2 }] });
      worker = rig.start();
    }
    // Redis goes down and comes back (AOF) in the middle of the run.
    await rig.writesAhead(80, 'the Redis restart');
    // The same worker lives through it: one left wedged by the restart replaces its BullMQ worker in-process
    // (decision 46; WORKER_WEDGE_S is short here).
    await restartRedis();
    sim.setFaults({ error5xxRate: 0, rate429: 0, resetRate: 0, dropAfterCommitRate: 0, script: [] });
    const run = await waitForRun(stores.runs, 'acme', { mode: 'full', requestedAt: requestedAt - 60_000, timeoutMs: 150_000 }).catch(async (err: unknown) => {
      const jobs = await queue.getJobs(['waiting', 'active', 'delayed', 'failed', 'completed']);
      const diag = {
        counts: await queue.getJobCounts(),
        jobs: jobs.map((j) => ({ id: j.id, attempts: j.attemptsMade, stalled: j.stalledCounter, failed: j.failedReason, progress: j.progress })),
        runs: await stores.runs.recent('acme', 5),
        lock: await stores.runLock.holder('acme'),
      };
      throw new Error(`${String(err)}\n${JSON.stringify(diag, null, 1)}\n${rig.outputs()}`);
    });
    expect(run.outcome, `${JSON.stringify(run.errors)}\n${rig.outputs()}`).not.toBe('failed');
    expectExactlyOnce(sim, 'client-acme', rig.data);
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
    throw withOutputs(rig, err);
  }
}
