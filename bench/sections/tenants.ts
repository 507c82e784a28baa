/**
 * Tenants (issue 40): many small file tenants (about 17 records each, one data folder shared) on one worker process
 * that puts their schedules in place as `collections-sync worker` does (BENCH_SCHEDULES=1: each tenant's two `every`
 * schedulers fire at once, so every tenant's first syncs start with the worker), the service at `latencyMs`. For each
 * size: the time from the process's start to ready (every schedule in place, job workers running), every tenant's
 * first sync done (from ready; the median and the longest wait of a tenant), the worker's RSS after a full collection
 * once all are done and again after TENANT_IDLE_S, then a restart: its ready time and the schedulers it wrote (ideal
 * 0). The slope of the idle RSS over the sizes is the cost of one more tenant. Then one tenant's Redis after its 20th
 * run and `moreRuns` runs later: `used_memory` (Redis's bookkeeping released) and MEMORY USAGE by key kind.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeDataSet } from '../data.js';
import { clientIdOf, deploy, openClusterSite, secretOf, type Bench, type RedisSite } from '../harness.js';
import { sendAll } from '../../src/redis/batch.js';
import { spawnBenchWorker, type BenchWorker } from '../workers.js';
import { createStateStores } from '../../src/state/index.js';
import { bytesByKind, releaseBookkeeping, usedMemory } from './redis-bytes.js';

export interface TenantsConfig {
  /** Tenants on the worker, one deployment each. */
  sizes: number[];
  /** Contacts per tenant (about 4.75 records each: 4 gives about 17-19 records). */
  contacts: number;
  latencyMs: number;
  /** TENANT_IDLE_S of the worker: the idle RSS is read this long (and 3 s more) after the first syncs. */
  idleS: number;
  /** The first syncs of the largest size must end within this (else the section fails). */
  firstSyncsTimeoutS: number;
  /** Runs of one tenant before the first Redis reading, and after it. */
  firstRuns: number;
  moreRuns: number;
  /**
   * Fleets after the sizes: `tenants` on `workers` processes sharing one Redis (`site` single) or the three-master
   * Cluster, every process given every tenant (BullMQ's queue spreads the runs, nothing coordinates them).
   */
  fleets: FleetConfig[];
}

export interface FleetConfig {
  tenants: number;
  workers: number;
  site: 'single' | 'cluster';
}

export interface FleetRow extends FleetConfig {
  /** First syncs done within the section's time (all of them, unless the fleet ran out of time). */
  firstSyncsDone: number;
  /** From the processes' start (together) to the last one ready; schedulers the fleet wrote (shared by the processes: perWorker). */
  readyS: number;
  schedulerWrites: number;
  firstSyncsS: number;
  medianWaitS: number;
  maxWaitS: number;
  /** Each process: RSS once every first sync is done and after TENANT_IDLE_S; CPU over the first syncs (the spread of the work). */
  /**
   * Also each process's CPU from its start to ready, and at the restart: on a machine (or core) of its own a worker is
   * ready about that long after its start, where on this machine the processes share two cores with Redis.
   */
  perWorker: { rssAfterSyncsMb: number; rssIdleMb: number; peakRssMb: number; liveHeapMb: number; cpuS: number; schedulerWrites: number; readyCpuS: number; restartCpuS: number }[];
  /** The restart of every process, nothing changed: the last one ready, schedulers written (ideal 0). */
  restartReadyS: number;
  restartSchedulerWrites: number;
}

export interface TenantsRow {
  tenants: number;
  /** From the process's start (fork) to ready: schedules in place, job workers running. */
  readyS: number;
  /** Of which: modules loaded, the app made (tenants read), the worker started (schedules, job workers); and CPU to ready. */
  loadS: number;
  appS: number;
  startS: number;
  readyCpuS: number;
  /** From ready to the last tenant's first sync done. */
  firstSyncsS: number;
  /** The worker's CPU from ready to the last first sync, per tenant (ms): what a first sync costs the worker. */
  cpuMsPerFirstSync: number;
  /** A tenant's wait from ready to its first sync done: median and longest. */
  medianWaitS: number;
  maxWaitS: number;
  /** RSS after a full collection, once every first sync is done; then after TENANT_IDLE_S more; peak over the process. */
  rssAfterSyncsMb: number;
  rssIdleMb: number;
  peakRssMb: number;
  liveHeapIdleMb: number;
  /** Idle, after the same collection: the heap V8 keeps (live and free) and the memory outside it. */
  heapTotalIdleMb: number;
  externalIdleMb: number;
  /** Schedulers written at the first start (ideal: two per tenant, one per client, housekeeping). */
  schedulerWrites: number;
  /** The restart with nothing changed: its ready time and the schedulers it wrote (ideal 0). */
  restartReadyS: number;
  restartStartS: number;
  restartCpuS: number;
  restartSchedulerWrites: number;
  restartRssMb: number;
  /** Redis `used_memory` (bookkeeping released) once every first sync is done, less before the start, per tenant (KB). */
  redisKbPerTenant: number;
}

export interface TenantsRedis {
  records: number;
  /** used_memory after `firstRuns` runs and `moreRuns` more (bookkeeping released), and its growth. */
  afterFirstKb: number;
  afterMoreKb: number;
  growthKb: number;
  /** The tenant's run history (runs:*) and the queues' keys, MEMORY USAGE, after each. */
  runsKb: [number, number];
  queuesKb: [number, number];
  /**
   * Every key of the tenant's own (its hash tag: run history, cursors, id maps, ...), MEMORY USAGE, after each, and
   * the growth: what its runs add to Redis once the fleet's buffers are full (issue 40's bound: 16 KB).
   */
  ownKb: [number, number];
  ownGrowthKb: number;
  /** The fleet's keys (queues' jobs and event streams, the event log): bounded in count fleet-wide, filled here by this tenant alone. */
  fleetGrowthKb: number;
}

export interface TenantsResult {
  config: TenantsConfig;
  rows: TenantsRow[];
  /** Least-squares slope of rssIdleMb over the sizes (KB per tenant), and of the last two sizes. */
  slopeKbPerTenant: number;
  lastSlopeKbPerTenant: number;
  redis: TenantsRedis;
  fleets: FleetRow[];
}

const round = (n: number, d = 1): number => Math.round(n * 10 ** d) / 10 ** d;
const mb = (bytes: number): number => round(bytes / 1024 / 1024);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function slope(points: [number, number][]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, p) => s + p[0], 0) / n;
  const my = points.reduce((s, p) => s + p[1], 0) / n;
  const num = points.reduce((s, p) => s + (p[0] - mx) * (p[1] - my), 0);
  const den = points.reduce((s, p) => s + (p[0] - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

let sizesRun = 0;

async function oneSize(bench: Bench, cfg: TenantsConfig, folder: string, n: number): Promise<TenantsRow> {
  sizesRun += 1;
  const prefix = `{bench-tenants-${n}-${sizesRun}}`;
  const ids = Array.from({ length: n }, (_, i) => `t${sizesRun}-${i}`);
  const tenantsFile = await writeTenantsFile(bench, `many-${sizesRun}`, ids, folder);
  const env = workerEnv(bench, bench.single, prefix, tenantsFile, cfg);
  await releaseBookkeeping(bench.admin);
  const usedBefore = await usedMemory(bench.admin);
  const start = async (): Promise<{ worker: BenchWorker; readyMs: number; readyAt: number }> => {
    const t0 = performance.now();
    const worker = await spawnBenchWorker(env, 300_000);
    return { worker, readyMs: performance.now() - t0, readyAt: Date.now() };
  };
  const first = await start();
  let worker = first.worker;
  const atReady = await worker.stats();
  try {
    const done = await firstSyncsDone(bench.single, prefix, ids, cfg.firstSyncsTimeoutS);
    const waits = [...done.values()].map((at) => (at - first.readyAt) / 1000).sort((a, b) => a - b);
    const afterSyncs = await worker.stats();
    await releaseBookkeeping(bench.admin);
    const usedAfter = await usedMemory(bench.admin);
    await sleep((cfg.idleS + 3) * 1000);
    const idle = await worker.stats();
    await worker.stop();
    const again = await start();
    worker = again.worker;
    const restart = await worker.stats();
    const t = first.worker.timings ?? { loadedMs: 0, appMs: 0, readyMs: 0 };
    const t2 = again.worker.timings ?? { loadedMs: 0, appMs: 0, readyMs: 0 };
    const cpuS = (s: { cpuUserUs: number; cpuSystemUs: number }): number => round((s.cpuUserUs + s.cpuSystemUs) / 1e6, 2);
    const row: TenantsRow = {
      tenants: n,
      readyS: round(first.readyMs / 1000, 2),
      loadS: round(t.loadedMs / 1000, 2),
      appS: round((t.appMs - t.loadedMs) / 1000, 2),
      startS: round((t.readyMs - t.appMs) / 1000, 2),
      readyCpuS: cpuS(atReady),
      firstSyncsS: round(waits[waits.length - 1] ?? 0),
      cpuMsPerFirstSync: round((cpuS(afterSyncs) - cpuS(atReady)) * 1000 / n, 2),
      medianWaitS: round(waits[Math.floor(waits.length / 2)] ?? 0),
      maxWaitS: round(waits[waits.length - 1] ?? 0),
      rssAfterSyncsMb: mb(afterSyncs.rssBytes),
      rssIdleMb: mb(idle.rssBytes),
      peakRssMb: mb(idle.maxRssKb * 1024),
      liveHeapIdleMb: mb(idle.heapUsedBytes),
      heapTotalIdleMb: mb(idle.heapTotalBytes ?? 0),
      externalIdleMb: mb(idle.externalBytes ?? 0),
      schedulerWrites: afterSyncs.schedulerWrites ?? -1,
      restartReadyS: round(again.readyMs / 1000, 2),
      restartStartS: round((t2.readyMs - t2.appMs) / 1000, 2),
      restartCpuS: cpuS(restart),
      restartSchedulerWrites: restart.schedulerWrites ?? -1,
      restartRssMb: mb(restart.rssBytes),
      redisKbPerTenant: round((usedAfter - usedBefore) / 1024 / n, 2),
    };
    bench.log(
      `  ${n} tenants: ready ${row.readyS} s (load ${row.loadS}, app ${row.appS}, start ${row.startS} s; ${row.readyCpuS} s CPU; ${row.schedulerWrites} schedulers written), first syncs done ${row.firstSyncsS} s later (median wait ${row.medianWaitS} s; ${row.cpuMsPerFirstSync} ms of worker CPU each), ` +
        `RSS ${row.rssAfterSyncsMb} MB after, ${row.rssIdleMb} MB idle (peak ${row.peakRssMb}, live heap ${row.liveHeapIdleMb} of ${row.heapTotalIdleMb}, external ${row.externalIdleMb}); restart ready ${row.restartReadyS} s (start ${row.restartStartS} s, ${row.restartCpuS} s CPU), ${row.restartSchedulerWrites} schedulers written, RSS ${row.restartRssMb} MB; Redis ${row.redisKbPerTenant} KB a tenant`,
    );
    return row;
  } finally {
    await worker.stop();
  }
}

/** Each tenant's first finished run (its last-success mark, as the worker stamped it), polled until every one is there. */
async function firstSyncsDone(site: RedisSite, prefix: string, ids: readonly string[], timeoutS: number, options: { partial?: boolean } = {}): Promise<Map<string, number>> {
  const stores = createStateStores(site.admin, prefix);
  const done = new Map<string, number>();
  const deadline = Date.now() + timeoutS * 1000;
  while (done.size < ids.length) {
    if (Date.now() > deadline) {
      if (options.partial) return done;
      throw new Error(`tenants: ${ids.length - done.size} of ${ids.length} first syncs not done within ${timeoutS} s`);
    }
    // The worker stamps each finish: polling less often costs no accuracy, and 20,000 GETs a second cost the machine.
    await sleep(Math.max(500, ids.length / 5));
    const left = ids.filter((id) => !done.has(id));
    for (let i = 0; i < left.length; i += 2_000) {
      const batch = left.slice(i, i + 2_000);
      const replies = await sendAll(site.admin, batch.map((id) => ['GET', stores.runs.lastSuccessKey(id)] as const));
      replies.forEach((v, j) => {
        if (typeof v === 'string') done.set(batch[j]!, Number(v));
      });
    }
  }
  return done;
}

/** A tenants worker's settings: schedules put in place as `collections-sync worker` does, their writes counted. */
function workerEnv(bench: Bench, site: RedisSite, prefix: string, tenantsFile: string, cfg: TenantsConfig): Record<string, string> {
  return {
    ...site.env,
    KEY_PREFIX: prefix,
    COLLECTIONS_BASE_URL: bench.sim.baseUrl,
    COLLECTIONS_AUTH_URL: bench.sim.authUrl,
    TENANTS_FILE: tenantsFile,
    TENANT_IDLE_S: String(cfg.idleS),
    BENCH_SCHEDULES: '1',
    BENCH_COUNT_SCHEDULERS: '1',
    LOG_LEVEL: 'info',
  };
}

async function writeTenantsFile(bench: Bench, name: string, ids: readonly string[], folder: string): Promise<string> {
  const tenantsFile = join(bench.root, `tenants-${name}.json`);
  await writeFile(tenantsFile, JSON.stringify({ tenants: ids.map((id) => ({ id, collections: { clientId: clientIdOf(id), clientSecret: secretOf(id) }, platform: { kind: 'file', path: folder } })) }));
  for (const id of ids) bench.sim.setClient(clientIdOf(id), secretOf(id));
  return tenantsFile;
}

/** `f.tenants` on `f.workers` processes started together on one Redis or the Cluster: the per-process figures of a fleet. */
async function oneFleet(bench: Bench, cfg: TenantsConfig, folder: string, f: FleetConfig): Promise<FleetRow> {
  sizesRun += 1;
  const prefix = `{bench-fleet-${f.tenants}-${sizesRun}}`;
  const ids = Array.from({ length: f.tenants }, (_, i) => `f${sizesRun}-${i}`);
  const tenantsFile = await writeTenantsFile(bench, `fleet-${sizesRun}`, ids, folder);
  const cluster = f.site === 'cluster' ? await openClusterSite() : undefined;
  const site = cluster ?? bench.single;
  const env = workerEnv(bench, site, prefix, tenantsFile, cfg);
  const startAll = async (): Promise<{ workers: BenchWorker[]; readyMs: number; readyAt: number }> => {
    const t0 = performance.now();
    const workers = await Promise.all(Array.from({ length: f.workers }, () => spawnBenchWorker(env, 600_000)));
    return { workers, readyMs: performance.now() - t0, readyAt: Date.now() };
  };
  let workers: BenchWorker[] = [];
  try {
    const first = await startAll();
    workers = first.workers;
    const atReady = await Promise.all(workers.map((w) => w.stats()));
    // A fleet that has not finished in time is reported with what it did (its row says how many first syncs were done).
    const done = await firstSyncsDone(site, prefix, ids, cfg.firstSyncsTimeoutS * Math.max(1, f.tenants / 10_000), { partial: true });
    const waits = [...done.values()].map((at) => (at - first.readyAt) / 1000).sort((a, b) => a - b);
    const afterSyncs = await Promise.all(workers.map((w) => w.stats()));
    await sleep((cfg.idleS + 3) * 1000);
    const idle = await Promise.all(workers.map((w) => w.stats()));
    await Promise.all(workers.map((w) => w.stop()));
    const again = await startAll();
    workers = again.workers;
    const restart = await Promise.all(workers.map((w) => w.stats()));
    const row: FleetRow = {
      ...f,
      firstSyncsDone: done.size,
      readyS: round(first.readyMs / 1000, 2),
      schedulerWrites: afterSyncs.reduce((s, w) => s + (w.schedulerWrites ?? 0), 0),
      firstSyncsS: round(waits[waits.length - 1] ?? 0),
      medianWaitS: round(waits[Math.floor(waits.length / 2)] ?? 0),
      maxWaitS: round(waits[waits.length - 1] ?? 0),
      perWorker: workers.map((_, i) => ({
        rssAfterSyncsMb: mb(afterSyncs[i]!.rssBytes),
        rssIdleMb: mb(idle[i]!.rssBytes),
        peakRssMb: mb(idle[i]!.maxRssKb * 1024),
        liveHeapMb: mb(idle[i]!.heapUsedBytes),
        cpuS: round((afterSyncs[i]!.cpuUserUs + afterSyncs[i]!.cpuSystemUs - atReady[i]!.cpuUserUs - atReady[i]!.cpuSystemUs) / 1e6),
        schedulerWrites: afterSyncs[i]!.schedulerWrites ?? 0,
        readyCpuS: round((atReady[i]!.cpuUserUs + atReady[i]!.cpuSystemUs) / 1e6, 2),
        restartCpuS: round((restart[i]!.cpuUserUs + restart[i]!.cpuSystemUs) / 1e6, 2),
      })),
      restartReadyS: round(again.readyMs / 1000, 2),
      restartSchedulerWrites: restart.reduce((s, w) => s + (w.schedulerWrites ?? 0), 0),
    };
    bench.log(
      `  ${f.tenants} tenants on ${f.workers} workers (${f.site} Redis): ready ${row.readyS} s (CPU to ready ${row.perWorker.map((w) => w.readyCpuS).join(' / ')} s; ${row.schedulerWrites} schedulers written: ${row.perWorker.map((w) => w.schedulerWrites).join(' / ')}), ${row.firstSyncsDone} first syncs done ${row.firstSyncsS} s later (median wait ${row.medianWaitS} s); ` +
        `per worker RSS idle ${row.perWorker.map((w) => w.rssIdleMb).join(' / ')} MB (after syncs ${row.perWorker.map((w) => w.rssAfterSyncsMb).join(' / ')}; peak ${row.perWorker.map((w) => w.peakRssMb).join(' / ')}; live heap ${row.perWorker.map((w) => w.liveHeapMb).join(' / ')}), CPU over the first syncs ${row.perWorker.map((w) => w.cpuS).join(' / ')} s; ` +
        `restart ready ${row.restartReadyS} s (CPU to ready ${row.perWorker.map((w) => w.restartCpuS).join(' / ')} s), ${row.restartSchedulerWrites} schedulers written`,
    );
    return row;
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await cluster?.close();
  }
}

async function tenantRedis(bench: Bench, cfg: TenantsConfig, folder: string): Promise<TenantsRedis> {
  const tenant = 'bytes-1';
  const d = await deploy(bench, 'tenant-bytes', [{ id: tenant, folder }], 1, {});
  const runs = async (count: number): Promise<void> => {
    for (let i = 0; i < count; i += 1) await d.sync(tenant, i % 10 === 9 ? 'reconcile' : 'incremental');
  };
  const reading = async (): Promise<{ used: number; runs: number; queues: number; own: number }> => {
    await releaseBookkeeping(bench.admin);
    const used = await usedMemory(bench.admin);
    const kinds = await bytesByKind(bench.admin, d.prefix, tenant);
    const sum = (pick: (k: string) => boolean): number => Object.entries(kinds).filter(([k]) => pick(k)).reduce((s, [, v]) => s + v.bytes, 0);
    const fleet = sum((k) => k.startsWith('not the tenant'));
    return { used, runs: sum((k) => k.startsWith('runs')), queues: fleet, own: sum((k) => !k.startsWith('not the tenant')) };
  };
  try {
    await runs(cfg.firstRuns);
    const a = await reading();
    await runs(cfg.moreRuns);
    const b = await reading();
    const kb = (x: number): number => round(x / 1024);
    const r: TenantsRedis = {
      records: 0,
      afterFirstKb: kb(a.used),
      afterMoreKb: kb(b.used),
      growthKb: kb(b.used - a.used),
      runsKb: [kb(a.runs), kb(b.runs)],
      queuesKb: [kb(a.queues), kb(b.queues)],
      ownKb: [kb(a.own), kb(b.own)],
      ownGrowthKb: kb(b.own - a.own),
      fleetGrowthKb: kb(b.queues - a.queues),
    };
    bench.log(
      `  one tenant's Redis over ${cfg.moreRuns} runs after its ${cfg.firstRuns}th: its own keys +${r.ownGrowthKb} KB (${r.ownKb[0]} -> ${r.ownKb[1]} KB; run history ${r.runsKb[0]} -> ${r.runsKb[1]} KB); ` +
        `the fleet's buffers, which it fills alone here, +${r.fleetGrowthKb} KB (${r.queuesKb[0]} -> ${r.queuesKb[1]} KB); used_memory +${r.growthKb} KB`,
    );
    return r;
  } finally {
    await d.close();
  }
}

/** BENCH_TENANTS_SIZES=1000,5000: other sizes than the plan's (a shorter full run). */
export function sizesFromEnv(sizes: number[]): number[] {
  const raw = process.env['BENCH_TENANTS_SIZES'];
  return raw ? raw.split(',').map((s) => Number(s.trim())).filter((n) => Number.isInteger(n) && n > 0) : sizes;
}

/** BENCH_TENANTS_FLEETS=40000x4,40000x4c (c: on the Cluster), or none: other fleets than the plan's. */
export function fleetsFromEnv(fleets: FleetConfig[]): FleetConfig[] {
  const raw = process.env['BENCH_TENANTS_FLEETS'];
  if (raw === undefined) return fleets;
  return raw
    .split(',')
    .map((s) => /^(\d+)x(\d+)(c?)$/.exec(s.trim()))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ tenants: Number(m[1]), workers: Number(m[2]), site: m[3] === 'c' ? 'cluster' : 'single' }));
}

export async function runTenantsSection(bench: Bench, cfg: TenantsConfig): Promise<TenantsResult> {
  bench.sim.setFaults({ latencyMs: cfg.latencyMs, jitterMs: 0, rateLimitPerSecond: null });
  const folder = join(bench.root, 'tenants-data');
  const data = await writeDataSet(folder, { contacts: cfg.contacts, seed: 40, idPrefix: 'T' });
  bench.log(`  ${data.records} records a tenant (one folder for all)`);
  const rows: TenantsRow[] = [];
  cfg = { ...cfg, sizes: sizesFromEnv(cfg.sizes), fleets: fleetsFromEnv(cfg.fleets) };
  for (const n of cfg.sizes) rows.push(await oneSize(bench, cfg, folder, n));
  const fleets: FleetRow[] = [];
  for (const f of cfg.fleets) fleets.push(await oneFleet(bench, cfg, folder, f));
  const redis = { ...(await tenantRedis(bench, cfg, folder)), records: data.records };
  const points = rows.map((r): [number, number] => [r.tenants, r.rssIdleMb * 1024]);
  const last = points.slice(-2);
  return { config: cfg, rows, slopeKbPerTenant: round(slope(points), 2), lastSlopeKbPerTenant: round(slope(last), 2), redis, fleets };
}
