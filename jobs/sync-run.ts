/**
 * The `sync-run` job: one run of one tenant. One run per tenant at a time across processes (a Redis lock
 * kept alive while the run lives; BullMQ's job lock is not a mutex). A killed run resumes from its
 * checkpoint under the same run id. Platform daily caps and shutdowns move the job to delayed instead of
 * holding a worker.
 */
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { CollectionsClient } from '../src/collections/client.js';
import type { TenantConfig } from '../src/config/tenants.js';
import type { Logger } from '../src/logger.js';
import { PlatformError, PlatformRateLimitedError, type PlatformAdapter } from '../src/platforms/types.js';
import type { StateStores } from '../src/state/index.js';
import type { TenantFlags } from '../src/state/flags.js';
import type { RecordCache } from '../src/state/record-cache.js';
import { JOBS, parseJobData, type SyncJobData } from './registry.js';
import { RunContext, type SyncMetrics, type SyncSettings } from './sync/context.js';
import { Pool } from './sync/pool.js';
import { runSync, type RunCheckpoint } from './sync/run.js';

export interface SyncProcessorDeps {
  logger: Logger;
  stores: StateStores;
  cache: RecordCache;
  flags: TenantFlags;
  tenant(id: string): TenantConfig | undefined;
  clientFor(tenant: TenantConfig): CollectionsClient;
  adapterFor(tenant: TenantConfig): PlatformAdapter;
  settings: SyncSettings & { syncConcurrency: number; runLockTtlMs: number };
  /** Aborted when the worker shuts down: runs stop at a page boundary and are picked up again. */
  shutdown: AbortSignal;
  metrics?: SyncMetrics & { run(tenant: string, outcome: string, seconds: number): void };
}

export interface SyncResult {
  runId: string;
  outcome: 'succeeded' | 'partial';
  counts: Record<string, number>;
}

export function runIdOf(job: Job): string {
  return `run-${job.id ?? 'unknown'}`;
}

export function createSyncProcessor(deps: SyncProcessorDeps) {
  return async (job: Job, token?: string, signal?: AbortSignal): Promise<SyncResult> => {
    let data: SyncJobData;
    try {
      data = parseJobData(JOBS.sync.schema, job.data, JOBS.sync.name);
    } catch (err) {
      throw new UnrecoverableError((err as Error).message);
    }
    const tenant = deps.tenant(data.tenantId);
    if (!tenant) throw new UnrecoverableError(`unknown tenant "${data.tenantId}": not in the tenants file`);
    const log = deps.logger.child({ tenant: tenant.id, jobId: job.id, runId: runIdOf(job) });
    const runId = runIdOf(job);

    const lock = deps.stores.runLock;
    const owner = `${runId}.${token ?? 'x'}`;
    if (!(await lock.acquire(tenant.id, owner, deps.settings.runLockTtlMs))) {
      // Another run of this tenant is under way (possibly a stalled copy of this job): wait, never run beside it.
      log.info('another run of this tenant holds the run lock; waiting');
      await job.moveToDelayed(Date.now() + 2_000, token);
      throw new DelayedError();
    }
    const keepAlive = lock.keepAlive(tenant.id, owner, deps.settings.runLockTtlMs);
    const abort = AbortSignal.any([deps.shutdown, keepAlive.signal, ...(signal ? [signal] : [])]);
    const started = Date.now();

    try {
      const checkpoint = await deps.stores.cursors.getCheckpoint(tenant.id);
      const resume = checkpoint && checkpoint.runId === runId ? (checkpoint.data as RunCheckpoint) : undefined;
      if (checkpoint && !resume) await deps.stores.cursors.clearCheckpoint(tenant.id);
      // A run keeps its first start time across attempts (a rescheduled or resumed run is the same run).
      const existing = await deps.stores.runs.get(tenant.id, runId);
      if (!existing) {
        await deps.stores.runs.start(tenant.id, { runId, mode: data.mode, startedAt: started, trigger: data.trigger, requestedAt: data.requestedAt });
      }
      const runStartedAt = existing?.startedAt ?? started;
      const ctx = new RunContext(
        tenant.id,
        runId,
        data.mode,
        {
          logger: log,
          client: deps.clientFor(tenant),
          adapter: deps.adapterFor(tenant),
          stores: deps.stores,
          cache: deps.cache,
          flags: deps.flags,
          pool: new Pool(deps.settings.syncConcurrency),
          settings: deps.settings,
          ...(deps.metrics ? { metrics: deps.metrics } : {}),
        },
        abort,
        runStartedAt,
        AbortSignal.any([keepAlive.signal, ...(signal ? [signal] : [])]),
      );
      log.info({ mode: data.mode, resumed: resume !== undefined }, 'sync run started');
      try {
        await runSync(ctx, {
          ...(data.since ? { sinceDate: data.since } : {}),
          ...(resume ? { resumeFrom: resume } : {}),
          onProgress: async (p) => {
            await job.updateProgress({ entity: p.entity, pages: p.pages, records: p.records, counts: p.counts });
            await deps.stores.runs.update(tenant.id, runId, { counts: p.counts, phase: p.entity });
          },
        });
      } catch (err) {
        await deps.stores.runs.update(tenant.id, runId, { counts: ctx.counts });
        if (err instanceof PlatformRateLimitedError) {
          log.warn({ scope: err.scope, retryAfterMs: err.retryAfterMs }, 'platform rate limit: rescheduling the run');
          await deps.stores.runs.update(tenant.id, runId, { phase: `rescheduled: platform ${err.scope} limit` });
          await job.moveToDelayed(Date.now() + err.retryAfterMs, token);
          throw new DelayedError();
        }
        if (abort.aborted && !signal?.aborted) {
          log.info('run interrupted (shutdown or lost run lock); it resumes from its checkpoint');
          await job.moveToDelayed(Date.now() + 1_000, token);
          throw new DelayedError();
        }
        const message = err instanceof Error ? err.message : String(err);
        // A platform error that says retrying cannot help (a revoked connection) ends the run now.
        const hopeless = err instanceof PlatformError && !err.retryable;
        const last = hopeless || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
        if (last) {
          await deps.stores.runs.finish(tenant.id, runId, { outcome: 'failed', finishedAt: Date.now(), counts: ctx.counts, errors: [...ctx.errors, message] });
          await deps.stores.cursors.clearCheckpoint(tenant.id);
          deps.metrics?.run(tenant.id, 'failed', (Date.now() - started) / 1000);
        }
        log.error({ err: message, attempt: job.attemptsMade + 1 }, 'sync run failed');
        if (hopeless) throw new UnrecoverableError(message);
        throw err;
      }
      const outcome = (ctx.counts['deadLettered'] ?? 0) + (ctx.counts['badRecords'] ?? 0) > 0 ? 'partial' : 'succeeded';
      await deps.stores.runs.finish(tenant.id, runId, {
        outcome,
        finishedAt: Date.now(),
        counts: ctx.counts,
        errors: ctx.errors,
        unlinkedPayments: ctx.unlinkedPayments,
      });
      await deps.stores.cursors.clearCheckpoint(tenant.id);
      deps.metrics?.run(tenant.id, outcome, (Date.now() - started) / 1000);
      log.info({ outcome, counts: ctx.counts }, 'sync run finished');
      return { runId, outcome, counts: ctx.counts };
    } finally {
      keepAlive.stop();
      await lock.release(tenant.id, owner).catch(() => undefined);
    }
  };
}
