/**
 * Fairness: how long a small tenant's sync takes (from the request, as a schedule tick makes it, to its end)
 * while a large tenant backfills in the same worker process, against the same small sync with the worker
 * otherwise idle. Ideal ratio 1.0. Both times are the run's own record (its request's time to its end, in the
 * worker's clock), not the time until the bench's wait sees it (that wait polls every 100 ms, a quarter of the
 * small sync: its figure moved by ±30% from that alone).
 */
import { join } from 'node:path';
import { writeDataSet } from '../data.js';
import type { RunRecord } from '../../src/state/index.js';
import { assertSucceeded, deploy, type Bench } from '../harness.js';

export interface FairnessConfig {
  latencyMs: number;
  largeContacts: number;
  smallContacts: number;
  syncConcurrency: number;
}

export interface FairnessResult {
  config: FairnessConfig;
  smallRecords: number;
  largeRecords: number;
  aloneMs: number;
  duringBackfillMs: number;
  /** duringBackfillMs / aloneMs (ideal 1.0). */
  ratio: number;
  /** Whether the backfill was still running when the small sync ended (else the figure says little). */
  backfillStillRunning: boolean;
  backfillMs: number;
}

const round = (n: number, d = 3): number => Math.round(n * 10 ** d) / 10 ** d;

/** From the run's request (the tick) to its end, as its record says (queueing included). */
function requestToEndMs(run: RunRecord): number {
  if (run.requestedAt === undefined || run.finishedAt === undefined) throw new Error(`run ${run.runId}: no request or end time in its record`);
  return run.finishedAt - run.requestedAt;
}

export async function runFairnessSection(bench: Bench, cfg: FairnessConfig): Promise<FairnessResult> {
  bench.sim.setFaults({ latencyMs: cfg.latencyMs, jitterMs: 0, rateLimitPerSecond: null });
  const smallFolder = join(bench.root, 'fair-small');
  const largeFolder = join(bench.root, 'fair-large');
  const small = await writeDataSet(smallFolder, { contacts: cfg.smallContacts, seed: 3, idPrefix: 'F' });
  const large = await writeDataSet(largeFolder, { contacts: cfg.largeContacts, seed: 4, idPrefix: 'L' });
  // Small tenants on the same files: one to warm up, one synced alone, one during the backfill (all first syncs).
  const d = await deploy(
    bench,
    'fair',
    [
      { id: 'fair-warm', folder: smallFolder },
      { id: 'fair-alone', folder: smallFolder },
      { id: 'fair-busy', folder: smallFolder },
      { id: 'fair-large', folder: largeFolder },
    ],
    1,
    { SYNC_CONCURRENCY: String(cfg.syncConcurrency) },
  );
  try {
    // A first small sync warms the process (JIT, connections, token) so that "alone" is not its first run.
    assertSucceeded(await d.sync('fair-warm', 'incremental', 'schedule'), 'fair-warm');
    const alone = await d.sync('fair-alone', 'incremental', 'schedule');
    assertSucceeded(alone, 'fair-alone');
    const aloneMs = requestToEndMs(alone);

    const backfillStart = performance.now();
    const backfill = await d.request('fair-large', 'full', 'cli');
    // Let the backfill get under way (its first records pushed) before the small tenant's tick.
    for (;;) {
      const run = (await d.stores.runs.recent('fair-large', 1))[0];
      if (run && Object.keys(run.counts).length > 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const busy = await d.sync('fair-busy', 'incremental', 'schedule');
    assertSucceeded(busy, 'fair-busy');
    const busyMs = requestToEndMs(busy);
    const largeNow = (await d.stores.runs.recent('fair-large', 1))[0];
    const backfillStillRunning = largeNow?.outcome === undefined;
    const largeRun = await backfill.wait();
    assertSucceeded(largeRun, 'fair-large');
    const result: FairnessResult = {
      config: cfg,
      smallRecords: small.records,
      largeRecords: large.records,
      aloneMs: Math.round(aloneMs),
      duringBackfillMs: Math.round(busyMs),
      ratio: round(busyMs / aloneMs, 2),
      backfillStillRunning,
      backfillMs: Math.round(performance.now() - backfillStart),
    };
    bench.log(`  small tenant alone ${result.aloneMs} ms, during the backfill ${result.duringBackfillMs} ms (ratio ${result.ratio}; backfill still running: ${backfillStillRunning})`);
    return result;
  } finally {
    await d.close();
  }
}
