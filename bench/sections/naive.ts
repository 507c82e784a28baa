/**
 * The worker against a naive pusher (bench/naive-child.ts: a plain undici loop, fixed token, no state) on the
 * same data, the same simulator and the same number of requests in flight, at each latency. The figure is
 * worker / naive in requests per second: 1.0 means the worker keeps its requests in flight as well as the
 * plain loop does (its tokens, Redis state and checkpoints cost no throughput). Records per second are shown
 * beside it (the worker also re-pushes invoices whose payments arrive after them; the naive loop folds
 * payments in up front, so it sends fewer requests for the same records).
 *
 * Each side runs twice in one process, on two data sets of the same size: the first run in a fresh process
 * (`fresh`: V8 still compiling, the token and the tenant's listing fetched cold) and the second in the same,
 * now warm, process (`warm`: what an always-on worker runs every run after its first). The naive loop gets the
 * same two passes, so both sides are compared fresh with fresh and warm with warm.
 *
 * A full run repeats this three times per latency (`rounds`: new processes, new data of the same size) and the
 * table shows the round with the median ratio beside every round's: one run's ratio moves by +-0.05 here.
 */
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { requestToken } from '../../src/collections/token.js';
import { Secret } from '../../src/secret.js';
import { writeDataSet } from '../data.js';
import type { RunRecord } from '../../src/state/index.js';
import { assertSucceeded, clientIdOf, deploy, measure, runMs, type Bench, type Measured } from '../harness.js';

export interface NaiveConfig {
  concurrency: number;
  latenciesMs: number[];
  contacts: number;
  /**
   * Rounds per latency, each with new processes and new data of the same size; the table shows the median round
   * (one run's ratio moves by +-0.05 on a 2-core machine, where the goal is a boundary).
   */
  rounds: number;
}

/** `fresh`: the first run of a new process; `warm`: the second run of the same process (other data, same size). */
export type ProcessState = 'fresh' | 'warm';

export interface NaiveRow {
  latencyMs: number;
  process: ProcessState;
  /** 1, 2, ... (`rounds`). */
  round: number;
  records: number;
  /** CPU per request (ms): the worker process, Redis and the simulator (this process) over the worker's run. */
  worker: {
    requests: number;
    runMs: number;
    requestsPerS: number;
    recordsPerS: number;
    cpuMsPerRequest: number;
    redisCpuMsPerRequest: number;
    simulatorCpuMsPerRequest: number;
    /** Requests in flight at the simulator, mean over the run (of `concurrency`). */
    meanInFlight: number;
  };
  /** CPU per request (ms): the naive process and the simulator over its pass. */
  naive: { requests: number; runMs: number; requestsPerS: number; recordsPerS: number; cpuMsPerRequest: number; simulatorCpuMsPerRequest: number; meanInFlight: number };
  /** worker requests/s / naive requests/s. */
  ratio: number;
  /** worker records/s / naive records/s. */
  recordsRatio: number;
  /** Goals (issue 14): >= 1.0 at 20 ms, >= 0.8 at 0 ms. */
  goal: number;
}

export interface NaiveResult {
  config: NaiveConfig;
  /** Every round's rows. */
  rows: NaiveRow[];
  /** Per latency and process state: the round with the median ratio, and every round's ratio. */
  medians: { row: NaiveRow; ratios: number[] }[];
}

const SCRIPT = fileURLToPath(new URL('../naive-child.ts', import.meta.url));
const passSchema = z.object({ pass: z.object({ requests: z.number(), ms: z.number(), cpuMs: z.number(), records: z.number() }) });
type NaivePass = z.infer<typeof passSchema>['pass'] & { simulatorCpuMs: number; inFlightMs: number };
const round = (n: number, d = 3): number => Math.round(n * 10 ** d) / 10 ** d;

/** A client's request-milliseconds in flight at the simulator so far: over a run, ÷ its time = how full it kept its pool. */
const inFlightMs = (bench: Bench, clientId: string): number => bench.sim.counters().inFlightMsByClient[clientId] ?? 0;

/**
 * Runs the naive loop over `passes` (folder, client) in one process; each pass with the simulator's CPU and the
 * client's request-milliseconds in flight over it (read here as the child reports each pass's end).
 */
async function runNaive(bench: Bench, env: Record<string, string>, clients: string[]): Promise<NaivePass[]> {
  // BENCH_CPU_PROF=<dir>: the naive loop writes its CPU profile there too (beside the workers').
  const prof = process.env['BENCH_CPU_PROF'];
  const execArgv = ['--import', 'tsx', ...(prof ? ['--cpu-prof', '--cpu-prof-dir', prof] : [])];
  const out: NaivePass[] = [];
  let cpu0 = process.cpuUsage();
  let inFlight0 = inFlightMs(bench, clients[0] ?? '');
  const child = fork(SCRIPT, [], { execArgv, env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.on('message', (m: unknown) => {
      const parsed = passSchema.safeParse(m);
      if (!parsed.success) {
        reject(new Error(`naive pusher: unexpected message ${JSON.stringify(m)}`));
        return;
      }
      // The simulator's CPU over a pass includes this process's wait for the child (and, for the first, its start).
      const cpu = process.cpuUsage(cpu0);
      const client = clients[out.length] ?? '';
      out.push({ ...parsed.data.pass, simulatorCpuMs: (cpu.user + cpu.system) / 1000, inFlightMs: inFlightMs(bench, client) - inFlight0 });
      cpu0 = process.cpuUsage();
      inFlight0 = inFlightMs(bench, clients[out.length] ?? '');
    });
    child.once('exit', (code) => {
      if (out.length === clients.length) resolve(out);
      else reject(new Error(`naive pusher exited with ${code} after ${out.length} of ${clients.length} passes`));
    });
  });
}

export async function runNaiveSection(bench: Bench, cfg: NaiveConfig): Promise<NaiveResult> {
  const rows: NaiveRow[] = [];
  for (const latencyMs of cfg.latenciesMs) {
    for (let n = 1; n <= cfg.rounds; n += 1) rows.push(...(await runRound(bench, cfg, latencyMs, n)));
  }
  const medians: NaiveResult['medians'] = [];
  for (const latencyMs of cfg.latenciesMs) {
    for (const state of ['fresh', 'warm'] as const) {
      const same = rows.filter((r) => r.latencyMs === latencyMs && r.process === state).sort((a, b) => a.ratio - b.ratio);
      const row = same[Math.floor((same.length - 1) / 2)];
      if (row) medians.push({ row, ratios: same.map((r) => r.ratio) });
    }
  }
  if (cfg.rounds > 1) {
    for (const m of medians) bench.log(`  ${m.row.latencyMs} ms, ${m.row.process}: median worker / naive ${m.row.ratio} (rounds ${m.ratios.join(', ')})`);
  }
  return { config: cfg, rows, medians };
}

/** One round at one latency: a new worker process and a new naive process, each on two new data sets. */
async function runRound(bench: Bench, cfg: NaiveConfig, latencyMs: number, roundNo: number): Promise<NaiveRow[]> {
  const rows: NaiveRow[] = [];
  const c = cfg.concurrency;
  bench.sim.setFaults({ latencyMs, jitterMs: 0, rateLimitPerSecond: null });
  // Two data sets of the same size: the first run of each side in a fresh process, the second in the same one.
  const sets = await Promise.all(
    (['fresh', 'warm'] as const).map(async (state, i) => {
      const tenant = `naive-l${latencyMs}-r${roundNo}-${state}`;
      const folder = join(bench.root, tenant);
      const data = await writeDataSet(folder, { contacts: cfg.contacts, seed: 300 + 17 * i + latencyMs + 101 * roundNo, idPrefix: `N${latencyMs}r${roundNo}${state[0]}` });
      return { state, tenant, folder, data };
    }),
  );
  const d = await deploy(bench, `naive-l${latencyMs}-r${roundNo}`, sets.map((s) => ({ id: s.tenant, folder: s.folder })), 1, { SYNC_CONCURRENCY: String(c), TENANT_INFLIGHT_LIMIT: String(c) });
  const workerRuns: { m: Measured<RunRecord>; inFlightMs: number }[] = [];
  for (const s of sets) {
    const w0 = inFlightMs(bench, clientIdOf(s.tenant));
    const m = await measure(bench, d.workers, () => d.sync(s.tenant, 'full'));
    assertSucceeded(m.value, `${s.tenant} full`);
    workerRuns.push({ m, inFlightMs: inFlightMs(bench, clientIdOf(s.tenant)) - w0 });
  }
  await d.close();
  // The naive loop: a client of its own per pass (a fresh store in the simulator), one token each for the whole pass.
  const clients = sets.map((s) => `naive-${s.tenant}`);
  const tokens = [];
  for (const clientId of clients) {
    bench.sim.setClient(clientId, `secret-${clientId}`);
    tokens.push((await requestToken({ authUrl: bench.sim.authUrl, clientId, clientSecret: new Secret(`secret-${clientId}`) })).accessToken);
  }
  const passes = await runNaive(
    bench,
    {
      NAIVE_BASE_URL: bench.sim.baseUrl,
      NAIVE_CONCURRENCY: String(c),
      NAIVE_FOLDER: sets[0]!.folder,
      NAIVE_TOKEN: tokens[0]!,
      NAIVE_FOLDER_2: sets[1]!.folder,
      NAIVE_TOKEN_2: tokens[1]!,
    },
    clients,
  );
  sets.forEach((s, i) => {
    const { m, inFlightMs: wInFlightMs } = workerRuns[i]!;
    const n = passes[i]!;
    const wMs = runMs(m.value);
    const worker = {
      requests: m.requests,
      runMs: wMs,
      requestsPerS: round(m.requests / (wMs / 1000), 1),
      recordsPerS: round(s.data.records / (wMs / 1000), 1),
      cpuMsPerRequest: round(m.workerCpuMs / m.requests),
      redisCpuMsPerRequest: round(m.redis.cpuMs / m.requests),
      simulatorCpuMsPerRequest: round(m.simulatorCpuMs / m.requests),
      meanInFlight: round(wInFlightMs / wMs, 1),
    };
    const naive = {
      requests: n.requests,
      runMs: Math.round(n.ms),
      requestsPerS: round(n.requests / (n.ms / 1000), 1),
      recordsPerS: round(s.data.records / (n.ms / 1000), 1),
      cpuMsPerRequest: round(n.cpuMs / n.requests),
      simulatorCpuMsPerRequest: round(n.simulatorCpuMs / n.requests),
      meanInFlight: round(n.inFlightMs / n.ms, 1),
    };
    const row: NaiveRow = {
      latencyMs,
      process: s.state,
      round: roundNo,
      records: s.data.records,
      worker,
      naive,
      ratio: round(worker.requestsPerS / naive.requestsPerS),
      recordsRatio: round(worker.recordsPerS / naive.recordsPerS),
      goal: latencyMs === 0 ? 0.8 : 1.0,
    };
    rows.push(row);
    bench.log(
      `  ${latencyMs} ms, c=${c}, ${s.state} process${cfg.rounds > 1 ? ` (round ${roundNo})` : ''}: worker ${worker.requestsPerS} req/s (${worker.recordsPerS} rec/s), naive ${naive.requestsPerS} req/s (${naive.recordsPerS} rec/s): worker / naive ${row.ratio} (records ${row.recordsRatio})`,
    );
    bench.log(`    requests in flight at the service, mean over the run: worker ${worker.meanInFlight}, naive ${naive.meanInFlight} (of ${c})`);
    bench.log(
      `    CPU ms per request: worker ${worker.cpuMsPerRequest} + Redis ${worker.redisCpuMsPerRequest} + simulator ${worker.simulatorCpuMsPerRequest}; naive ${naive.cpuMsPerRequest} + simulator ${naive.simulatorCpuMsPerRequest}`,
    );
  });
  return rows;
}
