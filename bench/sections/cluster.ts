/**
 * Redis Cluster (issue 13 item 6): a three-master cluster started by the bench (openClusterSite), against the
 * bench's single Redis in the same run.
 *
 * - First-sync throughput: the same data set first-synced by one worker process on the single Redis and on the
 *   cluster, alternately (`rounds` times each, a new tenant each time, so every run is a first sync); the ratio
 *   is cluster / single records per second (goal >= 0.9).
 * - Scale-out on the cluster: the scale-out section's work on 1 and 4 worker processes sharing the cluster
 *   (goal >= 3.2x while latency-bound); then the same on the single Redis, so a machine too busy to stay
 *   latency-bound shows as both falling short (4 processes' records per second, cluster / single).
 */
import { join } from 'node:path';
import { writeDataSet } from '../data.js';
import { assertSucceeded, deploy, measure, openClusterSite, runMs, type Bench, type RedisSite } from '../harness.js';
import { runScaleOutSection, type ScaleOutConfig, type ScaleOutResult } from './scale-out.js';

export interface ClusterConfig {
  latencyMs: number;
  syncConcurrency: number;
  contacts: number;
  /** First syncs per site, alternating single and cluster. */
  rounds: number;
  scaleOut: ScaleOutConfig;
}

export interface SiteFirstSync {
  runs: number;
  records: number;
  /** Sum of the runs' times (start to finish, as the worker recorded them). */
  runMs: number;
  recordsPerS: number;
  redisCommandsPerRecord: number;
}

export interface ClusterResult {
  config: ClusterConfig;
  firstSync: { single: SiteFirstSync; cluster: SiteFirstSync; ratio: number; goal: number };
  scaleOut: ScaleOutResult & { speedUp: number; goal: number };
  /** The same scale-out on the single Redis, same run. */
  scaleOutSingle: ScaleOutResult & { speedUp: number };
  /** Records per second of the most processes, cluster / single. */
  scaleOutRatio: number;
}

const round = (n: number, d = 3): number => Math.round(n * 10 ** d) / 10 ** d;

export async function runClusterSection(bench: Bench, cfg: ClusterConfig): Promise<ClusterResult> {
  const site = await openClusterSite();
  try {
    bench.sim.setFaults({ latencyMs: cfg.latencyMs, jitterMs: 0, rateLimitPerSecond: null });
    const folder = join(bench.root, 'cluster-first-sync');
    const data = await writeDataSet(folder, { contacts: cfg.contacts, seed: 31, idPrefix: 'K' });
    const totals = new Map<RedisSite['label'], { runs: number; ms: number; commands: number }>();
    for (let r = 0; r < cfg.rounds; r += 1) {
      for (const s of [bench.single, site]) {
        const tenant = `cl-${s.label}-${r + 1}`;
        const d = await deploy(bench, tenant, [{ id: tenant, folder }], 1, { SYNC_CONCURRENCY: String(cfg.syncConcurrency), TENANT_INFLIGHT_LIMIT: String(Math.max(32, cfg.syncConcurrency)) }, s);
        try {
          const m = await measure(bench, d.workers, () => d.sync(tenant, 'full'), s);
          assertSucceeded(m.value, `cluster section ${tenant}`);
          const t = totals.get(s.label) ?? { runs: 0, ms: 0, commands: 0 };
          totals.set(s.label, { runs: t.runs + 1, ms: t.ms + runMs(m.value), commands: t.commands + m.redis.total });
          bench.log(`  first sync on ${s.label} Redis (round ${r + 1}): ${data.records} records in ${runMs(m.value)} ms`);
        } finally {
          await d.close();
        }
      }
    }
    const siteResult = (label: RedisSite['label']): SiteFirstSync => {
      const t = totals.get(label) ?? { runs: 0, ms: 0, commands: 0 };
      const records = data.records * t.runs;
      return { runs: t.runs, records, runMs: t.ms, recordsPerS: round(records / (t.ms / 1000), 1), redisCommandsPerRecord: round(t.commands / records, 2) };
    };
    const single = siteResult('single');
    const cluster = siteResult('cluster');
    const ratio = round(cluster.recordsPerS / single.recordsPerS, 2);
    bench.log(`  cluster / single: x${ratio}`);

    const scaled = await runScaleOutSection(bench, cfg.scaleOut, site, 'cl-so');
    const reference = await runScaleOutSection(bench, cfg.scaleOut, bench.single, 'cl-single-so');
    const last = scaled.rows[scaled.rows.length - 1];
    const refLast = reference.rows[reference.rows.length - 1];
    return {
      config: cfg,
      firstSync: { single, cluster, ratio, goal: 0.9 },
      scaleOut: { ...scaled, speedUp: last?.speedUp ?? 0, goal: 3.2 },
      scaleOutSingle: { ...reference, speedUp: refLast?.speedUp ?? 0 },
      scaleOutRatio: round((last?.recordsPerS ?? 0) / (refLast?.recordsPerS ?? 1), 2),
    };
  } finally {
    await site.close();
  }
}
