/**
 * A flaky service (issue 28), and a shedding one (issue 35): a tenant's first sync at a fixed latency, worker start
 * included (the worker process is spawned inside the timing, as an operator's first run is), on a clean service and
 * on one with a fault mix: `flaky` fails a tenth of the requests (5xx, half 500, half 503, answered before
 * processing; connections reset before processing; writes committed whose answer is dropped), `shedding` answers 3%
 * of them 429 with `Retry-After: 1`, as a gateway under pressure does. Clean and faulty alternate in each round (the
 * order swapped every other round), each on its own data set of the same size and its own worker process, so load
 * from other work hits both alike; the figure is faulty ÷ clean (goal ≤ 1.5). After every faulty run the service is
 * checked for exactly once: one contact per platform contact, one invoice per pushable invoice.
 */
import { join } from 'node:path';
import type { FaultSettings } from '../../src/simulator/index.js';
import type { RunRecord } from '../../src/state/index.js';
import { writeDataSet, type DataSet } from '../data.js';
import { clientIdOf, deploy, measure, type Bench, type Measured } from '../harness.js';

export interface FlakyConfig {
  latencyMs: number;
  /** Platform contacts per data set (about 4.75 records a contact with their invoices and payments). */
  contacts: number;
  /** Rounds of one clean and one flaky run. */
  rounds: number;
  /** The fault mix of the faulty runs. */
  faults: Partial<Pick<FaultSettings, 'error5xxRate' | 'resetRate' | 'dropAfterCommitRate' | 'rate429' | 'retryAfterS'>>;
  /** Tenant names and log lines: `flaky` or `shedding`. */
  name?: string;
  /** SYNC_CONCURRENCY of the workers; unset, the default (the tenant's in-flight limit, 32). */
  syncConcurrency?: number;
}

export interface FlakyRun {
  kind: 'clean' | 'flaky';
  records: number;
  /** From the worker's spawn to the run's end (the run's own record). */
  totalMs: number;
  /** The run alone (its start to its end), queueing and the worker's start left out. */
  runMs: number;
  outcome: string;
  requests: number;
  /** Faults the simulator injected during the run, by kind ('500', '503', 'reset', 'drop'). */
  faults: Record<string, number>;
  /** The worker's requests in flight at the service, mean over the run and most at once. */
  meanInFlight: number;
  maxInFlight: number;
  /** Service records beyond one per platform record, and platform records that did not land (exactly once: 0, 0). */
  duplicates: number;
  missing: number;
}

export interface FlakyRound {
  clean: FlakyRun;
  flaky: FlakyRun;
  /** flaky.totalMs / clean.totalMs. */
  ratio: number;
}

export interface FlakyResult {
  config: FlakyConfig;
  rounds: FlakyRound[];
  /** The median of the rounds' ratios. */
  ratio: number;
  goal: number;
}

export const FLAKY_GOAL = 1.5;
const round = (n: number, d = 3): number => Math.round(n * 10 ** d) / 10 ** d;

/** Service records beyond one per platform record, and platform records with none (both 0: exactly once). */
function landed(bench: Bench, clientId: string, data: DataSet): { duplicates: number; missing: number } {
  const stored = bench.sim.data(clientId);
  const contacts = new Set(stored.contacts.map((c) => c.extPlatformId));
  const invoices = new Set(stored.invoices.map((i) => i.extPlatformId));
  return {
    duplicates: stored.contacts.length - contacts.size + (stored.invoices.length - invoices.size),
    missing: data.contacts - contacts.size + (data.pushableInvoices - invoices.size),
  };
}

async function oneRun(bench: Bench, cfg: FlakyConfig, kind: 'clean' | 'flaky', n: number): Promise<FlakyRun> {
  const tenant = `${cfg.name ?? 'flaky'}-${kind}-${n}`;
  const folder = join(bench.root, tenant);
  const data = await writeDataSet(folder, { contacts: cfg.contacts, seed: 300 + n, idPrefix: `${(cfg.name ?? 'flaky')[0]!.toUpperCase()}${kind[0]}${n}` });
  bench.sim.setFaults({ latencyMs: cfg.latencyMs, jitterMs: 0, rateLimitPerSecond: null, rate429: 0, error5xxRate: 0, resetRate: 0, dropAfterCommitRate: 0, script: [] });
  if (kind === 'flaky') bench.sim.setFaults(cfg.faults);
  const clientId = clientIdOf(tenant);
  const c0 = bench.sim.counters();
  const t0 = Date.now();
  // The worker starts inside the timing: the figure is an operator's first sync, start to end.
  const d = await deploy(bench, tenant, [{ id: tenant, folder }], 1, cfg.syncConcurrency === undefined ? {} : { SYNC_CONCURRENCY: String(cfg.syncConcurrency) });
  let run: RunRecord;
  let m: Measured<RunRecord>;
  try {
    m = await measure(bench, d.workers, () => d.sync(tenant, 'full'));
    run = m.value;
  } finally {
    bench.sim.setFaults({ error5xxRate: 0, resetRate: 0, dropAfterCommitRate: 0, rate429: 0 });
    await d.close();
  }
  const c1 = bench.sim.counters();
  const faults: Record<string, number> = {};
  for (const [k, v] of Object.entries(c1.faultsInjected)) {
    const delta = v - (c0.faultsInjected[k] ?? 0);
    if (delta > 0) faults[k] = delta;
  }
  const runMs = (run.finishedAt ?? Date.now()) - run.startedAt;
  const result: FlakyRun = {
    kind,
    records: data.records,
    totalMs: (run.finishedAt ?? Date.now()) - t0,
    runMs,
    outcome: run.outcome ?? 'unfinished',
    requests: m.requests,
    faults,
    meanInFlight: round(((c1.inFlightMsByClient[clientId] ?? 0) - (c0.inFlightMsByClient[clientId] ?? 0)) / Math.max(1, runMs), 1),
    maxInFlight: c1.maxConcurrencyByClient[clientId] ?? 0,
    ...landed(bench, clientId, data),
  };
  const faultText = Object.entries(faults).map(([k, v]) => `${k} ${v}`).join(', ') || 'none';
  bench.log(
    `  ${kind === 'flaky' ? (cfg.name ?? 'flaky') : kind}: ${data.records} records, ${result.totalMs} ms with the worker's start (run ${runMs} ms), ${result.requests} requests, faults ${faultText}; in flight ${result.meanInFlight} mean, ${result.maxInFlight} most; ${run.outcome}, ${result.duplicates} duplicates, ${result.missing} missing`,
  );
  if (result.duplicates + result.missing > 0) throw new Error(`${tenant}: ${result.duplicates} duplicates, ${result.missing} missing in the service (exactly once broken)`);
  if (run.outcome !== 'succeeded') throw new Error(`${tenant}: run ${run.runId} ended ${run.outcome ?? 'unfinished'}: ${JSON.stringify(run.errors?.slice(0, 3))}`);
  return result;
}

export async function runFlakySection(bench: Bench, cfg: FlakyConfig): Promise<FlakyResult> {
  const rounds: FlakyRound[] = [];
  for (let i = 0; i < cfg.rounds; i += 1) {
    // Clean first in odd rounds, flaky first in even ones: neither side always runs on a machine warmed by the other.
    const order: ('clean' | 'flaky')[] = i % 2 === 0 ? ['clean', 'flaky'] : ['flaky', 'clean'];
    const runs: Partial<Record<'clean' | 'flaky', FlakyRun>> = {};
    for (const kind of order) runs[kind] = await oneRun(bench, cfg, kind, i + 1);
    const clean = runs.clean!;
    const flaky = runs.flaky!;
    const ratio = round(flaky.totalMs / clean.totalMs, 2);
    rounds.push({ clean, flaky, ratio });
    bench.log(`  round ${i + 1}: ${cfg.name ?? 'flaky'} ÷ clean ${ratio} (goal <= ${FLAKY_GOAL})`);
  }
  const sorted = rounds.map((r) => r.ratio).sort((a, b) => a - b);
  const mid = (sorted.length - 1) / 2;
  const ratio = round(((sorted[Math.floor(mid)] ?? Number.NaN) + (sorted[Math.ceil(mid)] ?? Number.NaN)) / 2, 2);
  return { config: cfg, rounds, ratio, goal: FLAKY_GOAL };
}
