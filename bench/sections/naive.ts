/**
 * The worker against a naive pusher (bench/naive-child.ts: a plain undici loop, fixed token, no state) on the
 * same data, the same simulator and the same number of requests in flight, at each latency. The figure is
 * worker / naive in requests per second: 1.0 means the worker keeps its requests in flight as well as the
 * plain loop does (its tokens, Redis state and checkpoints cost no throughput). Records per second are shown
 * beside it (the worker also re-pushes invoices whose payments arrive after them; the naive loop folds
 * payments in up front, so it sends fewer requests for the same records).
 */
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { requestToken } from '../../src/collections/token.js';
import { Secret } from '../../src/config/secret.js';
import { writeDataSet } from '../data.js';
import { assertSucceeded, clientIdOf, deploy, measure, runMs, type Bench } from '../harness.js';

export interface NaiveConfig {
  concurrency: number;
  latenciesMs: number[];
  contacts: number;
}

export interface NaiveRow {
  latencyMs: number;
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
  /** CPU per request (ms): the naive process and the simulator over its run. */
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
  rows: NaiveRow[];
}

const SCRIPT = fileURLToPath(new URL('../naive-child.ts', import.meta.url));
const answerSchema = z.object({ requests: z.number(), ms: z.number(), cpuMs: z.number(), records: z.number() });
const round = (n: number, d = 3): number => Math.round(n * 10 ** d) / 10 ** d;

async function runNaive(env: Record<string, string>): Promise<z.infer<typeof answerSchema>> {
  // BENCH_CPU_PROF=<dir>: the naive loop writes its CPU profile there too (beside the workers').
  const prof = process.env['BENCH_CPU_PROF'];
  const execArgv = ['--import', 'tsx', ...(prof ? ['--cpu-prof', '--cpu-prof-dir', prof] : [])];
  const child = fork(SCRIPT, [], { execArgv, env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (m: unknown) => {
      const parsed = answerSchema.safeParse(m);
      if (parsed.success) resolve(parsed.data);
      else reject(new Error(`naive pusher: unexpected answer ${JSON.stringify(m)}`));
    });
    child.once('exit', (code) => reject(new Error(`naive pusher exited with ${code} before answering`)));
  });
}

export async function runNaiveSection(bench: Bench, cfg: NaiveConfig): Promise<NaiveResult> {
  const rows: NaiveRow[] = [];
  const c = cfg.concurrency;
  for (const latencyMs of cfg.latenciesMs) {
    bench.sim.setFaults({ latencyMs, jitterMs: 0, rateLimitPerSecond: null });
    const tenant = `naive-l${latencyMs}`;
    const folder = join(bench.root, tenant);
    const data = await writeDataSet(folder, { contacts: cfg.contacts, seed: 300 + latencyMs, idPrefix: `N${latencyMs}` });
    const d = await deploy(bench, tenant, [{ id: tenant, folder }], 1, { SYNC_CONCURRENCY: String(c), TENANT_INFLIGHT_LIMIT: String(c) });
    // Request-milliseconds in flight at the simulator, per client: over a run, ÷ its time = how full it kept its pool.
    const inFlightMs = (clientId: string): number => bench.sim.counters().inFlightMsByClient[clientId] ?? 0;
    const w0 = inFlightMs(clientIdOf(tenant));
    const m = await measure(bench, d.workers, () => d.sync(tenant, 'full'));
    const wInFlightMs = inFlightMs(clientIdOf(tenant)) - w0;
    assertSucceeded(m.value, `${tenant} full`);
    await d.close();
    const wMs = runMs(m.value);
    // The naive loop: a client of its own (a fresh store in the simulator), one token for the whole run.
    const clientId = `naive-${tenant}`;
    bench.sim.setClient(clientId, `secret-${clientId}`);
    const token = await requestToken({ authUrl: bench.sim.authUrl, clientId, clientSecret: new Secret(`secret-${clientId}`) });
    const sim0 = process.cpuUsage();
    const n0 = inFlightMs(clientId);
    const n = await runNaive({ NAIVE_BASE_URL: bench.sim.baseUrl, NAIVE_TOKEN: token.accessToken, NAIVE_CONCURRENCY: String(c), NAIVE_FOLDER: folder });
    // The simulator's CPU over the naive run includes this process's wait for the child (and the child's start).
    const sim = process.cpuUsage(sim0);
    const nInFlightMs = inFlightMs(clientId) - n0;
    const worker = {
      requests: m.requests,
      runMs: wMs,
      requestsPerS: round(m.requests / (wMs / 1000), 1),
      recordsPerS: round(data.records / (wMs / 1000), 1),
      cpuMsPerRequest: round(m.workerCpuMs / m.requests),
      redisCpuMsPerRequest: round(m.redis.cpuMs / m.requests),
      simulatorCpuMsPerRequest: round(m.simulatorCpuMs / m.requests),
      meanInFlight: round(wInFlightMs / wMs, 1),
    };
    const naive = {
      requests: n.requests,
      runMs: Math.round(n.ms),
      requestsPerS: round(n.requests / (n.ms / 1000), 1),
      recordsPerS: round(data.records / (n.ms / 1000), 1),
      cpuMsPerRequest: round(n.cpuMs / n.requests),
      simulatorCpuMsPerRequest: round((sim.user + sim.system) / 1000 / n.requests),
      meanInFlight: round(nInFlightMs / n.ms, 1),
    };
    const row: NaiveRow = {
      latencyMs,
      records: data.records,
      worker,
      naive,
      ratio: round(worker.requestsPerS / naive.requestsPerS),
      recordsRatio: round(worker.recordsPerS / naive.recordsPerS),
      goal: latencyMs === 0 ? 0.8 : 1.0,
    };
    rows.push(row);
    bench.log(
      `  ${latencyMs} ms, c=${c}: worker ${worker.requestsPerS} req/s (${worker.recordsPerS} rec/s), naive ${naive.requestsPerS} req/s (${naive.recordsPerS} rec/s): worker / naive ${row.ratio} (records ${row.recordsRatio})`,
    );
    bench.log(
      `    requests in flight at the service, mean over the run: worker ${worker.meanInFlight}, naive ${naive.meanInFlight} (of ${c})`,
    );
    bench.log(
      `    CPU ms per request: worker ${worker.cpuMsPerRequest} + Redis ${worker.redisCpuMsPerRequest} + simulator ${worker.simulatorCpuMsPerRequest}; naive ${naive.cpuMsPerRequest} + simulator ${naive.simulatorCpuMsPerRequest}`,
    );
  }
  return { config: cfg, rows };
}
