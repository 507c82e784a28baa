/**
 * Memory: the peak RSS of a fresh worker process through a file tenant's first sync, for a data set and one
 * `factor` times larger. The adapter streams pages and state lives in Redis, so the peak should stay nearly
 * flat (ideal ratio 1.0). The peak also follows V8's heap sizing, which lets the heap grow with the allocation
 * rate, so the live heap after a full collection is reported beside it. No added latency: these runs also give
 * the CPU-bound rate.
 */
import { join } from 'node:path';
import { writeDataSet } from '../data.js';
import { assertSucceeded, deploy, measure, runMs, type Bench, type TenantSetup } from '../harness.js';

export interface MemoryConfig {
  smallContacts: number;
  factor: number;
  syncConcurrency: number;
  /** Many large tenants' first syncs requested at once, run at each WORKER_CONCURRENCY (what a run holds, times the runs). */
  concurrent?: { tenants: number; contacts: number; workerConcurrency: number[] };
}

export interface ConcurrentRow {
  workerConcurrency: number;
  records: number;
  idleRssMb: number;
  peakRssMb: number;
  liveHeapMb: number;
  wallMs: number;
}

export interface MemoryRow {
  records: number;
  /** RSS once the worker was ready, before the run (MB). */
  idleRssMb: number;
  /** Peak RSS over the process's life, read after the run (MB). */
  peakRssMb: number;
  /** Live heap after the run and a full collection (MB): what the process still holds. */
  liveHeapMb: number;
  runMs: number;
  recordsPerS: number;
  workerCpuMsPerRecord: number;
}

export interface MemoryResult {
  config: MemoryConfig;
  small: MemoryRow;
  large: MemoryRow;
  /** large.peakRssMb / small.peakRssMb (ideal 1.0 while the data grows `factor` times). */
  peakRatio: number;
  /** Growth of the peak above idle, large over small. */
  aboveIdleRatio: number;
  /** large.liveHeapMb / small.liveHeapMb: nothing kept per record (ideal 1.0). */
  liveHeapRatio: number;
  concurrent?: ConcurrentRow[];
}

const mb = (bytes: number): number => Math.round((bytes / 1024 / 1024) * 10) / 10;
const round = (n: number, d = 3): number => Math.round(n * 10 ** d) / 10 ** d;

async function one(bench: Bench, cfg: MemoryConfig, name: string, contacts: number): Promise<MemoryRow> {
  const folder = join(bench.root, `mem-${name}`);
  const data = await writeDataSet(folder, { contacts, seed: 5, idPrefix: 'M' });
  const tenant = `mem-${name}`;
  const d = await deploy(bench, tenant, [{ id: tenant, folder }], 1, { SYNC_CONCURRENCY: String(cfg.syncConcurrency) });
  try {
    const idle = await d.workers[0]!.stats();
    const m = await measure(bench, d.workers, () => d.sync(tenant, 'full'));
    assertSucceeded(m.value, tenant);
    const after = m.workerStats[0]!;
    const ms = runMs(m.value);
    const row: MemoryRow = {
      records: data.records,
      idleRssMb: mb(idle.rssBytes),
      peakRssMb: mb(after.maxRssKb * 1024),
      liveHeapMb: mb(after.heapUsedBytes),
      runMs: ms,
      recordsPerS: round(data.records / (ms / 1000), 1),
      workerCpuMsPerRecord: round(m.workerCpuMs / data.records),
    };
    bench.log(`  ${data.records} records: peak RSS ${row.peakRssMb} MB (idle ${row.idleRssMb} MB), live heap after ${row.liveHeapMb} MB, ${row.recordsPerS} records/s`);
    return row;
  } finally {
    await d.close();
  }
}

/** `tenants` tenants of `contacts` contacts, every first sync requested at once, on one fresh worker. */
async function concurrent(bench: Bench, cfg: NonNullable<MemoryConfig['concurrent']>, syncConcurrency: number, workerConcurrency: number): Promise<ConcurrentRow> {
  const name = `memc-${String(workerConcurrency)}`;
  const tenants: TenantSetup[] = [];
  let records = 0;
  for (let i = 0; i < cfg.tenants; i++) {
    const folder = join(bench.root, `${name}-${String(i)}`);
    records += (await writeDataSet(folder, { contacts: cfg.contacts, seed: 100 + i, idPrefix: `C${String(i)}-` })).records;
    tenants.push({ id: `${name}-${String(i)}`, folder });
  }
  const d = await deploy(bench, name, tenants, 1, { SYNC_CONCURRENCY: String(syncConcurrency), WORKER_CONCURRENCY: String(workerConcurrency) });
  try {
    const idle = await d.workers[0]!.stats();
    const m = await measure(bench, d.workers, async () => {
      const waits = await Promise.all(tenants.map((t) => d.request(t.id, 'full')));
      return Promise.all(waits.map((w) => w.wait()));
    });
    m.value.forEach((run, i) => assertSucceeded(run, tenants[i]!.id));
    const after = m.workerStats[0]!;
    const row: ConcurrentRow = { workerConcurrency, records, idleRssMb: mb(idle.rssBytes), peakRssMb: mb(after.maxRssKb * 1024), liveHeapMb: mb(after.heapUsedBytes), wallMs: Math.round(m.wallMs) };
    bench.log(`  ${String(cfg.tenants)} tenants, ${String(records)} records, WORKER_CONCURRENCY=${String(workerConcurrency)}: peak RSS ${String(row.peakRssMb)} MB (idle ${String(row.idleRssMb)} MB), live heap after ${String(row.liveHeapMb)} MB, ${String(row.wallMs)} ms`);
    return row;
  } finally {
    await d.close();
  }
}

export async function runMemorySection(bench: Bench, cfg: MemoryConfig): Promise<MemoryResult> {
  bench.sim.setFaults({ latencyMs: 0, jitterMs: 0, rateLimitPerSecond: null });
  const small = await one(bench, cfg, 'small', cfg.smallContacts);
  const large = await one(bench, cfg, 'large', cfg.smallContacts * cfg.factor);
  const rows: ConcurrentRow[] = [];
  for (const c of cfg.concurrent?.workerConcurrency ?? []) rows.push(await concurrent(bench, cfg.concurrent!, cfg.syncConcurrency, c));
  return {
    ...(rows.length > 0 ? { concurrent: rows } : {}),
    config: cfg,
    small,
    large,
    peakRatio: round(large.peakRssMb / small.peakRssMb, 2),
    aboveIdleRatio: round(Math.max(0.1, large.peakRssMb - large.idleRssMb) / Math.max(0.1, small.peakRssMb - small.idleRssMb), 2),
    liveHeapRatio: round(large.liveHeapMb / small.liveHeapMb, 2),
  };
}
