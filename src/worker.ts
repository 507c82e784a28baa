/**
 * The always-on worker process, and its composition root: a short composition of the parts in src/worker/. BullMQ
 * workers for sync runs, schedule ticks and housekeeping, token rotations and calls (their processors come from
 * jobs/processors.ts, the one import of jobs/ in src/), the wedge watchdog, the ops and webhook servers, schedules
 * kept in step with the tenants file, and an ordered graceful shutdown under a deadline.
 */
import { createProcessors } from '../jobs/processors.js';
import type { Worker } from 'bullmq';
import type { App } from './app.js';
import type { OpsServer } from './ops/server.js';
import { tenantsNotMoved } from './redis/migrate-keys.js';
import { tenantsWithOldHashes } from './state/old-hashes.js';
import type { WebhookServer } from './webhooks/index.js';
import { QueueWorkers, type QueueKey } from './worker/queue-workers.js';
import { readinessOf } from './worker/readiness.js';
import { schedulesOf } from './worker/schedules.js';
import { beforeScrapeOf } from './worker/scrape.js';
import { bindServers, checkPublicServerSettings } from './worker/servers.js';
import { shutdown } from './worker/shutdown.js';
import { StartGuard } from './worker/start-guard.js';
import { watchTenantsFile, watchTenantStore } from './worker/tenants-watch.js';
import { startWedgeWatchdog } from './worker/wedge.js';


export interface WorkerOptions {
  /** Watch this tenants file and apply changes (schedules, credentials). */
  tenantsFile?: string;
  /**
   * The ops server's port: as OPS_PORT (0 = off, one meaning everywhere), or `'random'`: any free port (tests).
   * Default: the env's OPS_PORT.
   */
  opsPort?: number | 'random';
  opsHost?: string;
  /** The webhook receiver's port: as WEBHOOK_PORT (undefined = off), or `'random'` (tests). Default: the env's. */
  webhookPort?: number | 'random';
  webhookHost?: string;
  /** Which queues this process works (default all). */
  queues?: QueueKey[];
  concurrency?: number;
  /** Upsert schedules at start (default true). */
  schedules?: boolean;
  /** The fleet's housekeeping interval, upserted with the schedules (default hourly; tests shorten it). */
  housekeepingEveryMs?: number;
  /** Aborts the start (a signal came): what it opened is closed and the start throws the abort's reason. */
  signal?: AbortSignal;
}

export interface RunningWorker {
  ops: OpsServer | undefined;
  webhooks: WebhookServer | undefined;
  workers: Worker[];
  /** Ordered shutdown: stop taking jobs, let runs stop at a page boundary, close queues, pools and Redis. */
  close(deadlineMs?: number): Promise<void>;
}

/**
 * Starts whole or not at all: the ops and webhook servers are bound before any BullMQ worker registers,
 * and a failed or aborted start closes what it opened (src/worker/start-guard.ts) before it throws.
 */
export async function startWorker(app: App, options: WorkerOptions = {}): Promise<RunningWorker> {
  return new StartGuard(options.signal).run((guard) => openWorker(app, options, guard));
}

function opsPortOf(app: App, options: WorkerOptions): number | 'random' {
  const port = options.opsPort ?? app.env.OPS_PORT;
  if (port !== 'random' && !(Number.isInteger(port) && port >= 0 && port <= 65_535)) {
    throw new Error(`startWorker: opsPort must be a port (0 = off) or 'random', got ${String(port)}`);
  }
  return port;
}

/** State in the old single-slot key layout only, or records not packed yet: starting would adopt those contacts again (their id maps look empty). */
async function checkKeyLayout(app: App, guard: StartGuard): Promise<void> {
  const notMoved = await guard.step(tenantsNotMoved(app.redis, app.env.KEY_PREFIX, app.tenants().map((t) => t.id)));
  if (notMoved.length > 0) {
    throw new Error(
      `the Redis state of ${notMoved.join(', ')} is in the old key layout (\`<KEY_PREFIX>:<kind>:<owner>...\`, every key in one slot): run \`collections-sync migrate-keys\` (a dry run), then \`collections-sync migrate-keys --yes\`, and start the worker again`,
    );
  }
  // Records still in the hashes versions before packed records kept: the worker's scripts read packed records
  // only, so such a record would look unknown (a contact created again, a payment missed). One round trip.
  const unpacked = await guard.step(tenantsWithOldHashes(app.redis, app.env.KEY_PREFIX, app.tenants().map((t) => t.id)));
  if (unpacked.length > 0) {
    throw new Error(
      `the Redis state of ${unpacked.join(', ')} still holds records in the hashes versions before packed records kept (id maps, mirrors, payment ledgers), which this version no longer reads: run \`collections-sync migrate-keys\` (a dry run), then \`collections-sync migrate-keys --yes\`, and start the worker again`,
    );
  }
}

async function openWorker(app: App, options: WorkerOptions, guard: StartGuard): Promise<RunningWorker> {
  const { env, logger } = app;
  const opsPort = opsPortOf(app, options);
  const webhookPort = options.webhookPort ?? env.WEBHOOK_PORT;
  // Settings first: one that cannot work stops the start before it writes anything to Redis.
  checkPublicServerSettings(env, webhookPort);
  await checkKeyLayout(app, guard);
  const applySchedules = schedulesOf(app, options.housekeepingEveryMs);
  // Schedules first: a scheduler that cannot be put in place stops the start before any job is taken.
  if (options.schedules ?? true) await guard.step(applySchedules(app.tenants()));

  const jobs = new AbortController();
  const pool = new QueueWorkers(app, createProcessors(app, jobs.signal), options.concurrency ?? env.WORKER_CONCURRENCY);
  // The servers before the BullMQ workers: a port that cannot be had fails the start before anything registers.
  const servers = { opsPort, opsHost: options.opsHost, webhookPort, webhookHost: options.webhookHost ?? env.WEBHOOK_HOST };
  const { ops, webhooks } = await bindServers(app, { ...servers, readiness: readinessOf(app, pool), beforeScrape: beforeScrapeOf(app) }, guard);
  guard.check();
  pool.open(options.queues);
  guard.opens(() => pool.close(true));

  const watchdog = startWedgeWatchdog(app, pool);
  const unwatchFile = options.tenantsFile ? watchTenantsFile(app, options.tenantsFile, applySchedules) : () => undefined;
  const unwatchStore = watchTenantStore(app, (options.schedules ?? true) ? applySchedules : async () => true, env.TENANT_STORE_POLL_MS);
  const unwatch = (): void => {
    unwatchFile();
    unwatchStore();
  };
  let closing: Promise<void> | undefined;
  return {
    ops,
    webhooks,
    workers: pool.workers,
    close(deadlineMs = env.SHUTDOWN_TIMEOUT_MS) {
      closing ??= shutdown({ logger, stops: [unwatch, () => watchdog.stop()], webhooks, jobs, pool, ops }, deadlineMs);
      return closing;
    },
  };
}
