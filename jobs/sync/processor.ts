/**
 * The `sync-run` job: one run of one tenant, in steps: open the run (resume its checkpoint, start its
 * record), run the pipeline (jobs/sync/pipeline.ts), then finish the run or say what its failure means for
 * the job. One run per tenant at a time across processes: the tenant's run lock, held for the whole job by
 * defineProcessor with its keep-alive (BullMQ's job lock is not a mutex). A killed run resumes from its
 * checkpoint under the same run id. Platform limits and shutdowns reschedule the job instead of holding a worker.
 */
import type { Job } from 'bullmq';
import type { CollectionsClient } from '../../src/collections/client.js';
import type { TenantConfig } from '../../src/config/tenants.js';
import type { Logger } from '../../src/logger.js';
import { runFinishedEvent, type EventSink } from '../../src/notify/index.js';
import { PlatformError, PlatformNotConnectedError, PlatformRateLimitedError, type PlatformAdapter } from '../../src/platforms/types.js';
import { defineProcessor, hopeless, reschedule, type JobAttempt, type JobProcessor, type SyncJobData } from '../../src/queues/index.js';
import type { TenantFlags } from '../../src/state/flags.js';
import type { RunFinish, StateStores } from '../../src/state/index.js';
import type { RecordMirror } from '../../src/state/record-mirror.js';
import { RunContext, type SyncMetrics, type SyncSettings } from './context.js';
import { runSync, type RunCheckpoint, type RunOptions } from './pipeline.js';
import { Pool } from './pool.js';
import { describeWaits } from './progress.js';
import { ProgressWrites } from './progress-writes.js';
import { RunStalledError, watchRun } from './watchdog.js';

type RunProgressUpdate = Parameters<NonNullable<RunOptions['onProgress']>>[0];

export interface SyncProcessorDeps {
  logger: Logger;
  stores: StateStores;
  mirror: RecordMirror;
  flags: TenantFlags;
  tenant(id: string): TenantConfig | undefined;
  clientFor(tenant: TenantConfig): CollectionsClient;
  adapterFor(tenant: TenantConfig): PlatformAdapter;
  /**
   * `syncConcurrency`: requests one run keeps in flight; undefined = the tenant's in-flight limit (its own
   * `inFlightLimit`, else `inFlightLimit` here, TENANT_INFLIGHT_LIMIT), so one run can use the whole budget.
   */
  /** `stallMs`: a run that makes no progress for this long is stalled (RUN_STALL_S; the watchdog, decision 156). */
  settings: SyncSettings & { syncConcurrency: number | undefined; inFlightLimit: number; runLockTtlMs: number; stallMs: number };
  /** Aborted when the worker shuts down: runs stop at a page boundary and are picked up again. */
  shutdown: AbortSignal;
  /** Redis is down now: no run can move, and the watchdog's quiet clock stops (the outage is reported apart). */
  redisDown?: () => boolean;
  metrics?: SyncMetrics & {
    run(tenant: string, outcome: string, seconds: number): void;
    /** A run stalled (the watchdog ended its attempt). */
    stalled?(tenant: string): void;
    /** When the tenant's running run last made progress (ms); undefined: it ended. */
    progressAt?(tenant: string, at: number | undefined): void;
  };
  /** Run webhooks: told of every run's end (any outcome) as a `run.finished` event; enqueues, never sends. */
  notify?: EventSink;
}

export interface SyncResult {
  runId: string;
  outcome: 'succeeded' | 'partial' | 'waiting';
  counts: Record<string, number>;
}

export function runIdOf(job: Job): string {
  return `run-${job.id ?? 'unknown'}`;
}

export function createSyncProcessor(deps: SyncProcessorDeps): JobProcessor<SyncResult> {
  return defineProcessor('sync', (data, attempt) => syncRun(deps, data, attempt), {
    lock: (data, job, token) => deps.stores.runLock.lock(data.tenantId, `${runIdOf(job)}.${token ?? 'x'}`, deps.settings.runLockTtlMs),
    logger: deps.logger,
  });
}

interface OpenRun {
  ctx: RunContext;
  resume: RunCheckpoint | undefined;
  log: Logger;
  /** When this attempt started (the run's duration metric counts from here). */
  started: number;
  /** Aborts the run's signals when the watchdog finds it stalled. */
  stall: AbortController;
  /** The run's stalls so far (earlier attempts', then this one's). */
  stalls: number;
}

/** After a stall, how long the pipeline is given to unwind (its requests cancelled) before the attempt ends anyway. */
const STALL_UNWIND_MS = 5_000;

/** A run's progress is written at most this often (jobs/sync/progress-writes.ts, decision 0274). */
export const PROGRESS_WRITE_EVERY_MS = 1_000;

/**
 * A run's end, recorded (runs.finish) and told (`run.finished`, after the record, so a receiver that reads the run
 * finds it ended). The event's id is the run's: finished twice (a crash before the job completed), one event.
 */
async function endRun(deps: SyncProcessorDeps, data: SyncJobData, tenant: string, runId: string, startedAt: number, finish: RunFinish, stalls = 0, deadLetters = true): Promise<void> {
  await deps.stores.runs.finish(tenant, runId, finish);
  if (deps.notify === undefined) return;
  // `deadLettered`: the dead letters this run made, as GET …/runs/{runId} lists them (decision 0224); none when the
  // tenant held none and the run wrote none.
  const made = deadLetters ? await deps.stores.deadLetters.madeBy(tenant, runId, startedAt).catch(() => undefined) : { entries: [] };
  await deps.notify.emit(
    runFinishedEvent({ tenantId: tenant, runId, mode: data.mode, trigger: data.trigger, outcome: finish.outcome, counts: finish.counts, ...(made !== undefined ? { deadLettered: made.entries.length } : {}), errors: finish.errors, startedAt, finishedAt: finish.finishedAt, stalls }),
  );
}

async function syncRun(deps: SyncProcessorDeps, data: SyncJobData, attempt: JobAttempt<SyncResult>): Promise<SyncResult> {
  const tenant = deps.tenant(data.tenantId);
  if (!tenant) throw hopeless(`unknown tenant "${data.tenantId}": not in the tenants file nor created over the API (deleted?)`);
  const run = await openRun(deps, tenant, data, attempt);
  attempt.onLastAttempt(async (err) => {
    await failRun(deps, data, run, err);
    return undefined;
  });
  run.log.info({ mode: data.mode, resumed: run.resume !== undefined }, 'sync run started');
  const watch = watchRun(run.ctx.progress, run.ctx.services.pool, {
    stallMs: deps.settings.stallMs,
    ...(deps.redisDown ? { paused: deps.redisDown } : {}),
    onTick: async (r, quietMs) => {
      deps.metrics?.progressAt?.(tenant.id, r.lastProgressAt);
      // Where it waits is written once it has been quiet for a while: a moving run writes its progress time only.
      const waiting = quietMs >= Math.min(60_000, deps.settings.stallMs / 4) ? describeWaits(r) : '';
      await deps.stores.runs.update(tenant.id, run.ctx.runId, { progressAt: r.lastProgressAt, waiting });
    },
  });
  const progress = new ProgressWrites<RunProgressUpdate>(async (p) => {
    await attempt.job.updateProgress({ entity: p.entity, pages: p.pages, records: p.records, counts: p.counts });
    await deps.stores.runs.update(tenant.id, run.ctx.runId, { counts: p.counts, phase: p.entity });
  }, PROGRESS_WRITE_EVERY_MS);
  const pipeline = runSync(run.ctx, {
    ...(data.since ? { sinceDate: data.since } : {}),
    ...(run.resume ? { resumeFrom: run.resume } : {}),
    // A copy: the counts move on while the write waits its turn.
    onProgress: (p) => (progress.push({ ...p, counts: { ...p.counts } }), Promise.resolve()),
  });
  try {
    // A stalled pipeline may never settle (whatever it waits on): the attempt ends on the watchdog's word. Progress
    // writes end first: none lands after the run's finish or failure is written.
    const stalled = await Promise.race([pipeline.then(() => undefined), watch.stalled]).finally(() => progress.stop());
    if (stalled) throw await stallRun(deps, run, stalled, pipeline);
  } catch (err) {
    if (err instanceof PlatformNotConnectedError) return waitRun(deps, data, run, err);
    throw await outcomeOf(deps, run, err, attempt);
  } finally {
    watch.stop();
    deps.metrics?.progressAt?.(tenant.id, undefined);
  }
  return finishRun(deps, data, run);
}

/**
 * The watchdog found the run stalled: it says where it waits (error level), counts it, aborts the run's signals (no
 * new request; requests in flight cancelled) and gives the pipeline a moment to unwind; the stall is kept with the
 * run (status, the API) and its reason with the run's errors (`run.finished`). Returns the error to end the attempt
 * with: retried by BullMQ with back-off, resumed from the run's checkpoint; on the last attempt the run fails with it.
 */
async function stallRun(deps: SyncProcessorDeps, run: OpenRun, err: RunStalledError, pipeline: Promise<void>): Promise<RunStalledError> {
  const { ctx, log, stall } = run;
  log.error(
    { phase: err.report.phase, quietS: Math.round(err.quietMs / 1000), waits: err.report.waits, pool: err.report.pool, window: err.report.window, counts: ctx.counts },
    'sync run stalled: no progress within RUN_STALL_S; ending this attempt (the job is retried from its checkpoint)',
  );
  deps.metrics?.stalled?.(ctx.tenant);
  stall.abort(err);
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([pipeline.catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, STALL_UNWIND_MS)))]);
  clearTimeout(timer);
  ctx.note(`the attempt of ${new Date(run.started).toISOString()} ${err.message}`);
  run.stalls += 1;
  await deps.stores.runs.update(ctx.tenant, ctx.runId, { stalls: { count: run.stalls, at: Date.now(), reason: err.message }, waiting: err.message });
  return err;
}

/**
 * The tenant's platform is not connected yet: the run ends `waiting` ("waiting for connection" in `status`), the
 * job completes (no retry: a connect link binding the tenant requests its first run), the checkpoint is dropped.
 */
async function waitRun(deps: SyncProcessorDeps, data: SyncJobData, { ctx, log, started, stalls }: OpenRun, err: PlatformNotConnectedError): Promise<SyncResult> {
  await endRun(deps, data, ctx.tenant, ctx.runId, ctx.startedAt, { outcome: 'waiting', finishedAt: Date.now(), counts: ctx.counts, errors: [err.message] }, stalls, ctx.deadLettersHeld);
  await deps.stores.cursors.clearCheckpoint(ctx.tenant);
  deps.metrics?.run(ctx.tenant, 'waiting', (Date.now() - started) / 1000);
  log.info({ reason: err.message }, 'sync run waiting for connection');
  return { runId: ctx.runId, outcome: 'waiting', counts: ctx.counts };
}

/** The run's context: resumed from its checkpoint when this run saved one; its record started once. */
async function openRun(deps: SyncProcessorDeps, tenant: TenantConfig, data: SyncJobData, attempt: JobAttempt<SyncResult>): Promise<OpenRun> {
  const { cursors, runs } = deps.stores;
  const runId = runIdOf(attempt.job);
  const log = deps.logger.child({ tenant: tenant.id, jobId: attempt.job.id, runId });
  const started = Date.now();
  // Read side by side: the checkpoint, the run's record (a run keeps its first start time across attempts: a
  // rescheduled or resumed run is the same run), whether the tenant holds dead letters (none: the run reads none).
  const [checkpoint, existing, deadLetters] = await Promise.all([cursors.getCheckpoint(tenant.id), runs.get(tenant.id, runId), deps.stores.deadLetters.count(tenant.id)]);
  const resume = checkpoint && checkpoint.runId === runId ? (checkpoint.data as RunCheckpoint) : undefined;
  if (checkpoint && !resume) await cursors.clearCheckpoint(tenant.id);
  if (!existing) await runs.start(tenant.id, { runId, mode: data.mode, startedAt: started, trigger: data.trigger, requestedAt: data.requestedAt }, deps.settings.runsKept, {
      ...(deps.settings.runsDetailed !== undefined ? { detailed: deps.settings.runsDetailed } : {}),
      ...(deps.settings.runsMaxAgeMs !== undefined ? { maxAgeMs: deps.settings.runsMaxAgeMs } : {}),
    });
  const cancelled = attempt.cancelled ? [attempt.cancelled] : [];
  const stall = new AbortController();
  // Built after the run's record is started, so a failure here (a platform adapter that cannot be made) must end
  // that record: the run is failed with the reason, and the job with it (retrying cannot mend a setting).
  let client: CollectionsClient;
  let adapter: PlatformAdapter;
  try {
    client = deps.clientFor(tenant);
    adapter = deps.adapterFor(tenant);
  } catch (err) {
    const message = `the run could not start: ${err instanceof Error ? err.message : String(err)}`;
    log.error({ err: message }, 'sync run failed');
    await endRun(deps, data, tenant.id, runId, existing?.startedAt ?? started, { outcome: 'failed', finishedAt: Date.now(), counts: {}, errors: [message] });
    deps.metrics?.run(tenant.id, 'failed', (Date.now() - started) / 1000);
    throw hopeless(message, err);
  }
  const ctx = new RunContext({
    tenant: tenant.id,
    runId,
    mode: data.mode,
    services: {
      logger: log,
      client,
      adapter,
      stores: deps.stores,
      mirror: deps.mirror,
      flags: deps.flags,
      pool: new Pool(deps.settings.syncConcurrency ?? tenant.inFlightLimit ?? deps.settings.inFlightLimit, {
        onSlowDown: (e) => log.warn({ status: e.status, from: e.from, to: e.to, pauseMs: e.pauseMs }, 'the service asks for less: fewer requests at once'),
      }),
      settings: deps.settings,
      ...(deps.metrics ? { metrics: deps.metrics } : {}),
    },
    stop: AbortSignal.any([deps.shutdown, attempt.lockLost, stall.signal, ...cancelled]),
    cancelRequests: AbortSignal.any([attempt.lockLost, stall.signal, ...cancelled]),
    startedAt: existing?.startedAt ?? started,
    deadLetters: deadLetters > 0,
  });
  // A run retried after a stall says so in its report (run.finished, status), whatever this attempt's end.
  if (existing?.stalls) ctx.note(`an earlier attempt stalled (${existing.stalls.count} in all; the last at ${new Date(existing.stalls.at).toISOString()}): ${existing.stalls.reason}`);
  return { ctx, resume, log, started, stall, stalls: existing?.stalls?.count ?? 0 };
}

/**
 * How long a run stopped by a platform's limit waits before it goes on. A per-minute limit counts calls over a sliding
 * minute, and the limiter's wait ends when its oldest call leaves the window, which frees one call, not a minute's
 * worth: a run back then is stopped again a few calls later, and each stop throws away the page it was reading (Zoho's
 * pages of payments cost a call per payment). So a run stopped by a minute's limit comes back when the whole minute
 * it spent is free, and can finish a page before the limit stops it again (the zoho bench's first sync never ended
 * without this at 95 calls a minute). Other limits keep the platform's wait.
 */
export function limitedDelayMs(scope: PlatformRateLimitedError['scope'], retryAfterMs: number): number {
  return scope === 'minute' || scope === 'app' ? Math.max(retryAfterMs, 60_000) : retryAfterMs;
}

/**
 * What a failed pipeline means for the job: a platform limit or an interruption (shutdown, lost run lock)
 * reschedules it; a platform error that says retrying cannot help (a revoked connection) ends it; anything
 * else is retried by BullMQ.
 */
async function outcomeOf(deps: SyncProcessorDeps, { ctx, log }: OpenRun, err: unknown, attempt: JobAttempt<SyncResult>): Promise<unknown> {
  const { runs } = deps.stores;
  await runs.update(ctx.tenant, ctx.runId, { counts: ctx.counts });
  if (err instanceof PlatformRateLimitedError) {
    log.warn({ scope: err.scope, retryAfterMs: err.retryAfterMs }, 'platform rate limit: rescheduling the run');
    await runs.update(ctx.tenant, ctx.runId, { phase: `rescheduled: platform ${err.scope} limit` });
    return reschedule(limitedDelayMs(err.scope, err.retryAfterMs), `platform ${err.scope} limit`);
  }
  if (err instanceof RunStalledError) return err;
  if (ctx.signal.aborted && !attempt.cancelled?.aborted) {
    log.info('run interrupted (shutdown or lost run lock); it resumes from its checkpoint');
    return reschedule(1_000, 'interrupted');
  }
  const message = err instanceof Error ? err.message : String(err);
  log.error({ err: message, attempt: attempt.number }, 'sync run failed');
  return err instanceof PlatformError && !err.retryable ? hopeless(message, err) : err;
}

/** The job gives up: the run is recorded as failed and its checkpoint dropped (the next run starts afresh). */
async function failRun(deps: SyncProcessorDeps, data: SyncJobData, { ctx, started, stalls }: OpenRun, err: unknown): Promise<void> {
  const message = err instanceof Error ? err.message : String(err);
  // A stall is noted already (stallRun).
  const errors = err instanceof RunStalledError ? ctx.errors : [...ctx.errors, message];
  await endRun(deps, data, ctx.tenant, ctx.runId, ctx.startedAt, { outcome: 'failed', finishedAt: Date.now(), counts: ctx.counts, errors }, stalls, ctx.deadLettersHeld);
  await deps.stores.cursors.clearCheckpoint(ctx.tenant);
  deps.metrics?.run(ctx.tenant, 'failed', (Date.now() - started) / 1000);
}

/** Every entity pushed: the run succeeded, or is partial when records were dead-lettered or bad, or a replay left letters it cannot push. */
async function finishRun(deps: SyncProcessorDeps, data: SyncJobData, { ctx, log, started, stalls }: OpenRun): Promise<SyncResult> {
  const outcome = ctx.counted('deadLettered') + ctx.counted('badRecords') + ctx.counted('needsSourceFix') > 0 ? 'partial' : 'succeeded';
  await endRun(deps, data, ctx.tenant, ctx.runId, ctx.startedAt, {
    outcome,
    finishedAt: Date.now(),
    counts: ctx.counts,
    errors: ctx.errors,
    unlinkedPayments: ctx.unlinkedPayments,
  }, stalls, ctx.deadLettersHeld);
  await deps.stores.cursors.clearCheckpoint(ctx.tenant);
  deps.metrics?.run(ctx.tenant, outcome, (Date.now() - started) / 1000);
  log.info({ outcome, counts: ctx.counts }, 'sync run finished');
  return { runId: ctx.runId, outcome, counts: ctx.counts };
}
