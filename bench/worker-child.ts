/**
 * The worker process of the benchmark: the same composition as `collections-sync worker` (createApp +
 * startWorker, metrics on, configuration from the environment and TENANTS_FILE), except that schedules are
 * not upserted (a scheduler with `every` fires at once, which would start runs the benchmark did not ask for;
 * BENCH_SCHEDULES=1 upserts them, as the worker does: the `tenants` section) and there is no ops port. Started with `fork` (IPC): it sends `{ event: 'ready' }`, answers
 * `{ cmd: 'stats' }` with its CPU time (read before the collection), peak RSS and live heap (after a full
 * collection), and closes on `{ cmd: 'stop' }`.
 */
import type * as App from '../src/app.js';
import type * as Env from '../src/config/env.js';
import type * as Tenants from '../src/config/tenants.js';
import type * as Logger from '../src/logger.js';
import type * as Metrics from '../src/ops/metrics.js';
import type * as Worker from '../src/worker.js';
import { Writable } from 'node:stream';
import { parentCommandSchema, type ChildMessage } from './child-protocol.js';
import { shipped } from './shipped.js';

// The program as built (bench/shipped.ts), typed as its sources.
const { createApp } = await shipped<typeof App>('src/app.js');
const { loadEnv } = await shipped<typeof Env>('src/config/env.js');
const { loadTenants } = await shipped<typeof Tenants>('src/config/tenants.js');
const { createLogger } = await shipped<typeof Logger>('src/logger.js');
const { createMetrics } = await shipped<typeof Metrics>('src/ops/metrics.js');
const { startWorker } = await shipped<typeof Worker>('src/worker.js');

function send(message: ChildMessage): void {
  process.send?.(message);
}

let schedulerWrites = 0;

/**
 * BENCH_COUNT_SCHEDULERS=1: the log lines go through here; 'schedulers in place' lines are counted (their
 * `upserted`), lines of level warn and above go on to stderr, the rest are dropped (the worker still makes them).
 */
const countingDestination = new Writable({
  write(chunk: Buffer, _enc, done) {
    for (const line of chunk.toString().split('\n')) {
      if (line.includes('"schedulers in place"')) schedulerWrites += Number((JSON.parse(line) as { upserted?: number }).upserted ?? 0);
      else if (/"level":(4|5|6)\d/.test(line)) process.stderr.write(`${line}\n`);
    }
    done();
  },
});

function stats(): ChildMessage {
  const cpu = process.cpuUsage();
  const usage = process.resourceUsage();
  // Started with --expose-gc: a full collection first, so heapUsed is the live heap, not garbage not yet collected.
  (globalThis as { gc?: () => void }).gc?.();
  const mem = process.memoryUsage();
  return { event: 'stats', pid: process.pid, cpuUserUs: cpu.user, cpuSystemUs: cpu.system, maxRssKb: usage.maxRSS, rssBytes: mem.rss, heapUsedBytes: mem.heapUsed, heapTotalBytes: mem.heapTotal, externalBytes: mem.external, schedulerWrites };
}

async function main(): Promise<void> {
  const loadedMs = process.uptime() * 1000;
  const env = loadEnv();
  const tenants = await loadTenants(env.TENANTS_FILE);
  const counting = process.env['BENCH_COUNT_SCHEDULERS'] === '1';
  const logger = createLogger({ level: env.LOG_LEVEL, ...(counting ? { destination: countingDestination } : {}) });
  const app = await createApp({ env, tenants, logger, role: 'worker', metrics: createMetrics() });
  const appMs = process.uptime() * 1000;
  const worker = await startWorker(app, { schedules: process.env['BENCH_SCHEDULES'] === '1', opsPort: 0 });
  for (const w of worker.workers) await w.waitUntilReady();

  let stopping = false;
  process.on('message', (raw: unknown) => {
    const parsed = parentCommandSchema.safeParse(raw);
    if (!parsed.success) return;
    if (parsed.data.cmd === 'stats') {
      send(stats());
      return;
    }
    if (stopping) return;
    stopping = true;
    void (async () => {
      await worker.close(10_000);
      await app.close();
      process.send?.({ event: 'stopped', pid: process.pid } satisfies ChildMessage, () => process.exit(0));
    })();
  });
  send({ event: 'ready', pid: process.pid, timings: { loadedMs, appMs, readyMs: process.uptime() * 1000 } });
}

main().catch((err: unknown) => {
  send({ event: 'error', pid: process.pid, message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  setTimeout(() => process.exit(1), 100);
});
