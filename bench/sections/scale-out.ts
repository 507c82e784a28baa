/**
 * Scale-out: the same work (several tenants' first syncs; one run per tenant at a time, so the work spreads by
 * tenant) on 1, 2, 4 worker processes sharing one Redis (or one Redis Cluster: `site`), latency-bound. Each process runs `jobsPerProcess`
 * runs at once, so N processes have N times the slots: the ideal speed-up is N (while tenants >= slots).
 */
import { join } from 'node:path';
import { writeDataSet } from '../data.js';
import { assertSucceeded, deploy, measure, type Bench, type RedisSite } from '../harness.js';

export interface ScaleOutConfig {
  latencyMs: number;
  processes: number[];
  tenants: number;
  contactsPerTenant: number;
  syncConcurrency: number;
  /** WORKER_CONCURRENCY: sync runs one process works at once. */
  jobsPerProcess: number;
}

export interface ScaleOutRow {
  processes: number;
  /** From enqueueing every tenant's run to the last one's end. */
  makespanMs: number;
  recordsPerS: number;
  speedUp: number;
  idealSpeedUp: number;
  /** speedUp / idealSpeedUp. */
  efficiency: number;
  workerCpuMs: number;
}

export interface ScaleOutResult {
  config: ScaleOutConfig;
  records: number;
  rows: ScaleOutRow[];
}

const round = (n: number, d = 3): number => Math.round(n * 10 ** d) / 10 ** d;

/** `tag` names the tenants (so their clients in the service): a second call needs its own, so its runs are first syncs too. */
export async function runScaleOutSection(bench: Bench, cfg: ScaleOutConfig, site: RedisSite = bench.single, tag = 'so'): Promise<ScaleOutResult> {
  bench.sim.setFaults({ latencyMs: cfg.latencyMs, jitterMs: 0, rateLimitPerSecond: null });
  // Every tenant reads the same files; each has its own client (so its own data) in the service.
  const folder = join(bench.root, 'scale-out');
  const data = await writeDataSet(folder, { contacts: cfg.contactsPerTenant, seed: 7, idPrefix: 'S' });
  const records = data.records * cfg.tenants;
  const rows: ScaleOutRow[] = [];
  let base: number | undefined;
  for (const n of cfg.processes) {
    const ids = Array.from({ length: cfg.tenants }, (_, i) => `${tag}${n}-t${i + 1}`);
    const d = await deploy(
      bench,
      `${tag}${n}`,
      ids.map((id) => ({ id, folder })),
      n,
      { SYNC_CONCURRENCY: String(cfg.syncConcurrency), WORKER_CONCURRENCY: String(cfg.jobsPerProcess) },
      site,
    );
    try {
      const m = await measure(bench, d.workers, async () => {
        const pending = await Promise.all(ids.map((id) => d.request(id, 'full')));
        return Promise.all(pending.map((p) => p.wait()));
      }, site);
      for (const run of m.value) assertSucceeded(run, `scale-out ${run.runId}`);
      const makespanMs = m.wallMs;
      base ??= makespanMs;
      const slots = (k: number): number => Math.min(cfg.tenants, k * cfg.jobsPerProcess);
      const idealSpeedUp = slots(n) / slots(cfg.processes[0] ?? 1);
      const speedUp = base / makespanMs;
      rows.push({
        processes: n,
        makespanMs: Math.round(makespanMs),
        recordsPerS: round(records / (makespanMs / 1000), 1),
        speedUp: round(speedUp, 2),
        idealSpeedUp,
        efficiency: round(speedUp / idealSpeedUp, 2),
        workerCpuMs: Math.round(m.workerCpuMs),
      });
      bench.log(`  ${n} process(es) on ${site.label} Redis: ${records} records in ${Math.round(makespanMs)} ms, speed-up ${round(speedUp, 2)} (ideal ${idealSpeedUp})`);
    } finally {
      await d.close();
    }
  }
  return { config: cfg, records, rows };
}
