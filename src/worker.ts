/**
 * The always-on worker process, and its composition root: BullMQ workers for sync runs, schedule ticks, token
 * rotations and calls (their processors come from jobs/processors.ts, the one import of jobs/ in src/), the ops
 * HTTP server, schedules kept in step with the tenants file, and an ordered graceful shutdown under a deadline.
 */
import { watchFile, unwatchFile } from 'node:fs';
import { Worker, type Job } from 'bullmq';
import { createProcessors } from '../jobs/processors.js';
import type { App } from './app.js';
import { CampaignStore } from './calls/index.js';
import { checkTenantsNeeds, loadTenants, type TenantConfig, type TenantsFile } from './config/tenants.js';
import { ENTITIES } from './glossary.js';
import type { OpsServer, Readiness } from './ops/server.js';
import { ensureTickSchedules, QUEUES, workerOptions } from './queues/index.js';
import { globalKey, queuePrefix } from './redis/keys.js';
import { tenantsNotMoved } from './redis/migrate-keys.js';
import type { WebhookServer } from './webhooks/index.js';
import { RedisLock } from './redis/lock.js';
import { bindServers } from './worker/servers.js';
import { StartGuard } from './worker/start-guard.js';

type QueueKey = keyof typeof QUEUES;

/** A queue this process works: its current BullMQ worker, the jobs it runs, when it last started or ended one. */
interface Slot {
  readonly queue: QueueKey;
  worker: Worker;
  inFlight: number;
  progressAt: number;
  /** Since when jobs have waited (or been due) at every check, while this worker had a free slot. */
  backlogSince?: number | undefined;
}
const ALL_QUEUES: readonly QueueKey[] = ['sync', 'schedule', 'refreshToken', 'calls'];

/**
 * Queues whose jobs may stall many times without harm: a job killed with its worker is picked up again once its lock
 * lapses (JOB_LOCK_MS). A sync run resumes from its checkpoint with idempotent writes; a campaign re-run never
 * sends a request twice (it is `unknown` instead).
 */
const RESUMABLE: ReadonlySet<QueueKey> = new Set(['sync', 'calls']);

/** How often a worker drops expired dead letters and unknown call outcomes (and once at start). */
const HOUSEKEEPING_EVERY_MS = 3_600_000;

/** The lock under which one process at a time upserts schedulers. */
export function schedulesLockKey(prefix: string): string {
  return globalKey(prefix, 'lock', 'schedules');
}

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

async function openWorker(app: App, options: WorkerOptions, guard: StartGuard): Promise<RunningWorker> {
  const { env, logger } = app;
  const port = options.opsPort ?? env.OPS_PORT;
  if (port !== 'random' && !(Number.isInteger(port) && port >= 0 && port <= 65_535)) {
    throw new Error(`startWorker: opsPort must be a port (0 = off) or 'random', got ${String(port)}`);
  }
  // State in the old single-slot key layout only: starting would adopt every contact again (the id maps look empty).
  const notMoved = await guard.step(tenantsNotMoved(app.redis, env.KEY_PREFIX, app.tenants().map((t) => t.id)));
  if (notMoved.length > 0) {
    throw new Error(
      `the Redis state of ${notMoved.join(', ')} is in the old key layout (\`<KEY_PREFIX>:<kind>:<owner>...\`, every key in one slot): run \`collections-sync migrate-keys\` (a dry run), then \`collections-sync migrate-keys --yes\`, and start the worker again`,
    );
  }
  const shutdown = new AbortController();
  const connection = app.redis;
  const want = new Set(options.queues ?? ALL_QUEUES);
  const workers: Worker[] = [];
  let lastActivity = Date.now();
  /** Set once the BullMQ workers exist: the servers are up before, and /readyz says "starting" until then. */
  let started = false;

  const track = (worker: Worker, queue: string): void => {
    worker.on('error', (err) => {
      if (!app.outage.report(queue, err)) logger.error({ queue, err: err.message }, 'worker error');
    });
    worker.on('active', () => (lastActivity = Date.now()));
    worker.on('completed', () => {
      lastActivity = Date.now();
      app.metrics?.jobs.inc({ queue, outcome: 'completed' });
    });
    worker.on('failed', (job: Job | undefined, err: Error) => {
      lastActivity = Date.now();
      app.metrics?.jobs.inc({ queue, outcome: 'failed' });
      logger.warn({ queue, jobId: job?.id, err: err.message }, 'job failed');
    });
    workers.push(worker);
  };

  const resumable = {
    connection,
    lockDuration: env.JOB_LOCK_MS,
    stalledInterval: Math.max(1_000, Math.floor(env.JOB_LOCK_MS / 2)),
    maxStalledCount: 20,
  };

  const applySchedules = async (tenants: readonly TenantConfig[]): Promise<void> => {
    // One process at a time upserts schedulers (bullmq #2876, #3381).
    const lock = new RedisLock(app.redis, schedulesLockKey(env.KEY_PREFIX), 30_000);
    if (!(await lock.acquireWithin(10_000))) return;
    try {
      await ensureTickSchedules(app.queues.schedule, tenants, logger);
      await app.auth.applyTenants(tenants);
    } finally {
      await lock.release();
    }
  };
  // Schedules first: a scheduler that cannot be put in place stops the start before any job is taken.
  if (options.schedules ?? true) await guard.step(applySchedules(app.tenants()));

  const metrics = app.metrics;
  const readiness = async (): Promise<Readiness> => {
    const checks: Readiness['checks'] = {};
    try {
      const pong = await Promise.race([app.redis.ping(), new Promise<string>((_, rej) => setTimeout(() => rej(new Error('timeout')), 1_000))]);
      checks['redis'] = { ok: pong === 'PONG' };
    } catch (err) {
      checks['redis'] = { ok: false, detail: (err as Error).message };
    }
    const running = started && workers.every((w) => w.isRunning());
    checks['workers'] = { ok: running, ...(running ? {} : { detail: started ? 'a worker is not running' : 'starting' }) };
    if (checks['redis'].ok) {
      // Wedged: work is waiting but nothing has started or ended for two minutes (bullmq #4585).
      const waiting = await app.queues.sync.getWaitingCount().catch(() => 0);
      const idleFor = Date.now() - lastActivity;
      const wedged = waiting > 0 && idleFor > 120_000;
      checks['progress'] = { ok: !wedged, ...(wedged ? { detail: `${waiting} jobs waiting, no activity for ${Math.round(idleFor / 1000)} s` } : {}) };
    }
    return { ready: Object.values(checks).every((c) => c.ok), checks };
  };

  const campaigns = new CampaignStore(app.redis, env.KEY_PREFIX, { retentionMs: env.CAMPAIGN_RETENTION_DAYS * 86_400_000 });
  const beforeScrape = async (): Promise<void> => {
    if (!metrics) return;
    for (const [name, queue] of Object.entries(app.queues)) {
      const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'failed');
      for (const [state, n] of Object.entries(counts)) metrics.queueDepth.set({ queue: name, state }, n);
    }
    // Per-tenant gauges start afresh at each scrape: a tenant gone from the tenants file leaves them.
    for (const gauge of [metrics.deadLetters, metrics.pendingInvoices, metrics.callUnknownOutcomes, metrics.lastSuccessTimestamp]) gauge.reset();
    for (const t of app.tenants()) {
      const [dead, pending, unknown, lastSuccessAt] = await Promise.all([
        app.stores.deadLetters.counts(t.id),
        app.stores.pending.count(t.id),
        campaigns.countUnknown(t.id),
        app.stores.runs.lastSuccessAt(t.id),
      ]);
      if (lastSuccessAt !== undefined) metrics.lastSuccessTimestamp.set({ tenant: t.id }, lastSuccessAt / 1000);
      for (const entity of ENTITIES) metrics.deadLetters.set({ tenant: t.id, entity }, dead.byEntity[entity]);
      metrics.pendingInvoices.set({ tenant: t.id }, pending);
      metrics.callUnknownOutcomes.set({ tenant: t.id }, unknown);
      for (const entity of ENTITIES) {
        const c = await app.stores.cursors.get(t.id, entity);
        if (c?.highWater) metrics.cursorLagSeconds.set({ tenant: t.id, entity }, (Date.now() - Date.parse(c.highWater.updatedAt)) / 1000);
      }
    }
  };

  // The servers before the BullMQ workers: a port that cannot be had fails the start before anything registers.
  const webhookHost = options.webhookHost ?? env.WEBHOOK_HOST;
  const { ops, webhooks } = await bindServers(app, { opsPort: port, opsHost: options.opsHost, webhookPort: options.webhookPort ?? env.WEBHOOK_PORT, webhookHost, readiness, beforeScrape }, guard);
  guard.check();

  const processors = createProcessors(app, shutdown.signal);
  const concurrency: Record<QueueKey, number> = { sync: options.concurrency ?? env.WORKER_CONCURRENCY, schedule: 4, refreshToken: 8, calls: 4 };
  // One slot per queue: its BullMQ worker (replaced when wedged, decision 46), the jobs its processor is running,
  // and when it last started or ended one.
  const slots: Slot[] = [];
  const startBullWorker = (slot: Slot): Worker => {
    const settings = RESUMABLE.has(slot.queue) ? resumable : { connection };
    const run = processors[slot.queue]();
    const counted = async (job: Job, token?: string, signal?: AbortSignal): Promise<unknown> => {
      slot.inFlight += 1;
      slot.progressAt = Date.now();
      try {
        return await run(job, token, signal);
      } finally {
        slot.inFlight -= 1;
        slot.progressAt = Date.now();
      }
    };
    const worker = new Worker(QUEUES[slot.queue], counted, { ...settings, ...workerOptions(slot.queue), prefix: queuePrefix(env.KEY_PREFIX, QUEUES[slot.queue]), concurrency: concurrency[slot.queue] });
    track(worker, QUEUES[slot.queue]);
    return worker;
  };
  for (const queue of ALL_QUEUES) {
    if (!want.has(queue)) continue;
    const slot: Slot = { queue, worker: undefined as unknown as Worker, inFlight: 0, progressAt: Date.now() };
    slot.worker = startBullWorker(slot);
    slots.push(slot);
  }
  guard.opens(() => Promise.allSettled(workers.map((w) => w.close(true))));
  started = true;

  // The wedge watchdog (decision 46). After a Redis Cluster master's restart a BullMQ worker can stay parked in its
  // blocking wait for good (bullmq #3088, #2964, #4138: isRunning() true, the blocking connection "ready", no job
  // taken, waiting and due delayed jobs left alone). Seen from outside: jobs wait while the worker has a free slot
  // and starts none. Such a worker is closed (force: its jobs in flight keep their run locks and finish or are
  // taken over, as after a kill) and a new one with the same processor takes its place.
  const wedgeMs = env.WORKER_WEDGE_S * 1000;
  let closingAll = false;
  const backlogOf = async (queue: QueueKey): Promise<string | undefined> => {
    const q = app.queues[queue];
    const counts = await q.getJobCounts('waiting', 'prioritized');
    const waiting = (counts['waiting'] ?? 0) + (counts['prioritized'] ?? 0);
    if (waiting > 0) return `${waiting} jobs waiting`;
    // BullMQ scores a delayed job by its due time × 0x1000 (+ a counter).
    const first = await app.redis.zrange(q.toKey('delayed'), 0, 0, 'WITHSCORES');
    const dueAt = first[1] === undefined ? undefined : Math.floor(Number(first[1]) / 0x1000);
    return dueAt !== undefined && dueAt < Date.now() - 1_000 ? `a delayed job due ${Math.round((Date.now() - dueAt) / 1000)} s ago` : undefined;
  };
  const replace = (slot: Slot, why: string): void => {
    const old = slot.worker;
    const name = QUEUES[slot.queue];
    logger.warn({ queue: name, reason: 'wedged', why, idleForS: Math.round((Date.now() - slot.progressAt) / 1000), jobsInFlight: slot.inFlight }, 'worker wedged: jobs wait but it takes none; replacing it in-process');
    metrics?.workerReplacements.inc({ queue: name, reason: 'wedged' });
    // Closing a wedged worker may itself hang on its blocking connection: it is not waited for.
    void old.close(true).catch(() => undefined);
    slot.worker = startBullWorker(slot);
    slot.progressAt = Date.now();
    const i = workers.indexOf(old);
    if (i >= 0) workers.splice(i, 1);
  };
  const checkEveryMs = Math.max(1_000, Math.min(5_000, Math.floor(wedgeMs / 4)));
  let checking = false;
  const checkWedged = async (): Promise<void> => {
    if (checking || closingAll) return;
    checking = true;
    try {
      for (const slot of slots) {
        // Busy (every slot taken) or a job started or ended lately: not wedged.
        if (slot.inFlight >= concurrency[slot.queue] || Date.now() - slot.progressAt < checkEveryMs) {
          slot.backlogSince = undefined;
          continue;
        }
        let why: string | undefined;
        try {
          why = app.outage.down ? undefined : await backlogOf(slot.queue);
        } catch {
          why = undefined; // Redis away: the outage log speaks for it
        }
        const now = Date.now();
        if (why === undefined) slot.backlogSince = undefined;
        else slot.backlogSince ??= now;
        // Jobs have waited (or been due) all along for WORKER_WEDGE_S, and the worker started none meanwhile.
        if (why !== undefined && !closingAll && now - (slot.backlogSince ?? now) >= wedgeMs && now - slot.progressAt >= wedgeMs) {
          slot.backlogSince = undefined;
          replace(slot, why);
        }
      }
    } finally {
      checking = false;
    }
  };
  const watchdog = setInterval(() => void checkWedged(), checkEveryMs);
  watchdog.unref();

  // A changed tenants file is applied all or nothing: it is checked whole, its schedules are put in place, and only
  // then do its tenants replace the running ones. Otherwise the previous tenants and schedules stay, and the log
  // says so.
  const tenantsFile = options.tenantsFile;
  if (tenantsFile) {
    watchFile(tenantsFile, { interval: 2_000 }, () => {
      void (async () => {
        let next: TenantsFile;
        try {
          next = await loadTenants(tenantsFile);
          checkTenantsNeeds(next, env);
        } catch (err) {
          logger.error({ err: (err as Error).message }, 'tenants file change ignored: it is invalid (the previous tenants and schedules stay in force)');
          return;
        }
        try {
          await applySchedules(next.tenants);
        } catch (err) {
          await applySchedules(app.tenants()).catch(() => undefined);
          logger.error({ err: (err as Error).message }, 'tenants file change ignored: its schedules could not be put in place (the previous tenants and schedules stay in force)');
          return;
        }
        app.setTenants(next);
        logger.info({ tenants: app.tenants().length }, 'tenants file reloaded');
      })();
    });
  }

  // Housekeeping: bounds on what would otherwise grow without end (dead letters of records gone from the source,
  // unknown call outcomes whose campaign has expired). Idempotent, so every worker process may run it.
  const housekeep = async (): Promise<void> => {
    for (const t of app.tenants()) {
      try {
        const maxAgeMs = env.DEAD_LETTER_MAX_AGE_DAYS * 86_400_000;
        const deadLetters = maxAgeMs > 0 ? await app.stores.deadLetters.prune(t.id, Date.now() - maxAgeMs) : 0;
        const unknownOutcomes = await campaigns.pruneUnknown(t.id);
        const webhookEvents = await app.webhookEvents.trim(t.id);
        if (deadLetters + unknownOutcomes + webhookEvents > 0) logger.info({ tenant: t.id, deadLetters, unknownOutcomes, webhookEvents }, 'housekeeping: dropped expired entries');
      } catch (err) {
        if (!app.outage.down) logger.warn({ tenant: t.id, err: (err as Error).message }, 'housekeeping failed; it runs again within the hour');
      }
    }
  };
  const housekeeping = setInterval(() => void housekeep(), HOUSEKEEPING_EVERY_MS);
  housekeeping.unref();
  void housekeep();

  let closing: Promise<void> | undefined;
  return {
    ops,
    webhooks,
    workers,
    close(deadlineMs = env.SHUTDOWN_TIMEOUT_MS) {
      closing ??= (async () => {
        if (tenantsFile) unwatchFile(tenantsFile);
        clearInterval(housekeeping);
        closingAll = true;
        clearInterval(watchdog);
        // No more events accepted; those kept already have their jobs.
        await webhooks?.close();
        shutdown.abort(new Error('shutting down'));
        const closed = Promise.allSettled(workers.map((w) => w.close()));
        const timedOut = await Promise.race([
          closed.then(() => false),
          new Promise<boolean>((r) => setTimeout(() => r(true), deadlineMs).unref()),
        ]);
        if (timedOut) {
          logger.warn({ deadlineMs }, 'workers did not stop within the deadline; forcing (their jobs will be picked up again)');
          await Promise.allSettled(workers.map((w) => w.close(true)));
        }
        await ops?.close();
      })();
      return closing;
    },
  };
}
